/* tests/ops/test_slice_update.c — slice_update against a float64 reference indexed by hand
 * (Python slice rules, broadcasting update, conversion to dst's dtype with hand-computed
 * results), and the donation of dst's buffer measured on the ledger: a released cache takes a
 * row without being copied, a held, viewed, strided or wrapped dst is copied and keeps its
 * values. Not slice itself (test_views.c). */
#include <math.h>

#include "check.h"
#include "slice_ref.h"

static const tsr_device cpu = {TSR_CPU, 0};

static tsr_array *iota_f32(const int64_t *shape, int ndim, float first) {
  static float data[1 << 16];
  int64_t size = 1;
  for (int i = 0; i < ndim; i++)
    size *= shape[i];
  CHECK(size <= (1 << 16));
  for (int64_t i = 0; i < size; i++)
    data[i] = first + (float)i;
  tsr_array *a = NULL;
  CHECK_OK(tsr_array_from_data(&a, data, TSR_FLOAT32, shape, ndim));
  return a;
}

/* dst [R, C] (values 0..) with dst[start:stop:step] (2 axes) = update [ur, uc] (values 100 + i,
   broadcast NumPy-style), checked element by element against a reference written here. */
static void check_update_2d(int64_t rows, int64_t cols, const int64_t *start, const int64_t *stop,
                            const int64_t *step, const int64_t *ushape, int undim) {
  int64_t shape[2] = {rows, cols};
  tsr_array *dst = iota_f32(shape, 2, 0.0f), *update = iota_f32(ushape, undim, 100.0f);
  tsr_array *out = NULL;
  CHECK_OK(tsr_slice_update(&out, dst, update, start, stop, step, 2, NULL));
  int64_t taken_r[64], taken_c[64];
  int64_t nr = python_slice(rows, start[0], stop[0], step[0], taken_r);
  int64_t nc = python_slice(cols, start[1], stop[1], step[1], taken_c);
  double want[4096];
  for (int64_t i = 0; i < rows * cols; i++)
    want[i] = (double)i;
  int64_t ur = undim == 2 ? ushape[0] : 1, uc = undim >= 1 ? ushape[undim - 1] : 1;
  for (int64_t i = 0; i < nr; i++)
    for (int64_t j = 0; j < nc; j++) {
      int64_t from = (ur == 1 ? 0 : i) * uc + (uc == 1 ? 0 : j);
      want[taken_r[i] * cols + taken_c[j]] = 100.0 + (double)from;
    }
  float got[4096];
  CHECK_OK(tsr_array_read(out, got, (size_t)(rows * cols) * sizeof(float)));
  for (int64_t i = 0; i < rows * cols; i++)
    if ((double)got[i] != want[i])
      CHECK_FAIL_("element %lld: %g, want %g", (long long)i, (double)got[i], want[i]);
  float original[4096];
  CHECK_OK(tsr_array_read(dst, original, (size_t)(rows * cols) * sizeof(float)));
  for (int64_t i = 0; i < rows * cols; i++)
    CHECK((double)original[i] == (double)i); /* dst was held: it keeps its values */
  tsr_array_release(dst), tsr_array_release(update), tsr_array_release(out);
}

static void test_values_and_broadcast(void) {
  /* exact slice shapes */
  check_update_2d(5, 4, (int64_t[]){1, 0}, (int64_t[]){3, 4}, (int64_t[]){1, 1}, (int64_t[]){2, 4},
                  2);
  check_update_2d(6, 7, (int64_t[]){-1, 6}, (int64_t[]){0, -100}, (int64_t[]){-2, -3},
                  (int64_t[]){3, 3}, 2);
  check_update_2d(6, 7, (int64_t[]){0, 1}, (int64_t[]){100, 7}, (int64_t[]){4, 5},
                  (int64_t[]){2, 2}, 2);
  /* broadcast: a scalar, a row, a column */
  check_update_2d(5, 4, (int64_t[]){1, -1}, (int64_t[]){5, -5}, (int64_t[]){2, -1}, (int64_t[]){0},
                  0);
  check_update_2d(5, 4, (int64_t[]){4, 1}, (int64_t[]){0, 4}, (int64_t[]){-1, 1}, (int64_t[]){3},
                  1);
  check_update_2d(5, 4, (int64_t[]){0, -1}, (int64_t[]){5, -5}, (int64_t[]){2, -1},
                  (int64_t[]){3, 1}, 2);
  check_update_2d(5, 4, (int64_t[]){0, 0}, (int64_t[]){5, 4}, (int64_t[]){1, 1}, (int64_t[]){1, 1},
                  2);
  /* empty slices change nothing */
  check_update_2d(5, 4, (int64_t[]){2, 0}, (int64_t[]){2, 4}, (int64_t[]){1, 1}, (int64_t[]){0, 4},
                  2);
  check_update_2d(5, 4, (int64_t[]){2, 0}, (int64_t[]){2, 4}, (int64_t[]){1, 1}, (int64_t[]){1}, 1);
}

