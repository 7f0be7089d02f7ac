/* cpu/copy.c — the copy kernel: any layout of the input into a fresh contiguous buffer. */
#include "cpu/kernels.h"

#include <string.h>

#include "cpu/strided.h"

static void copy_row(const tsri_op *op, const unsigned char *src, int64_t src_stride,
                     unsigned char *dst, int64_t n, void *ctx) {
  (void)ctx;
  int64_t element = (int64_t)tsr_dtype_size(op->out.dtype);
  for (int64_t i = 0; i < n; i++)
    memcpy(dst + i * element, src + i * src_stride * element, (size_t)element);
}

static tsr_status cpu_copy(const tsri_op *op) {
  if (op->out.size == 0) return TSR_OK;
  const tsri_view *in = &op->in[0];
  size_t element = tsr_dtype_size(op->out.dtype);
  const unsigned char *src = (const unsigned char *)in->data;
  unsigned char *dst = (unsigned char *)op->out.data;
  if (tsri_view_is_contiguous(in)) {
    memcpy(dst, src + in->offset * (int64_t)element, (size_t)op->out.size * element);
    return TSR_OK;
  }
  tsri_for_each_unary_row(op, copy_row, NULL);
  return TSR_OK;
}

void tsri_cpu_register_copy(tsri_kernel_fn *table) {
  table[TSRI_PRIM_COPY] = cpu_copy;
}
