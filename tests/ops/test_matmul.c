/* tests/ops/test_matmul.c — tsr_matmul against a float64 triple loop written here: plain
 * products, NumPy's 1-D promotion, broadcast batch axes, transposed / sliced / broadcast views as
 * operands, float16 / bfloat16 / integer inputs, zero-size axes, and every bad input.
 *
 * Tolerance. Each output element is a float32 dot product of K terms (inputs exactly
 * representable in float32, products formed in float32 or fused). Any summation order and any
 * mix of fused and separate multiply-adds satisfies the classic bound (Higham, Accuracy and
 * Stability, 3.1): |computed - exact| <= gamma_K * sum_k |a_ik| |b_kj|, gamma_K = K u / (1 - K u),
 * u = 2^-24. We allow K * 2^-23 * sum_k |a_ik||b_kj| (twice that, which also covers 1/(1 - Ku)),
 * plus the final rounding of a float16 (2^-11 relative) or bfloat16 (2^-8) result. Integer
 * inputs with small values give sums below 2^24: exact. */
#include "nn_data.h"

static const tsr_device cpu = {TSR_CPU, 0};

/* ---- the reference ----------------------------------------------------------------------- */

/* NumPy's matmul in float64 over row-major a and b: 1-D a is [1, K], 1-D b is [K, 1], batch
 * axes broadcast. Fills out (and bound[i] = sum_k |a_ik||b_kj|) and returns the element count. */
static int64_t reference(const double *a, const int64_t *as, int an, const double *b,
                         const int64_t *bs, int bn, double *out, double *bound) {
  int64_t m = an == 1 ? 1 : as[an - 2], k = as[an - 1], n = bn == 1 ? 1 : bs[bn - 1];
  int a_batch = an > 2 ? an - 2 : 0, b_batch = bn > 2 ? bn - 2 : 0;
  int batch = a_batch > b_batch ? a_batch : b_batch;
  int64_t shape[8], count = 1;
  for (int i = 0; i < batch; i++) {
    int ia = a_batch - batch + i, ib = b_batch - batch + i;
    int64_t da = ia >= 0 ? as[ia] : 1, db = ib >= 0 ? bs[ib] : 1;
    shape[i] = da == 1 ? db : da;
    count *= shape[i];
  }
  for (int64_t flat = 0; flat < count; flat++) {
    int64_t a_index = 0, b_index = 0, rest = flat, a_scale = 1, b_scale = 1;
    for (int i = batch - 1; i >= 0; i--) {
      int64_t idx = rest % shape[i];
      rest /= shape[i];
      int ia = a_batch - batch + i, ib = b_batch - batch + i;
      if (ia >= 0) a_index += (as[ia] == 1 ? 0 : idx) * a_scale, a_scale *= as[ia];
      if (ib >= 0) b_index += (bs[ib] == 1 ? 0 : idx) * b_scale, b_scale *= bs[ib];
    }
    const double *am = a + a_index * m * k, *bm = b + b_index * k * n;
    for (int64_t i = 0; i < m; i++) {
      for (int64_t j = 0; j < n; j++) {
        double sum = 0, magnitude = 0;
        for (int64_t p = 0; p < k; p++) {
          sum += am[i * k + p] * bm[p * n + j];
          magnitude += fabs(am[i * k + p] * bm[p * n + j]);
        }
        out[(flat * m + i) * n + j] = sum;
        bound[(flat * m + i) * n + j] = magnitude;
      }
    }
  }
  return count * m * n;
}

/* Evaluates c and compares it with the reference of the logical operands av, bv; k is the
 * number of float32 roundings each element may carry (0: exact). */
static void expect_product(tsr_array *c, const double *av, const int64_t *as, int an,
                           const double *bv, const int64_t *bs, int bn, int64_t k) {
  int64_t n = tsr_array_size(c);
  double *want = calloc((size_t)n + 1, sizeof *want), *bound = calloc((size_t)n + 1, 8);
  double *got = calloc((size_t)n + 1, sizeof *got);
  CHECK(want && bound && got);
  CHECK_EQ_INT(reference(av, as, an, bv, bs, bn, want, bound), n);
  nn_read(c, got);
  double rounding = nn_store_unit(tsr_array_dtype(c));
  for (int64_t i = 0; i < n; i++) {
    double tolerance = (double)k * 0x1p-23 * bound[i] + rounding * fabs(want[i]);
    if (!(fabs(got[i] - want[i]) <= tolerance))
      CHECK_FAIL_("element %lld: got %.9g, want %.9g (tolerance %.3g)", (long long)i, got[i],
                  want[i], tolerance);
  }
  free(want);
  free(bound);
  free(got);
}

