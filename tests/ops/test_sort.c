/* tests/ops/test_sort.c — cumsum, argsort, argpartition and topk against references written here:
 * float64 running sums, a stable insertion sort with NaN last, and the sorted order's kth and top
 * k. Covers every axis of a 3-d array, transposed inputs, ties, NaN, -0 = +0, float16/integer
 * dtypes, zero-size axes, k = 1 and k = n, values/indices agreement, a [4, 151552] top-40 in
 * bounded time, and every bad argument. Not the reductions (test_reduce.c).
 *
 * Tolerances. cumsum sums in float64 and rounds each prefix once to the output dtype; the
 * reference runs the same prefix in float64. A prefix of m terms is within (m - 1) 2^-53 S of
 * exact (S = its sum of |x_i|), so |got - ref| <= u |ref| + 2 m 2^-53 S with u = 2^-24 for
 * float32 and 2^-11 + 2^-24 for float16 (two roundings). Integer prefixes and every index result
 * are exact. */
#include <math.h>
#include <time.h>

#include "check.h"

static const tsr_device cpu = {TSR_CPU, 0};

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double rnd_unit(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(rng_state >> 11) * 0x1p-53;
}

static tsr_array *from_f32(const float *x, const int64_t *shape, int ndim) {
  tsr_array *a = NULL;
  CHECK_OK(tsr_array_from_data(&a, x, TSR_FLOAT32, shape, ndim));
  return a;
}

/* NaN-last ascending order on float64 values; -0 equals +0. */
static bool ref_less(double a, double b) {
  return !isnan(a) && (isnan(b) || a < b);
}

/* A stable argsort of line[0..n) (insertion sort: equal values keep their order). */
static void ref_argsort(const double *line, int64_t n, int32_t *order) {
  for (int64_t i = 0; i < n; i++) {
    int64_t j = i;
    while (j > 0 && ref_less(line[i], line[order[j - 1]])) {
      order[j] = order[j - 1];
      j--;
    }
    order[j] = (int32_t)i;
  }
}

/* Element (i, j, k) of a row-major [d0, d1, d2] array, and its line along `axis` at position p. */
static int64_t at3(const int64_t *shape, int64_t i, int64_t j, int64_t k) {
  return (i * shape[1] + j) * shape[2] + k;
}
static int64_t line_at(const int64_t *shape, int axis, int64_t outer, int64_t p) {
  int64_t other[2], o = 0;
  for (int d = 0, m = 0; d < 3; d++)
    if (d != axis) other[m++] = shape[d];
  int64_t first = outer / other[1], second = outer % other[1];
  int64_t idx[3];
  for (int d = 0; d < 3; d++) {
    if (d == axis)
      idx[d] = p;
    else
      idx[d] = o++ == 0 ? first : second;
  }
  return at3(shape, idx[0], idx[1], idx[2]);
}

