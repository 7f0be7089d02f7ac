/* cpu/layout.c — CPU kernels of ops/layout.c: concatenate copies each piece into its place (the
 * view primitives have no kernel: core runs them, core/views.c). Also the strided block copy
 * (cpu/layout.h) that cpu/indexing.c reuses. */
#include "cpu/layout.h"

#include <string.h>

#include "cpu/kernels.h"
#include "ops/layout.h"

static void copy_row(unsigned char *dst, int64_t dst_stride, const unsigned char *src,
                     int64_t src_stride, int64_t n, size_t element) {
  if (dst_stride == 1 && src_stride == 1) {
    memcpy(dst, src, (size_t)n * element);
    return;
  }
  int64_t dst_step = dst_stride * (int64_t)element, src_step = src_stride * (int64_t)element;
  for (int64_t i = 0; i < n; i++)
    memcpy(dst + i * dst_step, src + i * src_step, element);
}

void tsri_cpu_copy_block(const tsri_cpu_block *dst, const tsri_cpu_block *src, const int64_t *shape,
                         int ndim, size_t element) {
  for (int d = 0; d < ndim; d++)
    if (shape[d] == 0) return;
  if (ndim == 0) {
    memcpy(dst->base + dst->offset * (int64_t)element, src->base + src->offset * (int64_t)element,
           element);
    return;
  }
  int last = ndim - 1;
  int64_t index[TSR_MAX_NDIM] = {0};
  int64_t dst_offset = dst->offset, src_offset = src->offset;
  for (;;) {
    copy_row(dst->base + dst_offset * (int64_t)element, dst->strides[last],
             src->base + src_offset * (int64_t)element, src->strides[last], shape[last], element);
    int d = last - 1;
    for (; d >= 0; d--) { /* the odometer over every axis but the last */
      dst_offset += dst->strides[d];
      src_offset += src->strides[d];
      if (++index[d] < shape[d]) break;
      dst_offset -= shape[d] * dst->strides[d];
      src_offset -= shape[d] * src->strides[d];
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

static tsr_status cpu_concatenate(const tsri_op *op) {
  if (op->out.size == 0) return TSR_OK;
  int axis = TSRI_PARAMS(op, tsri_concatenate_params)->axis;
  size_t element = tsr_dtype_size(op->out.dtype);
  tsri_cpu_block dst = {op->out.data, op->out.offset, op->out.strides};
  for (int i = 0; i < op->ninputs; i++) {
    const tsri_view *in = &op->in[i];
    if (in->size > 0) {
      tsri_cpu_block src = {in->data, in->offset, in->strides};
      tsri_cpu_copy_block(&dst, &src, in->shape, in->ndim, element);
    }
    dst.offset += in->shape[axis] * op->out.strides[axis];
  }
  return TSR_OK;
}

void tsri_cpu_register_layout(tsri_kernel_fn *table) {
  table[TSRI_PRIM_CONCATENATE] = cpu_concatenate;
}
