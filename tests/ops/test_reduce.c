/* tests/ops/test_reduce.c — sum, mean, max, min and argmax against a float64 reference written
 * here (naive loops over the row-major multi-index): several axes sets with and without keepdims,
 * transposed, reversed-slice and broadcast inputs, float16/bfloat16/integer/bool dtypes and their
 * output dtypes, NaN, ties, zero-size axes, a long float32 sum, and every bad argument. Not
 * cumsum or the sorting ops (test_sort.c).
 *
 * Tolerances. The library sums in float64 and rounds once to the output dtype; the reference sums
 * in float64 too. Each float64 sum of K terms is within (K - 1) 2^-53 sum|x_i| of the exact one
 * (recursive summation, any order), so |got - ref| <= u |ref| + 2 K 2^-53 sum|x_i|, with u the
 * output's rounding: 2^-24 for float32, 2^-11 + 2^-24 for float16 and 2^-8 + 2^-24 for bfloat16
 * (float64 -> float32 -> 16-bit, two roundings). A mean divides both by K (one more 2^-53).
 * max, min, argmax and integer sums are exact. */
#include <math.h>

#include "check.h"

static const tsr_device cpu = {TSR_CPU, 0};

typedef enum { OP_SUM, OP_MEAN, OP_MAX, OP_MIN, OP_ARGMAX } op_kind;
static const char *const op_names[] = {"sum", "mean", "max", "min", "argmax"};

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static double rnd_unit(void) { /* [0, 1), a 64-bit LCG's top 53 bits */
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(rng_state >> 11) * 0x1p-53;
}

static int64_t shape_size(const int64_t *shape, int ndim) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++)
    n *= shape[d];
  return n;
}

/* An array of `dtype` holding x (each value representable in it, or rounded by the public
 * conversions). */
static tsr_array *make_array(const double *x, const int64_t *shape, int ndim, tsr_dtype dtype) {
  int64_t n = shape_size(shape, ndim);
  unsigned char *bytes = malloc((size_t)(n > 0 ? n : 1) * 8);
  CHECK(bytes);
  for (int64_t i = 0; i < n; i++) {
    switch (dtype) {
      case TSR_FLOAT32:
        ((float *)(void *)bytes)[i] = (float)x[i];
        break;
      case TSR_FLOAT16:
        ((uint16_t *)(void *)bytes)[i] = tsr_f32_to_f16((float)x[i]);
        break;
      case TSR_BFLOAT16:
        ((uint16_t *)(void *)bytes)[i] = tsr_f32_to_bf16((float)x[i]);
        break;
      case TSR_INT64:
        ((int64_t *)(void *)bytes)[i] = (int64_t)x[i];
        break;
      case TSR_INT32:
        ((int32_t *)(void *)bytes)[i] = (int32_t)x[i];
        break;
      case TSR_UINT32:
        ((uint32_t *)(void *)bytes)[i] = (uint32_t)x[i];
        break;
      case TSR_INT8:
        ((int8_t *)(void *)bytes)[i] = (int8_t)x[i];
        break;
      case TSR_UINT8:
        ((uint8_t *)(void *)bytes)[i] = (uint8_t)x[i];
        break;
      case TSR_BOOL:
        bytes[i] = x[i] != 0;
        break;
    }
  }
  tsr_array *a = NULL;
  CHECK_OK(tsr_array_from_data(&a, bytes, dtype, shape, ndim));
  free(bytes);
  return a;
}

/* Every element of `a`, evaluated, as float64 (int64 beyond 2^53 is not read through this). */
static double *read_doubles(tsr_array *a) {
  int64_t n = tsr_array_size(a);
  size_t bytes = (size_t)n * tsr_dtype_size(tsr_array_dtype(a));
  unsigned char *raw = malloc(bytes + 8);
  double *out = malloc((size_t)(n > 0 ? n : 1) * sizeof *out);
  CHECK(raw && out);
  CHECK_OK(tsr_array_read(a, raw, bytes));
  for (int64_t i = 0; i < n; i++) {
    switch (tsr_array_dtype(a)) {
      case TSR_FLOAT32:
        out[i] = (double)((float *)(void *)raw)[i];
        break;
      case TSR_FLOAT16:
        out[i] = (double)tsr_f16_to_f32(((uint16_t *)(void *)raw)[i]);
        break;
      case TSR_BFLOAT16:
        out[i] = (double)tsr_bf16_to_f32(((uint16_t *)(void *)raw)[i]);
        break;
      case TSR_INT64:
        out[i] = (double)((int64_t *)(void *)raw)[i];
        break;
      case TSR_INT32:
        out[i] = (double)((int32_t *)(void *)raw)[i];
        break;
      case TSR_UINT32:
        out[i] = (double)((uint32_t *)(void *)raw)[i];
        break;
      case TSR_INT8:
        out[i] = (double)((int8_t *)(void *)raw)[i];
        break;
      case TSR_UINT8:
      case TSR_BOOL:
        out[i] = (double)raw[i];
        break;
    }
  }
  free(raw);
  return out;
}

