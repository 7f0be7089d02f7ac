/* ops/nn.c — the transformer-block ops: softmax, rms_norm, rope and sdpa, and the dynamic rope
 * and sdpa whose position scalar is an input read when they run. Argument checks, shapes and
 * dtypes only; the kernels are the backends' (cpu/nn.c, cpu/attention.c). */
#include "ops/nn.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/dtype.h"
#include "base/status.h"
#include "core/array.h"
#include "ops/broadcast.h"
#include "ops/indexing.h"
#include "tessera/ops.h"

#define SHAPE_TEXT 96

static tsr_status need_float(const char *what, const char *name, const tsr_array *x) {
  if (tsri_dtype_is_float(x->dtype)) return TSR_OK;
  char shape[SHAPE_TEXT];
  return tsri_error(TSR_ERR_INVALID, "%s: %s %s has dtype %s (float32, float16 or bfloat16 needed)",
                    what, name, tsri_shape_str(x->shape, x->ndim, shape, sizeof shape),
                    tsr_dtype_name(x->dtype));
}

/* Float dtypes only. A NaN makes its whole line NaN; a line of -inf only is NaN too (0/0), as in
 * NumPy; a zero-length axis gives an empty result. */
tsr_status tsr_softmax(tsr_array **out, tsr_array *x, int axis, tsr_stream *s) {
  if (!out || !x) return tsri_error(TSR_ERR_INVALID, "softmax: %s is NULL", !out ? "out" : "x");
  tsr_status status = need_float("softmax", "x", x);
  if (status != TSR_OK) return status;
  int normalized = axis < 0 ? axis + x->ndim : axis;
  if (normalized < 0 || normalized >= x->ndim) {
    char shape[SHAPE_TEXT];
    return tsri_error(TSR_ERR_INVALID, "softmax: axis %d out of range for a %d-d array %s", axis,
                      x->ndim, tsri_shape_str(x->shape, x->ndim, shape, sizeof shape));
  }
  const tsri_softmax_params p = {.axis = normalized};
  tsr_array *inputs[1] = {x};
  return tsri_node_new(out, TSRI_PRIM_SOFTMAX, &p, sizeof p, x->dtype, x->shape, x->ndim, inputs, 1,
                       s);
}

/* weight must broadcast to x's shape without widening it. */
static tsr_status check_norm_weight(const tsr_array *x, const tsr_array *weight) {
  tsr_status status = need_float("rms_norm", "weight", weight);
  if (status != TSR_OK) return status;
  int64_t shape[TSR_MAX_NDIM];
  int ndim = 0;
  status = tsri_broadcast_shapes("rms_norm", x, weight, shape, &ndim);
  if (status != TSR_OK) return status;
  bool same = ndim == x->ndim;
  for (int i = 0; same && i < ndim; i++)
    same = shape[i] == x->shape[i];
  if (same) return TSR_OK;
  char sx[SHAPE_TEXT], sw[SHAPE_TEXT];
  return tsri_error(TSR_ERR_INVALID,
                    "rms_norm: weight %s would widen x %s (it must broadcast to x)",
                    tsri_shape_str(weight->shape, weight->ndim, sw, sizeof sw),
                    tsri_shape_str(x->shape, x->ndim, sx, sizeof sx));
}

/* x and weight of float dtypes; weight NULL, [D], or any shape that broadcasts to x's without
 * widening it ([rows, 1] scales rows). eps finite and >= 0. The result has x's dtype:
 * x * r * w formed in float32 and rounded once (HF rounds x * r to x's dtype before * w). */
tsr_status tsr_rms_norm(tsr_array **out, tsr_array *x, tsr_array *weight, float eps,
                        tsr_stream *s) {
  if (!out || !x) return tsri_error(TSR_ERR_INVALID, "rms_norm: %s is NULL", !out ? "out" : "x");
  tsr_status status = need_float("rms_norm", "x", x);
  if (status != TSR_OK) return status;
  if (x->ndim == 0)
    return tsri_error(TSR_ERR_INVALID, "rms_norm: x is 0-d (it normalizes over the last axis)");
  if (!isfinite(eps) || eps < 0.0f)
    return tsri_error(TSR_ERR_INVALID, "rms_norm: eps %g must be finite and >= 0", (double)eps);
  if (weight) {
    status = check_norm_weight(x, weight);
    if (status != TSR_OK) return status;
  }
  const tsri_rms_norm_params p = {.eps = eps, .has_weight = weight != NULL};
  tsr_array *inputs[2] = {x, weight};
  return tsri_node_new(out, TSRI_PRIM_RMS_NORM, &p, sizeof p, x->dtype, x->shape, x->ndim, inputs,
                       weight ? 2 : 1, s);
}

