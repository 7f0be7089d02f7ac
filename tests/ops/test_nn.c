/* tests/ops/test_nn.c — softmax, rms_norm and rope against float64 references written here
 * (naive loops; sdpa is in test_sdpa.c), over several axes, chunk-crossing rows, transposed views,
 * float16 and bfloat16, zero-size axes and every bad input. Each tolerance is derived next to its
 * reference; u = 2^-24 is float32's unit roundoff, and each first-order bound is allowed twice over
 * (the factor 2 covers the second-order terms). */
#include "nn_data.h"

static const tsr_device cpu = {TSR_CPU, 0};
static const double u = 0x1p-24;

/* The float32 chunked sum of n positive terms (cpu/nn.c sums chunks of 256, then the chunks)
 * errs by at most this many u, relative. */
static double sum_terms(int64_t n) {
  return (double)(n < 256 ? n : 256) + (double)((n + 255) / 256) + 1.0;
}

static tsr_array *swap_axes_view(tsr_array *x, int a, int b) {
  int ndim = tsr_array_ndim(x), axes[8];
  for (int i = 0; i < ndim; i++)
    axes[i] = i == a ? b : i == b ? a : i;
  tsr_array *t = NULL;
  CHECK_OK(tsr_transpose(&t, x, axes, ndim, NULL));
  return t;
}

/* v [rows, cols] -> its transpose [cols, rows], row-major. */
static void transpose_values(const double *v, int64_t rows, int64_t cols, double *out) {
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++)
      out[j * rows + i] = v[i * cols + j];
}

/* ---- softmax -------------------------------------------------------------------------------
 * Error of the float32 algorithm for y_i = exp(x_i - m) / sum: the subtraction is off by
 * |x_i - m| u (relative, in the exponent), expf by < 2u, the chunked sum by sum_terms(n) u, the
 * reciprocal and the product by u each. So |y - y_ref| <= y_ref (|x_i - m| + sum_terms(n) + 4) u,
 * plus the rounding of the stored result (float16 2^-11, bfloat16 2^-8) and, below the normal
 * range, the smallest normal. A -inf input gives exactly 0. */

static void softmax_reference(const double *x, const int64_t *shape, int ndim, int axis,
                              tsr_dtype out_dtype, double *want, double *tolerance) {
  int64_t outer = nn_count(shape, axis), len = shape[axis];
  int64_t inner = nn_count(shape + axis + 1, ndim - axis - 1);
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t i = 0; i < inner; i++) {
      const double *row = x + o * len * inner + i;
      double max = -INFINITY, sum = 0.0;
      for (int64_t l = 0; l < len; l++)
        max = row[l * inner] > max ? row[l * inner] : max;
      for (int64_t l = 0; l < len; l++)
        sum += exp(row[l * inner] - max);
      for (int64_t l = 0; l < len; l++) {
        int64_t at = (o * len + l) * inner + i;
        want[at] = exp(row[l * inner] - max) / sum;
        double shift = fabs(row[l * inner] - max);
        tolerance[at] = isinf(row[l * inner])
                            ? 0.0
                            : 2.0 * want[at] * (shift + sum_terms(len) + 4.0) * u +
                                  want[at] * nn_store_unit(out_dtype) + nn_tiny(out_dtype);
      }
    }
  }
}

/* softmax(x, axis) of x (values v, logical shape) checked against the reference. */
static void expect_softmax(tsr_array *x, const double *v, const int64_t *shape, int ndim,
                           int axis) {
  int64_t n = nn_count(shape, ndim);
  double *want = malloc((size_t)(n + 1) * 8), *tol = malloc((size_t)(n + 1) * 8);
  double *got = malloc((size_t)(n + 1) * 8);
  CHECK(want && tol && got);
  tsr_array *y = NULL;
  CHECK_OK(tsr_softmax(&y, x, axis, NULL));
  CHECK_EQ_INT(tsr_array_dtype(y), tsr_array_dtype(x));
  CHECK_EQ_INT(tsr_array_ndim(y), ndim);
  softmax_reference(v, shape, ndim, axis < 0 ? axis + ndim : axis, tsr_array_dtype(y), want, tol);
  nn_read(y, got);
  nn_expect_close("softmax", got, want, tol, n);
  tsr_array_release(y);
  free(want);
  free(tol);
  free(got);
}

