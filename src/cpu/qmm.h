/* cpu/qmm.h — one quantized matrix product as the CPU kernels see it: the plain description a
 * kernel takes (tsri_qmm_problem), the scalar reference kernel of each (transpose, mode), and
 * the one place that chooses a kernel for a problem, where fast paths (cpu/qmm_fast.c) plug in.
 * Not the op-level work (batches, gathered indices, strided or half-precision inputs, rounding
 * to the output dtype): cpu/qmm.c does that and hands kernels float32, contiguous operands.
 *
 * The arithmetic every kernel must reproduce (docs/quant-rules.md "Matmul", quant-spec.md Part A
 * §4 and Part B §4.3): each weight is exactly what tsr_dequantize gives in float32 — affine
 * T(T(s * q) + b) in the scales' dtype T (float32 arithmetic rounded to T; for float32 scales
 * float32(float32(s * q) + b)), fp modes value(code) * scale in float32 (exact: at most 6
 * significant bits, unless it overflows) and never rounded to x's dtype — and each output element
 * is a float32 sum over K of x * w, rounded once to the output dtype by the caller. So the product
 * is x @ dequantize(w) accumulated in float32: NaN and Inf appear exactly where that product has
 * them (an Inf x times a weight that dequantizes to 0 is NaN, as in MLX). The reference sums in
 * increasing k; a fast path may reorder the sum (the tests bound the error by K * 2^-24 * sum |x|
 * |w| either way) but not narrow it. One exception for fp modes: nvfp4 decode of one row of x
 * whose every value is 0 or of magnitude in [2^-60, 2^60] (x_moderate below) multiplies the
 * scale into a sum of value * x over a lane's 8 codes of one group (cpu/qmm_fast_isa.h): about
 * 10 + K / 128 roundings per term, well inside that bound, and the same NaN pattern (its x is
 * finite, and a NaN scale still makes the sum NaN).
 *
 * Quant-spec Part A §4 (amended) makes the contract a bound rather than these exact weights, and
 * the decode kernels (cpu/qmm_fast_isa.h) use it for affine: s * sum x q + b * sum x per group,
 * in float32, weights never rounded to T. Its bound against the float64 product of x and
 * dequantize(w) (tests/quant/qmm_ref.h derives it): gamma_{2K+1} * sum_k |x_k| (|s q_k| + |b|)
 * + sum_k |x_k| |(s q_k + b) - w_k| + 4K * 2^-149, the middle term being how far the exact
 * weights are from s q + b (at most u_T (2 + u_T) |s q| + u_T |b| each, u_T the unit roundoff of
 * T). Where x, a scale or a bias is not finite such a result is not finite, without the exact
 * NaN/Inf pattern of x @ dequantize(w).
 */
#ifndef TSR_CPU_QMM_H
#define TSR_CPU_QMM_H

#include <stdbool.h>
#include <stdint.h>

#include "base/half.h"
#include "tessera/array.h"

struct tsri_cpu_context;

/* y[M, N] = x[M, K] @ W, W dequantized from packed rows. With transpose, w holds N rows of K
 * codes (W is their transpose; groups run along K); without, K rows of N codes (groups run along
 * N). Row r of codes starts at w + r * w_row_words (base/quant_format.h's LSB-first stream);
 * its scales (and biases) are the `groups` entries starting at element r * scale_row_stride of
 * `scales` (`biases`), of scale_dtype: float32/float16/bfloat16 for affine, uint8 codes (E8M0
 * for mxfp4/mxfp8, E4M3 for nvfp4) otherwise. Everything a kernel reads is in these pointers;
 * it writes y only, and scratch as it likes (more of it from the ledger of `device`). */