static bool is_float(tsr_dtype t) {
  return t == TSR_FLOAT32 || t == TSR_FLOAT16 || t == TSR_BFLOAT16;
}

/* a @ b for fresh random operands of these shapes and dtypes; checks the result's shape. */
static void check_case(const int64_t *as, int an, tsr_dtype at, const int64_t *bs, int bn,
                       tsr_dtype bt, const int64_t *cs, int cn, tsr_dtype ct) {
  int64_t na = nn_count(as, an), nb = nn_count(bs, bn);
  double *av = malloc((size_t)(na + 1) * 8), *bv = malloc((size_t)(nb + 1) * 8);
  CHECK(av && bv);
  nn_random(av, na, at, 1.0);
  nn_random(bv, nb, bt, 1.0);
  tsr_array *a = nn_make(av, at, as, an), *b = nn_make(bv, bt, bs, bn), *c = NULL;
  CHECK_OK(tsr_matmul(&c, a, b, NULL));
  CHECK_EQ_INT(tsr_array_ndim(c), cn);
  for (int i = 0; i < cn; i++)
    CHECK_EQ_INT(tsr_array_dim(c, i), cs[i]);
  CHECK_EQ_INT(tsr_array_dtype(c), ct);
  bool integers = !is_float(at) && !is_float(bt); /* small integer sums: exact in float32 */
  expect_product(c, av, as, an, bv, bs, bn, integers ? 0 : as[an - 1]);
  tsr_array_release(c);
  tsr_array_release(a);
  tsr_array_release(b);
  free(av);
  free(bv);
}

/* ---- cases -------------------------------------------------------------------------------- */

static void test_plain(void) {
  static const int64_t sizes[][3] = {{1, 1, 1},    {3, 5, 4},    {17, 33, 9},
                                     {64, 64, 64}, {5, 1000, 3}, {130, 70, 260}};
  for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
    int64_t as[2] = {sizes[t][0], sizes[t][1]}, bs[2] = {sizes[t][1], sizes[t][2]};
    int64_t cs[2] = {sizes[t][0], sizes[t][2]};
    check_case(as, 2, TSR_FLOAT32, bs, 2, TSR_FLOAT32, cs, 2, TSR_FLOAT32);
  }
}

static void test_batches(void) {
  int64_t a1[5] = {2, 1, 3, 4, 5}, b1[3] = {3, 5, 6}, c1[5] = {2, 1, 3, 4, 6};
  check_case(a1, 5, TSR_FLOAT32, b1, 3, TSR_FLOAT32, c1, 5, TSR_FLOAT32);
  int64_t a2[2] = {4, 5}, b2[4] = {2, 3, 5, 6}, c2[4] = {2, 3, 4, 6}; /* a shared */
  check_case(a2, 2, TSR_FLOAT32, b2, 4, TSR_FLOAT32, c2, 4, TSR_FLOAT32);
  int64_t a3[4] = {2, 3, 4, 5}, b3[2] = {5, 6}, c3[4] = {2, 3, 4, 6}; /* b shared: folded */
  check_case(a3, 4, TSR_FLOAT32, b3, 2, TSR_FLOAT32, c3, 4, TSR_FLOAT32);
  int64_t a4[4] = {2, 1, 4, 5}, b4[4] = {1, 3, 5, 6}, c4[4] = {2, 3, 4, 6}; /* both broadcast */
  check_case(a4, 4, TSR_FLOAT32, b4, 4, TSR_FLOAT32, c4, 4, TSR_FLOAT32);
  int64_t a5[3] = {7, 1, 5}, b5[2] = {5, 3}, c5[3] = {7, 1, 3}; /* M = 1 rows, folded */
  check_case(a5, 3, TSR_FLOAT32, b5, 2, TSR_FLOAT32, c5, 3, TSR_FLOAT32);
}