static void check_cumsum(tsr_array *a, const double *x, int axis, bool reverse, bool inclusive,
                         tsr_dtype want_dtype) {
  int64_t shape[3] = {tsr_array_dim(a, 0), tsr_array_dim(a, 1), tsr_array_dim(a, 2)};
  int d = axis < 0 ? axis + 3 : axis;
  int64_t n = shape[d], lines = shape[0] * shape[1] * shape[2] / (n ? n : 1);
  tsr_array *out = NULL;
  CHECK_OK(tsr_cumsum(&out, a, axis, reverse, inclusive, NULL));
  CHECK_EQ_INT(tsr_array_dtype(out), want_dtype);
  int64_t size = tsr_array_size(out);
  CHECK_EQ_INT(size, shape[0] * shape[1] * shape[2]);
  size_t element = tsr_dtype_size(want_dtype);
  unsigned char *raw = malloc((size_t)size * element + 1);
  CHECK(raw);
  CHECK_OK(tsr_array_read(out, raw, (size_t)size * element));
  double u = want_dtype == TSR_FLOAT16 ? 0x1p-11 + 0x1p-24 : 0x1p-24;
  for (int64_t line = 0; line < lines; line++) {
    double total = 0.0, total_abs = 0.0;
    for (int64_t step = 0; step < n; step++) {
      int64_t p = reverse ? n - 1 - step : step, at = line_at(shape, d, line, p);
      double want = inclusive ? total + x[at] : total, bound_abs = total_abs + fabs(x[at]);
      total += x[at];
      total_abs = bound_abs;
      double got = want_dtype == TSR_FLOAT32 ? (double)((float *)(void *)raw)[at]
                   : want_dtype == TSR_FLOAT16
                       ? (double)tsr_f16_to_f32(((uint16_t *)(void *)raw)[at])
                       : (double)((int64_t *)(void *)raw)[at];
      double tol = want_dtype == TSR_INT64
                       ? 0.0
                       : u * fabs(want) + 2.0 * (double)(step + 1) * 0x1p-53 * bound_abs;
      if (!(fabs(got - want) <= tol))
        CHECK_FAIL_("cumsum axis %d reverse %d inclusive %d at %lld: got %.9g want %.9g", axis,
                    (int)reverse, (int)inclusive, (long long)at, got, want);
    }
  }
  free(raw);
  tsr_array_release(out);
}

static void test_cumsum(void) {
  int64_t shape[3] = {4, 5, 6};
  double x[120];
  float xf[120];
  int32_t xi[120];
  uint16_t xh[120];
  for (int i = 0; i < 120; i++) {
    xf[i] = (float)(rnd_unit() * 20.0 - 10.0);
    xi[i] = (int32_t)(rnd_unit() * 4e9 - 2e9);
    xh[i] = tsr_f32_to_f16(xf[i]);
  }
  tsr_array *af = from_f32(xf, shape, 3), *ai = NULL, *ah = NULL;
  CHECK_OK(tsr_array_from_data(&ai, xi, TSR_INT32, shape, 3));
  CHECK_OK(tsr_array_from_data(&ah, xh, TSR_FLOAT16, shape, 3));
  for (int axis = 0; axis < 3; axis++) {
    for (int mode = 0; mode < 4; mode++) {
      bool reverse = mode & 1, inclusive = mode & 2;
      for (int i = 0; i < 120; i++)
        x[i] = (double)xf[i];
      check_cumsum(af, x, axis, reverse, inclusive, TSR_FLOAT32);
      for (int i = 0; i < 120; i++)
        x[i] = (double)xi[i];
      check_cumsum(ai, x, axis, reverse, inclusive, TSR_INT64);
      for (int i = 0; i < 120; i++)
        x[i] = (double)tsr_f16_to_f32(xh[i]);
      check_cumsum(ah, x, axis, reverse, inclusive, TSR_FLOAT16);
    }
  }
  /* a transposed view: t[i][j][k] = af[k][j][i], shape [6, 5, 4]; negative axis */
  tsr_array *t = NULL;
  CHECK_OK(tsr_transpose(&t, af, NULL, 0, NULL));
  int64_t ts[3] = {6, 5, 4};
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 5; j++)
      for (int k = 0; k < 4; k++)
        x[at3(ts, i, j, k)] = (double)xf[at3(shape, k, j, i)];
  for (int axis = 0; axis < 3; axis++)
    check_cumsum(t, x, axis, axis == 1, axis != 2, TSR_FLOAT32);
  check_cumsum(t, x, -1, true, false, TSR_FLOAT32);
  tsr_array_release(t);
  tsr_array_release(af);
  tsr_array_release(ai);
  tsr_array_release(ah);
}

