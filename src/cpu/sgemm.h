/* cpu/sgemm.h — every float32 GEMM tessera hands to OpenBLAS, run on the CPU device's worker pool
 * (cpu/parallel.h, cpu/context.h): the product is cut into blocks of C's columns (or rows, when it
 * has few columns), each a single-threaded cblas_sgemm on a pool thread. OpenBLAS is set to one
 * thread before each product (where it is not already), so its own threads, which spin for ~2^28
 * cycles after each call before they sleep, never start for tessera and never take the cores
 * from the decode kernels that follow (Step 3 saw half the cores lost that way; the benchmarks
 * had worked around it with OPENBLAS_THREAD_TIMEOUT). That setting is OpenBLAS's, process-wide:
 * a program that calls OpenBLAS itself and wants its threads sets them (openblas_set_num_threads)
 * before its own calls; tessera's next product sets one again. Not the operand handling
 * (cpu/gemm.h). */
#ifndef TSR_CPU_SGEMM_H
#define TSR_CPU_SGEMM_H

#include <stdbool.h>
#include <stdint.h>

#include "cpu/parallel.h"

/* c = alpha * op(a) @ op(b) + beta * c, row-major, as cblas_sgemm(CblasRowMajor, ...): op(a) is
   m x k, op(b) k x n, c m x n with leading dimension ldc; sizes and leading dimensions fit an
   int. Cut across `pool`'s threads; returns when c is complete. Any thread, several at once (a
   call that finds the pool busy runs on its own thread, cpu/parallel.h). */
void tsri_sgemm(tsri_parallel_pool *pool, bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                int64_t k, float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                float beta, float *c, int64_t ldc);

#endif