static tsr_status check_rope(const tsr_array *x, int dims, float base) {
  tsr_status status = need_float("rope", "x", x);
  if (status != TSR_OK) return status;
  char shape[SHAPE_TEXT];
  tsri_shape_str(x->shape, x->ndim, shape, sizeof shape);
  if (x->ndim < 2)
    return tsri_error(TSR_ERR_INVALID, "rope: x %s must have at least 2 axes [..., T, D]", shape);
  int64_t d = x->shape[x->ndim - 1];
  if (dims <= 0 || dims % 2 != 0 || dims > d)
    return tsri_error(TSR_ERR_INVALID, "rope: dims %d must be even, positive and <= D %lld of x %s",
                      dims, (long long)d, shape);
  if (!isfinite(base) || base <= 0.0f)
    return tsri_error(TSR_ERR_INVALID, "rope: base %g must be finite and > 0", (double)base);
  return TSR_OK;
}

/* x of a float dtype with at least 2 axes; dims even in [2, D]; base finite and > 0; offset
 * >= 0. cos and sin stay float32 for every dtype (HF rounds them to a bfloat16 x's dtype). */
tsr_status tsr_rope(tsr_array **out, tsr_array *x, int dims, bool traditional, float base,
                    int64_t offset, tsr_stream *s) {
  if (!out || !x) return tsri_error(TSR_ERR_INVALID, "rope: %s is NULL", !out ? "out" : "x");
  tsr_status status = check_rope(x, dims, base);
  if (status != TSR_OK) return status;
  int64_t t = x->shape[x->ndim - 2];
  if (offset < 0 || offset > INT64_MAX - t)
    return tsri_error(TSR_ERR_INVALID, "rope: offset %lld must be >= 0 (and offset + T %lld fit)",
                      (long long)offset, (long long)t);
  const tsri_rope_params p = {
      .offset = offset, .dims = dims, .traditional = traditional, .base = base};
  tsr_array *inputs[1] = {x};
  return tsri_node_new(out, TSRI_PRIM_ROPE, &p, sizeof p, x->dtype, x->shape, x->ndim, inputs, 1,
                       s);
}

/* tsr_rope's checks but the offset's, which is data: any value of an int32/int64 scalar. */
tsr_status tsr_rope_dynamic(tsr_array **out, tsr_array *x, int dims, bool traditional, float base,
                            tsr_array *offset, tsr_stream *s) {
  if (!out || !x)
    return tsri_error(TSR_ERR_INVALID, "rope_dynamic: %s is NULL", !out ? "out" : "x");
  tsr_status status = tsri_position_scalar_check("rope_dynamic", "offset", offset);
  if (status == TSR_OK) status = check_rope(x, dims, base);
  if (status != TSR_OK) return status;
  const tsri_rope_params p = {
      .dims = dims, .traditional = traditional, .base = base, .dynamic_offset = true};
  tsr_array *inputs[2] = {x, offset};
  return tsri_node_new(out, TSRI_PRIM_ROPE, &p, sizeof p, x->dtype, x->shape, x->ndim, inputs, 2,
                       s);
}

static tsr_status sdpa_shape_error(const char *why, const tsr_array *q, const tsr_array *k,
                                   const tsr_array *v) {
  char sq[SHAPE_TEXT], sk[SHAPE_TEXT], sv[SHAPE_TEXT];
  return tsri_error(TSR_ERR_INVALID, "sdpa: %s (q %s, k %s, v %s)", why,
                    tsri_shape_str(q->shape, q->ndim, sq, sizeof sq),
                    tsri_shape_str(k->shape, k->ndim, sk, sizeof sk),
                    tsri_shape_str(v->shape, v->ndim, sv, sizeof sv));
}