/* Fewer sliced axes than dst has; a transposed (strided) update. */
static void test_partial_axes_and_strided_update(void) {
  int64_t shape[3] = {3, 2, 4}, ushape[3] = {4, 2, 1};
  tsr_array *dst = iota_f32(shape, 3, 0.0f), *base = iota_f32(ushape, 3, 100.0f);
  tsr_array *update = NULL, *out = NULL;
  CHECK_OK(tsr_transpose(&update, base, (int[]){2, 1, 0}, 3, NULL)); /* [1, 2, 4] */
  CHECK_OK(tsr_slice_update(&out, dst, update, (int64_t[]){2}, (int64_t[]){3}, NULL, 1, NULL));
  float got[24];
  CHECK_OK(tsr_array_read(out, got, sizeof got));
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 2; j++)
      for (int k = 0; k < 4; k++) {
        double want = i < 2 ? (double)(i * 8 + j * 4 + k) : 100.0 + (double)(k * 2 + j);
        CHECK((double)got[i * 8 + j * 4 + k] == want);
      }
  tsr_array_release(dst), tsr_array_release(base), tsr_array_release(update);
  tsr_array_release(out);
}

/* The update is converted to dst's dtype as tsr_astype does; expected bits worked by hand. */
static void test_conversion(void) {
  tsr_array *dst = NULL, *update = NULL, *out = NULL;
  int64_t five[1] = {5}, start[1] = {0}, stop[1] = {5};
  /* float32 -> float16, round to nearest even: 1 + 2^-11 ties down to 1 (0x3c00), 1 + 3 * 2^-11
     ties up to 1 + 2^-9 (0x3c02). */
  float values[5] = {0.5f, -2.0f, 65504.0f, 1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f};
  uint16_t zeros16[5] = {0}, want16[5] = {0x3800, 0xc000, 0x7bff, 0x3c00, 0x3c02}, got16[5];
  CHECK_OK(tsr_array_from_data(&dst, zeros16, TSR_FLOAT16, five, 1));
  CHECK_OK(tsr_array_from_data(&update, values, TSR_FLOAT32, five, 1));
  CHECK_OK(tsr_slice_update(&out, dst, update, start, stop, NULL, 1, NULL));
  CHECK(tsr_array_dtype(out) == TSR_FLOAT16);
  CHECK_OK(tsr_array_read(out, got16, sizeof got16));
  for (int i = 0; i < 5; i++)
    CHECK_EQ_INT(got16[i], want16[i]);
  tsr_array_release(dst), tsr_array_release(out);
  /* float32 -> int32: truncation, NaN 0, saturation; written with step 2 into [9]. */
  float to_int[5] = {2.7f, -2.7f, NAN, 1e10f, -1e10f};
  int32_t zeros32[9] = {0}, got32[9];
  int32_t want32[9] = {2, 0, -2, 0, 0, 0, 2147483647, 0, -2147483647 - 1};
  tsr_array *update2 = NULL;
  CHECK_OK(tsr_array_from_data(&update2, to_int, TSR_FLOAT32, five, 1));
  CHECK_OK(tsr_array_from_data(&dst, zeros32, TSR_INT32, (int64_t[]){9}, 1));
  CHECK_OK(tsr_slice_update(&out, dst, update2, start, (int64_t[]){9}, (int64_t[]){2}, 1, NULL));
  CHECK_OK(tsr_array_read(out, got32, sizeof got32));
  for (int i = 0; i < 9; i++)
    CHECK_EQ_INT(got32[i], want32[i]);
  tsr_array_release(dst), tsr_array_release(out), tsr_array_release(update2);
  /* int32 -> uint8 wraps; float32 -> bool is != 0 (NaN is true). */
  int32_t ints[3] = {300, -1, 7};
  uint8_t zeros8[3] = {0}, got8[3], want8[3] = {44, 255, 7};
  tsr_array *ints_a = NULL;
  CHECK_OK(tsr_array_from_data(&ints_a, ints, TSR_INT32, (int64_t[]){3}, 1));
  CHECK_OK(tsr_array_from_data(&dst, zeros8, TSR_UINT8, (int64_t[]){3}, 1));
  CHECK_OK(tsr_slice_update(&out, dst, ints_a, start, (int64_t[]){3}, NULL, 1, NULL));
  CHECK_OK(tsr_array_read(out, got8, sizeof got8));
  for (int i = 0; i < 3; i++)
    CHECK_EQ_INT(got8[i], want8[i]);
  tsr_array_release(dst), tsr_array_release(out), tsr_array_release(ints_a);
  float truthy[3] = {0.5f, 0.0f, NAN};
  uint8_t want_bool[3] = {1, 0, 1};
  tsr_array *truthy_a = NULL;
  CHECK_OK(tsr_array_from_data(&truthy_a, truthy, TSR_FLOAT32, (int64_t[]){3}, 1));
  CHECK_OK(tsr_array_from_data(&dst, zeros8, TSR_BOOL, (int64_t[]){3}, 1));
  CHECK_OK(tsr_slice_update(&out, dst, truthy_a, (int64_t[]){-1}, (int64_t[]){-4}, (int64_t[]){-1},
                            1, NULL));
  CHECK_OK(tsr_array_read(out, got8, sizeof got8));
  for (int i = 0; i < 3; i++)
    CHECK_EQ_INT(got8[i], want_bool[2 - i]); /* reversed slice */
  tsr_array_release(dst), tsr_array_release(out), tsr_array_release(truthy_a);
  tsr_array_release(update);
}

