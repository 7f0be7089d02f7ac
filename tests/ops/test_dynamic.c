/* tests/ops/test_dynamic.c — the dynamic ops whose position scalar is read when they run
 * (tsr_rope_dynamic, tsr_slice_update_dynamic, tsr_sdpa_dynamic) against their static
 * counterparts, bit for bit: offsets, starts and lengths in range, clamped at both ends, negative,
 * as int32 and int64 scalars of shapes [], [1] and [1, 1]; NaN in a cache's unused tail kept out
 * of sdpa's output; slice_update_dynamic reusing a released dst's buffer (the KV-cache append);
 * every bad input rejected with its values named. The static ops' own numbers are test_nn.c's,
 * test_sdpa.c's and test_slice_update.c's. */
#include "nn_data.h"

static const tsr_device cpu = {TSR_CPU, 0};

/* A one-element int32 or int64 array holding `value`, of ndim 0, 1 or 2 (shape [], [1], [1, 1]). */
static tsr_array *scalar(int64_t value, tsr_dtype dtype, int ndim) {
  int64_t shape[2] = {1, 1};
  int32_t narrow = (int32_t)value;
  tsr_array *a = NULL;
  CHECK_OK(tsr_array_from_data(
      &a, dtype == TSR_INT32 ? (const void *)&narrow : (const void *)&value, dtype, shape, ndim));
  return a;
}

/* Evaluates both and requires the same dtype, shape and bytes. */
static void expect_same_bits(const char *what, long long value, tsr_array *got, tsr_array *want) {
  CHECK_EQ_INT(tsr_array_dtype(got), tsr_array_dtype(want));
  CHECK_EQ_INT(tsr_array_ndim(got), tsr_array_ndim(want));
  for (int d = 0; d < tsr_array_ndim(got); d++)
    CHECK_EQ_INT(tsr_array_dim(got, d), tsr_array_dim(want, d));
  size_t bytes = (size_t)tsr_array_size(got) * tsr_dtype_size(tsr_array_dtype(got));
  unsigned char *a = malloc(bytes + 1), *b = malloc(bytes + 1);
  CHECK(a && b);
  CHECK_OK(tsr_array_read(got, a, bytes));
  CHECK_OK(tsr_array_read(want, b, bytes));
  for (size_t i = 0; i < bytes; i++)
    if (a[i] != b[i])
      CHECK_FAIL_("%s (value %lld): byte %zu is 0x%02x, the static op's 0x%02x", what, value, i,
                  a[i], b[i]);
  free(a);
  free(b);
}

static tsr_array *random_array(tsr_dtype dtype, const int64_t *shape, int ndim, double scale) {
  int64_t n = nn_count(shape, ndim);
  double *v = malloc((size_t)(n + 1) * sizeof *v);
  CHECK(v);
  nn_random(v, n, dtype, scale);
  tsr_array *a = nn_make(v, dtype, shape, ndim);
  free(v);
  return a;
}

/* ---- rope ------------------------------------------------------------------------------------ */

static void rope_matches(tsr_array *x, int dims, bool traditional, int64_t offset,
                         tsr_dtype scalar_dtype, int scalar_ndim) {
  tsr_array *position = scalar(offset, scalar_dtype, scalar_ndim), *got = NULL, *want = NULL;
  CHECK_OK(tsr_rope_dynamic(&got, x, dims, traditional, 10000.0f, position, NULL));
  CHECK_OK(tsr_rope(&want, x, dims, traditional, 10000.0f, offset, NULL));
  expect_same_bits("rope_dynamic", (long long)offset, got, want);
  tsr_array *arrays[] = {position, got, want};
  nn_release_all(arrays, 3);
}

/* Row t of rope_dynamic at offset -5 is at position t - 5: rows 5.. are tsr_rope of x's rows 5..
   at offset 0. */