static tsr_status run_op(op_kind op, tsr_array **out, tsr_array *a, const int *axes, int naxes,
                         bool keepdims) {
  switch (op) {
    case OP_SUM:
      return tsr_sum(out, a, axes, naxes, keepdims, NULL);
    case OP_MEAN:
      return tsr_mean(out, a, axes, naxes, keepdims, NULL);
    case OP_MAX:
      return tsr_max(out, a, axes, naxes, keepdims, NULL);
    case OP_MIN:
      return tsr_min(out, a, axes, naxes, keepdims, NULL);
    case OP_ARGMAX:
      return tsr_argmax(out, a, naxes > 0 ? axes[0] : 0, keepdims, NULL);
  }
  return TSR_ERR_INVALID;
}

static bool is_float(tsr_dtype t) {
  return t == TSR_FLOAT32 || t == TSR_FLOAT16 || t == TSR_BFLOAT16;
}

static tsr_dtype expected_dtype(op_kind op, tsr_dtype in) {
  if (op == OP_ARGMAX) return TSR_INT32;
  if (op == OP_SUM) return is_float(in) ? in : TSR_INT64;
  if (op == OP_MEAN) return is_float(in) ? in : TSR_FLOAT32;
  return in;
}

/* The reference: out[o] over the kept axes in row-major order; sum|x| per output for bounds. */
typedef struct {
  int64_t out_size, count;
  double *value, *sumabs;
} ref_result;

static void ref_reduce(op_kind op, const double *x, const int64_t *shape, int ndim,
                       const bool *reduced, ref_result *r) {
  r->out_size = 1;
  r->count = 1;
  int arg_axis = 0;
  for (int d = 0; d < ndim; d++) {
    if (reduced[d])
      r->count *= shape[d], arg_axis = d;
    else
      r->out_size *= shape[d];
  }
  size_t n_out = (size_t)(r->out_size > 0 ? r->out_size : 1);
  r->value = calloc(n_out, sizeof(double));
  r->sumabs = calloc(n_out, sizeof(double));
  double *best = calloc(n_out, sizeof(double));
  CHECK(r->value && r->sumabs && best);
  for (int64_t o = 0; o < r->out_size; o++)
    best[o] = r->value[o] = op == OP_MAX || op == OP_ARGMAX ? -HUGE_VAL
                            : op == OP_MIN                  ? HUGE_VAL
                                                            : 0.0;
  int64_t index[TSR_MAX_NDIM] = {0}, total = shape_size(shape, ndim);
  for (int64_t i = 0; i < total; i++) {
    int64_t o = 0;
    for (int d = 0; d < ndim; d++)
      if (!reduced[d]) o = o * shape[d] + index[d];
    double v = x[i];
    r->sumabs[o] += fabs(v);
    if (op == OP_SUM || op == OP_MEAN) r->value[o] += v;
    if (op == OP_MAX && (isnan(v) || v > r->value[o])) r->value[o] = v;
    if (op == OP_MIN && (isnan(v) || v < r->value[o])) r->value[o] = v;
    if (op == OP_ARGMAX && !isnan(best[o]) && (isnan(v) || v > best[o])) {
      best[o] = v;
      r->value[o] = (double)index[arg_axis];
    }
    for (int d = ndim - 1; d >= 0 && ++index[d] == shape[d]; d--)
      index[d] = 0;
  }
  if (op == OP_MEAN)
    for (int64_t o = 0; o < r->out_size; o++)
      r->value[o] = r->count > 0 ? r->value[o] / (double)r->count : (double)NAN;
  free(best);
}

