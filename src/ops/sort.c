/* ops/sort.c — cumsum, argsort, argpartition and topk: argument checks, output shapes and dtypes.
 * The kernels are the backends' (cpu/sort.c). topk is two nodes, since a node has one output:
 * the int32 indices (TOPK, a partial selection) and the values gathered from them by
 * tsr_take_along_axis, so evaluating both selects once. */
#include "ops/sort.h"

#include <string.h>

#include "base/dtype.h"
#include "base/status.h"
#include "ops/layout.h"
#include "ops/reduce.h"
#include "tessera/ops.h"

/* The common checks: out and a non-NULL, the axis in range (normalized into *resolved). */
static tsr_status check_args(const char *what, tsr_array **out, tsr_array *a, int axis,
                             int *resolved) {
  if (!out || !a) return tsri_error(TSR_ERR_INVALID, "%s: %s is NULL", what, !out ? "out" : "a");
  return tsri_axis_resolve(what, axis, a, resolved);
}

tsr_status tsr_cumsum(tsr_array **out, tsr_array *a, int axis, bool reverse, bool inclusive,
                      tsr_stream *s) {
  tsri_cumsum_params params = {.reverse = reverse, .inclusive = inclusive};
  tsr_status status = check_args("cumsum", out, a, axis, &params.axis);
  if (status != TSR_OK) return status;
  /* Float dtypes keep theirs; integer and bool running sums are int64 (wrapping), as sum. */
  tsr_dtype dtype = tsri_dtype_is_float(a->dtype) ? a->dtype : TSR_INT64;
  tsr_array *inputs[1] = {a};
  return tsri_node_new(out, TSRI_PRIM_CUMSUM, &params, sizeof params, dtype, a->shape, a->ndim,
                       inputs, 1, s);
}

/* An int32-index node over `a` with the axis resized to `length`. */
static tsr_status index_node(tsri_primitive primitive, tsr_array **out, tsr_array *a,
                             const tsri_sort_params *params, int64_t length, tsr_stream *s) {
  int64_t shape[TSR_MAX_NDIM];
  memcpy(shape, a->shape, (size_t)a->ndim * sizeof *shape);
  shape[params->axis] = length;
  tsr_array *inputs[1] = {a};
  return tsri_node_new(out, primitive, params, sizeof *params, TSR_INT32, shape, a->ndim, inputs, 1,
                       s);
}

tsr_status tsr_argsort(tsr_array **out, tsr_array *a, int axis, tsr_stream *s) {
  tsri_sort_params params = {0};
  tsr_status status = check_args("argsort", out, a, axis, &params.axis);
  if (status == TSR_OK) status = tsri_int32_index_check("argsort", a, params.axis);
  if (status != TSR_OK) return status;
  return index_node(TSRI_PRIM_ARGSORT, out, a, &params, a->shape[params.axis], s);
}

tsr_status tsr_argpartition(tsr_array **out, tsr_array *a, int kth, int axis, tsr_stream *s) {
  const char *what = "argpartition";
  tsri_sort_params params = {0};
  tsr_status status = check_args(what, out, a, axis, &params.axis);
  if (status == TSR_OK) status = tsri_int32_index_check(what, a, params.axis);
  if (status != TSR_OK) return status;
  int64_t n = a->shape[params.axis];
  params.kth = kth < 0 ? kth + n : kth; /* negative kth counts from the end, as NumPy's */
  if (params.kth < 0 || params.kth >= n)
    return tsri_error(TSR_ERR_INVALID, "%s: kth %d out of range for axis %d of size %lld", what,
                      kth, axis, (long long)n);
  return index_node(TSRI_PRIM_ARGPARTITION, out, a, &params, n, s);
}

tsr_status tsr_topk(tsr_array **values, tsr_array **indices, tsr_array *a, int k, int axis,
                    tsr_stream *s) {
  const char *what = "topk";
  if (!values || !indices || !a)
    return tsri_error(TSR_ERR_INVALID, "%s: %s is NULL", what,
                      !values    ? "values"
                      : !indices ? "indices"
                                 : "a");
  tsri_sort_params params = {.kth = k};
  tsr_status status = tsri_axis_resolve(what, axis, a, &params.axis);
  if (status == TSR_OK) status = tsri_int32_index_check(what, a, params.axis);
  if (status != TSR_OK) return status;
  int64_t n = a->shape[params.axis];
  if (k < 1 || k > n)
    return tsri_error(TSR_ERR_INVALID, "%s: k %d outside [1, %lld] (the size of axis %d)", what, k,
                      (long long)n, axis);
  tsr_array *picked = NULL, *gathered = NULL;
  status = index_node(TSRI_PRIM_TOPK, &picked, a, &params, k, s);
  if (status != TSR_OK) return status;
  status = tsr_take_along_axis(&gathered, a, picked, params.axis, s);
  if (status != TSR_OK) {
    tsr_array_release(picked);
    return status;
  }
  *values = gathered;
  *indices = picked;
  return TSR_OK;
}
