/* ops/quant.c — tsr_quantize, tsr_dequantize and their nvfp4 global-scale forms: every argument
 * check of quant-spec.md Part A §6, then the nodes. quantize is ONE QUANTIZE node computing w_q,
 * scales and biases into one blob, exposed through QUANT_PART views, so evaluating any part
 * computes all of them once. The arithmetic is the backends' (cpu/quant.c). */
#include "ops/quant.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/dtype.h"
#include "base/quant_format.h"
#include "base/status.h"
#include "core/array.h"
#include "core/views.h"
#include "tessera/quant.h"

_Static_assert(TSR_QUANT_AFFINE == TSRI_QF_AFFINE && TSR_QUANT_MXFP4 == TSRI_QF_MXFP4 &&
                   TSR_QUANT_MXFP8 == TSRI_QF_MXFP8 && TSR_QUANT_NVFP4 == TSRI_QF_NVFP4,
               "quant_format.h's modes are tsr_quant_mode's");

#define SHAPE_TEXT 96

static const char *mode_name(int mode) {
  static const char *const names[] = {"affine", "mxfp4", "mxfp8", "nvfp4"};
  return mode >= 0 && mode < 4 ? names[mode] : "?";
}

/* Resolves 0 to the mode's defaults and checks membership; TSR_ERR_INVALID naming the values. */
static tsr_status resolve_format(const char *what, int mode, int *group_size, int *bits) {
  if (mode < TSRI_QF_AFFINE || mode > TSRI_QF_NVFP4)
    return tsri_error(TSR_ERR_INVALID,
                      "%s: mode %d not supported (use affine 0, mxfp4 1, mxfp8 2 or nvfp4 3)", what,
                      mode);
  if (*group_size == 0) *group_size = tsri_qf_default_group_size(mode);
  if (*bits == 0) *bits = tsri_qf_default_bits(mode);
  if (!tsri_qf_valid_group_size(mode, *group_size))
    return tsri_error(TSR_ERR_INVALID, "%s: group_size %d not supported for mode %s (use %s)", what,
                      *group_size, mode_name(mode),
                      mode == TSRI_QF_AFFINE  ? "32, 64 or 128"
                      : mode == TSRI_QF_NVFP4 ? "16"
                                              : "32");
  if (!tsri_qf_valid_bits(mode, *bits))
    return tsri_error(TSR_ERR_INVALID, "%s: bits %d not supported for mode %s (use %s)", what,
                      *bits, mode_name(mode),
                      mode == TSRI_QF_AFFINE  ? "2, 3, 4, 5, 6 or 8"
                      : mode == TSRI_QF_MXFP8 ? "8"
                                              : "4");
  return TSR_OK;
}

static tsr_status check_global_scale(const char *what, float global_scale) {
  if (isfinite(global_scale) && global_scale > 0.0f) return TSR_OK;
  return tsri_error(TSR_ERR_INVALID, "%s: global_scale %g must be finite and > 0", what,
                    (double)global_scale);
}

static int64_t align_up(int64_t bytes) {
  return (bytes + TSRI_QUANT_PART_ALIGN - 1) / TSRI_QUANT_PART_ALIGN * TSRI_QUANT_PART_ALIGN;
}

/* w: a float array of rank >= 2 whose last axis is whole groups. */
static tsr_status check_weights(const char *what, const tsr_array *w, int group_size) {
  char shape[SHAPE_TEXT];
  tsri_shape_str(w->shape, w->ndim, shape, sizeof shape);
  if (!tsri_dtype_is_float(w->dtype))
    return tsri_error(TSR_ERR_INVALID,
                      "%s: w %s has dtype %s (float32, float16 or bfloat16 needed)", what, shape,
                      tsr_dtype_name(w->dtype));
  if (w->ndim < 2)
    return tsri_error(TSR_ERR_INVALID, "%s: w %s is %d-d (at least 2 dimensions needed)", what,
                      shape, w->ndim);
  int64_t k = w->shape[w->ndim - 1];
  if (k % group_size != 0)
    return tsri_error(TSR_ERR_INVALID,
                      "%s: last dimension %lld of w %s is not a multiple of group_size %d", what,
                      (long long)k, shape, group_size);
  return TSR_OK;
}