/* Zero-size lines and bool input (int64 counts, exclusive). */
static void test_cumsum_edges(void) {
  float xf[1] = {0};
  double none[1];
  tsr_array *out = NULL, *empty = NULL, *flags = NULL;
  int64_t zero_shape[2] = {3, 0}, three[1] = {3};
  CHECK_OK(tsr_array_from_data(&empty, xf, TSR_FLOAT32, zero_shape, 2));
  CHECK_OK(tsr_cumsum(&out, empty, 1, false, true, NULL));
  CHECK_EQ_INT(tsr_array_size(out), 0);
  CHECK_OK(tsr_array_read(out, none, 0));
  tsr_array_release(out);
  CHECK_OK(tsr_cumsum(&out, empty, 0, true, false, NULL));
  CHECK_OK(tsr_eval(&out, 1));
  tsr_array_release(out);
  uint8_t bits[3] = {1, 1, 0};
  int64_t counts[3];
  CHECK_OK(tsr_array_from_data(&flags, bits, TSR_BOOL, three, 1));
  CHECK_OK(tsr_cumsum(&out, flags, 0, false, false, NULL)); /* exclusive: 0, 1, 2 */
  CHECK_EQ_INT(tsr_array_dtype(out), TSR_INT64);
  CHECK_OK(tsr_array_read(out, counts, sizeof counts));
  CHECK(counts[0] == 0 && counts[1] == 1 && counts[2] == 2);
  tsr_array_release(out);
  tsr_array_release(flags);
  tsr_array_release(empty);
}

/* Reads an int32 result and checks each line along `axis` against `check_line`. */
typedef void (*line_check)(const double *line, int64_t n, const int32_t *got, int64_t stride,
                           int64_t param);

static void for_each_line(tsr_array *out, const double *x, const int64_t *shape, int axis,
                          line_check check, int64_t param) {
  int64_t size = tsr_array_size(out), n = shape[axis], lines = size / (n ? n : 1);
  int32_t *got = malloc((size_t)size * sizeof *got + 1);
  double *line = malloc((size_t)n * sizeof *line + 1);
  CHECK(got && line);
  CHECK_OK(tsr_array_read(out, got, (size_t)size * sizeof *got));
  int64_t stride = line_at(shape, axis, 0, 1) - line_at(shape, axis, 0, 0);
  for (int64_t l = 0; l < lines; l++) {
    for (int64_t p = 0; p < n; p++)
      line[p] = x[line_at(shape, axis, l, p)];
    check(line, n, got + line_at(shape, axis, l, 0), stride, param);
  }
  free(got);
  free(line);
}

static void check_argsort_line(const double *line, int64_t n, const int32_t *got, int64_t stride,
                               int64_t unused) {
  (void)unused;
  int32_t want[64];
  CHECK(n <= 64);
  ref_argsort(line, n, want);
  for (int64_t p = 0; p < n; p++)
    if (got[p * stride] != want[p])
      CHECK_FAIL_("argsort position %lld: got %d, want %d", (long long)p, got[p * stride], want[p]);
}

/* argpartition: a permutation whose kth holds the kth of the sorted order, nothing larger before
 * it and nothing smaller after (NaN-last order). */
static void check_partition_line(const double *line, int64_t n, const int32_t *got, int64_t stride,
                                 int64_t kth) {
  int32_t order[64];
  bool seen[64] = {false};
  CHECK(n <= 64);
  ref_argsort(line, n, order);
  double pivot = line[got[kth * stride]], want = line[order[kth]];
  CHECK((isnan(pivot) && isnan(want)) || pivot == want);
  for (int64_t p = 0; p < n; p++) {
    int32_t i = got[p * stride];
    CHECK(i >= 0 && i < n && !seen[i]);
    seen[i] = true;
    if (p < kth) CHECK(!ref_less(pivot, line[i]));
    if (p > kth) CHECK(!ref_less(line[i], pivot));
  }
}

