/* tests/ops/test_creation.c — zeros, ones, full, arange and astype against the test's own
 * conversion rules: every dtype pair of astype on values chosen at the edges (ties, saturation
 * bounds, NaN, infinities, integers past float32's 24 bits), rounding checked bit for bit by the
 * independent oracle of ref_convert.h; layouts (0-d, zero-size, transposed and reversed views);
 * every bad input. Not the conversions inside other ops (test_elementwise.c). */
#include <math.h>

#include "check.h"
#include "ref_convert.h"

static const tsr_device cpu = {TSR_CPU, 0};
static const tsr_dtype all_dtypes[] = {TSR_BOOL,  TSR_UINT8,   TSR_UINT32,   TSR_INT8,   TSR_INT32,
                                       TSR_INT64, TSR_FLOAT16, TSR_BFLOAT16, TSR_FLOAT32};
#define NDTYPES 9

static void hex(const void *p, size_t n, char *out) {
  for (size_t i = 0; i < n; i++)
    snprintf(out + 2 * i, 3, "%02x", ((const unsigned char *)p)[n - 1 - i]);
}

/* Element `i` of got equals expected bit for bit (any NaN matches any NaN). */
static void check_element(const void *got, const void *expected, tsr_dtype t, const char *what,
                          int64_t i) {
  size_t size = tsr_dtype_size(t);
  if (ref_is_float(t) && ref_is_nan_pattern(expected, t) && ref_is_nan_pattern(got, t)) return;
  if (memcmp(got, expected, size) != 0) {
    char g[20], e[20];
    hex(got, size, g), hex(expected, size, e);
    CHECK_FAIL_("%s -> %s, element %lld: got 0x%s, want 0x%s", what, tsr_dtype_name(t),
                (long long)i, g, e);
  }
}

static void read_all(tsr_array *a, void *dst, size_t bytes) {
  CHECK_OK(tsr_array_read(a, dst, bytes));
}

/* ---- astype --------------------------------------------------------------------------------- */

static const double float_values[] = {0.0,
                                      -0.0,
                                      1.0,
                                      -1.0,
                                      0.5,
                                      -0.5,
                                      1.5,
                                      -1.5,
                                      2.5,
                                      -2.7,
                                      127.9,
                                      128.0,
                                      -128.9,
                                      -129.0,
                                      255.9,
                                      256.0,
                                      300.0,
                                      1000.5,
                                      65504.0,
                                      65519.0,
                                      65520.0,
                                      2147483520.0,
                                      2147483648.0,
                                      -2147483648.0,
                                      -2147483904.0,
                                      4294967040.0,
                                      4294967296.0,
                                      1e10,
                                      -1e10,
                                      9223371487098961920.0,
                                      9223372036854775808.0,
                                      -9223372036854775808.0,
                                      1e30,
                                      -1e30,
                                      3.3e38,
                                      1e-3,
                                      1e-30,
                                      1e-40,
                                      INFINITY,
                                      -INFINITY,
                                      NAN,
                                      -NAN,
                                      1.00048828125 /* 1 + 2^-11: a float16 tie */,
                                      1.00146484375 /* 1 + 3 * 2^-11: a tie that rounds up */,
                                      1.00390625 /* a bfloat16 tie */};
#define NFLOAT (sizeof float_values / sizeof float_values[0])

static const int64_t int_values[] = {
    0,
    1,
    -1,
    2,
    127,
    128,
    -128,
    -129,
    255,
    256,
    -256,
    1000,
    2049 /* float16 tie to 2048 */,
    2051 /* tie to 2052 */,
    65504,
    65519,
    65520,
    65536,
    16777217 /* float32 tie */,
    16842753 /* 2^24 + 2^16 + 1: through float32 it would round wrongly to bfloat16 */,
    2147483647,
    -2147483647 - 1,
    4294967295,
    4294967296,
    9007199254740993,
    -9007199254740993,
    INT64_MAX,
    INT64_MIN,
    INT64_C(0x7fffff8000000001) /* just past a float32 midpoint */};
#define NINT (sizeof int_values / sizeof int_values[0])