static double rounding_unit(tsr_dtype t) {
  return t == TSR_FLOAT16 ? 0x1p-11 + 0x1p-24 : t == TSR_BFLOAT16 ? 0x1p-8 + 0x1p-24 : 0x1p-24;
}

/* Runs `op` on `a` (whose logical row-major values are x) and checks shape, dtype and values. */
static void check_reduce(op_kind op, tsr_array *a, const double *x, const int *axes, int naxes,
                         bool keepdims) {
  int ndim = tsr_array_ndim(a);
  int64_t shape[TSR_MAX_NDIM];
  bool reduced[TSR_MAX_NDIM] = {false};
  for (int d = 0; d < ndim; d++) {
    shape[d] = tsr_array_dim(a, d);
    reduced[d] = naxes == 0 && op != OP_ARGMAX;
  }
  for (int i = 0; i < (op == OP_ARGMAX ? 1 : naxes); i++)
    reduced[axes[i] < 0 ? axes[i] + ndim : axes[i]] = true;
  tsr_array *out = NULL;
  CHECK_OK(run_op(op, &out, a, axes, naxes, keepdims));
  tsr_dtype dtype = expected_dtype(op, tsr_array_dtype(a));
  CHECK_EQ_INT(tsr_array_dtype(out), dtype);
  int k = 0;
  for (int d = 0; d < ndim; d++)
    if (!reduced[d] || keepdims) CHECK_EQ_INT(tsr_array_dim(out, k++), reduced[d] ? 1 : shape[d]);
  CHECK_EQ_INT(tsr_array_ndim(out), k);
  ref_result r;
  ref_reduce(op, x, shape, ndim, reduced, &r);
  double *got = read_doubles(out);
  for (int64_t o = 0; o < r.out_size; o++) {
    double want = r.value[o], tol = 0.0;
    if ((op == OP_SUM || op == OP_MEAN) && is_float(dtype)) {
      double sum_bound = 2.0 * (double)r.count * 0x1p-53 * r.sumabs[o];
      if (op == OP_MEAN) sum_bound = sum_bound / (double)r.count + 0x1p-53 * fabs(want);
      tol = rounding_unit(dtype) * fabs(want) + sum_bound;
    }
    bool same = isnan(want) ? isnan(got[o]) : fabs(got[o] - want) <= tol;
    if (!same)
      CHECK_FAIL_(
          "%s of %s over %d axes (keepdims %d), output %lld: got %.9g, want %.9g (tol %.3g)",
          op_names[op], tsr_dtype_name(tsr_array_dtype(a)), naxes, (int)keepdims, (long long)o,
          got[o], want, tol);
  }
  free(got);
  free(r.value);
  free(r.sumabs);
  tsr_array_release(out);
}

/* Every op over every axes set of a [5, 6, 7] array, keepdims on and off. */
static void check_all_axes(tsr_array *a, const double *x) {
  static const int sets[][3] = {{0}, {1}, {2}, {-1}, {0, 2}, {2, 0}, {-3, 1}, {0, 1, 2}, {1, 2}};
  static const int counts[] = {1, 1, 1, 1, 2, 2, 2, 3, 2};
  for (int op = OP_SUM; op <= OP_MIN; op++) {
    for (int keep = 0; keep < 2; keep++) {
      check_reduce((op_kind)op, a, x, NULL, 0, keep);
      for (size_t s = 0; s < sizeof counts / sizeof *counts; s++)
        check_reduce((op_kind)op, a, x, sets[s], counts[s], keep);
    }
  }
  for (int axis = -3; axis < 3; axis++) {
    check_reduce(OP_ARGMAX, a, x, &axis, 1, false);
    check_reduce(OP_ARGMAX, a, x, &axis, 1, true);
  }
}

static void test_float32_axes(void) {
  int64_t shape[3] = {5, 6, 7};
  double x[210];
  for (int i = 0; i < 210; i++)
    x[i] = (float)(rnd_unit() * 200.0 - 100.0); /* float32 values, held exactly */
  tsr_array *a = make_array(x, shape, 3, TSR_FLOAT32);
  check_all_axes(a, x);
  tsr_array_release(a);
}