static void rope_negative_offset(tsr_array *x, int dims, bool traditional) {
  int64_t t = tsr_array_dim(x, 2), d = tsr_array_dim(x, 3);
  tsr_array *position = scalar(-5, TSR_INT64, 1), *got = NULL, *tail = NULL, *x_tail = NULL;
  tsr_array *want = NULL;
  CHECK_OK(tsr_rope_dynamic(&got, x, dims, traditional, 10000.0f, position, NULL));
  int64_t start[4] = {0, 0, 5, 0}, stop[4] = {INT64_MAX, INT64_MAX, t, d};
  CHECK_OK(tsr_slice(&tail, got, start, stop, NULL, 4, NULL));
  CHECK_OK(tsr_slice(&x_tail, x, start, stop, NULL, 4, NULL));
  CHECK_OK(tsr_rope(&want, x_tail, dims, traditional, 10000.0f, 0, NULL));
  expect_same_bits("rope_dynamic rows 5.. at offset -5", -5, tail, want);
  tsr_array *arrays[] = {position, got, tail, x_tail, want};
  nn_release_all(arrays, 5);
}

static void test_rope_dynamic(void) {
  const tsr_dtype dtypes[3] = {TSR_FLOAT32, TSR_FLOAT16, TSR_BFLOAT16};
  for (int k = 0; k < 3; k++)
    for (int traditional = 0; traditional < 2; traditional++) {
      tsr_array *x = random_array(dtypes[k], (int64_t[]){2, 3, 9, 16}, 4, 1.0);
      rope_matches(x, 16, traditional, 0, TSR_INT32, 0);
      rope_matches(x, 8, traditional, 7, TSR_INT64, 1);
      rope_matches(x, 16, traditional, 4093, TSR_INT32, 2);
      rope_matches(x, 12, traditional, 100000, TSR_INT64, 2);
      rope_negative_offset(x, 16, traditional);
      tsr_array_release(x);
    }
  /* a transposed (strided) x and a decode row */
  tsr_array *base = random_array(TSR_FLOAT32, (int64_t[]){1, 5, 3, 32}, 4, 1.0), *x = NULL;
  CHECK_OK(tsr_transpose(&x, base, (int[]){0, 2, 1, 3}, 4, NULL));
  rope_matches(x, 32, false, 11, TSR_INT32, 1);
  tsr_array *row = random_array(TSR_BFLOAT16, (int64_t[]){1, 4, 1, 64}, 4, 1.0);
  rope_matches(row, 64, false, 2047, TSR_INT64, 0);
  tsr_array *arrays[] = {base, x, row};
  nn_release_all(arrays, 3);
}

/* ---- slice_update ---------------------------------------------------------------------------- */

/* slice_update_dynamic of update into dst at `start` on `axis` against tsr_slice_update of the
   clamped start; dst is held, so it is copied and keeps its values. */
static void slice_update_matches(tsr_array *dst, tsr_array *update, int axis, int64_t start,
                                 tsr_dtype scalar_dtype, int scalar_ndim) {
  int ndim = tsr_array_ndim(dst), resolved = axis < 0 ? axis + ndim : axis;
  int64_t n = tsr_array_dim(update, resolved), last = tsr_array_dim(dst, resolved) - n;
  int64_t clamped = start < 0 ? 0 : start > last ? last : start;
  int64_t starts[TSR_MAX_NDIM] = {0}, stops[TSR_MAX_NDIM];
  for (int d = 0; d < ndim; d++)
    stops[d] = tsr_array_dim(dst, d);
  starts[resolved] = clamped;
  stops[resolved] = clamped + n;
  tsr_array *position = scalar(start, scalar_dtype, scalar_ndim), *got = NULL, *want = NULL;
  CHECK_OK(tsr_slice_update_dynamic(&got, dst, update, position, axis, NULL));
  CHECK_OK(tsr_slice_update(&want, dst, update, starts, stops, NULL, ndim, NULL));
  expect_same_bits("slice_update_dynamic", (long long)start, got, want);
  tsr_array *arrays[] = {position, got, want};
  nn_release_all(arrays, 3);
}

