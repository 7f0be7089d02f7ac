/* core/value_range.c — integer value ranges known at construction (core/value_range.h). */
#include "core/value_range.h"

#include <stdatomic.h>
#include <string.h>

#include "base/element.h"
#include "core/views.h"
#include "memory/buffer.h"
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
  if (!integer_dtype(a->dtype) || a->size == 0 || a->size > TSRI_VALUE_RANGE_MAX_SCAN) return;
  size_t item = tsr_dtype_size(a->dtype);
  int64_t low = INT64_MAX, high = INT64_MIN;
  for (int64_t i = 0; i < a->size; i++) {
    /* Host data need not be aligned (a tensor inside a mapped checkpoint): copied out first. */
    _Alignas(8) unsigned char element[8];
    memcpy(element, (const unsigned char *)data + (size_t)i * item, item);
    int64_t v = tsri_element_load_i64(element, a->dtype);
    low = v < low ? v : low;
    high = v > high ? v : high;
  }
  a->range_known = true;
  a->range_min = low;
  a->range_max = high;
}

/* Whether node's values are its input 0's (views, copies, integer conversions). */
static bool keeps_values(const tsr_array *node) {
  return (tsri_primitive_is_view(node->primitive) &&
          node->primitive != TSRI_PRIM_QUANT_PART) || /* not a quantized blob's parts */
         node->primitive == TSRI_PRIM_COPY ||
         node->primitive == TSRI_PRIM_ASTYPE;
}

bool tsri_value_range_valid(const tsr_array *a) {
  return a->range_known && !(a->buffer && atomic_load(&a->buffer->exposed));
}

void tsri_value_range_inherit(tsr_array *node) {
  if (node->ninputs < 1 || !integer_dtype(node->dtype) || !keeps_values(node)) return;
  const tsr_array *in = node->inputs[0];
  if (!tsri_value_range_valid(in)) return;
  int64_t low, high;
  dtype_limits(node->dtype, &low, &high);
  if (in->range_min < low || in->range_max > high) return; /* a conversion would wrap */
  node->range_known = true;
  node->range_min = in->range_min;
  node->range_max = in->range_max;
}

void tsri_value_range_revalidate(tsr_array *node) {
  if (node->range_known && keeps_values(node) && node->ninputs > 0 &&
      !tsri_value_range_valid(node->inputs[0]))
    node->range_known = false;
}

bool tsr_testing_array_value_range(const tsr_array *a, int64_t *min, int64_t *max) {
  if (!a || !tsri_value_range_valid(a)) return false;
  if (min) *min = a->range_min;
  if (max) *max = a->range_max;
  return true;
}
