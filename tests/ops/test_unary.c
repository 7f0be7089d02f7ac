/* tests/ops/test_unary.c — the unary elementwise ops against long double libm references, on
 * every dtype, edge values (0, -0, infinities, NaN, subnormals, |x| large enough to overflow a
 * naive sigmoid), a dense sweep, 0-d, zero-size and transposed inputs, and every bad input.
 *
 * Tolerances, with why:
 *  - negative and abs are exact (sign operations; integers wrap);
 *  - sqrt is exact: IEEE sqrtf is correctly rounded, and the reference (sqrtl to 64 bits, then
 *    rounded to 24) is too, since a first rounding to 64 >= 2*24+2 bits is innocuous for sqrt;
 *  - exp, log, rsqrt, sigmoid, silu and tanh within 1 ulp of the result dtype: the library
 *    evaluates them in float64 (libm error a few ulp of float64, about 2^-50 relative) and rounds
 *    once to float32, so it is off the exact value by at most 0.5 ulp32 + 2^-50 |y| < 1 ulp32;
 *    float16/bfloat16 results are that float32 rounded again: at most 0.5 ulp16 + 0.5 ulp32 +
 *    2^-50 |y| < 1 ulp16. ulp is taken at the exact value, with the dtype's subnormal spacing
 *    below its smallest normal (so a result that underflows to 0 or a subnormal is held to the
 *    same absolute 1-ulp bound).
 * Integer inputs of the float ops are converted to float32 first (correctly rounded), so the
 * reference starts from the same float32 operand. */
#include <math.h>

#include "check.h"
#include "ref_convert.h"

static const tsr_device cpu = {TSR_CPU, 0};
static const tsr_dtype all_dtypes[] = {TSR_BOOL,  TSR_UINT8,   TSR_UINT32,   TSR_INT8,   TSR_INT32,
                                       TSR_INT64, TSR_FLOAT16, TSR_BFLOAT16, TSR_FLOAT32};
#define NDTYPES 9

typedef enum { U_NEG, U_ABS, U_EXP, U_LOG, U_SQRT, U_RSQRT, U_SIGMOID, U_SILU, U_TANH, NOPS } op_id;
typedef tsr_status (*unary_fn)(tsr_array **, tsr_array *, tsr_stream *);
static const struct {
  const char *name;
  unary_fn fn;
  int ulps; /* 0: exact */
} ops[NOPS] = {
    {"negative", tsr_negative, 0}, {"abs", tsr_abs, 0},   {"exp", tsr_exp, 1},
    {"log", tsr_log, 1},           {"sqrt", tsr_sqrt, 0}, {"rsqrt", tsr_rsqrt, 1},
    {"sigmoid", tsr_sigmoid, 1},   {"silu", tsr_silu, 1}, {"tanh", tsr_tanh, 1},
};

static bool keeps_integers(op_id op) {
  return op == U_NEG || op == U_ABS;
}

static long double ref_sigmoid(long double x) {
  return 1.0L / (1.0L + expl(-x)); /* long double's range: no overflow for float inputs */
}

static long double ref_float_op(op_id op, long double x) {
  switch (op) {
    case U_NEG:
      return -x;
    case U_ABS:
      return fabsl(x);
    case U_EXP:
      return expl(x);
    case U_LOG:
      return logl(x);
    case U_SQRT:
      return sqrtl(x);
    case U_RSQRT:
      return 1.0L / sqrtl(x);
    case U_SIGMOID:
      return ref_sigmoid(x);
    case U_SILU:
      return isinf(x) && x < 0 ? 0.0L : x * ref_sigmoid(x); /* the limit at -inf */
    case U_TANH:
      return tanhl(x);
    default:
      return NAN;
  }
}