typedef struct {
  int mode; /* tsr_quant_mode */
  int group_size, bits;
  bool transpose;
  int64_t m, n, k;
  const float *x; /* x[i][j] at x[i * x_row_stride + j]: the input, exactly, in float32 */
  int64_t x_row_stride;
  const uint32_t *w;
  int64_t w_row_words;
  const void *scales, *biases; /* biases NULL unless affine */
  int64_t groups, scale_row_stride;
  tsr_dtype scale_dtype;
  /* Affine weights rounded to the scales' dtype, T(T(s * q) + b), as tsr_dequantize gives them
     (MLX's bits); false for quantized_matmul, whose weights are s * q + b in float32 at every M
     and on every path (quant-spec Part A section 4 lets a matmul skip the rounding, and the
     factored qmv cannot do it; the tiles and the fused GEMM follow, so a result does not depend
     on M). */
  bool round_weights;
  /* Set by qmv's driver (cpu/qmm_fast.c) for nvfp4, whose decode alone reads it: every x is 0 or
     finite of magnitude in [2^-60, 2^60], so that a kernel may multiply codes' values by x before
     the scale (nvfp4's factored form, cpu/qmm_fast_isa.h) without a product leaving float32's
     normal range. False otherwise. */
  bool x_moderate;
  float *y; /* y[i][j] at y[i * y_row_stride + j]: float32 results, rounded later by the caller */
  int64_t y_row_stride;
  float *scratch;    /* at least max(K, N) floats, the kernel's own */
  tsr_device device; /* the op's: where a kernel's further scratch is allocated */
  /* The device's context (cpu/context.h): the pool and instruction set the fast paths use. */
  const struct tsri_cpu_context *cpu;
} tsri_qmm_problem;

typedef void (*tsri_qmm_kernel)(const tsri_qmm_problem *p);

/* Element i of a float32/float16/bfloat16 array (affine scales and biases), widened exactly. */
static inline float tsri_qmm_load_float(const void *base, tsr_dtype dtype, int64_t i) {
  switch (dtype) {
    case TSR_FLOAT16:
      return tsri_f16_to_f32(((const uint16_t *)base)[i]);
    case TSR_BFLOAT16:
      return tsri_bf16_to_f32(((const uint16_t *)base)[i]);
    default:
      return ((const float *)base)[i];
  }
}

/* v rounded to the affine scales' dtype (nearest even; float32 unchanged). */
static inline float tsri_qmm_round_to_scale_dtype(float v, tsr_dtype scale_dtype) {
  switch (scale_dtype) {
    case TSR_FLOAT16:
      return tsri_f16_to_f32(tsri_f32_to_f16(v));
    case TSR_BFLOAT16:
      return tsri_bf16_to_f32(tsri_f32_to_bf16(v));
    default:
      return v;
  }
}

/* The affine weight of `code` in a group with scale s and bias b (widened exactly from the
   scales' dtype T): T(T(s * q) + b), computed in float32 and rounded to T after the product and
   after the sum (never fused), which is T arithmetic exactly (float32 has more than 2p + 2 bits,
   so rounding twice is innocuous for float16's p = 11 and bfloat16's p = 8). Every kernel forms
   affine weights through this (or bit-identically). */
/* The dtype affine weights are rounded to: the scales' for dequantize, none (float32) for matmul.
 */
static inline tsr_dtype tsri_qmm_weight_dtype(const tsri_qmm_problem *p) {
  return p->round_weights ? p->scale_dtype : TSR_FLOAT32;
}

static inline float tsri_qmm_affine_weight(float s, float b, uint32_t code, tsr_dtype scale_dtype) {
  float product = tsri_qmm_round_to_scale_dtype(s * (float)code, scale_dtype);
  return tsri_qmm_round_to_scale_dtype(product + b, scale_dtype);
}

/* Packed row `row` of p's weights dequantized into dst (K floats with transpose, N without). */
void tsri_qmm_dequantize_row(const tsri_qmm_problem *p, int64_t row, float *dst);

/* The scalar reference for p's transpose and mode (never NULL for a valid mode). */
tsri_qmm_kernel tsri_qmm_reference_kernel(bool transpose, int mode);

/* The kernel that runs p: the first fast path whose predicate accepts p, else the reference.
   This is the dispatch point a fast path adds itself to (cpu/qmm.c). */
tsri_qmm_kernel tsri_qmm_choose_kernel(const tsri_qmm_problem *p);

#endif