static void test_argsort_and_partition(void) {
  int64_t shape[3] = {3, 40, 5};
  float xf[600];
  double x[600];
  for (int i = 0; i < 600; i++) { /* few distinct values: ties; NaN of either sign, -0, +0 */
    int level = (int)(rnd_unit() * 7.0);
    xf[i] = level == 6 ? (i % 2 ? NAN : -NAN) : level == 5 ? -0.0f : (float)(level - 2) * 0.5f;
    if (level == 4 && rnd_unit() < 0.5) xf[i] = -INFINITY;
    x[i] = (double)xf[i];
  }
  tsr_array *a = from_f32(xf, shape, 3), *out = NULL;
  for (int axis = -3; axis < 3; axis++) {
    CHECK_OK(tsr_argsort(&out, a, axis, NULL));
    CHECK_EQ_INT(tsr_array_dtype(out), TSR_INT32);
    for_each_line(out, x, shape, axis < 0 ? axis + 3 : axis, check_argsort_line, 0);
    tsr_array_release(out);
    int d = axis < 0 ? axis + 3 : axis;
    int64_t kths[4] = {0, shape[d] / 2, shape[d] - 1, -1};
    for (int k = 0; k < 4; k++) {
      CHECK_OK(tsr_argpartition(&out, a, (int)kths[k], axis, NULL));
      int64_t kth = kths[k] < 0 ? kths[k] + shape[d] : kths[k];
      for_each_line(out, x, shape, d, check_partition_line, kth);
      tsr_array_release(out);
    }
  }
  /* integers beyond float precision, through a transposed view: t [5, 40, 3] */
  int64_t xi[600], ts[3] = {5, 40, 3};
  for (int i = 0; i < 600; i++)
    xi[i] = ((int64_t)(rnd_unit() * 16) - 8) * (INT64_C(1) << 58) + (int64_t)(rnd_unit() * 3);
  tsr_array *ai = NULL, *t = NULL;
  CHECK_OK(tsr_array_from_data(&ai, xi, TSR_INT64, shape, 3));
  CHECK_OK(tsr_transpose(&t, ai, NULL, 0, NULL));
  for (int i = 0; i < 5; i++) /* exact order via ranks: the doubles tie where the ints tie */
    for (int j = 0; j < 40; j++)
      for (int k = 0; k < 3; k++)
        x[at3(ts, i, j, k)] =
            (double)(xi[at3(shape, k, j, i)] >> 56) * 4.0 + (double)(xi[at3(shape, k, j, i)] & 3);
  CHECK_OK(tsr_argsort(&out, t, 1, NULL));
  for_each_line(out, x, ts, 1, check_argsort_line, 0);
  tsr_array_release(out);
  CHECK_OK(tsr_argpartition(&out, t, 7, 1, NULL));
  for_each_line(out, x, ts, 1, check_partition_line, 7);
  tsr_array_release(out);
  tsr_array_release(t);
  tsr_array_release(ai);
  tsr_array_release(a);
}

/* topk of one line: k distinct indices, values[j] = a[indices[j]], and they are the k largest
 * (NaN largest): every value left out is <= the smallest chosen. */