static void test_vectors(void) {
  int64_t k[1] = {7}, scalar[1] = {0};
  check_case(k, 1, TSR_FLOAT32, k, 1, TSR_FLOAT32, scalar, 0, TSR_FLOAT32); /* dot: 0-d */
  int64_t b1[3] = {2, 7, 4}, c1[2] = {2, 4};
  check_case(k, 1, TSR_FLOAT32, b1, 3, TSR_FLOAT32, c1, 2, TSR_FLOAT32);
  int64_t a2[3] = {2, 3, 7}, c2[2] = {2, 3};
  check_case(a2, 3, TSR_FLOAT32, k, 1, TSR_FLOAT32, c2, 2, TSR_FLOAT32);
  int64_t a3[2] = {5, 7}, c3[1] = {5};
  check_case(a3, 2, TSR_FLOAT32, k, 1, TSR_FLOAT32, c3, 1, TSR_FLOAT32);
  int64_t b4[2] = {7, 3}, c4[1] = {3};
  check_case(k, 1, TSR_FLOAT32, b4, 2, TSR_FLOAT32, c4, 1, TSR_FLOAT32);
}

static void test_dtypes(void) {
  int64_t as[3] = {2, 9, 40}, bs[2] = {40, 11}, cs[3] = {2, 9, 11};
  check_case(as, 3, TSR_FLOAT16, bs, 2, TSR_FLOAT16, cs, 3, TSR_FLOAT16);
  check_case(as, 3, TSR_BFLOAT16, bs, 2, TSR_BFLOAT16, cs, 3, TSR_BFLOAT16);
  check_case(as, 3, TSR_BFLOAT16, bs, 2, TSR_FLOAT32, cs, 3, TSR_FLOAT32);
  check_case(as, 3, TSR_FLOAT16, bs, 2, TSR_BFLOAT16, cs, 3, TSR_FLOAT32);
  check_case(as, 3, TSR_INT8, bs, 2, TSR_INT32, cs, 3, TSR_FLOAT32); /* exact */
  check_case(as, 3, TSR_UINT8, bs, 2, TSR_INT8, cs, 3, TSR_FLOAT32);
  check_case(as, 3, TSR_INT32, bs, 2, TSR_FLOAT16, cs, 3, TSR_FLOAT16);
  int64_t k[1] = {40}, c1[1] = {11};
  check_case(k, 1, TSR_FLOAT16, bs, 2, TSR_FLOAT16, c1, 1, TSR_FLOAT16);
}

static void test_zero_size(void) {
  int64_t a0[2] = {0, 5}, b0[2] = {5, 3}, c0[2] = {0, 3};
  check_case(a0, 2, TSR_FLOAT32, b0, 2, TSR_FLOAT32, c0, 2, TSR_FLOAT32);
  int64_t a1[2] = {4, 5}, b1[2] = {5, 0}, c1[2] = {4, 0};
  check_case(a1, 2, TSR_FLOAT32, b1, 2, TSR_FLOAT32, c1, 2, TSR_FLOAT32);
  int64_t a2[3] = {2, 4, 0}, b2[2] = {0, 3}, c2[3] = {2, 4, 3}; /* K = 0: zeros */
  check_case(a2, 3, TSR_FLOAT32, b2, 2, TSR_FLOAT32, c2, 3, TSR_FLOAT32);
  check_case(a2, 3, TSR_FLOAT16, b2, 2, TSR_FLOAT16, c2, 3, TSR_FLOAT16);
  int64_t a3[3] = {0, 4, 5}, b3[2] = {5, 3}, c3[3] = {0, 4, 3}; /* no batches */
  check_case(a3, 3, TSR_FLOAT32, b3, 2, TSR_FLOAT32, c3, 3, TSR_FLOAT32);
  int64_t k0[1] = {0}, scalar[1] = {0};
  check_case(k0, 1, TSR_FLOAT32, k0, 1, TSR_FLOAT32, scalar, 0, TSR_FLOAT32);
}

/* ---- views as operands -------------------------------------------------------------------- */

