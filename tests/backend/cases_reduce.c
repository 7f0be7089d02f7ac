/* tests/backend/cases_reduce.c — conformance cases for the reductions (sum, mean, max, min,
 * argmax over several axes), cumsum, argsort, argpartition and topk.
 *
 * Tolerances. The CPU sums in float64 and rounds once (ops.h); a backend summing K terms in
 * float32 is within (K - 1) u sum|x_i| <= K^2 u of the exact sum for |x_i| <= 1 (u = 2^-24),
 * plus one ulp of the output dtype for the final rounding: abs K^2 u, rel one ulp. A mean
 * divides that by K. max, min, argmax, integer sums and every index result are exact. The
 * orders argpartition and topk leave free ("any order") are taken out by the builders, which
 * return what is fixed: argpartition's pivot, which side each element is on and the set of
 * indices; topk's values and indices sorted by index. */
#include "harness.h"

static tsr_status b_reduce(tsr_array **o, tsr_array *const *in, const conf_params *p,
                           tsr_stream *s) {
  return p->reduce(&o[0], in[0], p->axes, p->naxes, p->flag, s);
}

static tsr_status b_argmax(tsr_array **o, tsr_array *const *in, const conf_params *p,
                           tsr_stream *s) {
  return tsr_argmax(&o[0], in[0], p->axis, p->flag, s);
}

/* flag: reverse; flag2: inclusive. */
static tsr_status b_cumsum(tsr_array **o, tsr_array *const *in, const conf_params *p,
                           tsr_stream *s) {
  return tsr_cumsum(&o[0], in[0], p->axis, p->flag, p->flag2, s);
}

static tsr_status b_argsort(tsr_array **o, tsr_array *const *in, const conf_params *p,
                            tsr_stream *s) {
  return tsr_argsort(&o[0], in[0], p->axis, s);
}

/* Along the last axis, kth = p->k: o[0] the pivot a[kth] of the partitioned line, o[1] whether
   each element of the partitioned line is below it (fixed when the values are distinct), o[2] the
   indices sorted (every index once). */
static tsr_status b_argpartition(tsr_array **o, tsr_array *const *in, const conf_params *p,
                                 tsr_stream *s) {
  int ndim = tsr_array_ndim(in[0]);
  int64_t n = tsr_array_dim(in[0], -1), kth = p->k < 0 ? p->k + n : p->k;
  int64_t start[TSR_MAX_NDIM] = {0}, stop[TSR_MAX_NDIM];
  for (int d = 0; d < ndim; d++)
    stop[d] = tsr_array_dim(in[0], d);
  start[ndim - 1] = kth;
  stop[ndim - 1] = kth + 1;
  tsr_array *idx = NULL, *line = NULL, *order = NULL;
  tsr_status st = tsr_argpartition(&idx, in[0], p->k, -1, s);
  if (st == TSR_OK) st = tsr_take_along_axis(&line, in[0], idx, -1, s);
  if (st == TSR_OK) st = tsr_slice(&o[0], line, start, stop, NULL, ndim, s);
  if (st == TSR_OK) st = tsr_less(&o[1], line, o[0], s);
  if (st == TSR_OK) st = tsr_argsort(&order, idx, -1, s);
  if (st == TSR_OK) st = tsr_take_along_axis(&o[2], idx, order, -1, s);
  tsr_array_release(idx);
  tsr_array_release(line);
  tsr_array_release(order);
  return st;
}

/* The top p->k along the last axis, values and indices sorted by index. */
static tsr_status b_topk(tsr_array **o, tsr_array *const *in, const conf_params *p, tsr_stream *s) {
  tsr_array *values = NULL, *indices = NULL, *order = NULL;
  tsr_status st = tsr_topk(&values, &indices, in[0], p->k, -1, s);
  if (st == TSR_OK) st = tsr_argsort(&order, indices, -1, s);
  if (st == TSR_OK) st = tsr_take_along_axis(&o[0], values, order, -1, s);
  if (st == TSR_OK) st = tsr_take_along_axis(&o[1], indices, order, -1, s);
  tsr_array_release(values);
  tsr_array_release(indices);
  tsr_array_release(order);
  return st;
}

#define F32 TSR_FLOAT32
#define F16 TSR_FLOAT16
#define BF16 TSR_BFLOAT16
#define U CONF_UNIFORM
#define SP CONF_SPECIAL
/* A K-term float32 sum against the CPU's float64 one (top of the file), then one ulp of the
   output (and one float16 subnormal step). */
