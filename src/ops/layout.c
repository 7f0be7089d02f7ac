/* ops/layout.c — the layout ops: reshape, transpose, slice, expand_dims, squeeze, broadcast_to
 * and contiguous build view nodes (core/views.c runs them on every backend); concatenate builds
 * copy nodes (a tree of them past TSRI_MAX_INPUTS arrays). Argument checks and shapes only. */
#include "ops/layout.h"

#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "tessera/ops.h"

tsr_status tsri_axis_resolve(const char *what, int axis, const tsr_array *a, int *resolved) {
  if (axis < -a->ndim || axis >= a->ndim) {
    char shape[160];
    return tsri_error(TSR_ERR_INVALID, "%s: axis %d out of range for a %d-d array %s", what, axis,
                      a->ndim, tsri_shape_str(a->shape, a->ndim, shape, sizeof shape));
  }
  *resolved = axis < 0 ? axis + a->ndim : axis;
  return TSR_OK;
}

static tsr_status check_out_and_a(const char *what, tsr_array **out, const tsr_array *a) {
  if (!out) return tsri_error(TSR_ERR_INVALID, "%s: out is NULL", what);
  if (!a) return tsri_error(TSR_ERR_INVALID, "%s: a is NULL", what);
  return TSR_OK;
}

static tsr_status view_node(tsr_array **out, tsri_primitive primitive, const void *params,
                            size_t params_size, tsr_array *a, const int64_t *shape, int ndim,
                            tsr_stream *s) {
  tsr_array *inputs[1] = {a};
  return tsri_node_new(out, primitive, params, params_size, a->dtype, shape, ndim, inputs, 1, s);
}

/* A reshape that stays a view of any layout it can re-stride (expand_dims, squeeze). */
static tsr_status restride_node(tsr_array **out, tsr_array *a, const int64_t *shape, int ndim,
                                tsr_stream *s) {
  const tsri_reshape_params params = {.keep_strides = true};
  return view_node(out, TSRI_PRIM_RESHAPE, &params, sizeof params, a, shape, ndim, s);
}

/* ---- reshape ------------------------------------------------------------------------------- */

/* The target shape with its -1 (if any) inferred from a's size. */
static tsr_status infer_shape(const tsr_array *a, const int64_t *shape, int ndim,
                              int64_t *resolved) {
  char text[200], from[200];
  int inferred = -1;
  for (int i = 0; i < ndim; i++) {
    resolved[i] = shape[i] == -1 ? 1 : shape[i];
    if (shape[i] < -1)
      return tsri_error(TSR_ERR_INVALID, "reshape: dimension %d of %s is %lld (must be >= -1)", i,
                        tsri_shape_str(shape, ndim, text, sizeof text), (long long)shape[i]);
    if (shape[i] != -1) continue;
    if (inferred >= 0)
      return tsri_error(TSR_ERR_INVALID, "reshape: more than one -1 in %s (axes %d and %d)",
                        tsri_shape_str(shape, ndim, text, sizeof text), inferred, i);
    inferred = i;
  }
  int64_t known = 0;
  tsr_status status = tsri_shape_check("reshape", resolved, ndim, a->dtype, &known);
  if (status != TSR_OK) return status;
  tsri_shape_str(shape, ndim, text, sizeof text);
  tsri_shape_str(a->shape, a->ndim, from, sizeof from);
  if (inferred >= 0) {
    if (known == 0)
      return tsri_error(TSR_ERR_INVALID,
                        "reshape: the -1 in %s is ambiguous (the other dimensions hold 0 "
                        "elements) for %s",
                        text, from);
    if (a->size % known != 0)
      return tsri_error(TSR_ERR_INVALID,
                        "reshape: cannot reshape %s (%lld elements) into %s: %lld is not a "
                        "multiple of %lld",
                        from, (long long)a->size, text, (long long)a->size, (long long)known);
    resolved[inferred] = a->size / known;
    known = a->size;
  }
  if (known != a->size)
    return tsri_error(TSR_ERR_INVALID,
                      "reshape: cannot reshape %s (%lld elements) into %s (%lld elements)", from,
                      (long long)a->size, text, (long long)known);
  return TSR_OK;
}