/* The source elements of dtype s, as bytes, and their exact values. */
static int64_t make_source(tsr_dtype s, unsigned char *bytes, long double *real, int64_t *whole) {
  size_t size = tsr_dtype_size(s);
  if (ref_is_float(s)) {
    for (size_t i = 0; i < NFLOAT; i++) {
      float f = (float)float_values[i];
      uint32_t bits;
      memcpy(&bits, &f, 4);
      if (s == TSR_FLOAT16) bits = tsr_f32_to_f16(f);
      if (s == TSR_BFLOAT16) bits = tsr_f32_to_bf16(f);
      ref_store_float_bits(bits, s, bytes + i * size);
      real[i] = ref_pattern_value(s, bits);
    }
    return (int64_t)NFLOAT;
  }
  for (size_t i = 0; i < NINT; i++) {
    whole[i] = ref_wrap(int_values[i], s);
    ref_store_int(whole[i], s, bytes + i * size);
  }
  return (int64_t)NINT;
}

static void test_astype_pairs(void) {
  unsigned char source[64 * 8], got[64 * 8], expected[8];
  long double real[64];
  int64_t whole[64];
  for (int si = 0; si < NDTYPES; si++) {
    tsr_dtype s = all_dtypes[si];
    int64_t n = make_source(s, source, real, whole);
    tsr_array *a = NULL;
    CHECK_OK(tsr_array_from_data(&a, source, s, &n, 1));
    for (int di = 0; di < NDTYPES; di++) {
      tsr_dtype d = all_dtypes[di];
      tsr_array *out = NULL;
      CHECK_OK(tsr_astype(&out, a, d, NULL));
      CHECK_EQ_INT(tsr_array_dtype(out), d);
      read_all(out, got, (size_t)n * tsr_dtype_size(d));
      for (int64_t i = 0; i < n; i++) {
        if (ref_is_float(s))
          ref_from_real(real[i], d, expected);
        else
          ref_from_int(whole[i], d, expected);
        check_element(got + i * (int64_t)tsr_dtype_size(d), expected, d, tsr_dtype_name(s), i);
      }
      tsr_array_release(out);
    }
    tsr_array_release(a);
  }
}

/* Transposed and reversed views, 0-d and zero-size arrays, and a row longer than any chunk. */
static void test_astype_layouts(void) {
  int32_t data[12];
  for (int i = 0; i < 12; i++)
    data[i] = i * 1000 - 5000;
  int64_t shape[2] = {3, 4};
  tsr_array *a = NULL, *t = NULL, *r = NULL, *ft = NULL, *fr = NULL;
  CHECK_OK(tsr_array_from_data(&a, data, TSR_INT32, shape, 2));
  CHECK_OK(tsr_transpose(&t, a, NULL, 0, NULL));
  CHECK_OK(tsr_astype(&ft, t, TSR_FLOAT16, NULL));
  uint16_t got16[12];
  read_all(ft, got16, sizeof got16);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 3; j++)
      CHECK_EQ_INT(got16[i * 3 + j], ref_round((long double)data[j * 4 + i], TSR_FLOAT16));
  int64_t start[2] = {-1, -1}, stop[2] = {INT64_MIN, INT64_MIN}, step[2] = {-1, -2};
  CHECK_OK(tsr_slice(&r, a, start, stop, step, 2, NULL)); /* a[::-1, ::-2]: [3, 2] */
  CHECK_OK(tsr_astype(&fr, r, TSR_INT8, NULL));
  int8_t got8[6];
  read_all(fr, got8, sizeof got8);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 2; j++)
      CHECK_EQ_INT(got8[i * 2 + j], ref_wrap(data[(2 - i) * 4 + 3 - 2 * j], TSR_INT8));
  tsr_array_release(a), tsr_array_release(t), tsr_array_release(r);
  tsr_array_release(ft), tsr_array_release(fr);

  float scalar = -7.9f;
  tsr_array *s = NULL, *si = NULL, *z = NULL, *zi = NULL;
  CHECK_OK(tsr_array_from_data(&s, &scalar, TSR_FLOAT32, NULL, 0));
  CHECK_OK(tsr_astype(&si, s, TSR_INT32, NULL));
  int32_t got_scalar = 0;
  read_all(si, &got_scalar, sizeof got_scalar);
  CHECK_EQ_INT(got_scalar, -7);
  CHECK_EQ_INT(tsr_array_ndim(si), 0);
  int64_t empty[2] = {0, 3};
  CHECK_OK(tsr_array_from_data(&z, NULL, TSR_FLOAT32, empty, 2));
  CHECK_OK(tsr_astype(&zi, z, TSR_UINT8, NULL));
  CHECK_OK(tsr_eval(&zi, 1));
  CHECK_EQ_INT(tsr_array_size(zi), 0);
  CHECK_EQ_INT(tsr_array_dim(zi, 1), 3);
  tsr_array_release(s), tsr_array_release(si), tsr_array_release(z), tsr_array_release(zi);

  enum { LONG = 1000 };
  float values[LONG];
  uint16_t halves[LONG];
  for (int i = 0; i < LONG; i++)
    values[i] = (float)i * 0.37f - 100.0f;
  int64_t n = LONG;
  tsr_array *l = NULL, *lh = NULL;
  CHECK_OK(tsr_array_from_data(&l, values, TSR_FLOAT32, &n, 1));
  CHECK_OK(tsr_astype(&lh, l, TSR_BFLOAT16, NULL));
  read_all(lh, halves, sizeof halves);
  for (int i = 0; i < LONG; i++)
    CHECK_EQ_INT(halves[i], ref_round((long double)values[i], TSR_BFLOAT16));
  tsr_array_release(l), tsr_array_release(lh);
}