static void check_topk(tsr_array *a, const double *x, const int64_t *shape, int axis, int k) {
  tsr_array *values = NULL, *indices = NULL;
  CHECK_OK(tsr_topk(&values, &indices, a, k, axis, NULL));
  CHECK_EQ_INT(tsr_array_dtype(indices), TSR_INT32);
  CHECK_EQ_INT(tsr_array_dtype(values), tsr_array_dtype(a));
  CHECK_EQ_INT(tsr_array_dim(indices, axis), k);
  CHECK_EQ_INT(tsr_array_dim(values, axis), k);
  tsr_array *both[2] = {values, indices};
  CHECK_OK(tsr_eval(both, 2)); /* one evaluation: the selection runs once for both */
  int64_t n = shape[axis], lines = tsr_array_size(indices) / k;
  int64_t out_shape[3] = {shape[0], shape[1], shape[2]};
  out_shape[axis] = k;
  int32_t *idx = malloc((size_t)tsr_array_size(indices) * sizeof *idx);
  float *val = malloc((size_t)tsr_array_size(values) * sizeof *val);
  bool *chosen = malloc((size_t)n);
  CHECK(idx && val && chosen);
  CHECK_OK(tsr_array_read(indices, idx, (size_t)tsr_array_size(indices) * sizeof *idx));
  CHECK_OK(tsr_array_read(values, val, (size_t)tsr_array_size(values) * sizeof *val));
  for (int64_t l = 0; l < lines; l++) {
    memset(chosen, 0, (size_t)n);
    double smallest = NAN;
    for (int64_t j = 0; j < k; j++) {
      int64_t at = line_at(out_shape, axis, l, j);
      int32_t i = idx[at];
      CHECK(i >= 0 && i < n && !chosen[i]);
      chosen[i] = true;
      double v = x[line_at(shape, axis, l, i)];
      double value = tsr_array_dtype(a) == TSR_FLOAT32 ? (double)val[at]
                                                       : (double)((int32_t *)(void *)val)[at];
      CHECK((isnan(v) && isnan(value)) || value == v);
      if (ref_less(v, smallest)) smallest = v;
    }
    for (int64_t i = 0; i < n; i++)
      if (!chosen[i]) CHECK(!ref_less(smallest, x[line_at(shape, axis, l, i)]));
  }
  free(idx);
  free(val);
  free(chosen);
  tsr_array_release(values);
  tsr_array_release(indices);
}

static void test_topk(void) {
  int64_t shape[3] = {3, 50, 4};
  float xf[600];
  double x[600];
  for (int i = 0; i < 600; i++) {
    xf[i] = (float)(int)(rnd_unit() * 12.0) - 6.0f; /* ties */
    if (rnd_unit() < 0.02) xf[i] = NAN;
    x[i] = (double)xf[i];
  }
  tsr_array *a = from_f32(xf, shape, 3);
  for (int axis = 0; axis < 3; axis++) {
    int n = (int)shape[axis], ks[4] = {1, 2, n / 2 > 0 ? n / 2 : 1, n};
    for (int k = 0; k < 4; k++)
      check_topk(a, x, shape, axis, ks[k]);
  }
  int32_t xi[600];
  for (int i = 0; i < 600; i++)
    x[i] = (double)(xi[i] = (int32_t)(rnd_unit() * 4e9 - 2e9));
  tsr_array *ai = NULL;
  CHECK_OK(tsr_array_from_data(&ai, xi, TSR_INT32, shape, 3));
  check_topk(ai, x, shape, 1, 5); /* the one-pass heap: k * 8 <= n */
  check_topk(ai, x, shape, 1, 7); /* quickselect */
  tsr_array_release(ai);
  tsr_array_release(a);
}

static int compare_desc(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x > y ? -1 : x < y ? 1 : 0;
}

/* The decode-step shape: [4, vocab] top-40, checked against a full sort of each row. */
static void test_topk_vocab(void) {
  enum { ROWS = 4, VOCAB = 151552, K = 40 };
  int64_t shape[2] = {ROWS, VOCAB};
  float *x = malloc(sizeof(float) * ROWS * VOCAB), *sorted = malloc(sizeof(float) * VOCAB);
  CHECK(x && sorted);
  for (int64_t i = 0; i < (int64_t)ROWS * VOCAB; i++)
    x[i] = (float)(rnd_unit() * 30.0 - 15.0);
  tsr_array *a = from_f32(x, shape, 2), *values = NULL, *indices = NULL;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  CHECK_OK(tsr_topk(&values, &indices, a, K, -1, NULL));
  tsr_array *both[2] = {values, indices};
  CHECK_OK(tsr_eval(both, 2));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  CHECK(seconds < 2.0); /* a selection, not a sort: milliseconds; generous for sanitizers */
  float got[ROWS * K];
  int32_t idx[ROWS * K];
  CHECK_OK(tsr_array_read(values, got, sizeof got));
  CHECK_OK(tsr_array_read(indices, idx, sizeof idx));
  for (int r = 0; r < ROWS; r++) {
    for (int j = 0; j < K; j++) { /* values are the elements the indices name */
      CHECK(idx[r * K + j] >= 0 && idx[r * K + j] < VOCAB);
      CHECK(x[(int64_t)r * VOCAB + idx[r * K + j]] == got[r * K + j]);
    }
    memcpy(sorted, x + (int64_t)r * VOCAB, sizeof(float) * VOCAB);
    qsort(sorted, VOCAB, sizeof(float), compare_desc);
    qsort(got + r * K, K, sizeof(float), compare_desc);
    for (int j = 0; j < K; j++)
      CHECK(got[r * K + j] == sorted[j]);
  }
  tsr_array_release(values);
  tsr_array_release(indices);
  tsr_array_release(a);
  free(x);
  free(sorted);
}

