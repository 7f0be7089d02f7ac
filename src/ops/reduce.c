/* ops/reduce.c — sum, mean, max, min and argmax: argument checks, the reduced axes, the output
 * shape and dtype. The kernels are the backends' (cpu/reduce.c). */
#include "ops/reduce.h"

#include <stdio.h>
#include <string.h>

#include "base/dtype.h"
#include "base/status.h"
#include "ops/layout.h"
#include "tessera/ops.h"

tsr_status tsri_int32_index_check(const char *what, const tsr_array *a, int axis) {
  if (a->shape[axis] <= INT32_MAX) return TSR_OK;
  return tsri_error(TSR_ERR_INVALID, "%s: axis %d has %lld elements, more than int32 indices hold",
                    what, axis, (long long)a->shape[axis]);
}

/* "[1, -1]" for messages. */
static const char *axes_str(const int *axes, int naxes, char *buf, size_t len) {
  size_t used = (size_t)snprintf(buf, len, "[");
  for (int i = 0; i < naxes && used < len; i++)
    used += (size_t)snprintf(buf + used, len - used, "%s%d", i ? ", " : "", axes[i]);
  if (used < len) snprintf(buf + used, len - used, "]");
  return buf;
}

/* Marks the reduced axes: naxes 0 means all of them; negative axes count from the end; an axis
 * out of range or named twice is an error. */
static tsr_status mark_axes(const char *what, const tsr_array *a, const int *axes, int naxes,
                            bool *reduced) {
  if (naxes < 0) return tsri_error(TSR_ERR_INVALID, "%s: naxes %d is negative", what, naxes);
  if (naxes > 0 && !axes)
    return tsri_error(TSR_ERR_INVALID, "%s: axes is NULL with naxes %d", what, naxes);
  for (int d = 0; d < a->ndim; d++)
    reduced[d] = naxes == 0;
  for (int i = 0; i < naxes; i++) {
    int axis = 0;
    tsr_status status = tsri_axis_resolve(what, axes[i], a, &axis);
    if (status != TSR_OK) return status;
    if (reduced[axis]) {
      char list[200], shape[200];
      return tsri_error(TSR_ERR_INVALID, "%s: axis %d repeated in axes %s of a %d-d array %s", what,
                        axes[i], axes_str(axes, naxes, list, sizeof list), a->ndim,
                        tsri_shape_str(a->shape, a->ndim, shape, sizeof shape));
    }
    reduced[axis] = true;
  }
  return TSR_OK;
}

/* The dtype each reduction returns (tessera/ops.h). */
static tsr_dtype reduce_dtype(tsri_primitive primitive, tsr_dtype in) {
  switch (primitive) {
    case TSRI_PRIM_SUM:
      return tsri_dtype_is_float(in) ? in : TSR_INT64;
    case TSRI_PRIM_MEAN:
      return tsri_dtype_is_float(in) ? in : TSR_FLOAT32;
    case TSRI_PRIM_ARGMAX:
      return TSR_INT32;
    default:
      return in;
  }
}

/* max, min and argmax have no value for an empty reduction: refused when some output element
 * would be one (NumPy's rule; an empty output needs no value, so [0, 5] over axis 1 is fine). */
static tsr_status check_nonempty(const char *what, const tsr_array *a, const bool *reduced) {
  int64_t kept = 1;
  int empty_axis = -1;
  for (int d = 0; d < a->ndim; d++) {
    if (!reduced[d]) kept *= a->shape[d];
    if (reduced[d] && a->shape[d] == 0) empty_axis = d;
  }
  if (empty_axis < 0 || kept == 0) return TSR_OK;
  char shape[200];
  return tsri_error(TSR_ERR_INVALID, "%s: axis %d of %s has size 0 and %s has no identity", what,
                    empty_axis, tsri_shape_str(a->shape, a->ndim, shape, sizeof shape), what);
}

static tsr_status reduce_node(const char *what, tsri_primitive primitive, tsr_array **out,
                              tsr_array *a, const tsri_reduce_params *params, tsr_stream *s) {
  if (primitive == TSRI_PRIM_MAX || primitive == TSRI_PRIM_MIN || primitive == TSRI_PRIM_ARGMAX) {
    tsr_status status = check_nonempty(what, a, params->reduced);
    if (status != TSR_OK) return status;
  }
  int64_t shape[TSR_MAX_NDIM];
  int ndim = 0;
  for (int d = 0; d < a->ndim; d++) {
    if (!params->reduced[d])
      shape[ndim++] = a->shape[d];
    else if (params->keepdims)
      shape[ndim++] = 1;
  }
  tsr_array *inputs[1] = {a};
  return tsri_node_new(out, primitive, params, sizeof *params, reduce_dtype(primitive, a->dtype),
                       shape, ndim, inputs, 1, s);
}

static tsr_status reduce_op(const char *what, tsri_primitive primitive, tsr_array **out,
                            tsr_array *a, const int *axes, int naxes, bool keepdims,
                            tsr_stream *s) {
  if (!out || !a) return tsri_error(TSR_ERR_INVALID, "%s: %s is NULL", what, !out ? "out" : "a");
  tsri_reduce_params params = {.keepdims = keepdims};
  tsr_status status = mark_axes(what, a, axes, naxes, params.reduced);
  if (status != TSR_OK) return status;
  return reduce_node(what, primitive, out, a, &params, s);
}

tsr_status tsr_sum(tsr_array **out, tsr_array *a, const int *axes, int naxes, bool keepdims,
                   tsr_stream *s) {
  return reduce_op("sum", TSRI_PRIM_SUM, out, a, axes, naxes, keepdims, s);
}

tsr_status tsr_mean(tsr_array **out, tsr_array *a, const int *axes, int naxes, bool keepdims,
                    tsr_stream *s) {
  return reduce_op("mean", TSRI_PRIM_MEAN, out, a, axes, naxes, keepdims, s);
}

tsr_status tsr_max(tsr_array **out, tsr_array *a, const int *axes, int naxes, bool keepdims,
                   tsr_stream *s) {
  return reduce_op("max", TSRI_PRIM_MAX, out, a, axes, naxes, keepdims, s);
}

tsr_status tsr_min(tsr_array **out, tsr_array *a, const int *axes, int naxes, bool keepdims,
                   tsr_stream *s) {
  return reduce_op("min", TSRI_PRIM_MIN, out, a, axes, naxes, keepdims, s);
}

tsr_status tsr_argmax(tsr_array **out, tsr_array *a, int axis, bool keepdims, tsr_stream *s) {
  const char *what = "argmax";
  if (!out || !a) return tsri_error(TSR_ERR_INVALID, "%s: %s is NULL", what, !out ? "out" : "a");
  int resolved = 0;
  tsr_status status = tsri_axis_resolve(what, axis, a, &resolved);
  if (status == TSR_OK) status = tsri_int32_index_check(what, a, resolved);
  if (status != TSR_OK) return status;
  tsri_reduce_params params = {.keepdims = keepdims};
  params.reduced[resolved] = true;
  return reduce_node(what, TSRI_PRIM_ARGMAX, out, a, &params, s);
}
