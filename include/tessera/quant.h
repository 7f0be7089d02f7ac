/* tessera/quant.h — MLX's quantized formats, bit for bit: affine (2, 3, 4, 5, 6, 8 bits; group
 * 32, 64, 128; scales and biases of w's dtype), mxfp4 and mxfp8 (group 32, E8M0 uint8 scales),
 * nvfp4 (group 16, E4M3 uint8 scales, an optional float32 global scale). shared/quant-spec.md
 * gives the formats; docs/quant-rules.md what tessera does where MLX is undefined or differs.
 *
 *   tsr_array *w_q = NULL, *scales = NULL, *biases = NULL, *y = NULL;
 *   // w: [N, K] float16; 0, 0 = the mode's default group size and bits (64, 4 for affine)
 *   if (tsr_quantize(&w_q, &scales, &biases, w, 0, 0, TSR_QUANT_AFFINE, NULL) != TSR_OK) ...;
 *   // x: [M, K]; y = x @ dequantize(w).T, accumulated in float32, rounded once
 *   if (tsr_quantized_matmul(&y, x, w_q, scales, biases, true, 64, 4, TSR_QUANT_AFFINE, NULL)
 *       != TSR_OK) ...;
 *
 * `group_size` 0 and `bits` 0 mean the mode's default. `biases` is produced and required for
 * TSR_QUANT_AFFINE only; for the other modes quantize sets *biases = NULL and the others take
 * NULL. `transpose` true computes x @ dequantize(w).T with w of logical shape [N, K] (groups
 * along K); false computes x @ dequantize(w) with w of logical shape [K, N] (groups along N).
 * Every argument is validated when the op is built (TSR_ERR_INVALID naming the values).
 *
 * Quantize is bit for bit mlx-cpu 0.32.4 on finite input. Where MLX is undefined, tessera's rule:
 * NaN never spreads (group min/max/amax skip it; a NaN element gets the code 0.0 would get), and
 * ±Inf saturates (it counts as the largest finite value of its sign in w's dtype; in fp modes it
 * gets the largest code of its sign). Decoding: E4M3 0x7F/0xFF are NaN, E8M0 0 is 2^-127 and 255
 * is +Inf (docs/quant-rules.md).
 */
#ifndef TESSERA_QUANT_H
#define TESSERA_QUANT_H

#include "tessera/array.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  TSR_QUANT_AFFINE = 0,
  TSR_QUANT_MXFP4 = 1,
  TSR_QUANT_MXFP8 = 2,
  TSR_QUANT_NVFP4 = 3
} tsr_quant_mode;

/* w [..., R, K] float32/float16/bfloat16, K a multiple of the group size: w_q uint32
   [..., R, K * bits / 32], scales [..., R, K / group_size] (w's dtype for affine, uint8
   otherwise), biases like scales (affine) or NULL. */
TSR_API tsr_status tsr_quantize(tsr_array **w_q, tsr_array **scales, tsr_array **biases,
                                tsr_array *w, int group_size, int bits, tsr_quant_mode mode,
                                tsr_stream *s);
/* The inverse: [..., R, K] of `dtype` (a float dtype). */
TSR_API tsr_status tsr_dequantize(tsr_array **out, tsr_array *w_q, tsr_array *scales,
                                  tsr_array *biases, int group_size, int bits, tsr_quant_mode mode,
                                  tsr_dtype dtype, tsr_stream *s);
/* x [..., M, K] (or 1-D [K]) float: x @ dequantize(w).T (transpose) or x @ dequantize(w); batch
   axes broadcast when both x and w have them. Output dtype: x's (affine: promoted with the
   scales' dtype). Float32 accumulation for every dtype. */
TSR_API tsr_status tsr_quantized_matmul(tsr_array **out, tsr_array *x, tsr_array *w_q,
                                        tsr_array *scales, tsr_array *biases, bool transpose,
                                        int group_size, int bits, tsr_quant_mode mode,
                                        tsr_stream *s);
/* nvfp4 with a float32 tensor-wide scale g (MLX's `global_scale`): quantize encodes with 2688/g,
   dequantize multiplies by g/2688. quantized_matmul takes no global scale: scale its output. */
TSR_API tsr_status tsr_quantize_nvfp4_scaled(tsr_array **w_q, tsr_array **scales, tsr_array *w,
                                             float global_scale, tsr_stream *s);
TSR_API tsr_status tsr_dequantize_nvfp4_scaled(tsr_array **out, tsr_array *w_q, tsr_array *scales,
                                               float global_scale, tsr_dtype dtype, tsr_stream *s);
/* Gathered (MoE) quantized matmul: lhs_indices pick x's batch entries, rhs_indices w's (flat
   indices over the batch axes; NULL = all, in order); the output is broadcast(lhs, rhs).shape +
   [M, N]. sorted_indices promises rhs_indices are sorted (a hint, never trusted for bounds). */
TSR_API tsr_status tsr_gather_qmm(tsr_array **out, tsr_array *x, tsr_array *w_q, tsr_array *scales,
                                  tsr_array *biases, tsr_array *lhs_indices /* or NULL */,
                                  tsr_array *rhs_indices /* or NULL */, bool transpose,
                                  int group_size, int bits, tsr_quant_mode mode,
                                  bool sorted_indices, tsr_stream *s);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_QUANT_H */