/* The part views, built only once all of them can be: on failure nothing is returned. */
static tsr_status make_parts(tsr_array *blob, const tsr_array *w, const tsri_quantize_params *q,
                             tsr_stream *s, tsr_array **parts) {
  int nparts = q->mode == TSRI_QF_AFFINE ? 3 : 2;
  tsr_dtype scale_dtype = q->mode == TSRI_QF_AFFINE ? w->dtype : TSR_UINT8;
  const tsr_dtype dtypes[3] = {TSR_UINT32, scale_dtype, scale_dtype};
  const int64_t offsets[3] = {0, q->scales_offset, q->biases_offset};
  int64_t shape[TSR_MAX_NDIM];
  memcpy(shape, w->shape, sizeof(int64_t) * (size_t)w->ndim);
  for (int i = 0; i < nparts; i++) {
    int64_t groups_per_row = q->k / q->group_size;
    shape[w->ndim - 1] = i == 0 ? groups_per_row * (q->group_size * q->bits / 32) : groups_per_row;
    const tsri_quant_part_params p = {.part = i, .byte_offset = offsets[i]};
    tsr_status status = tsri_node_new(&parts[i], TSRI_PRIM_QUANT_PART, &p, sizeof p, dtypes[i],
                                      shape, w->ndim, &blob, 1, s);
    if (status != TSR_OK) {
      for (int j = 0; j < i; j++)
        tsr_array_release(parts[j]);
      return status;
    }
  }
  return TSR_OK;
}

static tsr_status quantize_node(const char *what, tsr_array **w_q, tsr_array **scales,
                                tsr_array **biases, tsr_array *w, int mode, int group_size,
                                int bits, bool has_global_scale, float global_scale,
                                tsr_stream *s) {
  tsr_status status = check_weights(what, w, group_size);
  if (status != TSR_OK) return status;
  tsri_quantize_params q = {.mode = mode,
                            .group_size = group_size,
                            .bits = bits,
                            .has_global_scale = has_global_scale,
                            .global_scale = global_scale,
                            .k = w->shape[w->ndim - 1]};
  q.rows = 1; /* the product of the leading axes, also when K is 0 */
  for (int d = 0; d < w->ndim - 1; d++)
    q.rows *= w->shape[d];
  size_t scale_bytes = mode == TSRI_QF_AFFINE ? tsr_dtype_size(w->dtype) : 1;
  /* Per whole group (group_size * bits is a multiple of 32), so nothing here passes the size of
     w itself, which its shape check bounded: K * bits could overflow where these cannot. */
  int64_t groups_per_row = q.k / group_size;
  int64_t wq_bytes = q.rows * (groups_per_row * (group_size * bits / 8));
  int64_t part_bytes = q.rows * groups_per_row * (int64_t)scale_bytes;
  q.scales_offset = align_up(wq_bytes);
  q.biases_offset = mode == TSRI_QF_AFFINE ? q.scales_offset + align_up(part_bytes) : 0;
  int64_t blob_bytes = (mode == TSRI_QF_AFFINE ? q.biases_offset : q.scales_offset) + part_bytes;
  int64_t blob_size = 0;
  status = tsri_shape_check(what, &blob_bytes, 1, TSR_UINT8, &blob_size);
  if (status != TSR_OK) return status;

  tsr_array *blob = NULL, *parts[3] = {NULL, NULL, NULL};
  tsr_array *inputs[1] = {w};
  status = tsri_node_new(&blob, TSRI_PRIM_QUANTIZE, &q, sizeof q, TSR_UINT8, &blob_bytes, 1, inputs,
                         1, s);
  if (status != TSR_OK) return status;
  status = make_parts(blob, w, &q, s, parts);
  tsr_array_release(blob); /* the parts hold it */
  if (status != TSR_OK) return status;
  *w_q = parts[TSRI_QUANT_PART_WQ];
  *scales = parts[TSRI_QUANT_PART_SCALES];
  if (biases) *biases = parts[TSRI_QUANT_PART_BIASES];
  return TSR_OK;
}

