/* ops/quant_matmul.c — tsr_quantized_matmul and tsr_gather_qmm: every argument check
 * (quant-spec.md Part A §6, Part B §4.1, including what MLX forgets to check), the geometry the
 * node keeps in its parameters (ops/quant_matmul.h) and the output dtype. The arithmetic is the
 * backends' (cpu/qmm.c). */
#include "ops/quant_matmul.h"

#include <stdint.h>
#include <string.h>

#include "base/dtype.h"
#include "base/shape.h"
#include "base/quant_format.h"
#include "base/status.h"
#include "core/array.h"
#include "tessera/quant.h"

/* The constructor's arguments, named. */
typedef struct {
  const tsr_array *x, *w_q, *scales, *biases, *lhs, *rhs; /* biases/lhs/rhs may be NULL */
} qmm_operands;

_Static_assert(TSR_QUANT_AFFINE == TSRI_QF_AFFINE && TSR_QUANT_MXFP4 == TSRI_QF_MXFP4 &&
                   TSR_QUANT_MXFP8 == TSRI_QF_MXFP8 && TSR_QUANT_NVFP4 == TSRI_QF_NVFP4,
               "tsr_quant_mode and base/quant_format.h agree");

static const char *mode_name(int mode) {
  static const char *const names[] = {"affine", "mxfp4", "mxfp8", "nvfp4"};
  return (unsigned)mode < 4u ? names[mode] : "unknown";
}

static bool is_float_compute(tsr_dtype t) {
  return t == TSR_FLOAT32 || t == TSR_FLOAT16 || t == TSR_BFLOAT16;
}

static bool is_integer(tsr_dtype t) {
  return tsri_dtype_valid(t) && !tsri_dtype_is_float(t) && t != TSR_BOOL;
}

static tsr_status check_mode(const char *op, const tsri_qmm_params *p) {
  if ((unsigned)p->mode >= 4u)
    return tsri_error(TSR_ERR_INVALID,
                      "%s: mode %d is not a quantization mode (affine 0, mxfp4 1, mxfp8 2, "
                      "nvfp4 3)",
                      op, p->mode);
  static const char *const group_sizes[] = {"32, 64 or 128", "32", "32", "16"};
  static const char *const bit_widths[] = {"2, 3, 4, 5, 6 or 8", "4", "8", "4"};
  if (!tsri_qf_valid_group_size(p->mode, p->group_size))
    return tsri_error(TSR_ERR_INVALID, "%s: group_size %d not supported for mode %s (use %s)", op,
                      p->group_size, mode_name(p->mode), group_sizes[p->mode]);
  if (!tsri_qf_valid_bits(p->mode, p->bits))
    return tsri_error(TSR_ERR_INVALID, "%s: bits %d not supported for mode %s (use %s)", op,
                      p->bits, mode_name(p->mode), bit_widths[p->mode]);
  return TSR_OK;
}

static tsr_status check_scale_dtypes(const char *op, const qmm_operands *o,
                                     const tsri_qmm_params *p) {
  char a[96], b[96];
  const tsr_array *scales = o->scales, *biases = o->biases;
  if (p->mode != TSRI_QF_AFFINE) {
    if (biases)
      return tsri_error(TSR_ERR_INVALID, "%s: biases must be NULL for mode %s (got %s %s)", op,
                        mode_name(p->mode),
                        tsri_shape_str(biases->shape, biases->ndim, a, sizeof a),
                        tsr_dtype_name(biases->dtype));
    if (scales->dtype != TSR_UINT8)
      return tsri_error(TSR_ERR_INVALID, "%s: scales have dtype %s (mode %s needs uint8 scales)",
                        op, tsr_dtype_name(scales->dtype), mode_name(p->mode));
    return TSR_OK;
  }
  if (!biases) return tsri_error(TSR_ERR_INVALID, "%s: biases must be given for mode affine", op);
  if (!is_float_compute(scales->dtype))
    return tsri_error(TSR_ERR_INVALID,
                      "%s: scales have dtype %s (mode affine needs float32, float16 or bfloat16)",
                      op, tsr_dtype_name(scales->dtype));
  if (biases->dtype != scales->dtype)
    return tsri_error(TSR_ERR_INVALID, "%s: biases have dtype %s but scales %s (they must agree)",
                      op, tsr_dtype_name(biases->dtype), tsr_dtype_name(scales->dtype));
  bool same_shape = biases->ndim == scales->ndim;
  for (int i = 0; same_shape && i < scales->ndim; i++)
    same_shape = biases->shape[i] == scales->shape[i];
  if (!same_shape)
    return tsri_error(TSR_ERR_INVALID, "%s: biases %s and scales %s differ in shape", op,
                      tsri_shape_str(biases->shape, biases->ndim, a, sizeof a),
                      tsri_shape_str(scales->shape, scales->ndim, b, sizeof b));
  return TSR_OK;
}

