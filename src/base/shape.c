/* base/shape.c — the checked product of dimensions (base/shape.h). Not shape validation with
 * messages (core/array.c's tsri_shape_check does that), only the arithmetic. */
#include "base/shape.h"

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