static void *data_of(tsr_array *a) {
  void *ptr = NULL;
  CHECK_OK(tsr_array_data(a, &ptr));
  return ptr;
}

/* Ledger bytes in use now (active + cached + pending + fixed, as peak counts them). */
static uint64_t ledger_total(void) {
  tsr_backing_snapshot snap;
  CHECK_OK(tsr_calibration_snapshot(cpu, &snap));
  return snap.active + snap.cached + snap.pending + snap.fixed;
}

enum { CACHE_ROWS = 1024, CACHE_COLS = 64 };
static const uint64_t cache_bytes = (uint64_t)CACHE_ROWS * CACHE_COLS * sizeof(float);

/* Row r of the result holds `row_value` + column where rows < `written` were appended,
   the original iota elsewhere. */
static void check_cache(tsr_array *cache, int64_t written) {
  static float got[CACHE_ROWS * CACHE_COLS];
  CHECK_OK(tsr_array_read(cache, got, sizeof got));
  for (int64_t r = 0; r < CACHE_ROWS; r++)
    for (int64_t c = 0; c < CACHE_COLS; c++) {
      double want =
          r < written ? -1000.0 * (double)(r + 1) - (double)c : (double)(r * CACHE_COLS + c);
      if ((double)got[r * CACHE_COLS + c] != want)
        CHECK_FAIL_("cache[%lld, %lld] = %g, want %g", (long long)r, (long long)c,
                    (double)got[r * CACHE_COLS + c], want);
    }
}

static tsr_array *appended_row(int64_t r) {
  float row[CACHE_COLS];
  for (int c = 0; c < CACHE_COLS; c++)
    row[c] = -1000.0f * (float)(r + 1) - (float)c;
  tsr_array *a = NULL;
  CHECK_OK(tsr_array_from_data(&a, row, TSR_FLOAT32, (int64_t[]){1, CACHE_COLS}, 2));
  return a;
}

/* The KV-cache append: the caller releases the old cache, so each append reuses its buffer and
   costs only the row. */
