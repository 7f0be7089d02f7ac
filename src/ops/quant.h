/* ops/quant.h — the parameters of the quantize and dequantize nodes (ops/quant.c builds them,
 * each backend's kernels read them). Not the formats themselves: base/quant_format.h. */
#ifndef TSR_OPS_QUANT_H
#define TSR_OPS_QUANT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/primitive.h"

/* Each part of the quantize blob starts at a multiple of this many bytes, so the element offset
   of every part divides exactly whatever its dtype. */
#define TSRI_QUANT_PART_ALIGN 64

typedef enum {
  TSRI_QUANT_PART_WQ = 0,
  TSRI_QUANT_PART_SCALES = 1,
  TSRI_QUANT_PART_BIASES = 2
} tsri_quant_part;

/* TSRI_PRIM_QUANTIZE: input w [..., R, K] (any layout); output a uint8 blob of `blob_bytes`
   holding, row-major over the rows of w: w_q uint32 [rows, K * bits / 32] at byte 0, scales
   [rows, K / group_size] (w's dtype for affine, uint8 otherwise) at scales_offset, and for
   affine biases like the scales at biases_offset. */
typedef struct {
  int mode; /* tsr_quant_mode */
  int group_size, bits;
  bool has_global_scale; /* nvfp4 only */
  float global_scale;
  int64_t rows, k;
  int64_t scales_offset, biases_offset; /* bytes; biases_offset 0 when there are none */
} tsri_quantize_params;

/* TSRI_PRIM_QUANT_PART: its parameters are core/views.h's tsri_quant_part_params. */

/* TSRI_PRIM_DEQUANTIZE: inputs w_q [..., R, K * bits / 32] uint32, scales [..., R, K / gs] and,
   for affine, biases like the scales (all any layout); output [..., R, K] of the node's dtype. */
typedef struct {
  int mode; /* tsr_quant_mode */
  int group_size, bits;
  bool has_global_scale; /* nvfp4 only */
  float global_scale;
} tsri_dequantize_params;

#endif
