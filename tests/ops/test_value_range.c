/* tests/ops/test_value_range.c — the integer value ranges tessera infers at construction
 * (core/value_range.h), which let take, take_along_axis and gather_qmm skip their bounds check
 * (a stream synchronization on the GPU): known for integer data copied from the host and kept
 * through views, copies and conversions that hold every value; unknown for floats, bool, wrapped
 * caller memory (the caller may still write it), computed values, a conversion that would wrap,
 * arrays too large to scan, and once tsr_array_data has handed the buffer out (outside code may
 * write it): then for the array, its views, and copies made from it afterwards. The ops still
 * refuse an index outside the range whatever was inferred. */
#include <stdlib.h>

#include "check.h"

#include <tessera/testing.h>

static const tsr_device cpu = {TSR_CPU, 0};

static void expect_range(const char *what, const tsr_array *a, int64_t low, int64_t high) {
  int64_t got_low = 0, got_high = 0;
  if (!tsr_testing_array_value_range(a, &got_low, &got_high))
    CHECK_FAIL_("%s: want the range [%lld, %lld], none is known", what, (long long)low,
                (long long)high);
  if (got_low != low || got_high != high)
    CHECK_FAIL_("%s: range [%lld, %lld], want [%lld, %lld]", what, (long long)got_low,
                (long long)got_high, (long long)low, (long long)high);
}

static void expect_unknown(const char *what, const tsr_array *a) {
  int64_t low = 0, high = 0;
  if (tsr_testing_array_value_range(a, &low, &high))
    CHECK_FAIL_("%s: want no known range, got [%lld, %lld]", what, (long long)low, (long long)high);
}

static void test_host_data_and_views(void) {
  int32_t values[6] = {3, -1, 7, 0, 2, 5};
  int64_t shape[2] = {2, 3};
  tsr_array *a = NULL, *r = NULL, *t = NULL, *s = NULL, *c8 = NULL, *cu = NULL, *f = NULL;
  CHECK_OK(tsr_array_from_data_on(&a, values, TSR_INT32, shape, 2, cpu));
  expect_range("int32 from data", a, -1, 7);
  int64_t flat[1] = {6};
  CHECK_OK(tsr_reshape(&r, a, flat, 1, NULL));
  expect_range("reshape", r, -1, 7);
  CHECK_OK(tsr_transpose(&t, a, NULL, 0, NULL));
  expect_range("transpose", t, -1, 7);
  CHECK_OK(tsr_slice(&s, a, (int64_t[]){1, 0}, (int64_t[]){2, 3}, NULL, 2, NULL));
  expect_range("slice (the whole array's range: a superset)", s, -1, 7);
  CHECK_OK(tsr_astype(&c8, a, TSR_INT8, NULL));
  expect_range("astype int8 (every value fits)", c8, -1, 7);
  CHECK_OK(tsr_astype(&cu, a, TSR_UINT32, NULL));
  expect_unknown("astype uint32 (-1 would wrap)", cu);
  CHECK_OK(tsr_astype(&f, a, TSR_FLOAT32, NULL));
  expect_unknown("astype float32", f);
  tsr_array *all[] = {a, r, t, s, c8, cu, f};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    tsr_array_release(all[i]);
}

static void test_unknown_sources(void) {
  float floats[2] = {1.0f, 2.0f};
  bool flags[2] = {true, false};
  int64_t wide[2] = {INT64_MIN, INT64_MAX}, two[1] = {2};
  static int32_t caller_owned[2] = {0, 1};
  tsr_array *f = NULL, *b = NULL, *w = NULL, *ext = NULL, *sum = NULL, *empty = NULL;
  CHECK_OK(tsr_array_from_data_on(&f, floats, TSR_FLOAT32, two, 1, cpu));
  expect_unknown("float32 from data", f);
  CHECK_OK(tsr_array_from_data_on(&b, flags, TSR_BOOL, two, 1, cpu));
  expect_unknown("bool from data", b);
  CHECK_OK(tsr_array_from_data_on(&w, wide, TSR_INT64, two, 1, cpu));
  expect_range("int64 extremes", w, INT64_MIN, INT64_MAX);
  CHECK_OK(tsr_array_from_external(&ext, caller_owned, TSR_INT32, two, 1, cpu, NULL, NULL));
  expect_unknown("wrapped caller memory", ext);
  CHECK_OK(tsr_add(&sum, w, w, NULL));
  expect_unknown("a computed value", sum);
  int64_t none[1] = {0};
  CHECK_OK(tsr_array_from_data_on(&empty, flags, TSR_INT32, none, 1, cpu));
  expect_unknown("no elements", empty);
  tsr_array *all[] = {f, b, w, ext, sum, empty};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    tsr_array_release(all[i]);
}