static void test_slice_update_dynamic(void) {
  tsr_array *dst = random_array(TSR_FLOAT32, (int64_t[]){2, 10, 4}, 3, 1.0);
  tsr_array *update = random_array(TSR_FLOAT32, (int64_t[]){2, 3, 4}, 3, 1.0);
  const int64_t starts[7] = {-4, -1, 0, 3, 7, 8, 100}; /* 7 is the last start that fits */
  for (int i = 0; i < 7; i++) {
    slice_update_matches(dst, update, 1, starts[i], TSR_INT32, 0);
    slice_update_matches(dst, update, -2, starts[i], TSR_INT64, 2);
  }
  /* the first and the last axis; an update converted to dst's dtype; a whole-axis update */
  tsr_array *first = random_array(TSR_FLOAT32, (int64_t[]){1, 10, 4}, 3, 1.0);
  slice_update_matches(dst, first, 0, 1, TSR_INT64, 1);
  slice_update_matches(dst, first, 0, -3, TSR_INT64, 1);
  tsr_array *column = random_array(TSR_FLOAT16, (int64_t[]){2, 10, 2}, 3, 1.0);
  slice_update_matches(dst, column, -1, 1, TSR_INT32, 1);
  slice_update_matches(dst, column, 2, 9, TSR_INT32, 1);
  tsr_array *whole = random_array(TSR_BFLOAT16, (int64_t[]){2, 10, 4}, 3, 1.0);
  slice_update_matches(dst, whole, 1, 5, TSR_INT32, 2);
  tsr_array *empty = NULL;
  CHECK_OK(tsr_array_from_data(&empty, NULL, TSR_FLOAT32, (int64_t[]){2, 0, 4}, 3));
  slice_update_matches(dst, empty, 1, 4, TSR_INT64, 0);
  /* a transposed (strided) update */
  tsr_array *stored = random_array(TSR_FLOAT32, (int64_t[]){4, 3, 2}, 3, 1.0), *strided = NULL;
  CHECK_OK(tsr_transpose(&strided, stored, (int[]){2, 1, 0}, 3, NULL));
  slice_update_matches(dst, strided, 1, 2, TSR_INT32, 1);
  tsr_array *arrays[] = {dst, update, first, column, whole, empty, stored, strided};
  nn_release_all(arrays, 8);
}

static void *data_of(tsr_array *a) {
  void *ptr = NULL;
  CHECK_OK(tsr_array_data(a, &ptr));
  return ptr;
}

enum { CACHE_ROWS = 1024, CACHE_COLS = 64 };

/* The KV-cache append with the position as data: each step releases the old cache, so the
   append reuses its buffer (the same storage, a peak below a second cache) and writes the row. */
static void test_slice_update_dynamic_donates(void) {
  static float values[CACHE_ROWS * CACHE_COLS];
  for (int64_t i = 0; i < CACHE_ROWS * CACHE_COLS; i++)
    values[i] = (float)i;
  tsr_array *cache = NULL;
  CHECK_OK(
      tsr_array_from_data(&cache, values, TSR_FLOAT32, (int64_t[]){CACHE_ROWS, CACHE_COLS}, 2));
  void *storage = data_of(cache);
  const uint64_t cache_bytes = sizeof values;
  for (int64_t r = 0; r < 6; r++) {
    float row[CACHE_COLS];
    for (int c = 0; c < CACHE_COLS; c++)
      row[c] = -1000.0f * (float)(r + 1) - (float)c;
    tsr_array *update = NULL, *next = NULL, *position = scalar(r, TSR_INT32, 1);
    CHECK_OK(tsr_array_from_data(&update, row, TSR_FLOAT32, (int64_t[]){1, CACHE_COLS}, 2));
    CHECK_OK(tsr_memory_clear_cache(cpu));
    tsr_memory_reset_peak(cpu);
    tsr_backing_snapshot snap;
    CHECK_OK(tsr_calibration_snapshot(cpu, &snap));
    uint64_t before = snap.active + snap.cached + snap.pending + snap.fixed;
    CHECK_OK(tsr_slice_update_dynamic(&next, cache, update, position, 0, NULL));
    tsr_array_release(cache); /* the append holds the only reference now */
    CHECK_OK(tsr_eval(&next, 1));
    uint64_t peak = tsr_memory_peak(cpu);
    if (peak >= before + cache_bytes)
      CHECK_FAIL_("append %lld: peak %" PRIu64 " rose by %" PRIu64 " (cache %" PRIu64 ")",
                  (long long)r, peak, peak - before, cache_bytes);
    CHECK(data_of(next) == storage);
    tsr_array_release(update), tsr_array_release(position);
    cache = next;
  }
  static float got[CACHE_ROWS * CACHE_COLS];
  CHECK_OK(tsr_array_read(cache, got, sizeof got));
  for (int64_t r = 0; r < CACHE_ROWS; r++)
    for (int64_t c = 0; c < CACHE_COLS; c++) {
      double want = r < 6 ? -1000.0 * (double)(r + 1) - (double)c : (double)(r * CACHE_COLS + c);
      if ((double)got[r * CACHE_COLS + c] != want)
        CHECK_FAIL_("cache[%lld, %lld] = %g, want %g", (long long)r, (long long)c,
                    (double)got[r * CACHE_COLS + c], want);
    }
  tsr_array_release(cache);
}