/* ---- zeros, ones, full ------------------------------------------------------------------------
 */

static void check_filled(tsr_array *a, tsr_dtype t, long double value, int64_t count) {
  unsigned char got[64 * 8], expected[8];
  CHECK(count <= 64);
  CHECK_EQ_INT(tsr_array_dtype(a), t);
  CHECK_EQ_INT(tsr_array_size(a), count);
  read_all(a, got, (size_t)count * tsr_dtype_size(t));
  ref_from_real(value, t, expected);
  for (int64_t i = 0; i < count; i++)
    check_element(got + i * (int64_t)tsr_dtype_size(t), expected, t, "full", i);
}

static void test_fill(void) {
  static const double values[] = {0.0,
                                  1.0,
                                  -2.5,
                                  1e10,
                                  -1e10,
                                  300.0,
                                  -1.0,
                                  NAN,
                                  INFINITY,
                                  1.0 + 0x1p-11 + 0x1p-40 /* rounds up in float16, not via f32 */,
                                  1.0 + 0x1p-8 + 0x1p-40,
                                  0x1p-30,
                                  1e300,
                                  -1e-300};
  int64_t shape[3] = {2, 3, 5}, empty[2] = {4, 0};
  for (int di = 0; di < NDTYPES; di++) {
    tsr_dtype t = all_dtypes[di];
    tsr_array *z = NULL, *o = NULL, *e = NULL, *s = NULL;
    CHECK_OK(tsr_zeros(&z, shape, 3, t, NULL));
    check_filled(z, t, 0.0L, 30);
    CHECK_OK(tsr_ones(&o, shape, 2, t, NULL));
    check_filled(o, t, 1.0L, 6);
    CHECK_OK(tsr_ones(&s, NULL, 0, t, NULL));
    check_filled(s, t, 1.0L, 1);
    CHECK_OK(tsr_zeros(&e, empty, 2, t, NULL));
    CHECK_OK(tsr_eval(&e, 1));
    CHECK_EQ_INT(tsr_array_size(e), 0);
    tsr_array_release(z), tsr_array_release(o), tsr_array_release(e), tsr_array_release(s);
    for (size_t k = 0; k < sizeof values / sizeof values[0]; k++) {
      tsr_array *f = NULL;
      CHECK_OK(tsr_full(&f, shape, 3, values[k], t, NULL));
      check_filled(f, t, (long double)values[k], 30);
      tsr_array_release(f);
    }
  }
}

/* ---- arange -----------------------------------------------------------------------------------
 */

static void check_arange(double start, double stop, double step, tsr_dtype t, int64_t count) {
  tsr_array *a = NULL;
  CHECK_OK(tsr_arange(&a, start, stop, step, t, NULL));
  CHECK_EQ_INT(tsr_array_ndim(a), 1);
  CHECK_EQ_INT(tsr_array_size(a), count);
  unsigned char got[4096 * 8], expected[8];
  CHECK(count <= 4096);
  read_all(a, got, (size_t)count * tsr_dtype_size(t));
  for (int64_t i = 0; i < count; i++) {
    ref_from_real((long double)(start + (double)i * step), t, expected);
    check_element(got + i * (int64_t)tsr_dtype_size(t), expected, t, "arange", i);
  }
  tsr_array_release(a);
}