tsr_status tsr_quantize(tsr_array **w_q, tsr_array **scales, tsr_array **biases, tsr_array *w,
                        int group_size, int bits, tsr_quant_mode mode, tsr_stream *s) {
  const char *what = "quantize";
  if (!w_q || !scales || !w)
    return tsri_error(TSR_ERR_INVALID, "%s: %s is NULL", what,
                      !w_q      ? "w_q"
                      : !scales ? "scales"
                                : "w");
  tsr_status status = resolve_format(what, (int)mode, &group_size, &bits);
  if (status != TSR_OK) return status;
  if (mode == TSR_QUANT_AFFINE && !biases)
    return tsri_error(TSR_ERR_INVALID, "%s: biases is NULL (mode affine produces biases)", what);
  return quantize_node(what, w_q, scales, biases, w, (int)mode, group_size, bits, false, 0.0f, s);
}

tsr_status tsr_quantize_nvfp4_scaled(tsr_array **w_q, tsr_array **scales, tsr_array *w,
                                     float global_scale, tsr_stream *s) {
  const char *what = "quantize_nvfp4_scaled";
  if (!w_q || !scales || !w)
    return tsri_error(TSR_ERR_INVALID, "%s: %s is NULL", what,
                      !w_q      ? "w_q"
                      : !scales ? "scales"
                                : "w");
  tsr_status status = check_global_scale(what, global_scale);
  if (status != TSR_OK) return status;
  return quantize_node(what, w_q, scales, NULL, w, TSRI_QF_NVFP4, 16, 4, true, global_scale, s);
}

/* ---- dequantize ----------------------------------------------------------------------------- */

/* w_q uint32 of rank >= 2; scales (and biases) of the mode's dtype with w_q's leading axes and
   w_q.shape[-1] * 32 == scales.shape[-1] * group_size * bits. */
static tsr_status check_packed(const char *what, const tsr_array *w_q, const tsr_array *scales,
                               const tsr_array *biases, int mode, int group_size, int bits) {
  char sw[SHAPE_TEXT], ss[SHAPE_TEXT], sb[SHAPE_TEXT];
  tsri_shape_str(w_q->shape, w_q->ndim, sw, sizeof sw);
  tsri_shape_str(scales->shape, scales->ndim, ss, sizeof ss);
  if (w_q->dtype != TSR_UINT32)
    return tsri_error(TSR_ERR_INVALID, "%s: w_q %s has dtype %s (uint32 needed)", what, sw,
                      tsr_dtype_name(w_q->dtype));
  if (w_q->ndim < 2)
    return tsri_error(TSR_ERR_INVALID, "%s: w_q %s is %d-d (at least 2 dimensions needed)", what,
                      sw, w_q->ndim);
  if (mode == TSRI_QF_AFFINE) {
    if (!tsri_dtype_is_float(scales->dtype))
      return tsri_error(TSR_ERR_INVALID,
                        "%s: scales %s has dtype %s (mode affine needs float32, float16 or "
                        "bfloat16)",
                        what, ss, tsr_dtype_name(scales->dtype));
    tsri_shape_str(biases->shape, biases->ndim, sb, sizeof sb);
    if (biases->dtype != scales->dtype)
      return tsri_error(TSR_ERR_INVALID, "%s: biases dtype %s differs from scales dtype %s", what,
                        tsr_dtype_name(biases->dtype), tsr_dtype_name(scales->dtype));
    bool same = biases->ndim == scales->ndim;
    for (int d = 0; same && d < scales->ndim; d++)
      same = biases->shape[d] == scales->shape[d];
    if (!same)
      return tsri_error(TSR_ERR_INVALID, "%s: biases %s and scales %s differ in shape", what, sb,
                        ss);
  } else if (scales->dtype != TSR_UINT8) {
    return tsri_error(TSR_ERR_INVALID, "%s: scales %s has dtype %s (mode %s needs uint8)", what, ss,
                      tsr_dtype_name(scales->dtype), mode_name(mode));
  }
  bool leading_same = scales->ndim == w_q->ndim;
  for (int d = 0; leading_same && d < w_q->ndim - 1; d++)
    leading_same = scales->shape[d] == w_q->shape[d];
  if (!leading_same)
    return tsri_error(TSR_ERR_INVALID,
                      "%s: w_q %s and scales %s differ in their leading (batch and row) axes", what,
                      sw, ss);
  int64_t packed = w_q->shape[w_q->ndim - 1], groups = scales->shape[scales->ndim - 1];
  /* Both sides in bits. A valid shape can still make them pass int64 (a lazy uint32 zeros of
     2^60 words per row): such a side cannot equal the other, at most 32 times a real count. */
  int64_t group_bits = (int64_t)group_size * bits;
  bool fits = packed <= INT64_MAX / 32 && groups <= INT64_MAX / group_bits;
  if (!fits)
    return tsri_error(TSR_ERR_INVALID,
                      "%s: w_q %s (%lld words per row) and scales %s (%lld groups of %d) do not "
                      "describe one row length at bits %d",
                      what, sw, (long long)packed, ss, (long long)groups, group_size, bits);
  if (packed * 32 != groups * group_bits)
    return tsri_error(TSR_ERR_INVALID,
                      "%s: w_q %s holds %lld elements per row at bits %d but scales %s cover "
                      "%lld at group_size %d",
                      what, sw, (long long)(packed * 32 / bits), bits, ss,
                      (long long)(groups * group_size), group_size);
  return TSR_OK;
}

