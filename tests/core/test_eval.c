/* tests/core/test_eval.c — lazy evaluation end to end: add with broadcasting and promotion
 * against plain C loops (exact: every sum here is representable), a 10^5-node chain (no stack
 * overflow, bounded buffers by the ledger's peak), dropping an unevaluated chain, async eval,
 * and errors at evaluation. */
#include "check.h"

static const tsr_device cpu = {TSR_CPU, 0};

static tsr_array *from_f32(const float *data, const int64_t *shape, int ndim) {
  tsr_array *a = NULL;
  CHECK_OK(tsr_array_from_data(&a, data, TSR_FLOAT32, shape, ndim));
  return a;
}

static void test_broadcast_add(void) {
  float xs[12], ys[3] = {10, 20, 30}, got[12];
  for (int i = 0; i < 12; i++)
    xs[i] = (float)i;
  int64_t sx[2] = {4, 3}, sy[1] = {3};
  tsr_array *x = from_f32(xs, sx, 2), *y = from_f32(ys, sy, 1), *z = NULL;
  CHECK_OK(tsr_add(&z, x, y, NULL));
  CHECK_EQ_INT(tsr_array_ndim(z), 2);
  CHECK_EQ_INT(tsr_array_dim(z, 0), 4);
  CHECK_EQ_INT(tsr_array_dim(z, -1), 3);
  CHECK_OK(tsr_array_read(z, got, sizeof got));
  for (int i = 0; i < 12; i++)
    CHECK(got[i] == xs[i] + ys[i % 3]);
  tsr_array *w = NULL; /* [4, 1] + [1, 3] -> [4, 3], both sides broadcast */
  int64_t sc[2] = {4, 1}, sr[2] = {1, 3};
  tsr_array *col = from_f32(xs, sc, 2), *row = from_f32(ys, sr, 2);
  CHECK_OK(tsr_add(&w, col, row, NULL));
  CHECK_OK(tsr_array_read(w, got, sizeof got));
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 3; j++)
      CHECK(got[i * 3 + j] == xs[i] + ys[j]);
  tsr_array *bad = NULL; /* [4, 3] + [4] does not broadcast */
  int64_t s4[1] = {4};
  tsr_array *v4 = from_f32(xs, s4, 1);
  CHECK_STATUS(tsr_add(&bad, x, v4, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("[4, 3]");
  CHECK_MESSAGE("[4]");
  CHECK(bad == NULL);
  tsr_array_release(x), tsr_array_release(y), tsr_array_release(z), tsr_array_release(w);
  tsr_array_release(col), tsr_array_release(row), tsr_array_release(v4);
}

static void test_promotion(void) {
  int32_t is[3] = {1, -2, 2147483647};
  uint16_t hs[3] = {tsr_f32_to_f16(0.5f), tsr_f32_to_f16(-1.5f), tsr_f32_to_f16(2.0f)};
  int64_t s3[1] = {3};
  tsr_array *i = NULL, *h = NULL, *sum = NULL, *wrap = NULL;
  CHECK_OK(tsr_array_from_data(&i, is, TSR_INT32, s3, 1));
  CHECK_OK(tsr_array_from_data(&h, hs, TSR_FLOAT16, s3, 1));
  CHECK_OK(tsr_add(&sum, i, h, NULL)); /* int32 + float16 -> float16 */
  CHECK_EQ_INT(tsr_array_dtype(sum), TSR_FLOAT16);
  uint16_t got[3];
  CHECK_OK(tsr_array_read(sum, got, sizeof got));
  CHECK_EQ_INT(got[0], tsr_f32_to_f16(1.5f));
  CHECK_EQ_INT(got[1], tsr_f32_to_f16(-3.5f));
  CHECK_EQ_INT(got[2], 0x7c00);         /* 2^31 overflows float16: +inf */
  CHECK_OK(tsr_add(&wrap, i, i, NULL)); /* int32 wraps */
  int32_t w[3];
  CHECK_OK(tsr_array_read(wrap, w, sizeof w));
  CHECK_EQ_INT(w[0], 2);
  CHECK_EQ_INT(w[1], -4);
  CHECK_EQ_INT(w[2], -2);
  tsr_array_release(i), tsr_array_release(h), tsr_array_release(sum), tsr_array_release(wrap);
}

enum { CHAIN = 100000, WIDTH = 16 };

static tsr_array *build_chain(tsr_array *x, tsr_array *one, int length) {
  tsr_array *a = tsr_array_retain(x);
  for (int i = 0; i < length; i++) {
    tsr_array *next = NULL;
    CHECK_OK(tsr_add(&next, a, one, NULL));
    tsr_array_release(a);
    a = next;
  }
  return a;
}

static void test_long_chain(void) {
  float zeros[WIDTH] = {0}, ones[WIDTH], got[WIDTH];
  for (int i = 0; i < WIDTH; i++)
    ones[i] = 1.0f;
  int64_t shape[1] = {WIDTH};
  tsr_array *x = from_f32(zeros, shape, 1), *one = from_f32(ones, shape, 1);
  /* Dropping an unevaluated chain must not recurse 10^5 deep either. */
  tsr_array_release(build_chain(x, one, CHAIN));
  tsr_memory_reset_peak(cpu);
  uint64_t before = tsr_memory_peak(cpu);
  tsr_array *a = build_chain(x, one, CHAIN);
  CHECK_OK(tsr_eval(&a, 1));
  CHECK_OK(tsr_array_read(a, got, sizeof got));
  for (int i = 0; i < WIDTH; i++)
    CHECK(got[i] == (float)CHAIN);
  /* Each buffer is 64 bytes; a chain needs its input, its output and at most one block on its
     way back to the cache at once: far from the 10^5 buffers of an eager walk. */
  uint64_t grown = tsr_memory_peak(cpu) - before;
  if (grown > 8 * 64)
    CHECK_FAIL_("peak grew by %llu bytes over a chain", (unsigned long long)grown);
  tsr_array_release(a), tsr_array_release(x), tsr_array_release(one);
}

static void test_async_and_reuse(void) {
  float xs[4] = {1, 2, 3, 4}, got[4];
  int64_t shape[1] = {4};
  tsr_array *x = from_f32(xs, shape, 1), *y = NULL, *z = NULL;
  CHECK_OK(tsr_add(&y, x, x, NULL));
  CHECK_OK(tsr_add(&z, y, x, NULL)); /* y is shared: evaluated once, read twice */
  tsr_array *both[2] = {y, z};
  CHECK_OK(tsr_async_eval(both, 2));
  CHECK_OK(tsr_eval(both, 2));
  CHECK_OK(tsr_array_read(z, got, sizeof got));
  for (int i = 0; i < 4; i++)
    CHECK(got[i] == 3 * xs[i]);
  CHECK_OK(tsr_array_read(y, got, sizeof got));
  for (int i = 0; i < 4; i++)
    CHECK(got[i] == 2 * xs[i]);
  void *ptr = NULL;
  CHECK_OK(tsr_array_data(y, &ptr));
  CHECK(ptr != NULL && ((float *)ptr)[3] == 8.0f);
  tsr_array_release(x), tsr_array_release(y), tsr_array_release(z);
}

static void test_zero_size_and_scalar(void) {
  int64_t empty[2] = {0, 3};
  tsr_array *e = NULL, *s = NULL, *sum = NULL, *scalar_sum = NULL;
  CHECK_OK(tsr_array_from_data(&e, NULL, TSR_FLOAT32, empty, 2));
  CHECK_OK(tsr_add(&sum, e, e, NULL));
  CHECK_OK(tsr_eval(&sum, 1));
  CHECK_EQ_INT(tsr_array_size(sum), 0);
  CHECK_OK(tsr_array_read(sum, NULL, 0));
  float two = 2.0f, got = 0;
  CHECK_OK(tsr_array_from_data(&s, &two, TSR_FLOAT32, NULL, 0));
  CHECK_OK(tsr_add(&scalar_sum, s, s, NULL));
  CHECK_OK(tsr_array_read(scalar_sum, &got, sizeof got));
  CHECK(got == 4.0f);
  tsr_array_release(e), tsr_array_release(s), tsr_array_release(sum);
  tsr_array_release(scalar_sum);
}

static void test_eval_errors(void) {
  CHECK_STATUS(tsr_eval(NULL, 1), TSR_ERR_INVALID);
  tsr_array *none[1] = {NULL};
  CHECK_STATUS(tsr_eval(none, 1), TSR_ERR_INVALID);
  CHECK_MESSAGE("arrays[0]");
  CHECK_OK(tsr_eval(NULL, 0));
  /* A graph on a stream freed before evaluation: TSR_ERR_STATE, nothing submitted. */
  float xs[2] = {1, 2};
  int64_t shape[1] = {2};
  tsr_array *x = from_f32(xs, shape, 1), *y = NULL;
  tsr_stream *s = NULL;
  CHECK_OK(tsr_stream_new(&s, cpu));
  CHECK_OK(tsr_add(&y, x, x, s));
  CHECK_OK(tsr_stream_free(s));
  CHECK_STATUS(tsr_eval(&y, 1), TSR_ERR_STATE);
  CHECK_MESSAGE("freed");
  CHECK_STATUS(tsr_eval(&y, 1), TSR_ERR_STATE); /* still refused, still lazy */
  tsr_array_release(y), tsr_array_release(x);
}

int main(void) {
  test_broadcast_add();
  test_promotion();
  test_long_chain();
  test_async_and_reuse();
  test_zero_size_and_scalar();
  test_eval_errors();
  CHECK_OK(tsr_memory_clear_cache(cpu));
  CHECK_NO_LEAKS();
  tsr_shutdown();
  puts("test_eval: ok");
  return 0;
}
