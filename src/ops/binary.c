/* ops/binary.c — elementwise binary ops and where: argument checks, broadcasting and the result
 * dtype. The kernels are the backends' (cpu/binary.c, cpu/compare.c).
 *
 * Result dtypes: the promoted dtype of a and b (tessera/ops.h) for add, subtract, multiply,
 * maximum, minimum and power; divide gives float32 when that is an integer or bool; comparisons
 * give bool (computed in the promoted dtype); where gives the promoted dtype of a and b, whatever
 * cond's dtype.
 */
#include "base/dtype.h"
#include "base/status.h"
#include "core/array.h"
#include "ops/broadcast.h"
#include "tessera/ops.h"

typedef enum { RESULT_PROMOTED, RESULT_FLOAT, RESULT_BOOL } result_kind;

static tsr_status binary_op(const char *what, tsri_primitive primitive, result_kind kind,
                            tsr_array **out, tsr_array *a, tsr_array *b, tsr_stream *s) {
  if (!out || !a || !b)
    return tsri_error(TSR_ERR_INVALID, "%s: %s is NULL", what, !out ? "out" : !a ? "a" : "b");
  int64_t shape[TSR_MAX_NDIM];
  int ndim = 0;
  tsr_status status = tsri_broadcast_shapes(what, a, b, shape, &ndim);
  if (status != TSR_OK) return status;
  tsr_dtype dtype = tsri_dtype_promote(a->dtype, b->dtype);
  if (kind == RESULT_FLOAT && !tsri_dtype_is_float(dtype)) dtype = TSR_FLOAT32;
  if (kind == RESULT_BOOL) dtype = TSR_BOOL;
  tsr_array *inputs[2] = {a, b};
  return tsri_node_new(out, primitive, NULL, 0, dtype, shape, ndim, inputs, 2, s);
}

#define BINARY_OP(name, primitive, kind)                                              \
  tsr_status tsr_##name(tsr_array **out, tsr_array *a, tsr_array *b, tsr_stream *s) { \
    return binary_op(#name, primitive, kind, out, a, b, s);                           \
  }

BINARY_OP(add, TSRI_PRIM_ADD, RESULT_PROMOTED)
BINARY_OP(subtract, TSRI_PRIM_SUBTRACT, RESULT_PROMOTED)
BINARY_OP(multiply, TSRI_PRIM_MULTIPLY, RESULT_PROMOTED)
BINARY_OP(divide, TSRI_PRIM_DIVIDE, RESULT_FLOAT)
BINARY_OP(maximum, TSRI_PRIM_MAXIMUM, RESULT_PROMOTED)
BINARY_OP(minimum, TSRI_PRIM_MINIMUM, RESULT_PROMOTED)
BINARY_OP(power, TSRI_PRIM_POWER, RESULT_PROMOTED)
BINARY_OP(equal, TSRI_PRIM_EQUAL, RESULT_BOOL)
BINARY_OP(not_equal, TSRI_PRIM_NOT_EQUAL, RESULT_BOOL)
BINARY_OP(less, TSRI_PRIM_LESS, RESULT_BOOL)
BINARY_OP(less_equal, TSRI_PRIM_LESS_EQUAL, RESULT_BOOL)
BINARY_OP(greater, TSRI_PRIM_GREATER, RESULT_BOOL)
BINARY_OP(greater_equal, TSRI_PRIM_GREATER_EQUAL, RESULT_BOOL)

/* The broadcast shape of cond, a and b, or TSR_ERR_INVALID naming all three shapes. */
static tsr_status broadcast_three(tsr_array *const *in, int64_t *shape, int *ndim) {
  int n = 0;
  for (int k = 0; k < 3; k++)
    n = in[k]->ndim > n ? in[k]->ndim : n;
  for (int i = 0; i < n; i++) {
    int64_t dim = 1;
    for (int k = 0; k < 3; k++) {
      int axis = in[k]->ndim - n + i;
      int64_t d = axis >= 0 ? in[k]->shape[axis] : 1;
      if (d == 1 || d == dim) continue;
      if (dim != 1) {
        char sc[96], sa[96], sb[96];
        return tsri_error(
            TSR_ERR_INVALID,
            "where: shapes %s (cond), %s (a) and %s (b) do not broadcast (axis %d: %lld vs %lld)",
            tsri_shape_str(in[0]->shape, in[0]->ndim, sc, sizeof sc),
            tsri_shape_str(in[1]->shape, in[1]->ndim, sa, sizeof sa),
            tsri_shape_str(in[2]->shape, in[2]->ndim, sb, sizeof sb), i, (long long)dim,
            (long long)d);
      }
      dim = d;
    }
    shape[i] = dim;
  }
  *ndim = n;
  return TSR_OK;
}

tsr_status tsr_where(tsr_array **out, tsr_array *cond, tsr_array *a, tsr_array *b, tsr_stream *s) {
  if (!out || !cond || !a || !b)
    return tsri_error(TSR_ERR_INVALID, "where: %s is NULL",
                      !out    ? "out"
                      : !cond ? "cond"
                      : !a    ? "a"
                              : "b");
  int64_t shape[TSR_MAX_NDIM];
  int ndim = 0;
  tsr_array *inputs[3] = {cond, a, b};
  tsr_status status = broadcast_three(inputs, shape, &ndim);
  if (status != TSR_OK) return status;
  return tsri_node_new(out, TSRI_PRIM_WHERE, NULL, 0, tsri_dtype_promote(a->dtype, b->dtype), shape,
                       ndim, inputs, 3, s);
}
