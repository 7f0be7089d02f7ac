/* base/shape.c — the checked product of dimensions (base/shape.h). Not shape validation with
 * messages (core/array.c's tsri_shape_check does that), only the arithmetic. */
#include "base/shape.h"

#include <stdio.h>

bool tsri_dims_count(const int64_t *dims, int n, int64_t item_bytes, int64_t *count) {
  if (item_bytes < 1) return false;
  int64_t nonzero = 1; /* the product of the non-zero dimensions, times item_bytes at the end */
  bool any_zero = false;
  for (int i = 0; i < n; i++) {
    if (dims[i] < 0) return false;
    if (dims[i] == 0) {
      any_zero = true;
      continue;
    }
    if (nonzero > INT64_MAX / dims[i]) return false;
    nonzero *= dims[i];
  }
  if (nonzero > INT64_MAX / item_bytes) return false;
  *count = any_zero ? 0 : nonzero;
  return true;
}

/* Only for shapes tsri_dims_count accepted: every product here is a product of non-zero
   dimensions of such a shape, so none overflows. */
void tsri_contiguous_strides(const int64_t *shape, int ndim, int64_t *strides) {
  int64_t stride = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    strides[i] = stride;
    stride *= shape[i] > 0 ? shape[i] : 1;
  }
}

const char *tsri_shape_str(const int64_t *shape, int ndim, char *buf, size_t len) {
  size_t used = (size_t)snprintf(buf, len, "[");
  for (int i = 0; i < ndim && used < len; i++)
    used += (size_t)snprintf(buf + used, len - used, i ? ", %lld" : "%lld", (long long)shape[i]);
  if (used < len) snprintf(buf + used, len - used, "]");
  return buf;
}