static void test_bad_inputs(void) {
  float xs[20] = {0};
  int64_t shape[2] = {4, 5};
  tsr_array *a = from_f32(xs, shape, 2), *sentinel = (tsr_array *)0x1, *out = sentinel,
            *idx = sentinel;
  CHECK_STATUS(tsr_cumsum(&out, a, 2, false, true, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("cumsum: axis 2 out of range for a 2-d array [4, 5]");
  CHECK_STATUS(tsr_cumsum(NULL, a, 0, false, true, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("out is NULL");
  CHECK_STATUS(tsr_cumsum(&out, NULL, 0, false, true, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("a is NULL");
  CHECK_STATUS(tsr_argsort(&out, a, -3, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("argsort: axis -3");
  CHECK_STATUS(tsr_argsort(NULL, a, 0, NULL), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_argpartition(&out, a, 5, 1, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("kth 5 out of range for axis 1 of size 5");
  CHECK_STATUS(tsr_argpartition(&out, a, -6, 1, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("kth -6");
  CHECK_STATUS(tsr_argpartition(&out, a, 0, 2, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("axis 2");
  CHECK_STATUS(tsr_argpartition(&out, NULL, 0, 0, NULL), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_topk(&out, &idx, a, 6, 1, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("k 6 outside [1, 5]");
  CHECK_STATUS(tsr_topk(&out, &idx, a, 0, -1, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("k 0 outside [1, 5]");
  CHECK_STATUS(tsr_topk(&out, &idx, a, -2, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("k -2");
  CHECK_STATUS(tsr_topk(&out, &idx, a, 1, 5, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("topk: axis 5 out of range");
  CHECK_STATUS(tsr_topk(NULL, &idx, a, 1, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("values is NULL");
  CHECK_STATUS(tsr_topk(&out, NULL, a, 1, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("indices is NULL");
  CHECK_STATUS(tsr_topk(&out, &idx, NULL, 1, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("a is NULL");
  int64_t empty_shape[2] = {4, 0};
  tsr_array *empty = from_f32(xs, empty_shape, 2);
  CHECK_STATUS(tsr_topk(&out, &idx, empty, 1, 1, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("k 1 outside [1, 0]");
  CHECK(out == sentinel && idx == sentinel);
  CHECK_OK(tsr_argsort(&out, empty, 1, NULL)); /* zero-size lines sort to nothing */
  CHECK_EQ_INT(tsr_array_size(out), 0);
  CHECK_OK(tsr_eval(&out, 1));
  tsr_array_release(out);
  tsr_array_release(empty);
  tsr_array_release(a);
}

int main(void) {
  test_cumsum();
  test_cumsum_edges();
  test_argsort_and_partition();
  test_topk();
  test_topk_vocab();
  test_bad_inputs();
  CHECK_OK(tsr_memory_clear_cache(cpu));
  CHECK_NO_LEAKS();
  tsr_shutdown();
  puts("test_sort: ok");
  return 0;
}