static tsr_status dequantize_node(const char *what, tsr_array **out, tsr_array *w_q,
                                  tsr_array *scales, tsr_array *biases, int mode, int group_size,
                                  int bits, bool has_global_scale, float global_scale,
                                  tsr_dtype dtype, tsr_stream *s) {
  tsr_status status = check_packed(what, w_q, scales, biases, mode, group_size, bits);
  if (status != TSR_OK) return status;
  if (!tsri_dtype_is_float(dtype))
    return tsri_error(TSR_ERR_INVALID,
                      "%s: dtype %s is not a float dtype (float32, float16 or bfloat16)", what,
                      tsr_dtype_name(dtype));
  int64_t shape[TSR_MAX_NDIM];
  memcpy(shape, w_q->shape, sizeof(int64_t) * (size_t)w_q->ndim);
  shape[w_q->ndim - 1] = w_q->shape[w_q->ndim - 1] * 32 / bits;
  int64_t size = 0;
  status = tsri_shape_check(what, shape, w_q->ndim, dtype, &size);
  if (status != TSR_OK) return status;
  const tsri_dequantize_params p = {.mode = mode,
                                    .group_size = group_size,
                                    .bits = bits,
                                    .has_global_scale = has_global_scale,
                                    .global_scale = global_scale};
  tsr_array *inputs[3] = {w_q, scales, biases};
  return tsri_node_new(out, TSRI_PRIM_DEQUANTIZE, &p, sizeof p, dtype, shape, w_q->ndim, inputs,
                       mode == TSRI_QF_AFFINE ? 3 : 2, s);
}

tsr_status tsr_dequantize(tsr_array **out, tsr_array *w_q, tsr_array *scales, tsr_array *biases,
                          int group_size, int bits, tsr_quant_mode mode, tsr_dtype dtype,
                          tsr_stream *s) {
  const char *what = "dequantize";
  if (!out || !w_q || !scales)
    return tsri_error(TSR_ERR_INVALID, "%s: %s is NULL", what,
                      !out   ? "out"
                      : !w_q ? "w_q"
                             : "scales");
  tsr_status status = resolve_format(what, (int)mode, &group_size, &bits);
  if (status != TSR_OK) return status;
  if (mode == TSR_QUANT_AFFINE && !biases)
    return tsri_error(TSR_ERR_INVALID, "%s: biases is NULL (mode affine needs biases)", what);
  if (mode != TSR_QUANT_AFFINE && biases)
    return tsri_error(TSR_ERR_INVALID, "%s: biases given for mode %s (only affine has biases)",
                      what, mode_name((int)mode));
  return dequantize_node(what, out, w_q, scales, biases, (int)mode, group_size, bits, false, 0.0f,
                         dtype, s);
}

tsr_status tsr_dequantize_nvfp4_scaled(tsr_array **out, tsr_array *w_q, tsr_array *scales,
                                       float global_scale, tsr_dtype dtype, tsr_stream *s) {
  const char *what = "dequantize_nvfp4_scaled";
  if (!out || !w_q || !scales)
    return tsri_error(TSR_ERR_INVALID, "%s: %s is NULL", what,
                      !out   ? "out"
                      : !w_q ? "w_q"
                             : "scales");
  tsr_status status = check_global_scale(what, global_scale);
  if (status != TSR_OK) return status;
  return dequantize_node(what, out, w_q, scales, NULL, TSRI_QF_NVFP4, 16, 4, true, global_scale,
                         dtype, s);
}