/* A transposed view, a reversed strided slice and a broadcast view as inputs. */
static void test_views(void) {
  int64_t base_shape[3] = {6, 5, 7};
  double base[210], logical[210];
  for (int i = 0; i < 210; i++)
    base[i] = (float)(rnd_unit() * 20.0 - 10.0);
  tsr_array *b = make_array(base, base_shape, 3, TSR_FLOAT32), *t = NULL;
  int perm[3] = {1, 0, 2}; /* t[i][j][k] = base[j][i][k], shape [5, 6, 7] */
  CHECK_OK(tsr_transpose(&t, b, perm, 3, NULL));
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < 6; j++)
      for (int k = 0; k < 7; k++)
        logical[(i * 6 + j) * 7 + k] = base[(j * 5 + i) * 7 + k];
  check_all_axes(t, logical);
  /* base[::-2, :, 1::3] -> [3, 5, 2]: rows 5, 3, 1 and columns 1, 4 */
  int64_t start[3] = {-1, 0, 1}, stop[3] = {-100, 5, 7}, step[3] = {-2, 1, 3};
  tsr_array *s = NULL;
  CHECK_OK(tsr_slice(&s, b, start, stop, step, 3, NULL));
  CHECK_EQ_INT(tsr_array_dim(s, 0), 3);
  CHECK_EQ_INT(tsr_array_dim(s, 2), 2);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 5; j++)
      for (int k = 0; k < 2; k++)
        logical[(i * 5 + j) * 2 + k] = base[((5 - 2 * i) * 5 + j) * 7 + 1 + 3 * k];
  static const int axes01[2] = {0, 1}, axis2 = 2, axis0 = 0;
  for (int op = OP_SUM; op <= OP_MIN; op++) {
    check_reduce((op_kind)op, s, logical, axes01, 2, false);
    check_reduce((op_kind)op, s, logical, &axis2, 1, true);
  }
  check_reduce(OP_ARGMAX, s, logical, &axis0, 1, false);
  /* a [7] row broadcast to [4, 7]: stride 0 on axis 0 */
  int64_t row_shape[1] = {7}, wide[2] = {4, 7};
  tsr_array *row = make_array(base, row_shape, 1, TSR_FLOAT32), *bc = NULL;
  CHECK_OK(tsr_broadcast_to(&bc, row, wide, 2, NULL));
  for (int i = 0; i < 28; i++)
    logical[i] = base[i % 7];
  for (int op = OP_SUM; op <= OP_ARGMAX; op++) {
    check_reduce((op_kind)op, bc, logical, &axis0, 1, false);
    if (op != OP_ARGMAX) check_reduce((op_kind)op, bc, logical, NULL, 0, false);
  }
  tsr_array_release(t);
  tsr_array_release(s);
  tsr_array_release(bc);
  tsr_array_release(row);
  tsr_array_release(b);
}

/* float16/bfloat16 (values k/8, |k| < 256: exact in both) and every integer dtype and bool. */
static void test_dtypes(void) {
  int64_t shape[3] = {5, 6, 7};
  double x[210];
  static const tsr_dtype halves[2] = {TSR_FLOAT16, TSR_BFLOAT16};
  for (int h = 0; h < 2; h++) {
    for (int i = 0; i < 210; i++)
      x[i] = (double)((int)(rnd_unit() * 511.0) - 255) / 8.0;
    tsr_array *a = make_array(x, shape, 3, halves[h]);
    check_all_axes(a, x);
    tsr_array_release(a);
  }
  static const tsr_dtype ints[6] = {TSR_INT8,   TSR_UINT8, TSR_INT32,
                                    TSR_UINT32, TSR_INT64, TSR_BOOL};
  static const double lows[6] = {-128, 0, -2e9, 0, -4e13, 0},
                      spans[6] = {256, 256, 4e9, 4e9, 8e13, 2};
  for (int t = 0; t < 6; t++) {
    for (int i = 0; i < 210; i++)
      x[i] = floor(lows[t] + rnd_unit() * spans[t]);
    tsr_array *a = make_array(x, shape, 3, ints[t]);
    check_all_axes(a, x);
    tsr_array_release(a);
  }
  /* int64 sums wrap: INT64_MAX + 1 = INT64_MIN */
  int64_t big[2] = {INT64_MAX, 1}, got = 0, two[1] = {2};
  tsr_array *a = NULL, *out = NULL;
  CHECK_OK(tsr_array_from_data(&a, big, TSR_INT64, two, 1));
  CHECK_OK(tsr_sum(&out, a, NULL, 0, false, NULL));
  CHECK_OK(tsr_array_read(out, &got, sizeof got));
  CHECK(got == INT64_MIN);
  tsr_array_release(out);
  CHECK_OK(tsr_max(&out, a, NULL, 0, false, NULL)); /* int64 max exact beyond 2^53 */
  CHECK_OK(tsr_array_read(out, &got, sizeof got));
  CHECK(got == INT64_MAX);
  tsr_array_release(out);
  tsr_array_release(a);
}

