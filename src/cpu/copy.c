/* cpu/copy.c — the copy kernel: any layout of the input into a fresh contiguous buffer. */
#include "cpu/kernels.h"

#include <string.h>

#include "cpu/strided.h"

static void copy_row(const tsr_array *node, const unsigned char *src, int64_t src_stride,
                     unsigned char *dst, int64_t n, void *ctx) {
  (void)ctx;
  int64_t element = (int64_t)tsr_dtype_size(node->dtype);
  for (int64_t i = 0; i < n; i++)
    memcpy(dst + i * element, src + i * src_stride * element, (size_t)element);
}

static tsr_status cpu_copy(tsr_array *node) {
  tsr_status status = tsri_node_alloc(node);
  if (status != TSR_OK || node->size == 0) return status;
  const tsr_array *in = node->inputs[0];
  size_t element = tsr_dtype_size(node->dtype);
  const unsigned char *src = (const unsigned char *)in->buffer->data;
  unsigned char *dst = (unsigned char *)node->buffer->data;
  if (tsri_array_is_contiguous(in)) {
    memcpy(dst, src + in->offset * (int64_t)element, (size_t)node->size * element);
    return TSR_OK;
  }
  tsri_for_each_unary_row(node, copy_row, NULL);
  return TSR_OK;
}

void tsri_cpu_register_copy(tsri_kernel_fn *table) {
  table[TSRI_PRIM_COPY] = cpu_copy;
}