static void test_donation(void) {
  int64_t shape[2] = {CACHE_ROWS, CACHE_COLS};
  tsr_array *cache = iota_f32(shape, 2, 0.0f);
  void *storage = data_of(cache);
  for (int64_t r = 0; r < 8; r++) {
    tsr_array *row = appended_row(r), *next = NULL;
    CHECK_OK(tsr_memory_clear_cache(cpu));
    tsr_memory_reset_peak(cpu);
    uint64_t before = ledger_total();
    CHECK_OK(tsr_slice_update(&next, cache, row, (int64_t[]){r, 0}, (int64_t[]){r + 1, CACHE_COLS},
                              NULL, 2, NULL));
    tsr_array_release(cache); /* the append owns the only reference now */
    CHECK_OK(tsr_eval(&next, 1));
    uint64_t peak = tsr_memory_peak(cpu);
    if (peak >= before + cache_bytes)
      CHECK_FAIL_("append %lld: peak %" PRIu64 " rose by %" PRIu64 " (cache %" PRIu64 ")",
                  (long long)r, peak, peak - before, cache_bytes);
    CHECK(data_of(next) == storage);
    tsr_array_release(row);
    cache = next;
  }
  check_cache(cache, 8);
  /* A lazy dst released before evaluation is donated too. */
  tsr_array *doubled = NULL, *row = appended_row(0), *out = NULL;
  CHECK_OK(tsr_add(&doubled, cache, cache, NULL));
  CHECK_OK(tsr_slice_update(&out, doubled, row, (int64_t[]){0, 0}, (int64_t[]){1, CACHE_COLS}, NULL,
                            2, NULL));
  tsr_array_release(doubled);
  CHECK_OK(tsr_memory_clear_cache(cpu));
  tsr_memory_reset_peak(cpu);
  uint64_t before = ledger_total();
  CHECK_OK(tsr_eval(&out, 1));
  CHECK(tsr_memory_peak(cpu) < before + 2 * cache_bytes); /* the sum's buffer, reused */
  float got[2];
  tsr_array *corner = NULL;
  CHECK_OK(tsr_slice(&corner, out, (int64_t[]){0, 0}, (int64_t[]){2, 1}, NULL, 2, NULL));
  CHECK_OK(tsr_array_read(corner, got, sizeof got));
  CHECK((double)got[0] == -1000.0 && (double)got[1] == 2.0 * -2000.0);
  tsr_array_release(corner), tsr_array_release(out), tsr_array_release(row);
  tsr_array_release(cache);
}

/* Each case where something else can still read dst's bytes must copy: the result is right, the
   copy shows on the ledger, and dst (or its view, or the caller's memory) keeps its values. */
static void test_no_donation(void) {
  int64_t shape[2] = {CACHE_ROWS, CACHE_COLS};
  tsr_array *row = appended_row(0);
  int64_t start[2] = {0, 0}, stop[2] = {1, CACHE_COLS};
  /* dst still held by the caller */
  tsr_array *held = iota_f32(shape, 2, 0.0f), *out = NULL;
  CHECK_OK(tsr_memory_clear_cache(cpu));
  tsr_memory_reset_peak(cpu);
  uint64_t before = ledger_total();
  CHECK_OK(tsr_slice_update(&out, held, row, start, stop, NULL, 2, NULL));
  CHECK_OK(tsr_eval(&out, 1));
  CHECK(tsr_memory_peak(cpu) >= before + cache_bytes);
  CHECK(data_of(out) != data_of(held));
  check_cache(out, 1);
  check_cache(held, 0);
  tsr_array_release(out);
  /* dst released, but a view of it holds the buffer */
  tsr_array *view = NULL;
  CHECK_OK(tsr_reshape(&view, held, (int64_t[]){-1}, 1, NULL));
  CHECK_OK(tsr_eval(&view, 1));
  CHECK_OK(tsr_slice_update(&out, held, row, start, stop, NULL, 2, NULL));
  tsr_array_release(held);
  CHECK_OK(tsr_eval(&out, 1));
  CHECK(data_of(out) != data_of(view));
  check_cache(out, 1);
  static float flat[CACHE_ROWS * CACHE_COLS];
  CHECK_OK(tsr_array_read(view, flat, sizeof flat));
  for (int64_t i = 0; i < CACHE_ROWS * CACHE_COLS; i++)
    CHECK((double)flat[i] == (double)i);
  tsr_array_release(out);
  /* dst released, but strided (a transposed view: not packed) */
  tsr_array *tt = NULL;
  tsr_array *square = iota_f32((int64_t[]){CACHE_COLS, CACHE_COLS}, 2, 0.0f);
  CHECK_OK(tsr_transpose(&tt, square, NULL, 0, NULL));
  tsr_array_release(square);
  tsr_array *small = NULL;
  CHECK_OK(tsr_array_from_data(&small, (float[]){-1.0f}, TSR_FLOAT32, NULL, 0));
  CHECK_OK(tsr_slice_update(&out, tt, small, (int64_t[]){0, 1}, (int64_t[]){1, 2}, NULL, 2, NULL));
  tsr_array_release(tt);
  static float sq[CACHE_COLS * CACHE_COLS];
  CHECK_OK(tsr_array_read(out, sq, sizeof sq));
  for (int i = 0; i < CACHE_COLS; i++)
    for (int j = 0; j < CACHE_COLS; j++)
      CHECK((double)sq[i * CACHE_COLS + j] ==
            (i == 0 && j == 1 ? -1.0 : (double)(j * CACHE_COLS + i)));
  tsr_array_release(out), tsr_array_release(small);
  tsr_array_release(view), tsr_array_release(row);
}