static tsr_status check_dtypes(const char *op, const qmm_operands *o, const tsri_qmm_params *p) {
  if (!is_float_compute(o->x->dtype))
    return tsri_error(TSR_ERR_INVALID, "%s: x has dtype %s (float32, float16 or bfloat16 needed)",
                      op, tsr_dtype_name(o->x->dtype));
  if (o->w_q->dtype != TSR_UINT32)
    return tsri_error(TSR_ERR_INVALID, "%s: w_q has dtype %s (uint32 needed: packed codes)", op,
                      tsr_dtype_name(o->w_q->dtype));
  if (o->lhs && !is_integer(o->lhs->dtype))
    return tsri_error(TSR_ERR_INVALID, "%s: lhs_indices have dtype %s (an integer dtype needed)",
                      op, tsr_dtype_name(o->lhs->dtype));
  if (o->rhs && !is_integer(o->rhs->dtype))
    return tsri_error(TSR_ERR_INVALID, "%s: rhs_indices have dtype %s (an integer dtype needed)",
                      op, tsr_dtype_name(o->rhs->dtype));
  return check_scale_dtypes(op, o, p);
}

/* w_q [..., rows, words] and scales [..., rows, groups]: same leading axes, and words * 32 / bits
   elements per row equal to groups * group_size. Sets the weight part of g. */
static tsr_status check_weight_shapes(const char *op, const qmm_operands *o,
                                      const tsri_qmm_params *p, tsri_qmm_geometry *g) {
  char a[96], b[96];
  const tsr_array *w = o->w_q, *scales = o->scales;
  tsri_shape_str(w->shape, w->ndim, a, sizeof a);
  tsri_shape_str(scales->shape, scales->ndim, b, sizeof b);
  if (w->ndim < 2)
    return tsri_error(TSR_ERR_INVALID,
                      "%s: w_q %s has %d axes (at least 2 needed: [..., rows, words])", op, a,
                      w->ndim);
  bool leading_match = scales->ndim == w->ndim;
  for (int i = 0; leading_match && i < w->ndim - 1; i++)
    leading_match = scales->shape[i] == w->shape[i];
  if (!leading_match)
    return tsri_error(TSR_ERR_INVALID,
                      "%s: w_q %s and scales %s must agree on every axis but the last (batch "
                      "axes and rows)",
                      op, a, b);
  int64_t words = w->shape[w->ndim - 1], groups = scales->shape[scales->ndim - 1];
  /* Both sides in bits; a side beyond int64 (a broadcast view can claim such shapes) cannot
     match the other, which is at most 32 times a real word count. */
  int64_t group_bits = (int64_t)p->group_size * p->bits;
  bool fits = words <= INT64_MAX / 32 && groups <= INT64_MAX / group_bits;
  if (!fits || words * 32 != groups * group_bits)
    return tsri_error(TSR_ERR_INVALID,
                      "%s: w_q %s and scales %s do not fit group_size %d and bits %d (%lld words "
                      "* 32 bits != %lld groups * %d * %d bits)",
                      op, a, b, p->group_size, p->bits, (long long)words, (long long)groups,
                      p->group_size, p->bits);
  g->w_rows = w->shape[w->ndim - 2];
  g->w_words = words;
  g->groups = groups;
  int64_t elements = groups * p->group_size; /* per packed row */
  g->k = p->transpose ? elements : g->w_rows;
  g->n = p->transpose ? g->w_rows : elements;
  g->w_matrices = 1;
  for (int i = 0; i < w->ndim - 2; i++)
    g->w_matrices *= w->shape[i];
  return TSR_OK;
}

