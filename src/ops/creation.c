/* ops/creation.c — zeros, ones, full, arange and astype: argument checks and node creation. The
 * conversions themselves are the backends' (cpu/creation.c, cpu/convert.h).
 *
 * Decisions where tessera/ops.h is silent:
 *  - zeros and ones are full with 0 and 1, validated and named as themselves in messages;
 *  - arange needs finite start, stop and step (NaN or infinity is TSR_ERR_INVALID), gives an
 *    empty [0] array when the range is empty (stop on the wrong side of start), and rejects an
 *    element count that is not finite or does not fit in int64 (and, like every shape, one whose
 *    byte size overflows);
 *  - astype to the input's own dtype is still a new array (a copy), never the input itself, so
 *    the result always lives on `s` like every op's;
 *  - integer to integer conversions wrap (two's complement), like the integer ops.
 */
#include "ops/creation.h"

#include <math.h>

#include "base/dtype.h"
#include "base/status.h"
#include "core/array.h"
#include "tessera/ops.h"

static tsr_status full_named(const char *what, tsr_array **out, const int64_t *shape, int ndim,
                             double value, tsr_dtype dtype, tsr_stream *s) {
  if (!out) return tsri_error(TSR_ERR_INVALID, "%s: out is NULL", what);
  int64_t size = 0;
  tsr_status status = tsri_shape_check(what, shape, ndim, dtype, &size);
  if (status != TSR_OK) return status;
  const tsri_full_params full = {.value = value, .dtype = dtype};
  return tsri_node_new(out, TSRI_PRIM_FULL, &full, sizeof full, dtype, shape, ndim, NULL, 0, s);
}

tsr_status tsr_zeros(tsr_array **out, const int64_t *shape, int ndim, tsr_dtype dtype,
                     tsr_stream *s) {
  return full_named("zeros", out, shape, ndim, 0.0, dtype, s);
}

tsr_status tsr_ones(tsr_array **out, const int64_t *shape, int ndim, tsr_dtype dtype,
                    tsr_stream *s) {
  return full_named("ones", out, shape, ndim, 1.0, dtype, s);
}

tsr_status tsr_full(tsr_array **out, const int64_t *shape, int ndim, double value, tsr_dtype dtype,
                    tsr_stream *s) {
  return full_named("full", out, shape, ndim, value, dtype, s);
}

/* ceil((stop - start) / step) elements, 0 for an empty range. */
static tsr_status arange_count(double start, double stop, double step, int64_t *count) {
  if (!isfinite(start) || !isfinite(stop) || !isfinite(step))
    return tsri_error(TSR_ERR_INVALID, "arange: start %g, stop %g and step %g must be finite",
                      start, stop, step);
  if (step == 0.0)
    return tsri_error(TSR_ERR_INVALID, "arange: step 0 (start %g, stop %g)", start, stop);
  double n = ceil((stop - start) / step);
  if (!(n < 0x1p63)) /* also catches an infinite quotient: stop - start or the division overflow */
    return tsri_error(TSR_ERR_INVALID,
                      "arange: [%g, %g) by step %g has %g elements, which overflows int64", start,
                      stop, step, n);
  *count = n > 0.0 ? (int64_t)n : 0;
  return TSR_OK;
}

tsr_status tsr_arange(tsr_array **out, double start, double stop, double step, tsr_dtype dtype,
                      tsr_stream *s) {
  if (!out) return tsri_error(TSR_ERR_INVALID, "arange: out is NULL");
  if (!tsri_dtype_valid(dtype))
    return tsri_error(TSR_ERR_INVALID, "arange: dtype %d is not a tsr_dtype", (int)dtype);
  int64_t count = 0;
  tsr_status status = arange_count(start, stop, step, &count);
  if (status != TSR_OK) return status;
  const tsri_arange_params range = {.start = start, .step = step};
  /* node_new checks the byte size (count * dtype size) and names arange in its message. */
  return tsri_node_new(out, TSRI_PRIM_ARANGE, &range, sizeof range, dtype, &count, 1, NULL, 0, s);
}

tsr_status tsr_astype(tsr_array **out, tsr_array *a, tsr_dtype dtype, tsr_stream *s) {
  if (!out || !a) return tsri_error(TSR_ERR_INVALID, "astype: %s is NULL", !out ? "out" : "a");
  if (!tsri_dtype_valid(dtype))
    return tsri_error(TSR_ERR_INVALID, "astype: dtype %d is not a tsr_dtype", (int)dtype);
  tsr_array *inputs[1] = {a};
  return tsri_node_new(out, TSRI_PRIM_ASTYPE, NULL, 0, dtype, a->shape, a->ndim, inputs, 1, s);
}