/* One element: x is the exact input value, got the result element of dtype out. */
static void check_unary_element(op_id op, tsr_dtype in, long double x, const void *got,
                                tsr_dtype out, int64_t index) {
  long double g = ref_value(got, out);
  if (!ref_is_float(out)) { /* negative/abs of integers and bool: wrap; bool keeps its value */
    int64_t v = (int64_t)x, want = op == U_NEG ? (int64_t)(0u - (uint64_t)v)
                                   : v < 0     ? (int64_t)(0u - (uint64_t)v)
                                               : v;
    unsigned char expected[8];
    ref_from_int(in == TSR_BOOL ? v : want, out, expected);
    if (memcmp(got, expected, tsr_dtype_size(out)) != 0)
      CHECK_FAIL_("%s(%s %.17Lg) element %lld: got %.17Lg, want %.17Lg", ops[op].name,
                  tsr_dtype_name(in), x, (long long)index, g, ref_value(expected, out));
    return;
  }
  long double operand = ref_is_float(in) ? x : ref_round_value(x, TSR_FLOAT32);
  long double want = ref_float_op(op, operand), rounded = ref_round_value(want, out);
  bool ok;
  if (isnan(want))
    ok = isnan(g);
  else if (ops[op].ulps == 0 || isinf(rounded))
    ok = g == rounded && signbit(g) == signbit(rounded);
  else
    ok = fabsl(g - want) <= (long double)ops[op].ulps * ref_ulp(want, out);
  if (!ok)
    CHECK_FAIL_("%s(%s %.17Lg) element %lld: got %.17Lg, want %.17Lg (%s, %d ulp)", ops[op].name,
                tsr_dtype_name(in), x, (long long)index, g, want, tsr_dtype_name(out),
                ops[op].ulps);
}

static unsigned char in_bytes[8 * 8192], out_bytes[8 * 8192];

/* Runs op on `a` (any layout) and checks every element against its row-major contents. */
static void check_op(op_id op, tsr_array *a) {
  tsr_dtype in = tsr_array_dtype(a);
  int64_t n = tsr_array_size(a);
  CHECK((size_t)n * 8 <= sizeof in_bytes);
  CHECK_OK(tsr_array_read(a, in_bytes, (size_t)n * tsr_dtype_size(in)));
  tsr_array *out = NULL;
  CHECK_OK(ops[op].fn(&out, a, NULL));
  tsr_dtype want_dtype = ref_is_float(in) || keeps_integers(op) ? in : TSR_FLOAT32;
  CHECK_EQ_INT(tsr_array_dtype(out), want_dtype);
  CHECK_EQ_INT(tsr_array_ndim(out), tsr_array_ndim(a));
  for (int i = 0; i < tsr_array_ndim(a); i++)
    CHECK_EQ_INT(tsr_array_dim(out, i), tsr_array_dim(a, i));
  CHECK_OK(tsr_array_read(out, out_bytes, (size_t)n * tsr_dtype_size(want_dtype)));
  for (int64_t i = 0; i < n; i++)
    check_unary_element(op, in, ref_value(in_bytes + i * (int64_t)tsr_dtype_size(in), in),
                        out_bytes + i * (int64_t)tsr_dtype_size(want_dtype), want_dtype, i);
  tsr_array_release(out);
}

static tsr_array *make(tsr_dtype t, const double *values, const int64_t *shape, int ndim) {
  int64_t count = 1;
  for (int i = 0; i < ndim; i++)
    count *= shape[i];
  CHECK((size_t)count * 8 <= sizeof in_bytes);
  for (int64_t i = 0; i < count; i++)
    ref_from_real((long double)values[i], t, in_bytes + i * (int64_t)tsr_dtype_size(t));
  tsr_array *a = NULL;
  CHECK_OK(tsr_array_from_data(&a, in_bytes, t, shape, ndim));
  return a;
}

static const double edges[] = {0,
                               -0.0,
                               1,
                               -1,
                               0.5,
                               -0.5,
                               2,
                               10,
                               -10,
                               20,
                               -20,
                               88,
                               89,
                               -87,
                               -88,
                               -100,
                               100,
                               -1000,
                               1000,
                               1e-3,
                               1e-30,
                               1e-40,
                               -1e-40,
                               3.14159265358979,
                               -2.718281828459045,
                               1e10,
                               -1e10,
                               65504,
                               16777217,
                               2147483647,
                               INFINITY,
                               -INFINITY,
                               NAN,
                               255,
                               -128,
                               127,
                               4e9,
                               0.1,
                               -0.1,
                               1e-8,
                               -1e-8,
                               17.5,
                               -17.5};
#define NEDGES ((int64_t)(sizeof edges / sizeof edges[0]))

enum { NSWEEP = 6000 };
static double sweep[NSWEEP];

