/* ops/broadcast.c — broadcast shape inference (aligned at the last axis; equal or 1). */
#include "ops/broadcast.h"

#include "base/status.h"

tsr_status tsri_broadcast_shapes(const char *what, const tsr_array *a, const tsr_array *b,
                                 int64_t *shape, int *ndim) {
  int n = a->ndim > b->ndim ? a->ndim : b->ndim;
  for (int i = 0; i < n; i++) {
    int ia = a->ndim - n + i, ib = b->ndim - n + i;
    int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      char sa[96], sb[96];
      return tsri_error(
          TSR_ERR_INVALID, "%s: shapes %s and %s do not broadcast (axis %d: %lld vs %lld)", what,
          tsri_shape_str(a->shape, a->ndim, sa, sizeof sa),
          tsri_shape_str(b->shape, b->ndim, sb, sizeof sb), i, (long long)da, (long long)db);
    }
    shape[i] = da == 1 ? db : da;
  }
  *ndim = n;
  return TSR_OK;
}