static tsr_status check_sdpa_shapes(const tsr_array *q, const tsr_array *k, const tsr_array *v,
                                    bool causal) {
  if (q->ndim != 4 || k->ndim != 4 || v->ndim != 4)
    return sdpa_shape_error("q, k and v must be 4-d [B, H, T, D]", q, k, v);
  for (int i = 0; i < 4; i++)
    if (k->shape[i] != v->shape[i]) return sdpa_shape_error("k and v shapes differ", q, k, v);
  if (q->shape[0] != k->shape[0]) return sdpa_shape_error("batch B of q and k differ", q, k, v);
  if (q->shape[3] != k->shape[3]) return sdpa_shape_error("head dim D of q and k differ", q, k, v);
  int64_t hq = q->shape[1], hkv = k->shape[1], tq = q->shape[2], tk = k->shape[2];
  if (tq > INT_MAX || tk > INT_MAX || q->shape[3] > INT_MAX)
    return sdpa_shape_error("Tq, Tk or D exceeds 2^31 - 1 (BLAS int)", q, k, v);
  if ((hkv == 0 && hq != 0) || (hkv != 0 && hq % hkv != 0)) {
    char why[128];
    snprintf(why, sizeof why, "Hq %lld is not a multiple of Hkv %lld", (long long)hq,
             (long long)hkv);
    return sdpa_shape_error(why, q, k, v);
  }
  /* With keys aligned to the end of the queries, a query row before Tq - Tk would see no key:
     that is a caller's mistake, not a softmax of nothing. */
  if (causal && tk < tq) {
    char why[128];
    snprintf(why, sizeof why,
             "causal needs Tk >= Tq (Tq %lld, Tk %lld: query rows 0..%lld see no key)",
             (long long)tq, (long long)tk, (long long)(tq - tk - 1));
    return sdpa_shape_error(why, q, k, v);
  }
  return TSR_OK;
}

/* The checks tsr_sdpa and tsr_sdpa_dynamic share, their messages prefixed with `what`. */
static tsr_status check_sdpa_args(const char *what, tsr_array **out, const tsr_array *q,
                                  const tsr_array *k, const tsr_array *v, float scale,
                                  bool causal) {
  if (!out || !q || !k || !v)
    return tsri_error(TSR_ERR_INVALID, "%s: %s is NULL", what,
                      !out ? "out"
                      : !q ? "q"
                      : !k ? "k"
                           : "v");
  tsr_status status = need_float(what, "q", q);
  if (status == TSR_OK) status = need_float(what, "k", k);
  if (status == TSR_OK) status = need_float(what, "v", v);
  if (status == TSR_OK) status = check_sdpa_shapes(q, k, v, causal);
  if (status == TSR_OK && !isfinite(scale))
    return tsri_error(TSR_ERR_INVALID, "%s: scale %g must be finite", what, (double)scale);
  return status;
}

/* q, k, v of float dtypes (they may differ); k and v of one shape; scale finite. Causal with
 * Tk < Tq is rejected (query rows before Tq - Tk would see no key); without the mask, Tk = 0
 * gives zeros (an empty weighted sum). Tq, Tk and D fit a 32-bit BLAS int. */
tsr_status tsr_sdpa(tsr_array **out, tsr_array *q, tsr_array *k, tsr_array *v, float scale,
                    bool causal, tsr_stream *s) {
  tsr_status status = check_sdpa_args("sdpa", out, q, k, v, scale, causal);
  if (status != TSR_OK) return status;
  const tsri_sdpa_params p = {.scale = scale, .causal = causal};
  tsr_array *inputs[3] = {q, k, v};
  return tsri_node_new(out, TSRI_PRIM_SDPA, &p, sizeof p, q->dtype, q->shape, 4, inputs, 3, s);
}

/* tsr_sdpa's checks with causal; the length is data, clamped by the kernel. */
tsr_status tsr_sdpa_dynamic(tsr_array **out, tsr_array *q, tsr_array *k, tsr_array *v, float scale,
                            tsr_array *length, tsr_stream *s) {
  tsr_status status = check_sdpa_args("sdpa_dynamic", out, q, k, v, scale, true);
  if (status == TSR_OK) status = tsri_position_scalar_check("sdpa_dynamic", "length", length);
  if (status != TSR_OK) return status;
  const tsri_sdpa_params p = {.scale = scale, .causal = true, .dynamic_length = true};
  tsr_array *inputs[4] = {q, k, v, length};
  return tsri_node_new(out, TSRI_PRIM_SDPA, &p, sizeof p, q->dtype, q->shape, 4, inputs, 4, s);
}
