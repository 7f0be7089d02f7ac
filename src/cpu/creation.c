/* cpu/creation.c — CPU kernels of ops/creation.c: full, arange and astype over any input layout.
 * The conversion rules live in cpu/convert.h; this file only walks the elements. */
#include "cpu/kernels.h"

#include <string.h>

#include "cpu/convert.h"
#include "cpu/strided.h"
#include "ops/creation.h"

/* One element converted, then repeated by doubling copies. */
static tsr_status cpu_full(tsr_array *node) {
  tsr_status status = tsri_node_alloc(node);
  if (status != TSR_OK || node->size == 0) return status;
  const tsri_full_params *params = TSRI_PARAMS(node, tsri_full_params);
  unsigned char *data = (unsigned char *)node->buffer->data;
  size_t element = tsr_dtype_size(node->dtype), total = (size_t)node->size * element;
  tsri_cpu_store_f64_element(data, params->dtype, params->value);
  for (size_t filled = element; filled < total; filled *= 2)
    memcpy(data + filled, data, filled < total - filled ? filled : total - filled);
  return TSR_OK;
}

static tsr_status cpu_arange(tsr_array *node) {
  tsr_status status = tsri_node_alloc(node);
  if (status != TSR_OK || node->size == 0) return status;
  const tsri_arange_params *params = TSRI_PARAMS(node, tsri_arange_params);
  unsigned char *data = (unsigned char *)node->buffer->data;
  size_t element = tsr_dtype_size(node->dtype);
  for (int64_t i = 0; i < node->size; i++)
    tsri_cpu_store_f64_element(data + (size_t)i * element, node->dtype,
                               params->start + (double)i * params->step);
  return TSR_OK;
}

static tsr_status cpu_astype(tsr_array *node) {
  tsr_status status = tsri_node_alloc(node);
  if (status != TSR_OK || node->size == 0) return status;
  const tsr_array *in = node->inputs[0];
  const int64_t *strides[2] = {in->strides, node->strides};
  int64_t offsets[2] = {in->offset, 0};
  tsri_row_walker walker;
  tsri_row_walker_init(&walker, node, 2, strides, offsets);
  int last = node->ndim - 1;
  int64_t n = last >= 0 ? node->shape[last] : 1, stride = last >= 0 ? in->strides[last] : 0;
  size_t in_size = tsr_dtype_size(in->dtype), out_size = tsr_dtype_size(node->dtype);
  const unsigned char *src = (const unsigned char *)in->buffer->data;
  unsigned char *dst = (unsigned char *)node->buffer->data;
  do {
    tsri_cpu_convert_row(src + walker.offset[0] * (int64_t)in_size, in->dtype, stride, n,
                         dst + walker.offset[1] * (int64_t)out_size, node->dtype);
  } while (tsri_row_walker_next(&walker));
  return TSR_OK;
}

void tsri_cpu_register_creation(tsri_kernel_fn *table) {
  table[TSRI_PRIM_FULL] = cpu_full;
  table[TSRI_PRIM_ARANGE] = cpu_arange;
  table[TSRI_PRIM_ASTYPE] = cpu_astype;
}