/* ---- sdpa ------------------------------------------------------------------------------------ */

/* sdpa_dynamic over the length against causal tsr_sdpa over k and v sliced to the clamped one. */
static void sdpa_matches(tsr_array *q, tsr_array *k, tsr_array *v, int64_t length,
                         tsr_dtype scalar_dtype, int scalar_ndim) {
  int64_t tq = tsr_array_dim(q, 2), tk = tsr_array_dim(k, 2);
  int64_t keys = length < tq ? tq : length > tk ? tk : length;
  int64_t start[3] = {0, 0, 0}, stop[3] = {INT64_MAX, INT64_MAX, keys};
  tsr_array *position = scalar(length, scalar_dtype, scalar_ndim), *got = NULL, *want = NULL;
  tsr_array *k_head = NULL, *v_head = NULL;
  CHECK_OK(tsr_slice(&k_head, k, start, stop, NULL, 3, NULL));
  CHECK_OK(tsr_slice(&v_head, v, start, stop, NULL, 3, NULL));
  float scale = 1.0f / sqrtf((float)tsr_array_dim(q, 3));
  CHECK_OK(tsr_sdpa_dynamic(&got, q, k, v, scale, position, NULL));
  CHECK_OK(tsr_sdpa(&want, q, k_head, v_head, scale, true, NULL));
  expect_same_bits("sdpa_dynamic", (long long)length, got, want);
  tsr_array *arrays[] = {position, got, want, k_head, v_head};
  nn_release_all(arrays, 5);
}

static void test_sdpa_dynamic(void) {
  const tsr_dtype dtypes[2] = {TSR_FLOAT32, TSR_BFLOAT16};
  for (int k_dtype = 0; k_dtype < 2; k_dtype++)
    for (int64_t tq = 1; tq <= 3; tq += 2) {
      tsr_dtype dtype = dtypes[k_dtype];
      tsr_array *q = random_array(dtype, (int64_t[]){2, 4, tq, 16}, 4, 1.0);
      tsr_array *k = random_array(dtype, (int64_t[]){2, 2, 12, 16}, 4, 1.0);
      tsr_array *v = random_array(dtype, (int64_t[]){2, 2, 12, 16}, 4, 1.0);
      const int64_t lengths[7] = {-3, 0, tq, 5, 11, 12, 100}; /* clamped into [Tq, 12] */
      for (int i = 0; i < 7; i++)
        sdpa_matches(q, k, v, lengths[i], i % 2 ? TSR_INT32 : TSR_INT64, i % 3);
      tsr_array *arrays[] = {q, k, v};
      nn_release_all(arrays, 3);
    }
  /* a prefill across the CPU's 64-row query blocks, and a float16 q over float32 k and v */
  tsr_array *q = random_array(TSR_FLOAT32, (int64_t[]){1, 2, 70, 8}, 4, 1.0);
  tsr_array *k = random_array(TSR_FLOAT32, (int64_t[]){1, 1, 90, 8}, 4, 1.0);
  tsr_array *v = random_array(TSR_FLOAT32, (int64_t[]){1, 1, 90, 8}, 4, 1.0);
  sdpa_matches(q, k, v, 80, TSR_INT32, 1);
  tsr_array *q16 = random_array(TSR_FLOAT16, (int64_t[]){1, 2, 1, 8}, 4, 1.0);
  sdpa_matches(q16, k, v, 33, TSR_INT64, 2);
  tsr_array *arrays[] = {q, k, v, q16};
  nn_release_all(arrays, 4);
}