/* shape = broadcast(a, b), right-aligned; false when two axes differ and neither is 1. */
static bool broadcast_shape(const int64_t *a, int a_ndim, const int64_t *b, int b_ndim,
                            int64_t *shape, int *ndim) {
  *ndim = a_ndim > b_ndim ? a_ndim : b_ndim;
  for (int i = 0; i < *ndim; i++) {
    int ia = a_ndim - *ndim + i, ib = b_ndim - *ndim + i;
    int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1) return false;
    shape[i] = da == 1 ? db : da;
  }
  return true;
}

static void set_index_shape(int *ndim, int64_t *shape, const int64_t *from, int from_ndim) {
  *ndim = from_ndim;
  for (int i = 0; i < from_ndim; i++)
    shape[i] = from[i];
}

/* The batch part of g: which matrices each output matrix uses (ops/quant_matmul.h). */
static tsr_status batch_geometry(const char *op, const qmm_operands *o, tsri_qmm_geometry *g) {
  const tsr_array *x = o->x, *w = o->w_q;
  char a[96], b[96];
  bool gather = o->lhs || o->rhs;
  int x_batch = x->ndim > 2 ? x->ndim - 2 : 0, w_batch = w->ndim - 2;
  if (gather && x->ndim < 2)
    return tsri_error(TSR_ERR_INVALID, "%s: x %s has %d axes (at least 2 needed with indices)", op,
                      tsri_shape_str(x->shape, x->ndim, a, sizeof a), x->ndim);
  set_index_shape(&g->lhs_ndim, g->lhs_shape, x->shape, x_batch);
  /* quantized_matmul broadcasts batch axes only when both x and w have them; otherwise every
     product uses w's first matrix (MLX's rule, also for a 2-D x with a 3-D w). */
  bool w_batched = gather || (x_batch > 0 && w_batch > 0);
  set_index_shape(&g->rhs_ndim, g->rhs_shape, w->shape, w_batched ? w_batch : 0);
  if (o->lhs) set_index_shape(&g->lhs_ndim, g->lhs_shape, o->lhs->shape, o->lhs->ndim);
  if (o->rhs) set_index_shape(&g->rhs_ndim, g->rhs_shape, o->rhs->shape, o->rhs->ndim);
  if (!broadcast_shape(g->lhs_shape, g->lhs_ndim, g->rhs_shape, g->rhs_ndim, g->batch_shape,
                       &g->batch_ndim))
    return tsri_error(TSR_ERR_INVALID, "%s: %s %s and %s %s do not broadcast", op,
                      gather ? "lhs_indices" : "x's batch axes",
                      tsri_shape_str(g->lhs_shape, g->lhs_ndim, a, sizeof a),
                      gather ? "rhs_indices" : "w_q's batch axes",
                      tsri_shape_str(g->rhs_shape, g->rhs_ndim, b, sizeof b));
  g->x_matrices = 1;
  for (int i = 0; i < x_batch; i++)
    g->x_matrices *= x->shape[i];
  if (!tsri_dims_count(g->batch_shape, g->batch_ndim, 1, &g->batch_count))
    return tsri_error(TSR_ERR_INVALID, "%s: the broadcast batch shape %s overflows int64", op,
                      tsri_shape_str(g->batch_shape, g->batch_ndim, a, sizeof a));
  if (g->batch_ndim + 2 > TSR_MAX_NDIM)
    return tsri_error(TSR_ERR_INVALID, "%s: the output would have %d axes (at most %d)", op,
                      g->batch_ndim + 2, TSR_MAX_NDIM);
  g->m = x->ndim >= 2 ? x->shape[x->ndim - 2] : 1;
  g->out_ndim = 0;
  for (int i = 0; i < g->batch_ndim; i++)
    g->out_shape[g->out_ndim++] = g->batch_shape[i];
  if (x->ndim >= 2) g->out_shape[g->out_ndim++] = g->m;
  g->out_shape[g->out_ndim++] = g->n;
  return TSR_OK;
}

/* Validates every argument of the op `op` ("quantized_matmul" or "gather_qmm"; a gather node
 * with neither indices array is a quantized_matmul, as in MLX) and computes its geometry and
 * output dtype. TSR_ERR_INVALID naming the values (quant-spec.md Part A §6, Part B §4.1). `p`
 * carries the resolved group size and bits; has_lhs / has_rhs must match operands' pointers. */
