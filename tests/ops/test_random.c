/* tests/ops/test_random.c — random_uniform, random_normal and random_categorical against a
 * Philox-4x32-10 written here from the paper (checked first on the Random123 known-answer
 * vectors) and the counter layout documented in src/ops/random.h: exact bits for uniform and
 * categorical, Box-Muller within rounding for normal; high excluded after rounding to every float
 * dtype; moments of 10^6 draws within 5 sigma; a chi-square of categorical counts against
 * softmax(logits); reproducibility, seed sensitivity and slices of larger draws; every bad
 * argument.
 *
 * Tolerances. Uniform floats are exact (24-bit fractions, an exact affine map for [0, 1), one
 * rounding otherwise, recomputed here the same way). A normal value is float(mean + std z) with z
 * from libm in float64, so |got - ref| <= 2^-24 |ref| (the rounding) + 2^-40 (libm's last-bit
 * differences, far below). Moments: the mean of N draws has sd sigma/sqrt(N) and the sample
 * variance sd sqrt((mu4 - sigma^4)/N); 5 sd is the bound (mu4 = 1/80 for U[0,1), 3 for N(0,1)). */
#include <math.h>

#include "check.h"

static const tsr_device cpu = {TSR_CPU, 0};

/* Philox-4x32-10 (Salmon et al., SC'11): 10 rounds of two 32x32->64 multiplies, the key bumped
 * by the Weyl constants after each round. */
static void ref_philox(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c[4] = {counter[0], counter[1], counter[2], counter[3]}, k[2] = {key[0], key[1]};
  for (int round = 0; round < 10; round++) {
    uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
    uint32_t next[4] = {(uint32_t)(p1 >> 32) ^ c[1] ^ k[0], (uint32_t)p1,
                        (uint32_t)(p0 >> 32) ^ c[3] ^ k[1], (uint32_t)p0};
    memcpy(c, next, sizeof c);
    k[0] += 0x9E3779B9u;
    k[1] += 0xBB67AE85u;
  }
  memcpy(out, c, sizeof c);
}

/* Word `word` of block `block` under `seed`, as src/ops/random.h lays the counters out. */
static uint32_t ref_word(uint64_t seed, uint64_t block, int word) {
  uint32_t counter[4] = {(uint32_t)block, (uint32_t)(block >> 32), 0, 0};
  uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)}, out[4];
  ref_philox(counter, key, out);
  return out[word];
}