/* A cache whose rows from 7 on are NaN: sdpa_dynamic at length 7 never reads them. */
static void test_sdpa_dynamic_ignores_tail(void) {
  enum { TK = 16, D = 8, FILLED = 7 };
  double k_values[2 * TK * D], v_values[2 * TK * D];
  nn_random(k_values, 2 * TK * D, TSR_FLOAT32, 1.0);
  nn_random(v_values, 2 * TK * D, TSR_FLOAT32, 1.0);
  for (int h = 0; h < 2; h++)
    for (int t = FILLED; t < TK; t++)
      for (int e = 0; e < D; e++)
        k_values[(h * TK + t) * D + e] = v_values[(h * TK + t) * D + e] = NAN;
  int64_t kv_shape[4] = {1, 2, TK, D};
  tsr_array *k = nn_make(k_values, TSR_FLOAT32, kv_shape, 4);
  tsr_array *v = nn_make(v_values, TSR_FLOAT32, kv_shape, 4);
  tsr_array *q = random_array(TSR_FLOAT32, (int64_t[]){1, 4, 2, D}, 4, 1.0);
  sdpa_matches(q, k, v, FILLED, TSR_INT32, 0);
  tsr_array *length = scalar(FILLED, TSR_INT64, 1), *out = NULL;
  CHECK_OK(tsr_sdpa_dynamic(&out, q, k, v, 0.35f, length, NULL));
  double got[1 * 4 * 2 * D];
  nn_read(out, got);
  for (int i = 0; i < 4 * 2 * D; i++)
    if (!isfinite(got[i]))
      CHECK_FAIL_("sdpa_dynamic output %d is %g: the NaN tail was read", i, got[i]);
  tsr_array *arrays[] = {k, v, q, length, out};
  nn_release_all(arrays, 5);
}

/* ---- bad inputs ------------------------------------------------------------------------------ */

