/* ops/binary.c — elementwise binary ops: argument checks, broadcasting and promotion. The
 * kernels are the backends' (cpu/binary.c). */
#include "base/dtype.h"
#include "base/status.h"
#include "core/array.h"
#include "ops/broadcast.h"
#include "tessera/ops.h"

static tsr_status binary_op(const char *what, tsri_primitive primitive, tsr_array **out,
                            tsr_array *a, tsr_array *b, tsr_stream *s) {
  if (!out || !a || !b)
    return tsri_error(TSR_ERR_INVALID, "%s: %s is NULL", what, !out ? "out" : !a ? "a" : "b");
  int64_t shape[TSR_MAX_NDIM];
  int ndim = 0;
  tsr_status status = tsri_broadcast_shapes(what, a, b, shape, &ndim);
  if (status != TSR_OK) return status;
  tsr_array *inputs[2] = {a, b};
  return tsri_node_new(out, primitive, NULL, tsri_dtype_promote(a->dtype, b->dtype), shape, ndim,
                       inputs, 2, s);
}

tsr_status tsr_add(tsr_array **out, tsr_array *a, tsr_array *b, tsr_stream *s) {
  return binary_op("add", TSRI_PRIM_ADD, out, a, b, s);
}