tsr_status tsr_reshape(tsr_array **out, tsr_array *a, const int64_t *shape, int ndim,
                       tsr_stream *s) {
  tsr_status status = check_out_and_a("reshape", out, a);
  if (status != TSR_OK) return status;
  if (ndim < 0 || ndim > TSR_MAX_NDIM)
    return tsri_error(TSR_ERR_INVALID, "reshape: ndim %d outside [0, %d]", ndim, TSR_MAX_NDIM);
  if (!shape && ndim > 0)
    return tsri_error(TSR_ERR_INVALID, "reshape: shape is NULL with ndim %d", ndim);
  int64_t resolved[TSR_MAX_NDIM];
  status = infer_shape(a, shape, ndim, resolved);
  if (status != TSR_OK) return status;
  const tsri_reshape_params packed = {.keep_strides = false};
  return view_node(out, TSRI_PRIM_RESHAPE, &packed, sizeof packed, a, resolved, ndim, s);
}

tsr_status tsr_expand_dims(tsr_array **out, tsr_array *a, int axis, tsr_stream *s) {
  tsr_status status = check_out_and_a("expand_dims", out, a);
  if (status != TSR_OK) return status;
  char text[160];
  if (a->ndim == TSR_MAX_NDIM)
    return tsri_error(TSR_ERR_INVALID, "expand_dims: %s already has the most axes (%d)",
                      tsri_shape_str(a->shape, a->ndim, text, sizeof text), TSR_MAX_NDIM);
  int ndim = a->ndim + 1;
  if (axis < -ndim || axis >= ndim)
    return tsri_error(TSR_ERR_INVALID, "expand_dims: axis %d out of range [%d, %d] for %s", axis,
                      -ndim, ndim - 1, tsri_shape_str(a->shape, a->ndim, text, sizeof text));
  if (axis < 0) axis += ndim;
  int64_t shape[TSR_MAX_NDIM];
  for (int i = 0, j = 0; i < ndim; i++)
    shape[i] = i == axis ? 1 : a->shape[j++];
  return restride_node(out, a, shape, ndim, s);
}

tsr_status tsr_squeeze(tsr_array **out, tsr_array *a, const int *axes, int naxes, tsr_stream *s) {
  tsr_status status = check_out_and_a("squeeze", out, a);
  if (status != TSR_OK) return status;
  bool drop[TSR_MAX_NDIM] = {false};
  char text[160];
  if (!axes) {
    for (int i = 0; i < a->ndim; i++)
      drop[i] = a->shape[i] == 1;
  } else {
    if (naxes < 0 || naxes > a->ndim)
      return tsri_error(TSR_ERR_INVALID, "squeeze: naxes %d outside [0, %d]", naxes, a->ndim);
    for (int k = 0; k < naxes; k++) {
      int axis = 0;
      status = tsri_axis_resolve("squeeze", axes[k], a, &axis);
      if (status != TSR_OK) return status;
      if (drop[axis])
        return tsri_error(TSR_ERR_INVALID, "squeeze: axis %d is named twice", axes[k]);
      if (a->shape[axis] != 1)
        return tsri_error(TSR_ERR_INVALID, "squeeze: axis %d has size %lld, not 1, in %s", axes[k],
                          (long long)a->shape[axis],
                          tsri_shape_str(a->shape, a->ndim, text, sizeof text));
      drop[axis] = true;
    }
  }
  int64_t shape[TSR_MAX_NDIM];
  int ndim = 0;
  for (int i = 0; i < a->ndim; i++)
    if (!drop[i]) shape[ndim++] = a->shape[i];
  return restride_node(out, a, shape, ndim, s);
}

