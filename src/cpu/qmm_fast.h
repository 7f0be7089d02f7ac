/* cpu/qmm_fast.h — the fast CPU paths of one quantized matrix product (cpu/qmm.h's
 * tsri_qmm_problem), for tsri_qmm_choose_kernel to pick: a fused dequantize-dot (qmv) across the
 * cores for decode-sized M with transpose; above it the fused dequantize-GEMM (cpu/qgemm.h)
 * where the instruction set has a micro-kernel and M is in its range, else dequantized float32
 * tiles of the weights handed to cblas_sgemm. Each in AVX-512, AVX2+FMA or portable C, chosen
 * from the CPU (base/discovery.h) and capped by TSR_CPU_ISA when the CPU device's context is made
 * (cpu/context.h), which keeps the choice; the same row decoders serve tsr_dequantize. Not the
 * op-level driver (cpu/qmm.c).
 *
 * Results agree with the float64 product within cpu/qmm.h's bound: the tiles and the fused GEMM
 * dequantize every weight exactly as the reference does and differ from it only in the order of
 * the float32 sum over K; qmv takes affine in the factored form (s * sum x q + b * sum x per
 * group, cpu/qmm_fast_isa.h), which quant-spec Part A §4 allows, and fp modes with exact weights.
 *
 * Environment (read once per process, through base/env):
 *   TSR_CPU_ISA      avx512 | avx2 | scalar — the widest instruction set the fast paths may use
 *                    (default: the widest the CPU has); a value the CPU lacks falls back to the
 *                    next narrower one, with a warning.
 *   TSR_NUM_THREADS  threads per product, the calling thread included (cpu/parallel.h).
 */
#ifndef TSR_CPU_QMM_FAST_H
#define TSR_CPU_QMM_FAST_H

#include <stdbool.h>

#include "cpu/qmm.h"

struct tsri_qmm_isa; /* cpu/qmm_fast_isa.h */

/* Whether tsri_qmm_fast runs p: every problem of a valid mode, group size and bits with
   M, N, K > 0. Any thread. */
bool tsri_qmm_fast_accepts(const tsri_qmm_problem *p);

/* Computes p->y as cpu/qmm.h describes, with p->cpu's instruction set and pool (so it may run on
   several threads; it returns when y is complete). Never fails: when its scratch cannot be had
   it runs the reference kernel instead. Does not use p->scratch. Any thread, several at once. */
void tsri_qmm_fast(const tsri_qmm_problem *p);

/* Packed row `row` of p (row codes as tsri_qmm_row_codes) dequantized into dst exactly as
   cpu/qmm.h's weights: affine T(T(s * q) + b), fp modes value(code) * scale in float32, through
   the instruction set of p->cpu (tsr_dequantize's fast path). Any thread. */
void tsri_qmm_fast_dequantize_row(const tsri_qmm_problem *p, int64_t row, float *dst);

/* The kernels of the widest instruction set the CPU has (base/discovery.h), capped by TSR_CPU_ISA
   (a warning when the CPU lacks the one asked for): what a CPU context keeps (cpu/context.c). */
const struct tsri_qmm_isa *tsri_qmm_fast_choose_isa(void);

#endif