/* The logical values of the transpose (last two axes swapped) of row-major v [batch, r, c]. */
static void swap_last_two(const double *v, int64_t batch, int64_t r, int64_t c, double *out) {
  for (int64_t b = 0; b < batch; b++)
    for (int64_t i = 0; i < r; i++)
      for (int64_t j = 0; j < c; j++)
        out[(b * c + j) * r + i] = v[(b * r + i) * c + j];
}

static tsr_array *transposed_view(tsr_array *x) {
  int ndim = tsr_array_ndim(x), axes[8];
  for (int i = 0; i < ndim; i++)
    axes[i] = i;
  axes[ndim - 2] = ndim - 1;
  axes[ndim - 1] = ndim - 2;
  tsr_array *t = NULL;
  CHECK_OK(tsr_transpose(&t, x, axes, ndim, NULL));
  return t;
}

/* a [2, M, K] and b [K, N] given as transposes of stored [2, K, M] and [N, K] (the x @ W^T of a
 * linear layer), in each dtype: the float32 ones reach sgemm as CblasTrans, the others are
 * gathered. */
static void test_transposed(tsr_dtype dtype) {
  enum { M = 6, K = 37, N = 5 };
  double stored_a[2 * K * M], stored_b[N * K], av[2 * M * K], bv[K * N];
  nn_random(stored_a, 2 * K * M, dtype, 1.0);
  nn_random(stored_b, N * K, dtype, 1.0);
  swap_last_two(stored_a, 2, K, M, av);
  swap_last_two(stored_b, 1, N, K, bv);
  int64_t sa[3] = {2, K, M}, sb[2] = {N, K}, as[3] = {2, M, K}, bs[2] = {K, N};
  tsr_array *base_a = nn_make(stored_a, dtype, sa, 3), *base_b = nn_make(stored_b, dtype, sb, 2);
  tsr_array *a = transposed_view(base_a), *b = transposed_view(base_b), *c = NULL;
  tsr_array *plain_a = nn_make(av, dtype, as, 3), *c2 = NULL;
  CHECK_OK(tsr_matmul(&c, a, b, NULL));
  expect_product(c, av, as, 3, bv, bs, 2, K);
  CHECK_OK(tsr_matmul(&c2, plain_a, b, NULL)); /* row-major a, transposed b */
  expect_product(c2, av, as, 3, bv, bs, 2, K);
  tsr_array *arrays[] = {c2, plain_a, c, a, b, base_a, base_b};
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
    tsr_array_release(arrays[i]);
}

/* Strided, reversed and broadcast operands: every layout sgemm cannot take is gathered. */
static void test_strided_views(void) {
  enum { M = 5, K = 12, N = 4 };
  double full[M * 2 * K], bv[K * N], av[M * K], rev[K * N];
  nn_random(full, M * 2 * K, TSR_FLOAT32, 1.0);
  nn_random(bv, K * N, TSR_FLOAT32, 1.0);
  for (int i = 0; i < M; i++) /* a = full[:, ::2] */
    for (int j = 0; j < K; j++)
      av[i * K + j] = full[i * 2 * K + 2 * j];
  for (int i = 0; i < K; i++) /* b reversed along K: b[::-1] */
    for (int j = 0; j < N; j++)
      rev[i * N + j] = bv[(K - 1 - i) * N + j];
  int64_t fs[2] = {M, 2 * K}, bs[2] = {K, N}, as[2] = {M, K};
  tsr_array *base = nn_make(full, TSR_FLOAT32, fs, 2), *b = nn_make(bv, TSR_FLOAT32, bs, 2);
  int64_t start[2] = {0, 0}, stop[2] = {M, 2 * K}, step[2] = {1, 2};
  int64_t rstart[1] = {-1}, rstop[1] = {-K - 1}, rstep[1] = {-1};
  tsr_array *a = NULL, *b_rev = NULL, *c = NULL, *c2 = NULL;
  CHECK_OK(tsr_slice(&a, base, start, stop, step, 2, NULL));
  CHECK_OK(tsr_slice(&b_rev, b, rstart, rstop, rstep, 1, NULL));
  CHECK_OK(tsr_matmul(&c, a, b_rev, NULL));
  expect_product(c, av, as, 2, rev, bs, 2, K);
  /* a row broadcast to 3 rows (stride 0) */
  int64_t rs[2] = {1, K}, wide[2] = {3, K};
  double row[K], rows3[3 * K];
  nn_random(row, K, TSR_FLOAT32, 1.0);
  for (int i = 0; i < 3 * K; i++)
    rows3[i] = row[i % K];
  tsr_array *r = nn_make(row, TSR_FLOAT32, rs, 2), *r3 = NULL;
  CHECK_OK(tsr_broadcast_to(&r3, r, wide, 2, NULL));
  CHECK_OK(tsr_matmul(&c2, r3, b, NULL));
  expect_product(c2, rows3, wide, 2, bv, bs, 2, K);
  tsr_array *arrays[] = {c, c2, a, b_rev, base, b, r, r3};
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
    tsr_array_release(arrays[i]);
}