static tsr_status qmm_geometry_of(const char *op, const qmm_operands *o, const tsri_qmm_params *p,
                                  tsri_qmm_geometry *g, tsr_dtype *out_dtype) {
  tsr_status status = check_mode(op, p);
  if (status == TSR_OK) status = check_dtypes(op, o, p);
  if (status != TSR_OK) return status;
  char a[96], b[96];
  if (o->x->ndim < 1)
    return tsri_error(TSR_ERR_INVALID, "%s: x is 0-d (a vector [K] or matrices [..., M, K] needed)",
                      op);
  status = check_weight_shapes(op, o, p, g);
  if (status != TSR_OK) return status;
  int64_t x_inner = o->x->shape[o->x->ndim - 1];
  if (x_inner != g->k)
    return tsri_error(TSR_ERR_INVALID,
                      "%s: x %s has last dimension %lld but the quantized matrix has K = %lld "
                      "(w_q %s, group_size %d, bits %d, transpose %s)",
                      op, tsri_shape_str(o->x->shape, o->x->ndim, a, sizeof a), (long long)x_inner,
                      (long long)g->k, tsri_shape_str(o->w_q->shape, o->w_q->ndim, b, sizeof b),
                      p->group_size, p->bits, p->transpose ? "true" : "false");
  status = batch_geometry(op, o, g);
  if (status != TSR_OK) return status;
  *out_dtype =
      p->mode == TSRI_QF_AFFINE ? tsri_dtype_promote(o->x->dtype, o->scales->dtype) : o->x->dtype;
  int64_t size;
  return tsri_shape_check(op, g->out_shape, g->out_ndim, *out_dtype, &size);
}

static tsr_status build(tsr_array **out, const char *op, const qmm_operands *o, bool transpose,
                        int group_size, int bits, tsr_quant_mode mode, bool sorted_indices,
                        tsr_stream *s) {
  if (!out || !o->x || !o->w_q || !o->scales)
    return tsri_error(TSR_ERR_INVALID, "%s: %s is NULL", op,
                      !out      ? "out"
                      : !o->x   ? "x"
                      : !o->w_q ? "w_q"
                                : "scales");
  tsri_qmm_params p = {.mode = (int)mode,
                       .group_size = group_size,
                       .bits = bits,
                       .transpose = transpose,
                       .has_biases = o->biases != NULL,
                       .has_lhs = o->lhs != NULL,
                       .has_rhs = o->rhs != NULL,
                       .sorted_indices = sorted_indices};
  if (p.group_size == 0) p.group_size = tsri_qf_default_group_size(p.mode);
  if (p.bits == 0) p.bits = tsri_qf_default_bits(p.mode);
  tsr_dtype dtype = TSR_FLOAT32; /* set when the geometry is (GCC cannot see tsri_error != 0) */
  tsr_status status = qmm_geometry_of(op, o, &p, &p.g, &dtype);
  if (status != TSR_OK) return status;
  tsr_array *inputs[6] = {(tsr_array *)o->x, (tsr_array *)o->w_q, (tsr_array *)o->scales};
  int n = 3;
  if (o->biases) inputs[n++] = (tsr_array *)o->biases;
  if (o->lhs) inputs[n++] = (tsr_array *)o->lhs;
  if (o->rhs) inputs[n++] = (tsr_array *)o->rhs;
  tsri_primitive primitive = (o->lhs || o->rhs) ? TSRI_PRIM_GATHER_QMM : TSRI_PRIM_QUANTIZED_MATMUL;
  return tsri_node_new(out, primitive, &p, sizeof p, dtype, p.g.out_shape, p.g.out_ndim, inputs, n,
                       s);
}

tsr_status tsr_quantized_matmul(tsr_array **out, tsr_array *x, tsr_array *w_q, tsr_array *scales,
                                tsr_array *biases, bool transpose, int group_size, int bits,
                                tsr_quant_mode mode, tsr_stream *s) {
  qmm_operands o = {x, w_q, scales, biases, NULL, NULL};
  return build(out, "quantized_matmul", &o, transpose, group_size, bits, mode, false, s);
}

tsr_status tsr_gather_qmm(tsr_array **out, tsr_array *x, tsr_array *w_q, tsr_array *scales,
                          tsr_array *biases, tsr_array *lhs_indices, tsr_array *rhs_indices,
                          bool transpose, int group_size, int bits, tsr_quant_mode mode,
                          bool sorted_indices, tsr_stream *s) {
  qmm_operands o = {x, w_q, scales, biases, lhs_indices, rhs_indices};
  return build(out, "gather_qmm", &o, transpose, group_size, bits, mode, sorted_indices, s);
}