static void softmax_case(const int64_t *shape, int ndim, tsr_dtype dtype, double scale,
                         double shift, int axis) {
  int64_t n = nn_count(shape, ndim);
  double *v = malloc((size_t)(n + 1) * 8);
  CHECK(v);
  nn_random(v, n, dtype, scale);
  for (int64_t i = 0; i < n; i++)
    v[i] = (double)(float)(v[i] + shift);
  tsr_array *x = nn_make(v, dtype, shape, ndim);
  expect_softmax(x, v, shape, ndim, axis);
  tsr_array_release(x);
  free(v);
}

static void test_softmax(void) {
  int64_t s37[2] = {3, 7}, s236[3] = {2, 3, 600}, s05[2] = {0, 5}, s30[2] = {3, 0};
  softmax_case(s37, 2, TSR_FLOAT32, 4.0, 0.0, 1);
  softmax_case(s37, 2, TSR_FLOAT32, 4.0, 0.0, 0);
  softmax_case(s37, 2, TSR_FLOAT32, 4.0, 0.0, -1);
  softmax_case(s236, 3, TSR_FLOAT32, 10.0, 0.0, 2); /* rows across chunks */
  softmax_case(s236, 3, TSR_FLOAT32, 10.0, 0.0, 1);
  softmax_case(s37, 2, TSR_FLOAT32, 1.0, 1000.0, 1); /* max-subtracted: no overflow */
  softmax_case(s236, 3, TSR_FLOAT16, 8.0, 0.0, 2);
  softmax_case(s236, 3, TSR_BFLOAT16, 8.0, 0.0, 0);
  softmax_case(s05, 2, TSR_FLOAT32, 1.0, 0.0, 1);
  softmax_case(s30, 2, TSR_FLOAT32, 1.0, 0.0, 1);
  softmax_case(s30, 2, TSR_FLOAT32, 1.0, 0.0, 0);
  /* masked entries: -inf gives exactly 0 */
  double masked[8] = {0.5, -INFINITY, 2.0, -INFINITY, -1.0, 3.0, -INFINITY, 0.0};
  int64_t s24[2] = {2, 4};
  tsr_array *x = nn_make(masked, TSR_FLOAT32, s24, 2);
  expect_softmax(x, masked, s24, 2, 1);
  tsr_array_release(x);
  /* a NaN poisons its whole row (and only its row) */
  double poisoned[8] = {0.5, NAN, 2.0, 1.0, 0.5, 1.5, 2.0, 1.0}, got[8];
  x = nn_make(poisoned, TSR_FLOAT32, s24, 2);
  tsr_array *y = NULL;
  CHECK_OK(tsr_softmax(&y, x, 1, NULL));
  nn_read(y, got);
  for (int i = 0; i < 8; i++)
    CHECK(i < 4 ? isnan(got[i]) : !isnan(got[i]));
  tsr_array_release(y);
  tsr_array_release(x);
  /* a transposed view: stored [7, 3], seen as [3, 7]; both axes */
  double stored[21], logical[21];
  nn_random(stored, 21, TSR_FLOAT32, 3.0);
  transpose_values(stored, 7, 3, logical);
  int64_t s73[2] = {7, 3};
  tsr_array *base = nn_make(stored, TSR_FLOAT32, s73, 2), *view = swap_axes_view(base, 0, 1);
  expect_softmax(view, logical, s37, 2, 1);
  expect_softmax(view, logical, s37, 2, 0);
  tsr_array_release(view);
  tsr_array_release(base);
}