/* NaN propagates through sum/mean/max/min; argmax takes the first NaN, else the first maximum. */
static void test_nan_and_ties(void) {
  float xs[8] = {1, NAN, 3, NAN, 3, 3, -INFINITY, 2}, got[4];
  int64_t shape[2] = {2, 4};
  tsr_array *a = NULL, *out = NULL;
  CHECK_OK(tsr_array_from_data(&a, xs, TSR_FLOAT32, shape, 2));
  int axis = 1;
  for (int op = OP_SUM; op <= OP_MIN; op++) {
    CHECK_OK(run_op((op_kind)op, &out, a, &axis, 1, false));
    CHECK_OK(tsr_array_read(out, got, 2 * sizeof(float)));
    CHECK(isnan(got[0]));
    CHECK(!isnan(got[1]));
    tsr_array_release(out);
  }
  int32_t idx[4];
  CHECK_OK(tsr_argmax(&out, a, 1, false, NULL));
  CHECK_OK(tsr_array_read(out, idx, 2 * sizeof(int32_t)));
  CHECK_EQ_INT(idx[0], 1); /* the first NaN */
  CHECK_EQ_INT(idx[1], 0); /* 3 at 0, 1 and 4... the first */
  tsr_array_release(out);
  float ninf[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
  int64_t four[1] = {4};
  tsr_array *b = NULL;
  CHECK_OK(tsr_array_from_data(&b, ninf, TSR_FLOAT32, four, 1));
  CHECK_OK(tsr_argmax(&out, b, 0, false, NULL));
  CHECK_EQ_INT(tsr_array_ndim(out), 0);
  CHECK_OK(tsr_array_read(out, idx, sizeof(int32_t)));
  CHECK_EQ_INT(idx[0], 0);
  tsr_array_release(out);
  tsr_array_release(b);
  tsr_array_release(a);
}

/* Zero-size axes: sum 0, mean NaN, max/min/argmax refused unless the output is empty too; a
 * 0-d input; a long float32 sum within its float64 bound. */
static void test_zero_size_and_scalar(void) {
  int64_t s30[2] = {3, 0}, s05[2] = {0, 5}, s00[2] = {0, 0};
  tsr_array *a30 = make_array(NULL, s30, 2, TSR_FLOAT32),
            *a05 = make_array(NULL, s05, 2, TSR_INT32);
  tsr_array *a00 = make_array(NULL, s00, 2, TSR_FLOAT32), *out = NULL;
  int axis1 = 1, axis0 = 0;
  float got[5];
  CHECK_OK(tsr_sum(&out, a30, &axis1, 1, false, NULL));
  CHECK_OK(tsr_array_read(out, got, 3 * sizeof(float)));
  CHECK(got[0] == 0.0f && got[1] == 0.0f && got[2] == 0.0f);
  tsr_array_release(out);
  CHECK_OK(tsr_mean(&out, a30, &axis1, 1, true, NULL));
  CHECK_EQ_INT(tsr_array_dim(out, 1), 1);
  CHECK_OK(tsr_array_read(out, got, 3 * sizeof(float)));
  CHECK(isnan(got[0]) && isnan(got[2]));
  tsr_array_release(out);
  int64_t sums[5];
  CHECK_OK(tsr_sum(&out, a05, &axis0, 1, false, NULL)); /* int32 -> int64 zeros */
  CHECK_OK(tsr_array_read(out, sums, sizeof sums));
  for (int i = 0; i < 5; i++)
    CHECK_EQ_INT(sums[i], 0);
  tsr_array_release(out);
  CHECK_OK(tsr_max(&out, a30, &axis0, 1, false, NULL)); /* [0]: nothing to reduce */
  CHECK_EQ_INT(tsr_array_size(out), 0);
  CHECK_OK(tsr_array_read(out, got, 0));
  tsr_array_release(out);
  CHECK_OK(tsr_min(&out, a00, &axis1, 1, false, NULL));
  CHECK_OK(tsr_array_read(out, got, 0));
  tsr_array_release(out);
  tsr_array *sentinel = (tsr_array *)0x1;
  out = sentinel;
  CHECK_STATUS(tsr_max(&out, a30, &axis1, 1, false, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("axis 1 of [3, 0]");
  CHECK_STATUS(tsr_min(&out, a30, NULL, 0, false, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("min");
  CHECK_STATUS(tsr_argmax(&out, a05, 0, false, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("[0, 5]");
  CHECK(out == sentinel);
  double seven = 7.0;
  tsr_array *scalar = make_array(&seven, NULL, 0, TSR_FLOAT32);
  check_reduce(OP_SUM, scalar, &seven, NULL, 0, false);
  check_reduce(OP_MAX, scalar, &seven, NULL, 0, true);
  int64_t n = 1 << 20, long_shape[1] = {n};
  double *x = malloc((size_t)n * sizeof *x);
  CHECK(x);
  for (int64_t i = 0; i < n; i++)
    x[i] = (float)(rnd_unit() + 0.1);
  tsr_array *big = make_array(x, long_shape, 1, TSR_FLOAT32);
  check_reduce(OP_SUM, big, x, NULL, 0, false);
  check_reduce(OP_MEAN, big, x, NULL, 0, false);
  tsr_array_release(big);
  free(x);
  tsr_array_release(scalar);
  tsr_array_release(a30);
  tsr_array_release(a05);
  tsr_array_release(a00);
}

static void test_bad_inputs(void) {
  double x[20] = {0};
  int64_t shape[2] = {4, 5};
  tsr_array *a = make_array(x, shape, 2, TSR_FLOAT32), *sentinel = (tsr_array *)0x1,
            *out = sentinel;
  int three = 3, minus3 = -3, dup[2] = {1, -1}, two[2] = {0, 1};
  for (int op = OP_SUM; op <= OP_MIN; op++) {
    CHECK_STATUS(run_op((op_kind)op, NULL, a, NULL, 0, false), TSR_ERR_INVALID);
    CHECK_MESSAGE("out is NULL");
    CHECK_MESSAGE(op_names[op]);
    CHECK_STATUS(run_op((op_kind)op, &out, NULL, NULL, 0, false), TSR_ERR_INVALID);
    CHECK_MESSAGE("a is NULL");
    CHECK_STATUS(run_op((op_kind)op, &out, a, &three, 1, false), TSR_ERR_INVALID);
    CHECK_MESSAGE("axis 3 out of range for a 2-d array [4, 5]");
    CHECK_STATUS(run_op((op_kind)op, &out, a, &minus3, 1, false), TSR_ERR_INVALID);
    CHECK_MESSAGE("axis -3");
    CHECK_STATUS(run_op((op_kind)op, &out, a, dup, 2, false), TSR_ERR_INVALID);
    CHECK_MESSAGE("axis -1 repeated in axes [1, -1]");
    CHECK_STATUS(run_op((op_kind)op, &out, a, NULL, 2, false), TSR_ERR_INVALID);
    CHECK_MESSAGE("axes is NULL with naxes 2");
    CHECK_STATUS(run_op((op_kind)op, &out, a, two, -1, false), TSR_ERR_INVALID);
    CHECK_MESSAGE("naxes -1");
  }
  CHECK_STATUS(tsr_argmax(&out, a, 2, false, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("argmax: axis 2 out of range for a 2-d array [4, 5]");
  CHECK_STATUS(tsr_argmax(NULL, a, 0, false, NULL), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_argmax(&out, NULL, 0, false, NULL), TSR_ERR_INVALID);
  CHECK(out == sentinel);
  tsr_array_release(a);
}

int main(void) {
  test_float32_axes();
  test_views();
  test_dtypes();
  test_nan_and_ties();
  test_zero_size_and_scalar();
  test_bad_inputs();
  CHECK_OK(tsr_memory_clear_cache(cpu));
  CHECK_NO_LEAKS();
  tsr_shutdown();
  puts("test_reduce: ok");
  return 0;
}
