/* cuda/quant.c — quantize and dequantize on the GPU (cuda/kernels/quantize.cuh: one thread per
 * group; cuda/kernels/dequantize_any.cuh: one thread per chunk of a group), bit for bit with the
 * CPU reference (cpu/quant.c) for every mode, bit width, group size and float dtype, the nvfp4
 * global scale, and the NaN/Inf rules of docs/quant-rules.md. Strided inputs are gathered packed
 * first (cuda/packed.h). Also the area's registration; the matmuls are cuda/qmm.c's. */
#include "cuda/quant.h"

#include <stdio.h>

#include "base/quant_format.h"
#include "base/status.h"
#include "cuda/launch.h"
#include "cuda/packed.h"
#include "ops/quant.h"

#define QUANTIZE_THREADS 128
#define DEQUANTIZE_THREADS 256

/* Mirrors struct tsr_quantize_args in quantize.cuh. */
typedef struct {
  int64_t groups;
  int64_t scales_offset, biases_offset;
  float scale_enc;
  int has_global_scale;
} quantize_args;

/* Mirrors struct tsr_dequantize_args in dequantize_any.cuh. */
typedef struct {
  int64_t size;
  float global_factor;
  int has_global_scale;
} dequantize_args;

/* One thread per group of w (gathered packed when strided), writing w_q, scales and biases into
   the blob at the params' offsets. */
static tsr_status cuda_quantize(const tsri_op *op) {
  if (op->out.size == 0) return TSR_OK;
  const tsri_quantize_params *q = TSRI_PARAMS(op, tsri_quantize_params);
  const tsri_view *w = &op->in[0];
  quantize_args a = {.groups = q->rows * (q->k / q->group_size),
                     .scales_offset = q->scales_offset,
                     .biases_offset = q->biases_offset,
                     .scale_enc = 1.0f,
                     .has_global_scale = q->has_global_scale};
  if (a.groups == 0) return TSR_OK;
  /* The CPU's float32 division, so both backends scale by the same value. */
  if (q->has_global_scale) a.scale_enc = TSRI_QF_NVFP4_SCALE_NUMERATOR / q->global_scale;
  tsri_cuda_packed src;
  tsr_status status = tsri_cuda_packed_get(op, w, "quantize", &src);
  if (status == TSR_OK) status = tsri_cuda_poison_output(op);
  if (status == TSR_OK) {
    char options[128];
    snprintf(options, sizeof options,
             "-DTSR_QF_MODE=%d -DTSR_QF_BITS=%d -DTSR_QF_GROUP_SIZE=%d -DTSR_Q_DTYPE=%d", q->mode,
             q->bits, q->group_size, (int)w->dtype);
    void *args[] = {&a, (void *)&src.data, (void *)&op->out.data};
    status = tsri_cuda_launch(op, "quantize", options,
                              tsri_dim3(tsri_cuda_blocks_for(a.groups, QUANTIZE_THREADS)),
                              tsri_dim3(QUANTIZE_THREADS), 0, args);
  }
  tsri_cuda_packed_done(op, &src);
  return status;
}

/* A chunk of a group per thread; w_q, scales and biases gathered packed when strided. Unrounded:
   a matmul's affine weights into float32 (dequantize_any.cuh's TSR_DQ_UNROUNDED). */
static tsr_status dequantize(const tsri_op *op, bool unrounded) {
  if (op->out.size == 0) return TSR_OK;
  const tsri_dequantize_params *p = TSRI_PARAMS(op, tsri_dequantize_params);
  const tsri_view *w_q = &op->in[0], *scales = &op->in[1];
  const tsri_view *biases = op->ninputs > 2 ? &op->in[2] : NULL;
  dequantize_args a = {
      .size = op->out.size, .global_factor = 1.0f, .has_global_scale = p->has_global_scale};
  /* float32(g / 2688), as cpu/quant.c's group_scale computes it. */
  if (p->has_global_scale) a.global_factor = p->global_scale / TSRI_QF_NVFP4_SCALE_NUMERATOR;
  tsri_cuda_packed packed_w = {0}, packed_scales = {0}, packed_biases = {0};
  tsr_status status = tsri_cuda_packed_get(op, w_q, "dequantize", &packed_w);
  if (status == TSR_OK) status = tsri_cuda_packed_get(op, scales, "dequantize", &packed_scales);
  if (status == TSR_OK && biases)
    status = tsri_cuda_packed_get(op, biases, "dequantize", &packed_biases);
  if (status == TSR_OK) status = tsri_cuda_poison_output(op);
  if (status == TSR_OK) {
    char options[192];
    snprintf(options, sizeof options,
             "-DTSR_QF_MODE=%d -DTSR_QF_BITS=%d -DTSR_QF_GROUP_SIZE=%d -DTSR_S_DTYPE=%d "
             "-DTSR_OUT_DTYPE=%d%s",
             p->mode, p->bits, p->group_size, (int)scales->dtype, (int)op->out.dtype,
             unrounded ? " -DTSR_DQ_UNROUNDED=1" : "");
    void *args[] = {&a, (void *)&packed_w.data, (void *)&packed_scales.data,
                    (void *)&packed_biases.data, (void *)&op->out.data};
    int64_t chunks = a.size / (p->bits == 4 || p->bits == 8 ? 8
                               : p->bits == 2               ? 16
                                                            : 32); /* DQ_CHUNK */
    status = tsri_cuda_launch(op, "dequantize_any", options,
                              tsri_dim3(tsri_cuda_blocks_for(chunks, DEQUANTIZE_THREADS)),
                              tsri_dim3(DEQUANTIZE_THREADS), 0, args);
  }
  tsri_cuda_packed_done(op, &packed_w);
  tsri_cuda_packed_done(op, &packed_scales);
  tsri_cuda_packed_done(op, &packed_biases);
  return status;
}

tsr_status tsri_cuda_dequantize(const tsri_op *op) {
  return dequantize(op, false);
}

tsr_status tsri_cuda_dequantize_weights(const tsri_op *op) {
  const tsri_dequantize_params *p = TSRI_PARAMS(op, tsri_dequantize_params);
  return dequantize(op, p->mode == TSRI_QF_AFFINE && op->out.dtype == TSR_FLOAT32);
}

/* Every mode, bit width, group size and dtype the ops accept: no supports() refusal. */
void tsri_cuda_register_quant(tsri_kernel_fn *table, tsri_cuda_supports_fn *supports) {
  table[TSRI_PRIM_QUANTIZE] = cuda_quantize;
  table[TSRI_PRIM_DEQUANTIZE] = tsri_cuda_dequantize;
  tsri_cuda_register_qmm(table, supports);
}
