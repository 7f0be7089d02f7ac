/* ops/indexing.c — take, take_along_axis and slice_update (static and dynamic): argument checks
 * and shapes. Index values are data, so an index out of range is found by the kernel
 * (cpu/indexing.c), not here; a dynamic start is clamped by the kernel, never an error. */
#include "ops/indexing.h"

#include "base/dtype.h"
#include "base/status.h"
#include "ops/layout.h"
#include "tessera/ops.h"

static tsr_status check_indexing_args(const char *what, tsr_array **out, const tsr_array *a,
                                      const tsr_array *indices, int axis, int *resolved) {
  if (!out || !a || !indices)
    return tsri_error(TSR_ERR_INVALID, "%s: %s is NULL", what, !out ? "out" : !a ? "a" : "indices");
  if (tsri_dtype_is_float(indices->dtype) || indices->dtype == TSR_BOOL)
    return tsri_error(TSR_ERR_INVALID, "%s: indices must have an integer dtype, not %s", what,
                      tsr_dtype_name(indices->dtype));
  return tsri_axis_resolve(what, axis, a, resolved);
}

tsr_status tsr_take(tsr_array **out, tsr_array *a, tsr_array *indices, int axis, tsr_stream *s) {
  int resolved = 0;
  tsr_status status = check_indexing_args("take", out, a, indices, axis, &resolved);
  if (status != TSR_OK) return status;
  int ndim = a->ndim - 1 + indices->ndim;
  char text_a[160], text_i[160];
  if (ndim > TSR_MAX_NDIM)
    return tsri_error(TSR_ERR_INVALID, "take: a %s with indices %s gives %d axes (at most %d)",
                      tsri_shape_str(a->shape, a->ndim, text_a, sizeof text_a),
                      tsri_shape_str(indices->shape, indices->ndim, text_i, sizeof text_i), ndim,
                      TSR_MAX_NDIM);
  int64_t shape[TSR_MAX_NDIM];
  int k = 0;
  for (int d = 0; d < resolved; d++)
    shape[k++] = a->shape[d];
  for (int d = 0; d < indices->ndim; d++)
    shape[k++] = indices->shape[d];
  for (int d = resolved + 1; d < a->ndim; d++)
    shape[k++] = a->shape[d];
  const tsri_take_params params = {.axis = resolved};
  tsr_array *inputs[2] = {a, indices};
  return tsri_node_new(out, TSRI_PRIM_TAKE, &params, sizeof params, a->dtype, shape, ndim, inputs,
                       2, s);
}

tsr_status tsr_take_along_axis(tsr_array **out, tsr_array *a, tsr_array *indices, int axis,
                               tsr_stream *s) {
  const char *what = "take_along_axis";
  int resolved = 0;
  tsr_status status = check_indexing_args(what, out, a, indices, axis, &resolved);
  if (status != TSR_OK) return status;
  char text_a[160], text_i[160];
  tsri_shape_str(a->shape, a->ndim, text_a, sizeof text_a);
  tsri_shape_str(indices->shape, indices->ndim, text_i, sizeof text_i);
  if (indices->ndim != a->ndim)
    return tsri_error(TSR_ERR_INVALID, "%s: indices %s must have as many axes as a %s", what,
                      text_i, text_a);
  int64_t shape[TSR_MAX_NDIM];
  for (int d = 0; d < a->ndim; d++) {
    int64_t da = a->shape[d], di = indices->shape[d];
    if (d != resolved && da != di && da != 1 && di != 1)
      return tsri_error(TSR_ERR_INVALID,
                        "%s: indices %s do not broadcast with a %s (axis %d: %lld vs %lld)", what,
                        text_i, text_a, d, (long long)di, (long long)da);
    shape[d] = d == resolved ? di : (da == 1 ? di : da);
  }
  const tsri_take_params params = {.axis = resolved};
  tsr_array *inputs[2] = {a, indices};
  return tsri_node_new(out, TSRI_PRIM_TAKE_ALONG_AXIS, &params, sizeof params, a->dtype, shape,
                       a->ndim, inputs, 2, s);
}