/* ---- bad inputs --------------------------------------------------------------------------- */

static void test_bad_inputs(void) {
  int64_t s23[2] = {2, 3}, s45[2] = {4, 5}, s235[3] = {2, 3, 5}, s453[3] = {4, 5, 3};
  double zeros[64] = {0};
  tsr_array *a = nn_make(zeros, TSR_FLOAT32, s23, 2), *b = nn_make(zeros, TSR_FLOAT32, s45, 2);
  tsr_array *c = nn_make(zeros, TSR_FLOAT32, s235, 3), *d = nn_make(zeros, TSR_FLOAT32, s453, 3);
  tsr_array *scalar = nn_make(zeros, TSR_FLOAT32, NULL, 0);
  unsigned char bools[6] = {0};
  tsr_array *flags = NULL;
  CHECK_OK(tsr_array_from_data(&flags, bools, TSR_BOOL, s23, 2));
  tsr_array *sentinel = (tsr_array *)0x1, *out = sentinel;
  CHECK_STATUS(tsr_matmul(NULL, a, b, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("out is NULL");
  CHECK_STATUS(tsr_matmul(&out, NULL, b, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("a is NULL");
  CHECK_STATUS(tsr_matmul(&out, a, NULL, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("b is NULL");
  CHECK_STATUS(tsr_matmul(&out, a, b, NULL), TSR_ERR_INVALID); /* [2, 3] @ [4, 5] */
  CHECK_MESSAGE("[2, 3]");
  CHECK_MESSAGE("[4, 5]");
  CHECK_MESSAGE("3 vs 4");
  CHECK_STATUS(tsr_matmul(&out, c, d, NULL), TSR_ERR_INVALID); /* batch 2 vs 4 */
  CHECK_MESSAGE("broadcast");
  CHECK_MESSAGE("2 vs 4");
  CHECK_STATUS(tsr_matmul(&out, scalar, a, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("a is 0-d");
  CHECK_STATUS(tsr_matmul(&out, a, scalar, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("b is 0-d");
  CHECK_STATUS(tsr_matmul(&out, flags, a, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("bool");
  /* K = 2^31 (lazy broadcasts, never evaluated): beyond a 32-bit BLAS int */
  int64_t one_one[2] = {1, 1}, row[2] = {1, 1ll << 31}, column[2] = {1ll << 31, 1};
  tsr_array *unit = nn_make(zeros, TSR_FLOAT32, one_one, 2), *wide = NULL, *tall = NULL;
  CHECK_OK(tsr_broadcast_to(&wide, unit, row, 2, NULL));
  CHECK_OK(tsr_broadcast_to(&tall, unit, column, 2, NULL));
  CHECK_STATUS(tsr_matmul(&out, wide, tall, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("K 2147483648 exceeds 2147483647");
  CHECK(out == sentinel);
  tsr_array *arrays[] = {a, b, c, d, scalar, flags, unit, wide, tall};
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
    tsr_array_release(arrays[i]);
}

int main(void) {
  test_plain();
  test_batches();
  test_vectors();
  test_dtypes();
  test_zero_size();
  test_transposed(TSR_FLOAT32);
  test_transposed(TSR_FLOAT16);
  test_transposed(TSR_BFLOAT16);
  test_strided_views();
  test_bad_inputs();
  tsr_memory_clear_cache(cpu);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
