/* cpu/creation.c — CPU kernels of ops/creation.c: full, arange and astype over any input layout.
 * The conversion rules live in cpu/convert.h; this file only walks the elements. */
#include "cpu/kernels.h"

#include <string.h>

#include "cpu/convert.h"
#include "cpu/strided.h"
#include "ops/creation.h"

/* One element converted, then repeated by doubling copies. */
static tsr_status cpu_full(const tsri_op *op) {
  if (op->out.size == 0) return TSR_OK;
  const tsri_full_params *params = TSRI_PARAMS(op, tsri_full_params);
  unsigned char *data = (unsigned char *)op->out.data;
  size_t element = tsr_dtype_size(op->out.dtype), total = (size_t)op->out.size * element;
  tsri_cpu_store_f64_element(data, params->dtype, params->value);
  for (size_t filled = element; filled < total; filled *= 2)
    memcpy(data + filled, data, filled < total - filled ? filled : total - filled);
  return TSR_OK;
}

static tsr_status cpu_arange(const tsri_op *op) {
  if (op->out.size == 0) return TSR_OK;
  const tsri_arange_params *params = TSRI_PARAMS(op, tsri_arange_params);
  unsigned char *data = (unsigned char *)op->out.data;
  size_t element = tsr_dtype_size(op->out.dtype);
  for (int64_t i = 0; i < op->out.size; i++)
    tsri_cpu_store_f64_element(data + (size_t)i * element, op->out.dtype,
                               params->start + (double)i * params->step);
  return TSR_OK;
}

static void astype_row(const tsri_op *op, const unsigned char *src, int64_t src_stride,
                       unsigned char *dst, int64_t n, void *ctx) {
  (void)ctx;
  tsri_cpu_convert_row(src, op->in[0].dtype, src_stride, n, dst, op->out.dtype);
}

static tsr_status cpu_astype(const tsri_op *op) {
  if (op->out.size == 0) return TSR_OK;
  tsri_for_each_unary_row(op, astype_row, NULL);
  return TSR_OK;
}

void tsri_cpu_register_creation(tsri_kernel_fn *table) {
  table[TSRI_PRIM_FULL] = cpu_full;
  table[TSRI_PRIM_ARANGE] = cpu_arange;
  table[TSRI_PRIM_ASTYPE] = cpu_astype;
}