/* Handing the buffer out drops the range of the array and its views; a copy evaluated before
   keeps its own (its values were copied then), a copy evaluated after does not. */
static void test_exposed_buffers(void) {
  int32_t values[4] = {0, 1, 2, 3};
  int64_t four[1] = {4}, two_by_two[2] = {2, 2};
  tsr_array *a = NULL, *view = NULL, *before = NULL, *after = NULL;
  CHECK_OK(tsr_array_from_data_on(&a, values, TSR_INT32, four, 1, cpu));
  CHECK_OK(tsr_reshape(&view, a, two_by_two, 2, NULL));
  CHECK_OK(tsr_astype(&before, a, TSR_INT64, NULL));
  CHECK_OK(tsr_eval(&before, 1));
  CHECK_OK(tsr_astype(&after, a, TSR_INT64, NULL)); /* built before the hand-out, run after */
  expect_range("after astype (built)", after, 0, 3);
  void *ptr = NULL;
  CHECK_OK(tsr_array_data(a, &ptr));
  ((int32_t *)ptr)[3] = 1000; /* what a raw collective writing into it would do */
  expect_unknown("an array whose buffer was handed out", a);
  CHECK_OK(tsr_eval(&view, 1)); /* a node's range is settled when it runs */
  expect_unknown("a view of it", view);
  expect_range("a copy evaluated before", before, 0, 3);
  CHECK_OK(tsr_eval(&after, 1));
  expect_unknown("a copy evaluated after", after);
  int64_t got[4] = {0, 0, 0, 0};
  CHECK_OK(tsr_array_read(after, got, sizeof got));
  CHECK(got[3] == 1000);
  tsr_array_release(a), tsr_array_release(view), tsr_array_release(before);
  tsr_array_release(after);
}

/* Index arrays are small; a large integer array (a checkpoint's packed weights) is not scanned. */
static void test_large_arrays_not_scanned(void) {
  int64_t n = ((int64_t)1 << 16) + 1;
  int32_t *values = calloc((size_t)n, sizeof *values);
  CHECK(values != NULL);
  tsr_array *a = NULL, *b = NULL;
  CHECK_OK(tsr_array_from_data_on(&a, values, TSR_INT32, &n, 1, cpu));
  expect_unknown("2^16 + 1 elements", a);
  n -= 1;
  CHECK_OK(tsr_array_from_data_on(&b, values, TSR_INT32, &n, 1, cpu));
  expect_range("2^16 elements", b, 0, 0);
  tsr_array_release(a), tsr_array_release(b);
  free(values);
}

/* A known range outside the axis still meets the bounds check: the op fails naming the index. */
static void test_out_of_range_still_refused(void) {
  float table[3] = {10, 20, 30};
  int32_t ids[2] = {1, 3};
  int64_t three[1] = {3}, two[1] = {2};
  tsr_array *a = NULL, *i = NULL, *out = NULL;
  CHECK_OK(tsr_array_from_data_on(&a, table, TSR_FLOAT32, three, 1, cpu));
  CHECK_OK(tsr_array_from_data_on(&i, ids, TSR_INT32, two, 1, cpu));
  CHECK_OK(tsr_take(&out, a, i, 0, NULL));
  CHECK_STATUS(tsr_eval(&out, 1), TSR_ERR_INVALID);
  CHECK_MESSAGE("out of range");
  tsr_array_release(out);
  ids[1] = 2; /* in range now: the right elements */
  tsr_array *i2 = NULL;
  CHECK_OK(tsr_array_from_data_on(&i2, ids, TSR_INT32, two, 1, cpu));
  CHECK_OK(tsr_take(&out, a, i2, 0, NULL));
  float got[2] = {0, 0};
  CHECK_OK(tsr_array_read(out, got, sizeof got));
  CHECK(got[0] == 20 && got[1] == 30);
  tsr_array_release(out), tsr_array_release(i2), tsr_array_release(i), tsr_array_release(a);
}

int main(void) {
  test_host_data_and_views();
  test_unknown_sources();
  test_exposed_buffers();
  test_large_arrays_not_scanned();
  test_out_of_range_still_refused();
  CHECK_NO_LEAKS();
  tsr_shutdown();
  puts("test_value_range: ok");
  return 0;
}