static void test_softmax_bad_inputs(void) {
  int64_t s23[2] = {2, 3};
  double zeros[6] = {0};
  tsr_array *x = nn_make(zeros, TSR_FLOAT32, s23, 2), *ints = nn_make(zeros, TSR_INT32, s23, 2);
  tsr_array *scalar = nn_make(zeros, TSR_FLOAT32, NULL, 0);
  tsr_array *sentinel = (tsr_array *)0x1, *out = sentinel;
  CHECK_STATUS(tsr_softmax(NULL, x, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("out is NULL");
  CHECK_STATUS(tsr_softmax(&out, NULL, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("x is NULL");
  CHECK_STATUS(tsr_softmax(&out, ints, 1, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("int32");
  CHECK_STATUS(tsr_softmax(&out, x, 2, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("axis 2 out of range for a 2-d array [2, 3]");
  CHECK_STATUS(tsr_softmax(&out, x, -3, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("axis -3");
  CHECK_STATUS(tsr_softmax(&out, scalar, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("0-d");
  CHECK(out == sentinel);
  tsr_array *arrays[] = {x, ints, scalar};
  nn_release_all(arrays, 3);
}

/* ---- rms_norm ------------------------------------------------------------------------------
 * y = x r w with r = 1 / sqrt(mean(x^2) + eps). In float32: the squares and their chunked sum
 * err by (sum_terms(D) + 1) u relative (positive terms), the mean and + eps by u each, sqrt
 * halves the relative error and adds u, the reciprocal adds u, the two products 2u:
 * |y - y_ref| <= |y_ref| ((sum_terms(D) + 3) / 2 + 4) u, plus the stored rounding. */

/* weight: NULL, or values given for every element of x (already broadcast). */
static void rms_norm_reference(const double *x, const double *w, int64_t rows, int64_t d,
                               double eps, tsr_dtype out_dtype, double *want, double *tol) {
  for (int64_t r = 0; r < rows; r++) {
    double squares = 0.0;
    for (int64_t i = 0; i < d; i++)
      squares += x[r * d + i] * x[r * d + i];
    double inverse = 1.0 / sqrt(squares / (double)d + eps);
    for (int64_t i = 0; i < d; i++) {
      int64_t at = r * d + i;
      want[at] = x[at] * inverse * (w ? w[at] : 1.0);
      tol[at] = 2.0 * fabs(want[at]) * ((sum_terms(d) + 3.0) / 2.0 + 4.0) * u +
                fabs(want[at]) * nn_store_unit(out_dtype) + nn_tiny(out_dtype);
    }
  }
}

typedef struct {
  int64_t rows, d;
  tsr_dtype x_dtype, w_dtype;
  int weight_kind; /* 0 none, 1 [D], 2 [rows, D], 3 [rows, 1] */
  bool transposed; /* x given as the transpose of a stored [D, rows] */
  float eps;
} norm_case;

static void rms_norm_case(norm_case c) {
  int64_t n = c.rows * c.d, xs[2] = {c.rows, c.d}, ts[2] = {c.d, c.rows};
  int64_t ws[3][2] = {{c.d}, {c.rows, c.d}, {c.rows, 1}};
  int wn[3] = {1, 2, 2};
  double *x = malloc((size_t)(n + 1) * 8), *w = malloc((size_t)(n + c.d + 1) * 8);
  double *full_w = malloc((size_t)(n + 1) * 8), *stored = malloc((size_t)(n + 1) * 8);
  double *want = malloc((size_t)(n + 1) * 8), *tol = malloc((size_t)(n + 1) * 8);
  double *got = malloc((size_t)(n + 1) * 8);
  CHECK(x && w && full_w && stored && want && tol && got);
  nn_random(x, n, c.x_dtype, 2.0);
  nn_random(w, n + c.d, c.w_dtype, 1.5); /* [D] may be more than x when rows is 0 */
  tsr_array *weight = NULL, *base = NULL, *xa = NULL, *y = NULL;
  if (c.weight_kind) {
    const int64_t *shape = ws[c.weight_kind - 1];
    weight = nn_make(w, c.w_dtype, shape, wn[c.weight_kind - 1]);
    for (int64_t i = 0; i < n; i++) /* broadcast the weight by hand */
      full_w[i] = c.weight_kind == 1 ? w[i % c.d] : c.weight_kind == 2 ? w[i] : w[i / c.d];
  }
  if (c.transposed) {
    transpose_values(x, c.rows, c.d, stored);
    base = nn_make(stored, c.x_dtype, ts, 2);
    xa = swap_axes_view(base, 0, 1);
  } else {
    xa = nn_make(x, c.x_dtype, xs, 2);
  }
  CHECK_OK(tsr_rms_norm(&y, xa, weight, c.eps, NULL));
  CHECK_EQ_INT(tsr_array_dtype(y), c.x_dtype);
  rms_norm_reference(x, c.weight_kind ? full_w : NULL, c.rows, c.d, (double)c.eps, c.x_dtype, want,
                     tol);
  nn_read(y, got);
  nn_expect_close("rms_norm", got, want, tol, n);
  tsr_array *arrays[] = {y, xa, base, weight};
  nn_release_all(arrays, 4);
  double *buffers[] = {x, w, full_w, stored, want, tol, got};
  for (int i = 0; i < 7; i++)
    free(buffers[i]);
}

static void test_rms_norm(void) {
  rms_norm_case((norm_case){4, 64, TSR_FLOAT32, TSR_FLOAT32, 1, false, 1e-5f});
  rms_norm_case((norm_case){6, 600, TSR_FLOAT32, TSR_FLOAT32, 0, false, 1e-6f});
  rms_norm_case((norm_case){3, 600, TSR_FLOAT32, TSR_FLOAT32, 2, false, 1e-5f});
  rms_norm_case((norm_case){3, 300, TSR_FLOAT32, TSR_FLOAT32, 3, false, 1e-5f});
  rms_norm_case((norm_case){4, 64, TSR_FLOAT32, TSR_FLOAT32, 1, true, 1e-5f});
  rms_norm_case((norm_case){5, 128, TSR_FLOAT16, TSR_FLOAT32, 1, false, 1e-5f});
  rms_norm_case((norm_case){5, 128, TSR_BFLOAT16, TSR_BFLOAT16, 1, true, 1e-5f});
  rms_norm_case((norm_case){5, 128, TSR_FLOAT32, TSR_BFLOAT16, 1, false, 0.0f});
  rms_norm_case((norm_case){0, 8, TSR_FLOAT32, TSR_FLOAT32, 1, false, 1e-5f});
  rms_norm_case((norm_case){4, 0, TSR_FLOAT32, TSR_FLOAT32, 1, false, 1e-5f});
}

static void test_rms_norm_bad_inputs(void) {
  int64_t s464[2] = {4, 64}, s65[1] = {65}, s2464[3] = {2, 4, 64}, s64[1] = {64};
  double zeros[512] = {0};
  tsr_array *x = nn_make(zeros, TSR_FLOAT32, s464, 2), *ints = nn_make(zeros, TSR_INT32, s464, 2);
  tsr_array *w65 = nn_make(zeros, TSR_FLOAT32, s65, 1),
            *wide = nn_make(zeros, TSR_FLOAT32, s2464, 3);
  tsr_array *wint = nn_make(zeros, TSR_INT8, s64, 1),
            *scalar = nn_make(zeros, TSR_FLOAT32, NULL, 0);
  tsr_array *sentinel = (tsr_array *)0x1, *out = sentinel;
  CHECK_STATUS(tsr_rms_norm(NULL, x, NULL, 1e-5f, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("out is NULL");
  CHECK_STATUS(tsr_rms_norm(&out, NULL, NULL, 1e-5f, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("x is NULL");
  CHECK_STATUS(tsr_rms_norm(&out, ints, NULL, 1e-5f, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("int32");
  CHECK_STATUS(tsr_rms_norm(&out, x, wint, 1e-5f, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("weight [64] has dtype int8");
  CHECK_STATUS(tsr_rms_norm(&out, x, w65, 1e-5f, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("[65]");
  CHECK_MESSAGE("64 vs 65");
  CHECK_STATUS(tsr_rms_norm(&out, x, wide, 1e-5f, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("weight [2, 4, 64] would widen x [4, 64]");
  CHECK_STATUS(tsr_rms_norm(&out, scalar, NULL, 1e-5f, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("0-d");
  CHECK_STATUS(tsr_rms_norm(&out, x, NULL, -1.0f, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("eps -1");
  CHECK_STATUS(tsr_rms_norm(&out, x, NULL, NAN, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("eps nan");
  CHECK(out == sentinel);
  tsr_array *arrays[] = {x, ints, w65, wide, wint, scalar};
  nn_release_all(arrays, 6);
}

/* ---- rope -----------------------------------------------------------------------------------
 * Against the exact angle: the library forms inv_freq = 1 / powf(base, fl(2i / dims)) in
 * float32; the exponent's rounding (u relative) moves base^e by e ln(base) u, powf adds < 2u, the
 * division u: inv_freq is off by (ln(base) + 3) u relative, the angle fl(float(p) inv_freq) by
 * (ln(base) + 4) u relative, i.e. alpha = |angle| (ln(base) + 4) u absolute. cosf and sinf add
 * < 1 ulp (<= u for values below 1), the rotation's products and sum 2u of (|x0| + |x1|):
 * |y - y_ref| <= (|x0| + |x1|) (alpha + 3u). Against HF's float32 recipe (the test forms the
 * same float32 angle and takes its cos/sin in float64) alpha is 0: a tight check that matters
 * at large positions, where the float32 angle itself is far from the exact one. Dims past
 * `dims` pass through unchanged: exact. */

typedef struct {
  int64_t shape[4];
  int ndim, dims;
  bool traditional;
  float base;
  int64_t offset;
  tsr_dtype dtype;
  bool from_bthd; /* x is the transpose (axes 1, 2) of a stored [B, T, H, D] */
  bool recipe;    /* reference: the float32 angle (HF) instead of the exact one */
} rope_case;

static void rope_angle(const rope_case *c, int i, int64_t position, double *angle, double *alpha) {
  if (c->recipe) {
    float inv_freq = 1.0f / powf(c->base, (float)(2 * i) / (float)c->dims);
    *angle = (double)((float)position * inv_freq);
    *alpha = 0.0;
  } else {
    *angle = (double)position * pow((double)c->base, -2.0 * i / c->dims);
    *alpha = *angle * (log((double)c->base) + 4.0) * u;
  }
}

static void rope_reference(const rope_case *c, const double *x, double *want, double *tol) {
  int64_t d = c->shape[c->ndim - 1], t_len = c->shape[c->ndim - 2];
  int64_t rows = nn_count(c->shape, c->ndim - 1);
  int half = c->dims / 2;
  for (int64_t r = 0; r < rows; r++) {
    const double *v = x + r * d;
    for (int64_t j = 0; j < d; j++) { /* pass-through (overwritten below where rotated) */
      want[r * d + j] = v[j];
      tol[r * d + j] = 0.0;
    }
    for (int i = 0; i < half; i++) {
      double angle, alpha;
      rope_angle(c, i, c->offset + r % t_len, &angle, &alpha);
      int64_t i0 = c->traditional ? 2 * i : i, i1 = c->traditional ? 2 * i + 1 : i + half;
      double x0 = v[i0], x1 = v[i1], cs = cos(angle), sn = sin(angle);
      want[r * d + i0] = x0 * cs - x1 * sn;
      want[r * d + i1] = x1 * cs + x0 * sn;
      for (int k = 0; k < 2; k++) {
        int64_t at = r * d + (k ? i1 : i0);
        tol[at] = 2.0 * (fabs(x0) + fabs(x1)) * (alpha + 3.0 * u) +
                  fabs(want[at]) * nn_store_unit(c->dtype) + nn_tiny(c->dtype);
      }
    }
  }
}

/* The stored [B, T, H, D] layout of logical [B, H, T, D] values. */
static void to_bthd(const int64_t *s, const double *bhtd, double *bthd) {
  for (int64_t b = 0; b < s[0]; b++)
    for (int64_t h = 0; h < s[1]; h++)
      for (int64_t t = 0; t < s[2]; t++)
        for (int64_t j = 0; j < s[3]; j++)
          bthd[((b * s[2] + t) * s[1] + h) * s[3] + j] =
              bhtd[((b * s[1] + h) * s[2] + t) * s[3] + j];
}

static void rope_case_run(rope_case c) {
  int64_t n = nn_count(c.shape, c.ndim);
  double *x = malloc((size_t)(n + 1) * 8), *stored = malloc((size_t)(n + 1) * 8);
  double *want = malloc((size_t)(n + 1) * 8), *tol = malloc((size_t)(n + 1) * 8);
  double *got = malloc((size_t)(n + 1) * 8);
  CHECK(x && stored && want && tol && got);
  nn_random(x, n, c.dtype, 2.0);
  tsr_array *base = NULL, *xa = NULL, *y = NULL;
  if (c.from_bthd) {
    int64_t s[4] = {c.shape[0], c.shape[2], c.shape[1], c.shape[3]};
    to_bthd(c.shape, x, stored);
    base = nn_make(stored, c.dtype, s, 4);
    xa = swap_axes_view(base, 1, 2);
  } else {
    xa = nn_make(x, c.dtype, c.shape, c.ndim);
  }
  CHECK_OK(tsr_rope(&y, xa, c.dims, c.traditional, c.base, c.offset, NULL));
  CHECK_EQ_INT(tsr_array_dtype(y), c.dtype);
  rope_reference(&c, x, want, tol);
  nn_read(y, got);
  nn_expect_close(c.traditional ? "rope (traditional)" : "rope (half-split)", got, want, tol, n);
  tsr_array *arrays[] = {y, xa, base};
  nn_release_all(arrays, 3);
  double *buffers[] = {x, stored, want, tol, got};
  for (int i = 0; i < 5; i++)
    free(buffers[i]);
}

static void test_rope(void) {
  for (int traditional = 0; traditional < 2; traditional++) {
    bool trad = traditional == 1;
    rope_case_run((rope_case){{2, 3, 5, 16}, 4, 16, trad, 10000.0f, 0, TSR_FLOAT32, false, false});
    rope_case_run((rope_case){{2, 3, 5, 16}, 4, 8, trad, 10000.0f, 7, TSR_FLOAT32, false, false});
    rope_case_run((rope_case){{5, 12}, 2, 12, trad, 1e6f, 3, TSR_FLOAT32, false, false});
    rope_case_run(
        (rope_case){{1, 2, 4, 8}, 4, 8, trad, 10000.0f, 100000, TSR_FLOAT32, false, true});
    rope_case_run((rope_case){{2, 3, 5, 16}, 4, 8, trad, 10000.0f, 2, TSR_FLOAT32, true, false});
    rope_case_run((rope_case){{2, 3, 5, 16}, 4, 16, trad, 10000.0f, 1, TSR_FLOAT16, false, false});
    rope_case_run((rope_case){{2, 3, 5, 16}, 4, 8, trad, 10000.0f, 1, TSR_BFLOAT16, true, false});
    rope_case_run((rope_case){{0, 4, 8}, 3, 8, trad, 10000.0f, 0, TSR_FLOAT32, false, false});
    rope_case_run((rope_case){{3, 0, 8}, 3, 4, trad, 10000.0f, 0, TSR_FLOAT32, false, false});
  }
}

static void test_rope_bad_inputs(void) {
  int64_t s216[2] = {2, 16}, s16[1] = {16};
  double zeros[32] = {0};
  tsr_array *x = nn_make(zeros, TSR_FLOAT32, s216, 2), *ints = nn_make(zeros, TSR_INT32, s216, 2);
  tsr_array *flat = nn_make(zeros, TSR_FLOAT32, s16, 1);
  tsr_array *sentinel = (tsr_array *)0x1, *out = sentinel;
  CHECK_STATUS(tsr_rope(NULL, x, 16, false, 10000.0f, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("out is NULL");
  CHECK_STATUS(tsr_rope(&out, NULL, 16, false, 10000.0f, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("x is NULL");
  CHECK_STATUS(tsr_rope(&out, ints, 16, false, 10000.0f, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("int32");
  CHECK_STATUS(tsr_rope(&out, flat, 16, false, 10000.0f, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("x [16] must have at least 2 axes");
  CHECK_STATUS(tsr_rope(&out, x, 7, false, 10000.0f, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("dims 7");
  CHECK_STATUS(tsr_rope(&out, x, 18, true, 10000.0f, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("dims 18 must be even, positive and <= D 16");
  CHECK_STATUS(tsr_rope(&out, x, 0, true, 10000.0f, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("dims 0");
  CHECK_STATUS(tsr_rope(&out, x, 16, false, 0.0f, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("base 0");
  CHECK_STATUS(tsr_rope(&out, x, 16, false, -2.0f, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("base -2");
  CHECK_STATUS(tsr_rope(&out, x, 16, false, INFINITY, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("base inf");
  CHECK_STATUS(tsr_rope(&out, x, 16, false, 10000.0f, -1, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("offset -1");
  CHECK(out == sentinel);
  tsr_array *arrays[] = {x, ints, flat};
  nn_release_all(arrays, 3);
}

int main(void) {
  test_softmax();
  test_softmax_bad_inputs();
  test_rms_norm();
  test_rms_norm_bad_inputs();
  test_rope();
  test_rope_bad_inputs();
  tsr_memory_clear_cache(cpu);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