/* ---- transpose, slice, broadcast_to, contiguous --------------------------------------------- */

tsr_status tsr_transpose(tsr_array **out, tsr_array *a, const int *axes, int naxes, tsr_stream *s) {
  tsr_status status = check_out_and_a("transpose", out, a);
  if (status != TSR_OK) return status;
  tsri_transpose_params params = {0}, *p = &params;
  char text[160];
  if (!axes) {
    if (naxes != 0 && naxes != a->ndim)
      return tsri_error(TSR_ERR_INVALID, "transpose: axes is NULL with naxes %d (use 0 or %d)",
                        naxes, a->ndim);
    for (int i = 0; i < a->ndim; i++)
      p->axes[i] = a->ndim - 1 - i;
  } else {
    if (naxes != a->ndim)
      return tsri_error(TSR_ERR_INVALID, "transpose: %d axes given for a %d-d array %s", naxes,
                        a->ndim, tsri_shape_str(a->shape, a->ndim, text, sizeof text));
    bool seen[TSR_MAX_NDIM] = {false};
    for (int i = 0; i < naxes; i++) {
      int axis = 0;
      status = tsri_axis_resolve("transpose", axes[i], a, &axis);
      if (status != TSR_OK) return status;
      if (seen[axis])
        return tsri_error(TSR_ERR_INVALID,
                          "transpose: axis %d appears twice (axes[%d] = %d is not a permutation)",
                          axis, i, axes[i]);
      seen[axis] = true;
      p->axes[i] = axis;
    }
  }
  int64_t shape[TSR_MAX_NDIM];
  for (int i = 0; i < a->ndim; i++)
    shape[i] = a->shape[p->axes[i]];
  return view_node(out, TSRI_PRIM_TRANSPOSE, &params, sizeof params, a, shape, a->ndim, s);
}

/* Python's slice.indices for one axis: the first index taken and the count. */
static void resolve_axis(int64_t dim, int64_t start, int64_t stop, int64_t step, int64_t *first,
                         int64_t *count) {
  int64_t low = step > 0 ? 0 : -1, high = step > 0 ? dim : dim - 1;
  if (start < 0) start = start < -dim ? low : start + dim;
  if (stop < 0) stop = stop < -dim ? low : stop + dim;
  if (start > high) start = high;
  if (stop > high) stop = high;
  if (start < low) start = low;
  if (stop < low) stop = low;
  int64_t n = 0;
  if (step > 0 && stop > start) n = (stop - start - 1) / step + 1;
  if (step < 0 && start > stop) n = (start - stop - 1) / (-step) + 1;
  *first = n > 0 ? start : 0;
  *count = n;
}

tsr_status tsri_slice_resolve(const char *what, const tsr_array *a, const int64_t *start,
                              const int64_t *stop, const int64_t *step, int naxes,
                              tsri_slice_params *params, int64_t *shape) {
  char text[160];
  if (naxes < 0 || naxes > a->ndim)
    return tsri_error(TSR_ERR_INVALID, "%s: naxes %d outside [0, %d] for %s", what, naxes, a->ndim,
                      tsri_shape_str(a->shape, a->ndim, text, sizeof text));
  if (naxes > 0 && (!start || !stop))
    return tsri_error(TSR_ERR_INVALID, "%s: %s is NULL with naxes %d", what,
                      !start ? "start" : "stop", naxes);
  memset(params, 0, sizeof *params);
  for (int i = 0; i < a->ndim; i++) {
    params->step[i] = 1;
    shape[i] = a->shape[i];
    if (i >= naxes) continue;
    int64_t axis_step = step ? step[i] : 1;
    if (axis_step == 0)
      return tsri_error(TSR_ERR_INVALID, "%s: step 0 on axis %d (start %lld, stop %lld)", what, i,
                        (long long)start[i], (long long)stop[i]);
    if (axis_step == INT64_MIN) axis_step = -INT64_MAX; /* negating it would overflow */
    resolve_axis(a->shape[i], start[i], stop[i], axis_step, &params->start[i], &shape[i]);
    /* With one element or none the step moves nothing; 1 keeps stride * step from overflowing
       (with two or more, |step| < dim bounds it by the buffer). */
    params->step[i] = shape[i] > 1 ? axis_step : 1;
  }
  return TSR_OK;
}

