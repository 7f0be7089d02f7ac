/* core/value_range.c — integer value ranges known at construction (core/value_range.h). */
#include "core/value_range.h"

#include "base/element.h"
#include "core/views.h"
#include "tessera/testing.h"

static bool integer_dtype(tsr_dtype t) {
  return t == TSR_UINT8 || t == TSR_UINT32 || t == TSR_INT8 || t == TSR_INT32 || t == TSR_INT64;
}

/* The values an integer dtype holds. */
static void dtype_limits(tsr_dtype t, int64_t *low, int64_t *high) {
  switch (t) {
    case TSR_UINT8:
      *low = 0, *high = UINT8_MAX;
      return;
    case TSR_UINT32:
      *low = 0, *high = UINT32_MAX;
      return;
    case TSR_INT8:
      *low = INT8_MIN, *high = INT8_MAX;
      return;
    case TSR_INT32:
      *low = INT32_MIN, *high = INT32_MAX;
      return;
    default:
      *low = INT64_MIN, *high = INT64_MAX;
      return;
  }
}

void tsri_value_range_from_host(tsr_array *a, const void *data) {
  if (!integer_dtype(a->dtype) || a->size == 0) return;
  size_t item = tsr_dtype_size(a->dtype);
  int64_t low = INT64_MAX, high = INT64_MIN;
  for (int64_t i = 0; i < a->size; i++) {
    int64_t v = tsri_element_load_i64((const unsigned char *)data + (size_t)i * item, a->dtype);
    low = v < low ? v : low;
    high = v > high ? v : high;
  }
  a->range_known = true;
  a->range_min = low;
  a->range_max = high;
}

void tsri_value_range_inherit(tsr_array *node) {
  if (node->ninputs < 1 || !integer_dtype(node->dtype)) return;
  const tsr_array *in = node->inputs[0];
  bool same_values = tsri_primitive_is_view(node->primitive) &&
                     node->primitive != TSRI_PRIM_QUANT_PART; /* a quantized blob's parts */
  bool moves = node->primitive == TSRI_PRIM_COPY || node->primitive == TSRI_PRIM_ASTYPE;
  if (!in->range_known || !(same_values || moves)) return;
  int64_t low, high;
  dtype_limits(node->dtype, &low, &high);
  if (in->range_min < low || in->range_max > high) return; /* a conversion would wrap */
  node->range_known = true;
  node->range_min = in->range_min;
  node->range_max = in->range_max;
}

bool tsri_value_range_within(const tsr_array *a, int64_t low, int64_t high) {
  return a->range_known && a->range_min >= low && a->range_max < high;
}

bool tsr_testing_array_value_range(const tsr_array *a, int64_t *min, int64_t *max) {
  if (!a || !a->range_known) return false;
  if (min) *min = a->range_min;
  if (max) *max = a->range_max;
  return true;
}