#define SUM_TOL(K, ulp) .tol = {CONF_U32 * (K) * (K) + 0x1p-24, (ulp)}
#define MEAN_TOL(K, ulp) .tol = {CONF_U32 * (K) + 0x1p-24, (ulp)}

const conf_case conf_cases_reduce[] = {
    /* ---- sum, mean ---- */
    {CONF_CASE("sum_f32_axis1", b_reduce, 1, 1), .in = {CONF_IN(F32, U, -1, 1, 7, 33, 5)},
     .p = {.reduce = tsr_sum, .naxes = 1, .axes = {1}}, SUM_TOL(33, CONF_ULP32)},
    {CONF_CASE("sum_f32_axes02_keepdims", b_reduce, 1, 1), .in = {CONF_IN(F32, U, -1, 1, 7, 33, 5)},
     .p = {.reduce = tsr_sum, .naxes = 2, .axes = {0, 2}, .flag = true}, SUM_TOL(35, CONF_ULP32)},
    {CONF_CASE("sum_f32_all", b_reduce, 1, 1), .in = {CONF_IN(F32, U, -1, 1, 7, 33, 5)},
     .p = {.reduce = tsr_sum}, SUM_TOL(1155, CONF_ULP32)},
    {CONF_CASE("sum_bf16_axis0", b_reduce, 1, 1), .in = {CONF_IN(BF16, U, -1, 1, 65, 7)},
     .p = {.reduce = tsr_sum, .naxes = 1, .axes = {0}}, SUM_TOL(65, CONF_ULPBF16)},
    /* small integers: every partial sum is exact; the specials propagate */
    {CONF_CASE("sum_f16_special_last", b_reduce, 1, 1), .in = {CONF_IN(F16, SP, -3, 4, 7, 33)},
     .p = {.reduce = tsr_sum, .naxes = 1, .axes = {-1}}},
    {CONF_CASE("sum_int32_gives_int64", b_reduce, 1, 1),
     .in = {CONF_IN(TSR_INT32, U, -0x1p31, 0x1p31, 7, 33)},
     .p = {.reduce = tsr_sum, .naxes = 1, .axes = {1}}},
    {CONF_CASE("sum_bool_counts", b_reduce, 1, 1), .in = {CONF_IN(TSR_BOOL, U, 0, 2, 33, 65)},
     .p = {.reduce = tsr_sum, .naxes = 1, .axes = {0}}},
    {CONF_CASE("mean_f32_last", b_reduce, 1, 1), .in = {CONF_IN(F32, U, -1, 1, 7, 33)},
     .p = {.reduce = tsr_mean, .naxes = 1, .axes = {-1}}, MEAN_TOL(33, CONF_ULP32)},
    /* an exact integer sum divided once: correctly rounded, two ulps for a GPU's division */
    {CONF_CASE("mean_int32_gives_f32", b_reduce, 1, 1),
     .in = {CONF_IN(TSR_INT32, U, -1000, 1000, 33, 7)},
     .p = {.reduce = tsr_mean, .naxes = 1, .axes = {0}}, .tol = {0, 2 * CONF_ULP32}},
    {CONF_CASE("mean_f16_all", b_reduce, 1, 1), .in = {CONF_IN(F16, U, -1, 1, 3, 7, 5)},
     .p = {.reduce = tsr_mean}, MEAN_TOL(105, CONF_ULP16)},

    /* ---- max, min, argmax: exact ---- */
    {CONF_CASE("max_f32_special_axis0", b_reduce, 1, 1), .in = {CONF_IN(F32, SP, -3, 4, 7, 33)},
     .p = {.reduce = tsr_max, .naxes = 1, .axes = {0}}},
    {CONF_CASE("max_f16_axes02", b_reduce, 1, 1), .in = {CONF_IN(F16, U, -1, 1, 3, 7, 33)},
     .p = {.reduce = tsr_max, .naxes = 2, .axes = {0, 2}}},
    {CONF_CASE("min_bf16_all", b_reduce, 1, 1), .in = {CONF_IN(BF16, U, -1, 1, 7, 33)},
     .p = {.reduce = tsr_min}},
    {CONF_CASE("min_int8_keepdims", b_reduce, 1, 1), .in = {CONF_IN(TSR_INT8, U, -128, 128, 33, 7)},
     .p = {.reduce = tsr_min, .naxes = 1, .axes = {1}, .flag = true}},
    {CONF_CASE("max_bool_last", b_reduce, 1, 1), .in = {CONF_IN(TSR_BOOL, U, 0, 2, 7, 3)},
     .p = {.reduce = tsr_max, .naxes = 1, .axes = {-1}}},
    {CONF_CASE("argmax_f32_axis1", b_argmax, 1, 1), .in = {CONF_IN(F32, U, -1, 1, 7, 33)},
     .p = {.axis = 1}},
    {CONF_CASE("argmax_f32_special_axis0", b_argmax, 1, 1), .in = {CONF_IN(F32, SP, -3, 4, 33, 7)},
     .p = {.axis = 0}},
    {CONF_CASE("argmax_f16_ties_keepdims", b_argmax, 1, 1),
     .in = {CONF_IN(F16, SP, -2, 3, 3, 7, 5)}, .p = {.axis = 1, .flag = true}},
    {CONF_CASE("argmax_int32_last", b_argmax, 1, 1), .in = {CONF_IN(TSR_INT32, U, -99, 99, 5, 65)},
     .p = {.axis = -1}},

    /* ---- cumsum: a prefix of m <= K terms, bounded as a K-term sum ---- */
    {CONF_CASE("cumsum_f32_axis1", b_cumsum, 1, 1), .in = {CONF_IN(F32, U, -1, 1, 7, 33)},
     .p = {.axis = 1, .flag2 = true}, SUM_TOL(33, CONF_ULP32)},
    {CONF_CASE("cumsum_f32_axis0_reverse_exclusive", b_cumsum, 1, 1),
     .in = {CONF_IN(F32, U, -1, 1, 33, 7)}, .p = {.axis = 0, .flag = true},
     SUM_TOL(33, CONF_ULP32)},
    {CONF_CASE("cumsum_f16_axis1", b_cumsum, 1, 1), .in = {CONF_IN(F16, U, -1, 1, 3, 65)},
     .p = {.axis = 1, .flag2 = true}, SUM_TOL(65, CONF_ULP16)},
    {CONF_CASE("cumsum_int32_reverse_gives_int64", b_cumsum, 1, 1),
     .in = {CONF_IN(TSR_INT32, U, -0x1p31, 0x1p31, 7, 33)},
     .p = {.axis = 1, .flag = true, .flag2 = true}},
    {CONF_CASE("cumsum_bool_exclusive", b_cumsum, 1, 1), .in = {CONF_IN(TSR_BOOL, U, 0, 2, 33, 7)},
     .p = {.axis = 0}},

    /* ---- sorting and selection: exact ---- */
    {CONF_CASE("argsort_f32_last", b_argsort, 1, 1), .in = {CONF_IN(F32, U, -1, 1, 7, 33)},
     .p = {.axis = -1}},
    {CONF_CASE("argsort_f32_special_stable", b_argsort, 1, 1),
     .in = {CONF_IN(F32, SP, -3, 4, 7, 33)}, .p = {.axis = 1}},
    {CONF_CASE("argsort_int32_ties_axis0", b_argsort, 1, 1),
     .in = {CONF_IN(TSR_INT32, U, -3, 3, 33, 7)}, .p = {.axis = 0}},
    {CONF_CASE("argsort_bf16_axis0", b_argsort, 1, 1), .in = {CONF_IN(BF16, U, -1, 1, 65, 3)},
     .p = {.axis = 0}},
    {CONF_CASE("argpartition_f32", b_argpartition, 1, 3), .in = {CONF_IN(F32, U, -1, 1, 7, 33)},
     .p = {.k = 5}},
    {CONF_CASE("argpartition_int32_negative_kth", b_argpartition, 1, 3),
     .in = {CONF_IN(TSR_INT32, CONF_PERM, -200, 125, 5, 65)}, .p = {.k = -3}},
    {CONF_CASE("topk_f32", b_topk, 1, 2), .in = {CONF_IN(F32, U, -1, 1, 7, 33)}, .p = {.k = 5}},
    {CONF_CASE("topk_bf16_distinct", b_topk, 1, 2),
     .in = {CONF_IN(BF16, CONF_PERM, -97, 98, 3, 65)}, .p = {.k = 7}},
    {CONF_CASE("topk_f16_k1", b_topk, 1, 2), .in = {CONF_IN(F16, CONF_PERM, -500, 1, 33, 15)},
     .p = {.k = 1}},
};
const size_t conf_cases_reduce_count = sizeof conf_cases_reduce / sizeof conf_cases_reduce[0];