tsr_status tsr_slice(tsr_array **out, tsr_array *a, const int64_t *start, const int64_t *stop,
                     const int64_t *step, int naxes, tsr_stream *s) {
  tsr_status status = check_out_and_a("slice", out, a);
  if (status != TSR_OK) return status;
  tsri_slice_params params;
  int64_t shape[TSR_MAX_NDIM];
  status = tsri_slice_resolve("slice", a, start, stop, step, naxes, &params, shape);
  if (status != TSR_OK) return status;
  return view_node(out, TSRI_PRIM_SLICE, &params, sizeof params, a, shape, a->ndim, s);
}

tsr_status tsr_broadcast_to(tsr_array **out, tsr_array *a, const int64_t *shape, int ndim,
                            tsr_stream *s) {
  tsr_status status = check_out_and_a("broadcast_to", out, a);
  if (status != TSR_OK) return status;
  int64_t size = 0;
  status = tsri_shape_check("broadcast_to", shape, ndim, a->dtype, &size);
  if (status != TSR_OK) return status;
  char from[160], to[160];
  tsri_shape_str(a->shape, a->ndim, from, sizeof from);
  tsri_shape_str(shape, ndim, to, sizeof to);
  if (ndim < a->ndim)
    return tsri_error(TSR_ERR_INVALID, "broadcast_to: %s has more axes than the target %s", from,
                      to);
  for (int i = 0; i < a->ndim; i++) {
    int64_t dim = a->shape[i], target = shape[ndim - a->ndim + i];
    if (dim != target && dim != 1)
      return tsri_error(TSR_ERR_INVALID,
                        "broadcast_to: %s does not broadcast to %s (axis %d: %lld vs %lld)", from,
                        to, ndim - a->ndim + i, (long long)dim, (long long)target);
  }
  return view_node(out, TSRI_PRIM_BROADCAST_TO, NULL, 0, a, shape, ndim, s);
}

tsr_status tsr_contiguous(tsr_array **out, tsr_array *a, tsr_stream *s) {
  tsr_status status = check_out_and_a("contiguous", out, a);
  if (status != TSR_OK) return status;
  /* An evaluated contiguous array is its own answer. Otherwise a reshape to the same shape: it
     aliases the input when the evaluated layout turns out packed and copies it when not. */
  if (atomic_load(&a->state) == TSRI_NODE_READY && tsri_array_is_contiguous(a)) {
    *out = tsr_array_retain(a);
    return TSR_OK;
  }
  const tsri_reshape_params packed = {.keep_strides = false};
  return view_node(out, TSRI_PRIM_RESHAPE, &packed, sizeof packed, a, a->shape, a->ndim, s);
}

/* ---- concatenate ---------------------------------------------------------------------------- */

static tsr_status check_pieces(tsr_array *const *arrays, int n, int axis, int *resolved) {
  for (int i = 0; i < n; i++)
    if (!arrays[i]) return tsri_error(TSR_ERR_INVALID, "concatenate: arrays[%d] is NULL", i);
  const tsr_array *first = arrays[0];
  tsr_status status = tsri_axis_resolve("concatenate", axis, first, resolved);
  if (status != TSR_OK) return status;
  char shape_i[160], shape_0[160];
  for (int i = 1; i < n; i++) {
    const tsr_array *a = arrays[i];
    tsri_shape_str(a->shape, a->ndim, shape_i, sizeof shape_i);
    tsri_shape_str(first->shape, first->ndim, shape_0, sizeof shape_0);
    if (a->dtype != first->dtype)
      return tsri_error(TSR_ERR_INVALID, "concatenate: arrays[%d] is %s, arrays[0] is %s", i,
                        tsr_dtype_name(a->dtype), tsr_dtype_name(first->dtype));
    bool same = a->ndim == first->ndim;
    for (int d = 0; same && d < a->ndim; d++)
      same = d == *resolved || a->shape[d] == first->shape[d];
    if (!same)
      return tsri_error(TSR_ERR_INVALID,
                        "concatenate: arrays[%d] %s does not match arrays[0] %s outside axis %d", i,
                        shape_i, shape_0, *resolved);
  }
  return TSR_OK;
}