static void test_values(void) {
  for (int i = 0; i < NSWEEP / 2; i++) /* dense around 0, where the curves bend */
    sweep[i] = -40.0 + 80.0 * (double)i / (NSWEEP / 2) + 1e-4 * sin((double)i);
  for (int i = NSWEEP / 2; i < NSWEEP; i++) /* magnitudes 1e-40 .. 1e38, both signs */
    sweep[i] =
        (i % 2 ? -1.0 : 1.0) * pow(10.0, -40.0 + 78.0 * (double)(i - NSWEEP / 2) / (NSWEEP / 2));
  int64_t n_edges = NEDGES, n_sweep = NSWEEP;
  for (int d = 0; d < NDTYPES; d++) {
    tsr_array *e = make(all_dtypes[d], edges, &n_edges, 1);
    tsr_array *s = make(all_dtypes[d], sweep, &n_sweep, 1);
    for (int op = 0; op < NOPS; op++) {
      check_op((op_id)op, e);
      check_op((op_id)op, s);
    }
    tsr_array_release(e), tsr_array_release(s);
  }
}

/* Stability: sigmoid and silu of large |x| are finite and right, never NaN. */
static void test_large_inputs(void) {
  static const float xs[] = {-1e30f,  -1000.0f, -110.0f,   110.0f,
                             1000.0f, 1e30f,    -INFINITY, INFINITY};
  static const float sigmoid_want[] = {0, 0, 0, 1, 1, 1, 0, 1};
  int64_t n = 8;
  tsr_array *x = NULL, *s = NULL, *u = NULL;
  CHECK_OK(tsr_array_from_data(&x, xs, TSR_FLOAT32, &n, 1));
  CHECK_OK(tsr_sigmoid(&s, x, NULL));
  CHECK_OK(tsr_silu(&u, x, NULL));
  float got_s[8], got_u[8];
  CHECK_OK(tsr_array_read(s, got_s, sizeof got_s));
  CHECK_OK(tsr_array_read(u, got_u, sizeof got_u));
  for (int i = 0; i < 8; i++) {
    CHECK(got_s[i] == sigmoid_want[i]);
    CHECK(!isnan(got_u[i]));
    CHECK(xs[i] < 0 ? got_u[i] <= 0.0f && got_u[i] > -1e-40f : got_u[i] == xs[i]);
  }
  tsr_array_release(x), tsr_array_release(s), tsr_array_release(u);
}

static void test_layouts(void) {
  int64_t s37[2] = {20, 300}, s04[2] = {0, 4};
  tsr_array *m = make(TSR_FLOAT32, sweep, s37, 2), *t = NULL,
            *mh = make(TSR_BFLOAT16, sweep, s37, 2);
  tsr_array *th = NULL, *z = make(TSR_FLOAT16, sweep, s04, 2),
            *scalar = make(TSR_INT8, edges + 7, NULL, 0);
  CHECK_OK(tsr_transpose(&t, m, NULL, 0, NULL)); /* strided rows through the float32 direct loop */
  CHECK_OK(tsr_transpose(&th, mh, NULL, 0, NULL));
  for (int op = 0; op < NOPS; op++) {
    check_op((op_id)op, t);
    check_op((op_id)op, th);
    check_op((op_id)op, z);
    check_op((op_id)op, scalar);
  }
  tsr_array_release(m), tsr_array_release(t), tsr_array_release(mh), tsr_array_release(th);
  tsr_array_release(z), tsr_array_release(scalar);
}

static void test_bad_inputs(void) {
  float one = 1.0f;
  tsr_array *x = NULL, *sentinel = (tsr_array *)0x1, *out = sentinel;
  CHECK_OK(tsr_array_from_data(&x, &one, TSR_FLOAT32, NULL, 0));
  char message[64];
  for (int op = 0; op < NOPS; op++) {
    snprintf(message, sizeof message, "%s: out is NULL", ops[op].name);
    CHECK_STATUS(ops[op].fn(NULL, x, NULL), TSR_ERR_INVALID);
    CHECK_MESSAGE(message);
    snprintf(message, sizeof message, "%s: x is NULL", ops[op].name);
    CHECK_STATUS(ops[op].fn(&out, NULL, NULL), TSR_ERR_INVALID);
    CHECK_MESSAGE(message);
  }
  CHECK(out == sentinel);
  tsr_array_release(x);
}

int main(void) {
  test_values();
  test_large_inputs();
  test_layouts();
  test_bad_inputs();
  CHECK_OK(tsr_memory_clear_cache(cpu));
  CHECK_NO_LEAKS();
  tsr_shutdown();
  puts("test_unary: ok");
  return 0;
}