/* dst wraps caller memory: never written, even when released. */
static void test_no_donation_external(void) {
  int64_t shape[2] = {CACHE_ROWS, CACHE_COLS};
  int64_t start[2] = {0, 0}, stop[2] = {1, CACHE_COLS};
  tsr_array *row = appended_row(0), *out = NULL;
  static float caller[CACHE_ROWS * CACHE_COLS];
  for (int64_t i = 0; i < CACHE_ROWS * CACHE_COLS; i++)
    caller[i] = (float)i;
  tsr_array *wrapped = NULL;
  CHECK_OK(tsr_array_from_external(&wrapped, caller, TSR_FLOAT32, shape, 2, cpu, NULL, NULL));
  CHECK_OK(tsr_slice_update(&out, wrapped, row, start, stop, NULL, 2, NULL));
  tsr_array_release(wrapped);
  check_cache(out, 1);
  for (int64_t i = 0; i < CACHE_ROWS * CACHE_COLS; i++)
    CHECK((double)caller[i] == (double)i);
  tsr_array_release(out), tsr_array_release(row);
}

static void test_zero_size_dst(void) {
  tsr_array *dst = NULL, *update = NULL, *out = NULL;
  CHECK_OK(tsr_array_from_data(&dst, NULL, TSR_FLOAT32, (int64_t[]){0, 3}, 2));
  CHECK_OK(tsr_array_from_data(&update, (float[]){1.0f}, TSR_FLOAT32, (int64_t[]){1}, 1));
  CHECK_OK(
      tsr_slice_update(&out, dst, update, (int64_t[]){0}, (int64_t[]){INT64_MAX}, NULL, 1, NULL));
  CHECK_EQ_INT(tsr_array_dim(out, 0), 0);
  CHECK_OK(tsr_array_read(out, NULL, 0));
  tsr_array_release(dst), tsr_array_release(update), tsr_array_release(out);
}

static void test_bad_inputs(void) {
  tsr_array *dst = iota_f32((int64_t[]){4, 3}, 2, 0.0f),
            *update = iota_f32((int64_t[]){2, 2}, 2, 0.0f);
  tsr_array *sentinel = (tsr_array *)0x1, *out = sentinel;
  int64_t start[2] = {0, 0}, stop[2] = {2, 3}, zero[2] = {1, 0};
  CHECK_STATUS(tsr_slice_update(&out, dst, update, start, stop, NULL, 2, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("update [2, 2] does not broadcast to the slice [2, 3] of dst [4, 3]");
  tsr_array *deep = iota_f32((int64_t[]){1, 2, 3}, 3, 0.0f);
  CHECK_STATUS(tsr_slice_update(&out, dst, deep, start, stop, NULL, 2, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("update [1, 2, 3]");
  CHECK_STATUS(tsr_slice_update(&out, dst, update, start, stop, zero, 2, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("step 0 on axis 1");
  CHECK_STATUS(tsr_slice_update(&out, dst, update, start, stop, NULL, 3, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("naxes 3 outside [0, 2]");
  CHECK_STATUS(tsr_slice_update(&out, dst, update, NULL, stop, NULL, 1, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("start is NULL");
  CHECK_STATUS(tsr_slice_update(&out, NULL, update, start, stop, NULL, 2, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("dst is NULL");
  CHECK_STATUS(tsr_slice_update(&out, dst, NULL, start, stop, NULL, 2, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("update is NULL");
  CHECK_STATUS(tsr_slice_update(NULL, dst, update, start, stop, NULL, 2, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("out is NULL");
  CHECK(out == sentinel);
  tsr_array_release(dst), tsr_array_release(update), tsr_array_release(deep);
}

int main(void) {
  test_values_and_broadcast();
  test_partial_axes_and_strided_update();
  test_conversion();
  test_donation();
  test_no_donation();
  test_no_donation_external();
  test_zero_size_dst();
  test_bad_inputs();
  tsr_memory_clear_cache(cpu);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