/* One node joining n <= TSRI_MAX_INPUTS checked pieces. */
static tsr_status concatenate_node(tsr_array **out, tsr_array *const *pieces, int n, int axis,
                                   tsr_stream *s) {
  int64_t shape[TSR_MAX_NDIM];
  memcpy(shape, pieces[0]->shape, sizeof shape);
  shape[axis] = 0;
  for (int i = 0; i < n; i++) {
    if (pieces[i]->shape[axis] > INT64_MAX - shape[axis])
      return tsri_error(TSR_ERR_INVALID, "concatenate: the joined axis %d overflows int64", axis);
    shape[axis] += pieces[i]->shape[axis];
  }
  const tsri_concatenate_params params = {.axis = axis};
  return tsri_node_new(out, TSRI_PRIM_CONCATENATE, &params, sizeof params, pieces[0]->dtype, shape,
                       pieces[0]->ndim, pieces, n, s);
}

static void release_all(tsr_array **arrays, int n) {
  for (int i = 0; i < n; i++)
    tsr_array_release(arrays[i]);
}

tsr_status tsr_concatenate(tsr_array **out, tsr_array *const *arrays, int n, int axis,
                           tsr_stream *s) {
  if (!out) return tsri_error(TSR_ERR_INVALID, "concatenate: out is NULL");
  if (!arrays) return tsri_error(TSR_ERR_INVALID, "concatenate: arrays is NULL (n = %d)", n);
  if (n <= 0) return tsri_error(TSR_ERR_INVALID, "concatenate: n is %d (need at least 1)", n);
  int resolved = 0;
  tsr_status status = check_pieces(arrays, n, axis, &resolved);
  if (status != TSR_OK) return status;
  /* More pieces than a node has inputs: join groups of TSRI_MAX_INPUTS, level by level, each
     level holding its own references (a group of one passes through). */
  tsr_array **level = malloc((size_t)n * sizeof *level);
  if (!level) return tsri_error(TSR_ERR_NOMEM, "concatenate: out of host memory for %d arrays", n);
  for (int i = 0; i < n; i++)
    level[i] = tsr_array_retain(arrays[i]);
  int count = n;
  while (count > TSRI_MAX_INPUTS && status == TSR_OK) {
    int groups = 0;
    for (int first = 0; first < count && status == TSR_OK; first += TSRI_MAX_INPUTS) {
      int size = count - first < TSRI_MAX_INPUTS ? count - first : TSRI_MAX_INPUTS;
      tsr_array *joined = NULL;
      if (size == 1)
        joined = tsr_array_retain(level[first]);
      else
        status = concatenate_node(&joined, level + first, size, resolved, s);
      if (status != TSR_OK) break;
      release_all(level + first, size);
      level[groups++] = joined; /* groups <= first: never overwrites a piece not yet joined */
    }
    if (status != TSR_OK) {
      release_all(level, groups); /* the joined prefix; the pieces not yet joined follow it */
      for (int i = groups * TSRI_MAX_INPUTS; i < count; i++)
        tsr_array_release(level[i]);
      free(level);
      return status;
    }
    count = groups;
  }
  status = concatenate_node(out, level, count, resolved, s);
  release_all(level, count);
  free(level);
  return status;
}