static void test_bad_inputs(void) {
  tsr_array *x = random_array(TSR_FLOAT32, (int64_t[]){1, 2, 3, 8}, 4, 1.0);
  tsr_array *good = scalar(1, TSR_INT32, 0), *sentinel = (tsr_array *)0x1, *out = sentinel;
  tsr_array *pair = NULL, *floating = NULL, *narrow = NULL;
  CHECK_OK(tsr_array_from_data(&pair, (int32_t[]){1, 2}, TSR_INT32, (int64_t[]){2}, 1));
  CHECK_OK(tsr_array_from_data(&floating, (float[]){1.0f}, TSR_FLOAT32, (int64_t[]){1}, 1));
  CHECK_OK(tsr_array_from_data(&narrow, (uint8_t[]){1}, TSR_UINT8, (int64_t[]){1, 1}, 2));
  /* rope_dynamic */
  CHECK_STATUS(tsr_rope_dynamic(&out, x, 8, false, 10000.0f, NULL, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("rope_dynamic: offset is NULL");
  CHECK_STATUS(tsr_rope_dynamic(&out, x, 8, false, 10000.0f, pair, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("offset [2] has 2 elements");
  CHECK_STATUS(tsr_rope_dynamic(&out, x, 8, false, 10000.0f, floating, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("offset [1] has dtype float32");
  CHECK_STATUS(tsr_rope_dynamic(&out, x, 8, false, 10000.0f, narrow, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("offset [1, 1] has dtype uint8");
  CHECK_STATUS(tsr_rope_dynamic(&out, x, 7, false, 10000.0f, good, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("dims 7");
  CHECK_STATUS(tsr_rope_dynamic(&out, x, 8, false, -1.0f, good, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("base -1");
  CHECK_STATUS(tsr_rope_dynamic(&out, good, 8, false, 10000.0f, good, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("x [] has dtype int32");
  CHECK_STATUS(tsr_rope_dynamic(&out, NULL, 8, false, 10000.0f, good, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("x is NULL");
  CHECK_STATUS(tsr_rope_dynamic(NULL, x, 8, false, 10000.0f, good, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("out is NULL");
  /* slice_update_dynamic */
  tsr_array *dst = random_array(TSR_FLOAT32, (int64_t[]){2, 10, 4}, 3, 1.0);
  tsr_array *rows = random_array(TSR_FLOAT32, (int64_t[]){2, 3, 4}, 3, 1.0);
  tsr_array *wide = random_array(TSR_FLOAT32, (int64_t[]){2, 3, 5}, 3, 1.0);
  tsr_array *flat = random_array(TSR_FLOAT32, (int64_t[]){3, 4}, 2, 1.0);
  tsr_array *tall = random_array(TSR_FLOAT32, (int64_t[]){2, 11, 4}, 3, 1.0);
  CHECK_STATUS(tsr_slice_update_dynamic(&out, dst, rows, pair, 1, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("slice_update_dynamic: start [2] has 2 elements");
  CHECK_STATUS(tsr_slice_update_dynamic(&out, dst, rows, floating, 1, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("start [1] has dtype float32");
  CHECK_STATUS(tsr_slice_update_dynamic(&out, dst, rows, NULL, 1, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("start is NULL");
  CHECK_STATUS(tsr_slice_update_dynamic(&out, dst, rows, good, 3, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("axis 3 out of range for a 3-d array [2, 10, 4]");
  CHECK_STATUS(tsr_slice_update_dynamic(&out, dst, rows, good, -4, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("axis -4 out of range");
  CHECK_STATUS(tsr_slice_update_dynamic(&out, dst, wide, good, 1, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("update [2, 3, 5] does not fit dst [2, 10, 4] on axis 1");
  CHECK_STATUS(tsr_slice_update_dynamic(&out, dst, flat, good, 1, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("update [3, 4] does not fit dst [2, 10, 4]");
  CHECK_STATUS(tsr_slice_update_dynamic(&out, dst, tall, good, 1, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("update [2, 11, 4] does not fit dst [2, 10, 4] on axis 1");
  CHECK_STATUS(tsr_slice_update_dynamic(&out, NULL, rows, good, 1, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("dst is NULL");
  CHECK_STATUS(tsr_slice_update_dynamic(&out, dst, NULL, good, 1, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("update is NULL");
  CHECK_STATUS(tsr_slice_update_dynamic(NULL, dst, rows, good, 1, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("out is NULL");
  /* sdpa_dynamic */
  tsr_array *q = random_array(TSR_FLOAT32, (int64_t[]){1, 2, 5, 8}, 4, 1.0);
  tsr_array *k = random_array(TSR_FLOAT32, (int64_t[]){1, 1, 4, 8}, 4, 1.0);
  tsr_array *k_ok = random_array(TSR_FLOAT32, (int64_t[]){1, 1, 6, 8}, 4, 1.0);
  tsr_array *v_odd = random_array(TSR_FLOAT32, (int64_t[]){1, 1, 6, 4}, 4, 1.0);
  CHECK_STATUS(tsr_sdpa_dynamic(&out, q, k, k, 0.5f, good, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("causal needs Tk >= Tq (Tq 5, Tk 4");
  CHECK_STATUS(tsr_sdpa_dynamic(&out, q, k_ok, v_odd, 0.5f, good, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("k and v shapes differ (q [1, 2, 5, 8], k [1, 1, 6, 8], v [1, 1, 6, 4])");
  CHECK_STATUS(tsr_sdpa_dynamic(&out, q, k_ok, k_ok, 0.5f, pair, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("sdpa_dynamic: length [2] has 2 elements");
  CHECK_STATUS(tsr_sdpa_dynamic(&out, q, k_ok, k_ok, 0.5f, floating, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("length [1] has dtype float32");
  CHECK_STATUS(tsr_sdpa_dynamic(&out, q, k_ok, k_ok, 0.5f, NULL, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("length is NULL");
  CHECK_STATUS(tsr_sdpa_dynamic(&out, q, k_ok, k_ok, NAN, good, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("sdpa_dynamic: scale nan must be finite");
  CHECK_STATUS(tsr_sdpa_dynamic(&out, q, k_ok, k_ok, INFINITY, good, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("scale inf");
  CHECK_STATUS(tsr_sdpa_dynamic(&out, q, k_ok, NULL, 0.5f, good, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("v is NULL");
  CHECK_STATUS(tsr_sdpa_dynamic(NULL, q, k_ok, k_ok, 0.5f, good, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("out is NULL");
  CHECK(out == sentinel);
  tsr_array *arrays[] = {x,    good, pair, floating, narrow, dst,  rows,
                         wide, flat, tall, q,        k,      k_ok, v_odd};
  nn_release_all(arrays, 14);
}

int main(void) {
  test_rope_dynamic();
  test_slice_update_dynamic();
  test_slice_update_dynamic_donates();
  test_sdpa_dynamic();
  test_sdpa_dynamic_ignores_tail();
  test_bad_inputs();
  tsr_memory_clear_cache(cpu);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
