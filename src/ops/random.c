/* ops/random.c — random_uniform, random_normal and random_categorical: argument checks, output
 * shapes, and the dtype bounds of a uniform draw. The counter-based kernels are the backends'
 * (cpu/random.c); ops/random.h says which counters each element uses. */
#include "ops/random.h"

#include <math.h>
#include <string.h>

#include "base/dtype.h"
#include "base/half.h"
#include "base/status.h"
#include "ops/layout.h"
#include "ops/reduce.h"
#include "tessera/ops.h"

/* The dtype value nearest to v (float16/bfloat16 through float32), as a float. */
static float dtype_round(tsr_dtype dtype, double v) {
  float f = (float)v;
  if (dtype == TSR_FLOAT16) return tsri_f16_to_f32(tsri_f32_to_f16(f));
  if (dtype == TSR_BFLOAT16) return tsri_bf16_to_f32(tsri_f32_to_bf16(f));
  return f;
}

/* The next dtype value above (up) or below v, a value of the dtype; infinities stay. */
static float dtype_step(tsr_dtype dtype, float v, bool up) {
  if (dtype == TSR_FLOAT32) return nextafterf(v, up ? INFINITY : -INFINITY);
  if (isinf(v) && (v > 0) == up) return v;
  bool half = dtype == TSR_FLOAT16;
  uint16_t h = half ? tsri_f32_to_f16(v) : tsri_f32_to_bf16(v); /* exact: v is a dtype value */
  if ((h & 0x7fffu) == 0) /* from either zero to the smallest subnormal of the direction */
    h = up ? 0x0001u : 0x8001u;
  else if (((h & 0x8000u) != 0) == up) /* sign-magnitude: toward zero lowers the magnitude */
    h = (uint16_t)(h - 1u);
  else
    h = (uint16_t)(h + 1u);
  return half ? tsri_f16_to_f32(h) : tsri_bf16_to_f32(h);
}

/* The smallest and largest dtype values in [low, high): a draw rounded to the dtype is clamped
 * to them, so high stays excluded after rounding. */
static tsr_status uniform_bounds(tsr_dtype dtype, double low, double high, float *lowest,
                                 float *highest) {
  float lo = dtype_round(dtype, low), hi = dtype_round(dtype, high);
  while ((double)lo < low)
    lo = dtype_step(dtype, lo, true);
  while ((double)dtype_step(dtype, lo, false) >= low)
    lo = dtype_step(dtype, lo, false);
  while ((double)hi >= high)
    hi = dtype_step(dtype, hi, false);
  while ((double)dtype_step(dtype, hi, true) < high)
    hi = dtype_step(dtype, hi, true);
  if (lo > hi)
    return tsri_error(TSR_ERR_INVALID,
                      "random_uniform: no %s value in [low, high) = [%.17g, %.17g)",
                      tsr_dtype_name(dtype), low, high);
  *lowest = lo;
  *highest = hi;
  return TSR_OK;
}

/* out non-NULL, shape valid, dtype a float dtype. */
static tsr_status check_draw(const char *what, tsr_array **out, const int64_t *shape, int ndim,
                             tsr_dtype dtype) {
  if (!out) return tsri_error(TSR_ERR_INVALID, "%s: out is NULL", what);
  int64_t size = 0;
  tsr_status status = tsri_shape_check(what, shape, ndim, dtype, &size);
  if (status != TSR_OK) return status;
  if (!tsri_dtype_is_float(dtype))
    return tsri_error(TSR_ERR_INVALID, "%s: dtype %s is not a float dtype", what,
                      tsr_dtype_name(dtype));
  return TSR_OK;
}

static tsr_status draw_node(tsri_primitive primitive, tsr_array **out, const int64_t *shape,
                            int ndim, tsr_dtype dtype, const tsri_random_params *params,
                            tsr_stream *s) {
  return tsri_node_new(out, primitive, params, sizeof *params, dtype, shape, ndim, NULL, 0, s);
}

tsr_status tsr_random_uniform(tsr_array **out, const int64_t *shape, int ndim, double low,
                              double high, tsr_dtype dtype, uint64_t seed, tsr_stream *s) {
  const char *what = "random_uniform";
  tsr_status status = check_draw(what, out, shape, ndim, dtype);
  if (status != TSR_OK) return status;
  if (!isfinite(low) || !isfinite(high) || !(low < high) || !isfinite(high - low))
    return tsri_error(TSR_ERR_INVALID,
                      "%s: [low, high) = [%.17g, %.17g) must be finite, non-empty, and of a "
                      "finite width",
                      what, low, high);
  tsri_random_params params = {.seed = seed, .a = low, .b = high};
  status = uniform_bounds(dtype, low, high, &params.lowest, &params.highest);
  if (status != TSR_OK) return status;
  return draw_node(TSRI_PRIM_RANDOM_UNIFORM, out, shape, ndim, dtype, &params, s);
}

tsr_status tsr_random_normal(tsr_array **out, const int64_t *shape, int ndim, double mean,
                             double std, tsr_dtype dtype, uint64_t seed, tsr_stream *s) {
  const char *what = "random_normal";
  tsr_status status = check_draw(what, out, shape, ndim, dtype);
  if (status != TSR_OK) return status;
  if (!isfinite(mean) || !isfinite(std) || std < 0)
    return tsri_error(TSR_ERR_INVALID, "%s: mean %.17g and std %.17g must be finite, std >= 0",
                      what, mean, std);
  tsri_random_params params = {.seed = seed, .a = mean, .b = std};
  return draw_node(TSRI_PRIM_RANDOM_NORMAL, out, shape, ndim, dtype, &params, s);
}

tsr_status tsr_random_categorical(tsr_array **out, tsr_array *logits, int axis, uint64_t seed,
                                  tsr_stream *s) {
  const char *what = "random_categorical";
  if (!out || !logits)
    return tsri_error(TSR_ERR_INVALID, "%s: %s is NULL", what, !out ? "out" : "logits");
  if (!tsri_dtype_is_float(logits->dtype))
    return tsri_error(TSR_ERR_INVALID, "%s: logits are %s, not a float dtype", what,
                      tsr_dtype_name(logits->dtype));
  tsri_random_params params = {.seed = seed};
  tsr_status status = tsri_axis_resolve(what, axis, logits, &params.axis);
  if (status == TSR_OK) status = tsri_int32_index_check(what, logits, params.axis);
  if (status != TSR_OK) return status;
  int64_t shape[TSR_MAX_NDIM], rows = 1;
  int ndim = 0;
  for (int d = 0; d < logits->ndim; d++)
    if (d != params.axis) rows *= (shape[ndim++] = logits->shape[d]);
  if (rows > 0 && logits->shape[params.axis] == 0) {
    char text[200];
    return tsri_error(TSR_ERR_INVALID, "%s: axis %d of %s has size 0: no category to draw", what,
                      axis, tsri_shape_str(logits->shape, logits->ndim, text, sizeof text));
  }
  tsr_array *inputs[1] = {logits};
  return tsri_node_new(out, TSRI_PRIM_RANDOM_CATEGORICAL, &params, sizeof params, TSR_INT32, shape,
                       ndim, inputs, 1, s);
}