static void test_arange(void) {
  check_arange(0, 10, 1, TSR_INT32, 10);
  check_arange(0, 1, 0.1, TSR_FLOAT32, 10);
  check_arange(10, 0, -3, TSR_INT64, 4); /* 10 7 4 1 */
  check_arange(5, 5, 1, TSR_FLOAT32, 0);
  check_arange(5, 0, 1, TSR_INT32, 0);
  check_arange(0, 5, -1, TSR_INT32, 0);
  check_arange(-2.5, 2.5, 1, TSR_INT8, 5); /* truncation: -2 -1 0 0 1 */
  check_arange(0, 5, 1, TSR_BOOL, 5);
  check_arange(250, 260, 1, TSR_UINT8, 10); /* saturates at 255 */
  check_arange(-3, 3, 0.5, TSR_UINT32, 12); /* negatives saturate at 0 */
  check_arange(0, 3000, 0.75, TSR_FLOAT16, 4000);
  check_arange(1e6, 1e6 + 100, 0.37, TSR_BFLOAT16, 271);
  check_arange(0.5, 1.5, 1, TSR_FLOAT32, 1);
  for (int di = 0; di < NDTYPES; di++)
    check_arange(-3, 7, 1.5, all_dtypes[di], 7);
}

/* ---- bad inputs -------------------------------------------------------------------------------
 */

static void test_bad_inputs(void) {
  int64_t shape[2] = {2, 3}, negative[2] = {2, -2}, nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  int64_t huge[2] = {INT64_MAX / 4, 3};
  tsr_array *sentinel = (tsr_array *)0x1, *out = sentinel;
  CHECK_STATUS(tsr_zeros(NULL, shape, 2, TSR_FLOAT32, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("zeros: out is NULL");
  CHECK_STATUS(tsr_zeros(&out, shape, 2, (tsr_dtype)42, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("zeros: dtype 42");
  CHECK_STATUS(tsr_ones(&out, shape, 2, (tsr_dtype)-1, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("ones: dtype -1");
  CHECK_STATUS(tsr_full(&out, shape, 2, 1.0, (tsr_dtype)9, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("full: dtype 9");
  CHECK_STATUS(tsr_zeros(&out, negative, 2, TSR_INT8, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("-2");
  CHECK_STATUS(tsr_ones(&out, nine, 9, TSR_INT8, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("ndim 9");
  CHECK_STATUS(tsr_full(&out, NULL, 2, 0.0, TSR_INT8, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("shape is NULL");
  CHECK_STATUS(tsr_full(&out, huge, 2, 0.0, TSR_INT64, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("overflows");
  CHECK_STATUS(tsr_ones(NULL, shape, 2, TSR_INT8, NULL), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_full(NULL, shape, 2, 0.0, TSR_INT8, NULL), TSR_ERR_INVALID);

  CHECK_STATUS(tsr_arange(NULL, 0, 1, 1, TSR_FLOAT32, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("arange: out is NULL");
  CHECK_STATUS(tsr_arange(&out, 0, 1, 0, TSR_FLOAT32, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("arange: step 0");
  CHECK_STATUS(tsr_arange(&out, NAN, 1, 1, TSR_FLOAT32, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("nan");
  CHECK_STATUS(tsr_arange(&out, 0, INFINITY, 1, TSR_FLOAT32, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("inf");
  CHECK_STATUS(tsr_arange(&out, 0, 1, NAN, TSR_FLOAT32, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("step nan");
  CHECK_STATUS(tsr_arange(&out, 0, 1e300, 1e-300, TSR_FLOAT32, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("overflows int64");
  CHECK_STATUS(tsr_arange(&out, -1e308, 1e308, 1, TSR_FLOAT32, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("inf elements");
  CHECK_STATUS(tsr_arange(&out, 0, 0x1p62, 1, TSR_FLOAT32, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("4611686018427387904"); /* fits int64, but not as a byte count */
  CHECK_STATUS(tsr_arange(&out, 0, 1, 1, (tsr_dtype)13, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("arange: dtype 13");

  float x = 1.0f;
  tsr_array *a = NULL;
  CHECK_OK(tsr_array_from_data(&a, &x, TSR_FLOAT32, NULL, 0));
  CHECK_STATUS(tsr_astype(NULL, a, TSR_INT8, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("astype: out is NULL");
  CHECK_STATUS(tsr_astype(&out, NULL, TSR_INT8, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("astype: a is NULL");
  CHECK_STATUS(tsr_astype(&out, a, (tsr_dtype)77, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("astype: dtype 77");
  CHECK(out == sentinel);
  tsr_array_release(a);
}

int main(void) {
  test_astype_pairs();
  test_astype_layouts();
  test_fill();
  test_arange();
  test_bad_inputs();
  CHECK_OK(tsr_memory_clear_cache(cpu));
  CHECK_NO_LEAKS();
  tsr_shutdown();
  puts("test_creation: ok");
  return 0;
}