/* The update broadcast to the slice's shape (a new reference: update itself when it fits). */
static tsr_status update_for_slice(tsr_array *update, const tsr_array *dst, const int64_t *shape,
                                   tsr_stream *s, tsr_array **fitted) {
  bool same = update->ndim == dst->ndim;
  for (int d = 0; same && d < dst->ndim; d++)
    same = update->shape[d] == shape[d];
  if (same) {
    *fitted = tsr_array_retain(update);
    return TSR_OK;
  }
  bool fits = update->ndim <= dst->ndim;
  for (int d = 0; fits && d < update->ndim; d++) {
    int64_t dim = update->shape[d], target = shape[dst->ndim - update->ndim + d];
    fits = dim == target || dim == 1;
  }
  if (!fits) {
    char text_u[160], text_s[160], text_d[160];
    return tsri_error(TSR_ERR_INVALID,
                      "slice_update: update %s does not broadcast to the slice %s of dst %s",
                      tsri_shape_str(update->shape, update->ndim, text_u, sizeof text_u),
                      tsri_shape_str(shape, dst->ndim, text_s, sizeof text_s),
                      tsri_shape_str(dst->shape, dst->ndim, text_d, sizeof text_d));
  }
  return tsr_broadcast_to(fitted, update, shape, dst->ndim, s);
}

tsr_status tsr_slice_update(tsr_array **out, tsr_array *dst, tsr_array *update,
                            const int64_t *start, const int64_t *stop, const int64_t *step,
                            int naxes, tsr_stream *s) {
  if (!out || !dst || !update)
    return tsri_error(TSR_ERR_INVALID, "slice_update: %s is NULL",
                      !out   ? "out"
                      : !dst ? "dst"
                             : "update");
  tsri_slice_update_params params = {.dynamic_axis = -1};
  int64_t shape[TSR_MAX_NDIM];
  tsr_status status =
      tsri_slice_resolve("slice_update", dst, start, stop, step, naxes, &params.slice, shape);
  if (status != TSR_OK) return status;
  tsr_array *fitted = NULL;
  status = update_for_slice(update, dst, shape, s, &fitted);
  if (status != TSR_OK) return status;
  tsr_array *inputs[2] = {dst, fitted};
  status = tsri_node_new(out, TSRI_PRIM_SLICE_UPDATE, &params, sizeof params, dst->dtype,
                         dst->shape, dst->ndim, inputs, 2, s);
  tsr_array_release(fitted);
  return status;
}

tsr_status tsri_position_scalar_check(const char *what, const char *name, const tsr_array *scalar) {
  if (!scalar) return tsri_error(TSR_ERR_INVALID, "%s: %s is NULL", what, name);
  char shape[160];
  tsri_shape_str(scalar->shape, scalar->ndim, shape, sizeof shape);
  if (scalar->dtype != TSR_INT32 && scalar->dtype != TSR_INT64)
    return tsri_error(TSR_ERR_INVALID, "%s: %s %s has dtype %s (int32 or int64 needed)", what, name,
                      shape, tsr_dtype_name(scalar->dtype));
  if (scalar->size != 1)
    return tsri_error(TSR_ERR_INVALID, "%s: %s %s has %lld elements (exactly one needed)", what,
                      name, shape, (long long)scalar->size);
  return TSR_OK;
}

/* update: dst's ndim and extents, except at most dst's extent on `axis`. */
static tsr_status check_dynamic_update(const tsr_array *dst, const tsr_array *update, int axis) {
  bool fits = update->ndim == dst->ndim;
  for (int d = 0; fits && d < dst->ndim; d++)
    fits = d == axis ? update->shape[d] <= dst->shape[d] : update->shape[d] == dst->shape[d];
  if (fits) return TSR_OK;
  char text_u[160], text_d[160];
  return tsri_error(TSR_ERR_INVALID,
                    "slice_update_dynamic: update %s does not fit dst %s on axis %d (same ndim, "
                    "the same extents on the other axes, at most dst's on the axis)",
                    tsri_shape_str(update->shape, update->ndim, text_u, sizeof text_u),
                    tsri_shape_str(dst->shape, dst->ndim, text_d, sizeof text_d), axis);
}

tsr_status tsr_slice_update_dynamic(tsr_array **out, tsr_array *dst, tsr_array *update,
                                    tsr_array *start, int axis, tsr_stream *s) {
  const char *what = "slice_update_dynamic";
  if (!out || !dst || !update)
    return tsri_error(TSR_ERR_INVALID, "%s: %s is NULL", what,
                      !out   ? "out"
                      : !dst ? "dst"
                             : "update");
  tsr_status status = tsri_position_scalar_check(what, "start", start);
  int resolved = 0;
  if (status == TSR_OK) status = tsri_axis_resolve(what, axis, dst, &resolved);
  if (status == TSR_OK) status = check_dynamic_update(dst, update, resolved);
  if (status != TSR_OK) return status;
  tsri_slice_update_params params = {.dynamic_axis = resolved};
  for (int d = 0; d < dst->ndim; d++)
    params.slice.step[d] = 1;
  tsr_array *inputs[3] = {dst, update, start};
  return tsri_node_new(out, TSRI_PRIM_SLICE_UPDATE, &params, sizeof params, dst->dtype, dst->shape,
                       dst->ndim, inputs, 3, s);
}
