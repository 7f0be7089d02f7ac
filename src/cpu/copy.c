/* cpu/copy.c — the copy kernel: any layout of the input into a fresh contiguous buffer. */
#include "cpu/kernels.h"

#include <string.h>

#include "cpu/strided.h"

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
  const int64_t *strides[2] = {in->strides, node->strides};
  int64_t offsets[2] = {in->offset, 0};
  tsri_row_walker walker;
  tsri_row_walker_init(&walker, node, 2, strides, offsets);
  int last = node->ndim - 1;
  int64_t n = node->shape[last], stride = in->strides[last];
  do {
    for (int64_t i = 0; i < n; i++)
      memcpy(dst + (walker.offset[1] + i) * (int64_t)element,
             src + (walker.offset[0] + i * stride) * (int64_t)element, element);
  } while (tsri_row_walker_next(&walker));
  return TSR_OK;
}

void tsri_cpu_register_copy(tsri_kernel_fn *table) {
  table[TSRI_PRIM_COPY] = cpu_copy;
}
