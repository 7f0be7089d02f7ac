/* cpu/qgemm.h — the fused quantized GEMM for prefill-sized M: y = x @ W with the weights
 * dequantized straight into the packed panels a register-blocked micro-kernel reads (BLIS's
 * loop structure), so no float32 copy of W is ever written to memory and read back, and no
 * BLAS repacks it. Not the micro-kernel or the dequantization (the instruction set's, through
 * cpu/qmm_fast_isa.h), nor the choice between this, qmv and the sgemm tiles (cpu/qmm_fast.c).
 *
 * Loops (N split across the pool's threads in blocks of 128 columns):
 *   x packed once into mr-row panels, k-major (zero rows past M);
 *   per block of 128 columns, per KC values of k: the block's weights dequantized (and, with
 *   transpose, transposed) into nr-column panels, k-major, in the thread's own scratch;
 *   per panel, per mr rows of x: the micro-kernel adds the tile's share of the sum to y.
 * The float32 sum over K runs in blocks of KC, each in increasing k, the blocks added in order:
 * a reordering cpu/qmm.h allows. Every weight is exactly the reference's. */
#ifndef TSR_CPU_QGEMM_H
#define TSR_CPU_QGEMM_H

#include <stdbool.h>

#include "cpu/qmm_fast_isa.h"

/* Computes p->y with isa's dequantize_span and gemm kernel (both non-NULL). Returns false,
   having written nothing, when its scratch cannot be had from the ledger; any thread. */
bool tsri_qgemm_run(const tsri_qmm_isa *isa, const tsri_qmm_problem *p);

#endif
