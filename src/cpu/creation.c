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

static void astype_row(const tsr_array *node, const unsigned char *src, int64_t src_stride,
                       unsigned char *dst, int64_t n, void *ctx) {
  (void)ctx;
  tsri_cpu_convert_row(src, node->inputs[0]->dtype, src_stride, n, dst, node->dtype);
}

static tsr_status cpu_astype(tsr_array *node) {
  tsr_status status = tsri_node_alloc(node);
  if (status != TSR_OK || node->size == 0) return status;
  tsri_for_each_unary_row(node, astype_row, NULL);
  return TSR_OK;
}

void tsri_cpu_register_creation(tsri_kernel_fn *table) {
  table[TSRI_PRIM_FULL] = cpu_full;
  table[TSRI_PRIM_ARANGE] = cpu_arange;
  table[TSRI_PRIM_ASTYPE] = cpu_astype;
}