static void test_known_answers(void) {
  static const uint32_t kat[3][10] = {
      {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
      {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
       0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
      {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
       0x94fdcceb, 0x5001e420, 0x24126ea1}};
  for (int v = 0; v < 3; v++) {
    uint32_t out[4];
    ref_philox(kat[v], kat[v] + 4, out);
    for (int i = 0; i < 4; i++)
      if (out[i] != kat[v][6 + i])
        CHECK_FAIL_("test's Philox, vector %d word %d: %08x != %08x", v, i, out[i], kat[v][6 + i]);
  }
  /* The library's first block under seed 0 is the first vector: element i = word i >> 8. */
  int64_t four[1] = {4};
  float got[4];
  tsr_array *u = NULL;
  CHECK_OK(tsr_random_uniform(&u, four, 1, 0.0, 1.0, TSR_FLOAT32, 0, NULL));
  CHECK_OK(tsr_array_read(u, got, sizeof got));
  for (int i = 0; i < 4; i++)
    CHECK(got[i] == (float)(kat[0][6 + i] >> 8) * 0x1p-24f);
  tsr_array_release(u);
}

static float *draw(tsr_dtype dtype, int64_t n, double a, double b, uint64_t seed, bool normal) {
  tsr_array *x = NULL;
  int64_t shape[1] = {n};
  if (normal)
    CHECK_OK(tsr_random_normal(&x, shape, 1, a, b, dtype, seed, NULL));
  else
    CHECK_OK(tsr_random_uniform(&x, shape, 1, a, b, dtype, seed, NULL));
  CHECK_EQ_INT(tsr_array_dtype(x), dtype);
  size_t bytes = (size_t)n * tsr_dtype_size(dtype);
  unsigned char *raw = malloc(bytes + 1);
  float *values = malloc((size_t)n * sizeof *values + 1);
  CHECK(raw && values);
  CHECK_OK(tsr_array_read(x, raw, bytes));
  for (int64_t i = 0; i < n; i++)
    values[i] = dtype == TSR_FLOAT16    ? tsr_f16_to_f32(((uint16_t *)(void *)raw)[i])
                : dtype == TSR_BFLOAT16 ? tsr_bf16_to_f32(((uint16_t *)(void *)raw)[i])
                                        : ((float *)(void *)raw)[i];
  free(raw);
  tsr_array_release(x);
  return values;
}

static void test_uniform_bits(void) {
  static const uint64_t seeds[4] = {0, 1, 0xffffffffffffffffull, 0x0123456789abcdefull};
  for (int s = 0; s < 4; s++) {
    float *x = draw(TSR_FLOAT32, 1001, 0.0, 1.0, seeds[s], false);
    float *y = draw(TSR_FLOAT32, 1001, -3.0, 5.0, seeds[s], false);
    float *h = draw(TSR_FLOAT16, 1001, 0.0, 1.0, seeds[s], false);
    for (int64_t i = 0; i < 1001; i++) {
      uint32_t w = ref_word(seeds[s], (uint64_t)i >> 2, (int)(i & 3));
      double u = (double)(w >> 8) * 0x1p-24;
      if (x[i] != (float)u)
        CHECK_FAIL_("seed %d element %lld: %.9g != %.9g", s, (long long)i, (double)x[i], u);
      CHECK(y[i] == (float)(-3.0 + 8.0 * u) && y[i] >= -3.0f && y[i] < 5.0f);
      float rounded = tsr_f16_to_f32(tsr_f32_to_f16((float)u)); /* 1.0 clamps to 1 - 2^-11 */
      CHECK(h[i] == (rounded < 1.0f ? rounded : 1.0f - 0x1p-11f));
    }
    free(h);
    free(x);
    free(y);
  }
}

/* Rounding to the dtype could reach high; it must not. Ranges where it would, often. */
static void test_high_excluded(void) {
  enum { N = 1000000 };
  static const struct {
    tsr_dtype dtype;
    double low, high;
    float top; /* the largest dtype value below high: must be reached, never passed */
  } cases[4] = {{TSR_FLOAT16, 0.0, 1.0, 1.0f - 0x1p-11f},
                {TSR_BFLOAT16, 0.0, 1.0, 1.0f - 0x1p-8f},
                {TSR_FLOAT32, 1048576.0, 1048577.0, 1048576.875f}, /* float32 spacing 1/8 there */
                {TSR_BFLOAT16, 0.1, 0.2, 0.19921875f}};
  for (int c = 0; c < 4; c++) {
    float *x = draw(cases[c].dtype, N, cases[c].low, cases[c].high, 7, false);
    int64_t at_top = 0;
    for (int64_t i = 0; i < N; i++) {
      if (!((double)x[i] >= cases[c].low && (double)x[i] < cases[c].high))
        CHECK_FAIL_("case %d element %lld: %.9g outside [%g, %g)", c, (long long)i, (double)x[i],
                    cases[c].low, cases[c].high);
      at_top += x[i] == cases[c].top;
    }
    if (at_top == 0) CHECK_FAIL_("case %d never reached %.9g", c, (double)cases[c].top);
    free(x);
  }
  tsr_array *u = NULL;
  int64_t one[1] = {1};
  CHECK_STATUS(tsr_random_uniform(&u, one, 1, 1.0001, 1.0002, TSR_FLOAT16, 0, NULL),
               TSR_ERR_INVALID);
  CHECK_MESSAGE("no float16 value in [low, high) = [1.0001");
}

static void moments(const float *x, int64_t n, double *mean, double *var) {
  double s = 0.0, s2 = 0.0;
  for (int64_t i = 0; i < n; i++)
    s += (double)x[i];
  *mean = s / (double)n;
  for (int64_t i = 0; i < n; i++)
    s2 += ((double)x[i] - *mean) * ((double)x[i] - *mean);
  *var = s2 / (double)(n - 1);
}

static void test_moments(void) {
  enum { N = 1000000 };
  double mean, var, n = (double)N;
  float *u = draw(TSR_FLOAT32, N, 0.0, 1.0, 42, false);
  moments(u, N, &mean, &var);
  CHECK(fabs(mean - 0.5) <= 5.0 * sqrt(1.0 / 12.0 / n));
  CHECK(fabs(var - 1.0 / 12.0) <= 5.0 * sqrt((1.0 / 80.0 - 1.0 / 144.0) / n));
  free(u);
  float *z = draw(TSR_FLOAT32, N, 0.0, 1.0, 43, true);
  moments(z, N, &mean, &var);
  CHECK(fabs(mean) <= 5.0 / sqrt(n));
  CHECK(fabs(var - 1.0) <= 5.0 * sqrt(2.0 / n));
  free(z);
  float *w = draw(TSR_BFLOAT16, N, 3.0, 2.0, 44, true); /* N(3, 4), rounded to bfloat16 */
  moments(w, N, &mean, &var);
  CHECK(fabs(mean - 3.0) <= 5.0 * 2.0 / sqrt(n) + 3.0 * 0x1p-9);
  CHECK(fabs(var - 4.0) <= 5.0 * 4.0 * sqrt(2.0 / n) + 4.0 * 0x1p-7);
  free(w);
}

/* Box-Muller on block i / 2 with two 53-bit uniforms (words 0-1 and 2-3). */
static void test_normal_values(void) {
  const double two_pi = 6.283185307179586476925;
  float *z = draw(TSR_FLOAT32, 999, 1.5, 0.25, 99, true);
  for (int64_t i = 0; i < 999; i++) {
    uint32_t w[4];
    for (int k = 0; k < 4; k++)
      w[k] = ref_word(99, (uint64_t)i / 2, k);
    double u1 = ((double)(w[0] >> 5) * 67108864.0 + (double)(w[1] >> 6)) / 9007199254740992.0;
    double u2 = ((double)(w[2] >> 5) * 67108864.0 + (double)(w[3] >> 6)) / 9007199254740992.0;
    double r = sqrt(-2.0 * log(1.0 - u1)), angle = two_pi * u2;
    double want = 1.5 + 0.25 * (i % 2 ? r * sin(angle) : r * cos(angle));
    if (fabs((double)z[i] - want) > 0x1p-24 * fabs(want) + 0x1p-40)
      CHECK_FAIL_("normal element %lld: %.9g != %.9g", (long long)i, (double)z[i], want);
  }
  free(z);
}

/* Same seed, same bits; another seed, other numbers; any prefix or reshape of a draw is the
 * same draw (counter = element index). */
static void test_reproducible(void) {
  for (int normal = 0; normal < 2; normal++) {
    float *a = draw(TSR_FLOAT32, 1001, 0.0, 1.0, 5, normal);
    float *b = draw(TSR_FLOAT32, 1001, 0.0, 1.0, 5, normal);
    float *c = draw(TSR_FLOAT32, 1001, 0.0, 1.0, 6, normal);
    float *d = draw(TSR_FLOAT32, 7, 0.0, 1.0, 5, normal);
    CHECK(memcmp(a, b, 1001 * sizeof(float)) == 0);
    CHECK(memcmp(a, d, 7 * sizeof(float)) == 0);
    int same = 0;
    for (int i = 0; i < 1001; i++)
      same += a[i] == c[i];
    CHECK(same < 5);
    tsr_array *m = NULL;
    int64_t shape[3] = {7, 11, 13};
    float got[1001];
    if (normal)
      CHECK_OK(tsr_random_normal(&m, shape, 3, 0.0, 1.0, TSR_FLOAT32, 5, NULL));
    else
      CHECK_OK(tsr_random_uniform(&m, shape, 3, 0.0, 1.0, TSR_FLOAT32, 5, NULL));
    CHECK_OK(tsr_array_read(m, got, sizeof got));
    CHECK(memcmp(a, got, sizeof got) == 0);
    tsr_array_release(m);
    free(a);
    free(b);
    free(c);
    free(d);
  }
  tsr_array *e = NULL;
  int64_t empty[2] = {0, 3};
  CHECK_OK(tsr_random_normal(&e, empty, 2, 0.0, 1.0, TSR_FLOAT16, 1, NULL));
  CHECK_OK(tsr_eval(&e, 1));
  tsr_array_release(e);
}

/* The sample of row r: argmax_j logits[j] - log(-log(u)), u from the flat index's word. */
static int32_t ref_categorical(const float *logits, int64_t n, int64_t first, int64_t step,
                               uint64_t seed) {
  int32_t best_j = 0;
  double best = -HUGE_VAL;
  for (int64_t j = 0; j < n; j++) {
    uint64_t flat = (uint64_t)(first + j * step);
    double u = ((double)ref_word(seed, flat / 4, (int)(flat % 4)) + 0.5) / 4294967296.0;
    double score = (double)logits[first + j * step] - log(-log(u));
    if (score > best) best = score, best_j = (int32_t)j;
  }
  return best_j;
}

/* bfloat16 logits (these values are exact in it) draw as float32 ones do. */
static void check_categorical_bf16(const float *logits, const float *row) {
  enum { ROWS = 300, K = 8 };
  uint16_t bf[ROWS * K];
  for (int i = 0; i < ROWS * K; i++)
    bf[i] = tsr_f32_to_bf16(row[i % K]);
  int64_t shape[2] = {ROWS, K};
  int32_t got[ROWS];
  tsr_array *l = NULL, *s = NULL;
  CHECK_OK(tsr_array_from_data(&l, bf, TSR_BFLOAT16, shape, 2));
  CHECK_OK(tsr_random_categorical(&s, l, 1, 5, NULL));
  CHECK_OK(tsr_array_read(s, got, sizeof got));
  for (int r = 0; r < ROWS; r++)
    CHECK_EQ_INT(got[r], ref_categorical(logits, K, (int64_t)r * K, 1, 5));
  tsr_array_release(s);
  tsr_array_release(l);
}

static void test_categorical(void) {
  enum { ROWS = 100000, K = 8 };
  static const float row[K] = {0.0f, 1.0f, 2.0f, -1.0f, 0.5f, -INFINITY, 3.0f, 1.0f};
  float *logits = malloc(sizeof(float) * ROWS * K);
  int32_t *got = malloc(sizeof(int32_t) * ROWS);
  CHECK(logits && got);
  for (int64_t i = 0; i < (int64_t)ROWS * K; i++)
    logits[i] = row[i % K];
  int64_t shape[2] = {ROWS, K};
  tsr_array *l = NULL, *s = NULL;
  CHECK_OK(tsr_array_from_data(&l, logits, TSR_FLOAT32, shape, 2));
  CHECK_OK(tsr_random_categorical(&s, l, -1, 2024, NULL));
  CHECK_EQ_INT(tsr_array_ndim(s), 1);
  CHECK_EQ_INT(tsr_array_dtype(s), TSR_INT32);
  CHECK_OK(tsr_array_read(s, got, sizeof(int32_t) * ROWS));
  int64_t counts[K] = {0};
  for (int r = 0; r < ROWS; r++) {
    CHECK(got[r] >= 0 && got[r] < K);
    counts[got[r]]++;
    if (r < 300) CHECK_EQ_INT(got[r], ref_categorical(logits, K, (int64_t)r * K, 1, 2024));
  }
  double z = 0.0, chi2 = 0.0;
  for (int j = 0; j < K; j++)
    z += exp((double)row[j]);
  for (int j = 0; j < K; j++) {
    double expected = (double)ROWS * exp((double)row[j]) / z;
    if (expected > 0)
      chi2 += ((double)counts[j] - expected) * ((double)counts[j] - expected) / expected;
  }
  CHECK_EQ_INT(counts[5], 0); /* -inf: probability 0 */
  CHECK(chi2 < 40.0);         /* 6 degrees of freedom: P(chi2 > 40) = 4.6e-7 */
  tsr_array_release(s);
  /* along axis 0 of the transposed logits [K, ROWS]: the counter is the view's row-major index */
  tsr_array *t = NULL;
  CHECK_OK(tsr_transpose(&t, l, NULL, 0, NULL));
  CHECK_OK(tsr_random_categorical(&s, t, 0, 77, NULL));
  CHECK_OK(tsr_array_read(s, got, sizeof(int32_t) * ROWS));
  float *transposed = malloc(sizeof(float) * ROWS * K);
  CHECK(transposed);
  for (int64_t j = 0; j < K; j++)
    for (int64_t r = 0; r < ROWS; r++)
      transposed[j * ROWS + r] = logits[r * K + j];
  for (int r = 0; r < 300; r++)
    CHECK_EQ_INT(got[r], ref_categorical(transposed, K, r, ROWS, 77));
  tsr_array_release(s);
  tsr_array_release(t);
  check_categorical_bf16(logits, row);
  tsr_array_release(l);
  free(transposed);
  free(logits);
  free(got);
}

static void test_bad_inputs(void) {
  int64_t shape[2] = {2, 3}, negative[1] = {-4};
  tsr_array *sentinel = (tsr_array *)0x1, *out = sentinel;
  CHECK_STATUS(tsr_random_uniform(NULL, shape, 2, 0, 1, TSR_FLOAT32, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("random_uniform: out is NULL");
  CHECK_STATUS(tsr_random_uniform(&out, shape, 2, 0, 1, TSR_INT32, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("dtype int32 is not a float dtype");
  CHECK_STATUS(tsr_random_uniform(&out, shape, 2, 1, 1, TSR_FLOAT32, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("[1, 1)");
  CHECK_STATUS(tsr_random_uniform(&out, shape, 2, (double)NAN, 1, TSR_FLOAT32, 0, NULL),
               TSR_ERR_INVALID);
  CHECK_MESSAGE("nan");
  CHECK_STATUS(tsr_random_uniform(&out, shape, 2, -1e308, 1e308, TSR_FLOAT32, 0, NULL),
               TSR_ERR_INVALID);
  CHECK_STATUS(tsr_random_uniform(&out, negative, 1, 0, 1, TSR_FLOAT32, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("-4");
  CHECK_STATUS(tsr_random_normal(&out, shape, 2, 0, -1, TSR_FLOAT32, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("std -1");
  CHECK_STATUS(tsr_random_normal(&out, shape, 2, (double)INFINITY, 1, TSR_FLOAT32, 0, NULL),
               TSR_ERR_INVALID);
  CHECK_MESSAGE("mean inf");
  CHECK_STATUS(tsr_random_normal(&out, shape, 2, 0, 1, TSR_BOOL, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("bool");
  CHECK_STATUS(tsr_random_normal(NULL, shape, 2, 0, 1, TSR_FLOAT32, 0, NULL), TSR_ERR_INVALID);
  int32_t ints[6] = {0};
  float floats[6] = {0};
  tsr_array *il = NULL, *fl = NULL, *empty = NULL;
  CHECK_OK(tsr_array_from_data(&il, ints, TSR_INT32, shape, 2));
  CHECK_OK(tsr_array_from_data(&fl, floats, TSR_FLOAT32, shape, 2));
  int64_t empty_shape[2] = {3, 0};
  CHECK_OK(tsr_array_from_data(&empty, floats, TSR_FLOAT32, empty_shape, 2));
  CHECK_STATUS(tsr_random_categorical(&out, il, 1, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("logits are int32");
  CHECK_STATUS(tsr_random_categorical(&out, fl, 2, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("axis 2 out of range for a 2-d array [2, 3]");
  CHECK_STATUS(tsr_random_categorical(&out, NULL, 0, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("logits is NULL");
  CHECK_STATUS(tsr_random_categorical(NULL, fl, 0, 0, NULL), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_random_categorical(&out, empty, 1, 0, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("axis 1 of [3, 0] has size 0");
  CHECK(out == sentinel);
  CHECK_OK(tsr_random_categorical(&out, empty, 0, 0, NULL)); /* [0]: no rows, nothing to draw */
  CHECK_EQ_INT(tsr_array_size(out), 0);
  CHECK_OK(tsr_eval(&out, 1));
  tsr_array_release(out);
  tsr_array_release(il);
  tsr_array_release(fl);
  tsr_array_release(empty);
}

int main(void) {
  test_known_answers();
  test_uniform_bits();
  test_high_excluded();
  test_moments();
  test_normal_values();
  test_reproducible();
  test_categorical();
  test_bad_inputs();
  CHECK_OK(tsr_memory_clear_cache(cpu));
  CHECK_NO_LEAKS();
  tsr_shutdown();
  puts("test_random: ok");
  return 0;
}
