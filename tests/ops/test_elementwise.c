/* tests/ops/test_elementwise.c — the binary elementwise ops and where against the test's own
 * reference: promotion written from tessera/ops.h, operands converted with ref_convert.h, the op
 * computed in long double (or wrapping int64) and rounded once to the result dtype.
 *
 * Tolerances: add, subtract, multiply, divide, maximum and minimum must match bit for bit. The
 * library computes float16/bfloat16/float32 in float32 and rounds once; the reference computes in
 * long double (64 bits) and rounds once. For + - * / both are the correctly rounded result of the
 * converted operands, because a first rounding to q >= 2p + 2 bits (24 >= 2*11+2, 64 >= 2*24+2)
 * cannot change the final rounding to p bits (Figueroa, "When is double rounding innocuous?").
 * power is within 1 ulp of the result dtype: powf's error is below 1 ulp of float32 (glibc
 * documents 0.82), which is also below 1 ulp16 - 0.5 ulp16 when the result is then rounded to
 * float16/bfloat16. Comparisons, where and integers are exact.
 *
 * Covered: every op on every dtype pair over edge values (NaN, infinities, -0, saturating
 * conversions into integer operands), broadcasting both ways, 0-d and zero-size arrays,
 * transposed and reversed views, rows longer than the kernels' chunks, integer wrap, bool, NaN in
 * maximum/minimum and in comparisons, and every bad input. */
#include <math.h>

#include "check.h"
#include "ref_convert.h"

static const tsr_device cpu = {TSR_CPU, 0};
static const tsr_dtype all_dtypes[] = {TSR_BOOL,  TSR_UINT8,   TSR_UINT32,   TSR_INT8,   TSR_INT32,
                                       TSR_INT64, TSR_FLOAT16, TSR_BFLOAT16, TSR_FLOAT32};
#define NDTYPES 9

typedef enum {
  OP_ADD,
  OP_SUBTRACT,
  OP_MULTIPLY,
  OP_DIVIDE,
  OP_MAXIMUM,
  OP_MINIMUM,
  OP_POWER,
  OP_EQUAL,
  OP_NOT_EQUAL,
  OP_LESS,
  OP_LESS_EQUAL,
  OP_GREATER,
  OP_GREATER_EQUAL,
  NOPS
} op_id;

typedef tsr_status (*binary_fn)(tsr_array **, tsr_array *, tsr_array *, tsr_stream *);
static const struct {
  const char *name;
  binary_fn fn;
} ops[NOPS] = {
    {"add", tsr_add},
    {"subtract", tsr_subtract},
    {"multiply", tsr_multiply},
    {"divide", tsr_divide},
    {"maximum", tsr_maximum},
    {"minimum", tsr_minimum},
    {"power", tsr_power},
    {"equal", tsr_equal},
    {"not_equal", tsr_not_equal},
    {"less", tsr_less},
    {"less_equal", tsr_less_equal},
    {"greater", tsr_greater},
    {"greater_equal", tsr_greater_equal},
};

static bool is_comparison(op_id op) {
  return op >= OP_EQUAL;
}

/* ---- the reference --------------------------------------------------------------------------- */

/* tessera/ops.h: equal dtypes stay; float16 with bfloat16 is float32, uint32 with int8 or int32
   is int64, uint8 with int8 is int32; otherwise the first of the list that either input has. */
static tsr_dtype ref_promote(tsr_dtype a, tsr_dtype b) {
  static const tsr_dtype order[] = {TSR_FLOAT32, TSR_BFLOAT16, TSR_FLOAT16, TSR_INT64, TSR_UINT32,
                                    TSR_INT32,   TSR_INT8,     TSR_UINT8,   TSR_BOOL};
  if (a == b) return a;
#define PAIR(x, y) ((a == (x) && b == (y)) || (a == (y) && b == (x)))
  if (PAIR(TSR_FLOAT16, TSR_BFLOAT16)) return TSR_FLOAT32;
  if (PAIR(TSR_UINT32, TSR_INT8) || PAIR(TSR_UINT32, TSR_INT32)) return TSR_INT64;
  if (PAIR(TSR_UINT8, TSR_INT8)) return TSR_INT32;
#undef PAIR
  for (int i = 0; i < NDTYPES; i++)
    if (a == order[i] || b == order[i]) return order[i];
  return TSR_FLOAT32;
}

static tsr_dtype compute_dtype(op_id op, tsr_dtype a, tsr_dtype b) {
  tsr_dtype c = ref_promote(a, b);
  return op == OP_DIVIDE && !ref_is_float(c) ? TSR_FLOAT32 : c;
}

static tsr_dtype result_dtype(op_id op, tsr_dtype a, tsr_dtype b) {
  return is_comparison(op) ? TSR_BOOL : compute_dtype(op, a, b);
}

/* Naive repeated multiplication modulo 2^64; a negative exponent truncates the real result. */
static int64_t ref_int_power(int64_t base, int64_t exponent) {
  if (exponent < 0) return base == 1 ? 1 : base == -1 ? (exponent % 2 ? -1 : 1) : 0;
  uint64_t r = 1;
  for (int64_t i = 0; i < exponent; i++)
    r *= (uint64_t)base;
  return (int64_t)r;
}

static int64_t ref_int_op(op_id op, int64_t x, int64_t y) {
  uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
  switch (op) {
    case OP_ADD:
      return (int64_t)(ux + uy);
    case OP_SUBTRACT:
      return (int64_t)(ux - uy);
    case OP_MULTIPLY:
      return (int64_t)(ux * uy);
    case OP_MAXIMUM:
      return x > y ? x : y;
    case OP_MINIMUM:
      return x < y ? x : y;
    case OP_POWER:
      return ref_int_power(x, y);
    case OP_EQUAL:
      return x == y;
    case OP_NOT_EQUAL:
      return x != y;
    case OP_LESS:
      return x < y;
    case OP_LESS_EQUAL:
      return x <= y;
    case OP_GREATER:
      return x > y;
    case OP_GREATER_EQUAL:
      return x >= y;
    default:
      return 0;
  }
}

static long double ref_real_op(op_id op, long double x, long double y) {
  switch (op) {
    case OP_ADD:
      return x + y;
    case OP_SUBTRACT:
      return x - y;
    case OP_MULTIPLY:
      return x * y;
    case OP_DIVIDE:
      return x / y;
    case OP_MAXIMUM:
      return isnan(x) || isnan(y) ? NAN : fmaxl(x, y);
    case OP_MINIMUM:
      return isnan(x) || isnan(y) ? NAN : fminl(x, y);
    case OP_POWER:
      return powl(x, y);
    case OP_EQUAL:
      return x == y;
    case OP_NOT_EQUAL:
      return x != y;
    case OP_LESS:
      return x < y;
    case OP_LESS_EQUAL:
      return x <= y;
    case OP_GREATER:
      return x > y;
    case OP_GREATER_EQUAL:
      return x >= y;
    default:
      return 0;
  }
}

/* Compares one element of op(x, y) (x, y the exact operand values). */
static void check_binary_element(op_id op, const void *got, long double x, long double y,
                                 tsr_dtype ta, tsr_dtype tb, int64_t index) {
  tsr_dtype c = compute_dtype(op, ta, tb), out = result_dtype(op, ta, tb);
  unsigned char expected[8];
  long double want;
  if (ref_is_float(c)) {
    want = ref_real_op(op, ref_round_value(x, c), ref_round_value(y, c));
    ref_from_real(want, out, expected);
  } else {
    want = (long double)ref_int_op(op, (int64_t)x, (int64_t)y);
    ref_from_int(ref_int_op(op, (int64_t)x, (int64_t)y), out, expected);
  }
  long double g = ref_value(got, out), e = ref_value(expected, out);
  bool ok = memcmp(got, expected, tsr_dtype_size(out)) == 0 || (isnan(g) && isnan(e));
  if (!ok && (op == OP_MAXIMUM || op == OP_MINIMUM)) ok = g == e; /* either sign of zero */
  if (!ok && op == OP_POWER && ref_is_float(c) && isfinite(e) && e != 0)
    ok = fabsl(g - want) <= ref_ulp(want, out);
  if (!ok)
    CHECK_FAIL_("%s(%s %.17Lg, %s %.17Lg) element %lld: got %.17Lg, want %.17Lg (%s)", ops[op].name,
                tsr_dtype_name(ta), x, tsr_dtype_name(tb), y, (long long)index, g, want,
                tsr_dtype_name(out));
}

/* ---- running an op against the reference ------------------------------------------------------
 */

typedef struct {
  tsr_dtype dtype;
  int ndim;
  int64_t shape[8];
  int64_t size;
  unsigned char data[8 * 4096];
} logical; /* an array's row-major contents, read through the public API */

static void read_logical(tsr_array *a, logical *l) {
  l->dtype = tsr_array_dtype(a);
  l->ndim = tsr_array_ndim(a);
  l->size = tsr_array_size(a);
  for (int i = 0; i < l->ndim; i++)
    l->shape[i] = tsr_array_dim(a, i);
  CHECK((size_t)l->size * tsr_dtype_size(l->dtype) <= sizeof l->data);
  CHECK_OK(tsr_array_read(a, l->data, (size_t)l->size * tsr_dtype_size(l->dtype)));
}

/* The exact value of the element of `in` that broadcasts to out index `index` (out_ndim axes). */
static long double broadcast_value(const logical *in, const int64_t *index, int out_ndim) {
  int64_t flat = 0;
  for (int i = 0; i < in->ndim; i++) {
    int64_t dim = in->shape[i], at = index[out_ndim - in->ndim + i];
    flat = flat * dim + (dim == 1 ? 0 : at);
  }
  return ref_value(in->data + flat * (int64_t)tsr_dtype_size(in->dtype), in->dtype);
}

/* The NumPy broadcast shape of the logical inputs (they must broadcast). */
static int broadcast_shape(const logical *const *in, int n, int64_t *shape) {
  int ndim = 0;
  for (int k = 0; k < n; k++)
    ndim = in[k]->ndim > ndim ? in[k]->ndim : ndim;
  for (int i = 0; i < ndim; i++) {
    shape[i] = 1;
    for (int k = 0; k < n; k++) {
      int axis = in[k]->ndim - ndim + i;
      if (axis >= 0 && in[k]->shape[axis] != 1) shape[i] = in[k]->shape[axis];
    }
  }
  return ndim;
}

/* Next row-major index over shape; false after the last. */
static bool next_index(int64_t *index, const int64_t *shape, int ndim) {
  for (int d = ndim - 1; d >= 0; d--) {
    if (++index[d] < shape[d]) return true;
    index[d] = 0;
  }
  return false;
}

static void check_shape(tsr_array *out, const int64_t *shape, int ndim) {
  CHECK_EQ_INT(tsr_array_ndim(out), ndim);
  for (int i = 0; i < ndim; i++)
    CHECK_EQ_INT(tsr_array_dim(out, i), shape[i]);
}

static logical la, lb, lc, lout; /* big: kept off the stack */

static void check_op(op_id op, tsr_array *a, tsr_array *b) {
  read_logical(a, &la);
  read_logical(b, &lb);
  const logical *in[2] = {&la, &lb};
  int64_t shape[8], index[8] = {0};
  int ndim = broadcast_shape(in, 2, shape);
  tsr_array *out = NULL;
  CHECK_OK(ops[op].fn(&out, a, b, NULL));
  check_shape(out, shape, ndim);
  CHECK_EQ_INT(tsr_array_dtype(out), result_dtype(op, la.dtype, lb.dtype));
  read_logical(out, &lout);
  size_t size = tsr_dtype_size(lout.dtype);
  for (int64_t k = 0; k < lout.size; k++, next_index(index, shape, ndim))
    check_binary_element(op, lout.data + (size_t)k * size, broadcast_value(&la, index, ndim),
                         broadcast_value(&lb, index, ndim), la.dtype, lb.dtype, k);
  tsr_array_release(out);
}

/* An array of dtype t from real values, each converted by the reference rules. */
static tsr_array *make(tsr_dtype t, const double *values, const int64_t *shape, int ndim) {
  int64_t count = 1;
  for (int i = 0; i < ndim; i++)
    count *= shape[i];
  unsigned char bytes[8 * 4096];
  CHECK((size_t)count * tsr_dtype_size(t) <= sizeof bytes);
  for (int64_t i = 0; i < count; i++)
    ref_from_real((long double)values[i], t, bytes + i * (int64_t)tsr_dtype_size(t));
  tsr_array *a = NULL;
  CHECK_OK(tsr_array_from_data(&a, bytes, t, shape, ndim));
  return a;
}

/* ---- every op on every dtype pair -------------------------------------------------------------
 */

static const double seeds_a[] = {0,   -0.0,  1,   -1,    2.5,  -3.75, 7,        100,       -128,
                                 255, 65504, 3e9, -1e10, 1e30, NAN,   INFINITY, -INFINITY, 0.1};
static const double seeds_b[] = {0,   -0.0, 1,   -2,       3,         0.5,          7,    -100, 127,
                                 300, 1e5,  NAN, INFINITY, -INFINITY, 2147483648.0, -7.25};
/* power's exponents stay small: integer power is checked by repeated multiplication */
static const double seeds_exponent[] = {0, 1, 2, 3, 5, 7, 10, 31, -1, -2, 0.5, 2.5, NAN, -0.0};
#define COUNT(x) ((int64_t)(sizeof(x) / sizeof((x)[0])))

static void test_all_pairs(void) {
  int64_t shape_a[2] = {COUNT(seeds_a), 1}, shape_b[1] = {COUNT(seeds_b)};
  int64_t shape_e[1] = {COUNT(seeds_exponent)};
  for (int i = 0; i < NDTYPES; i++) {
    tsr_array *a = make(all_dtypes[i], seeds_a, shape_a, 2);
    for (int j = 0; j < NDTYPES; j++) {
      tsr_array *b = make(all_dtypes[j], seeds_b, shape_b, 1);
      tsr_array *e = make(all_dtypes[j], seeds_exponent, shape_e, 1);
      for (int op = 0; op < NOPS; op++) {
        check_op((op_id)op, a, op == OP_POWER ? e : b);
        if (op != OP_POWER) check_op((op_id)op, b, a); /* the other broadcasting direction */
      }
      tsr_array_release(b), tsr_array_release(e);
    }
    tsr_array_release(a);
  }
}

/* tessera/ops.h's promotion, spelled out pair by pair (the all-pairs test uses ref_promote). */
static void test_promotion_table(void) {
  static const struct {
    tsr_dtype a, b, sum, quotient;
  } cases[] = {
      {TSR_FLOAT16, TSR_BFLOAT16, TSR_FLOAT32, TSR_FLOAT32},
      {TSR_UINT32, TSR_INT8, TSR_INT64, TSR_FLOAT32},
      {TSR_INT32, TSR_UINT32, TSR_INT64, TSR_FLOAT32},
      {TSR_UINT8, TSR_INT8, TSR_INT32, TSR_FLOAT32},
      {TSR_BOOL, TSR_UINT8, TSR_UINT8, TSR_FLOAT32},
      {TSR_INT32, TSR_FLOAT16, TSR_FLOAT16, TSR_FLOAT16},
      {TSR_BFLOAT16, TSR_INT64, TSR_BFLOAT16, TSR_BFLOAT16},
      {TSR_UINT32, TSR_INT64, TSR_INT64, TSR_FLOAT32},
      {TSR_BOOL, TSR_BOOL, TSR_BOOL, TSR_FLOAT32},
      {TSR_INT64, TSR_FLOAT32, TSR_FLOAT32, TSR_FLOAT32},
      {TSR_UINT8, TSR_UINT32, TSR_UINT32, TSR_FLOAT32},
      {TSR_INT8, TSR_INT32, TSR_INT32, TSR_FLOAT32},
      {TSR_FLOAT16, TSR_FLOAT16, TSR_FLOAT16, TSR_FLOAT16},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    tsr_array *a = NULL, *b = NULL, *sum = NULL, *quotient = NULL, *less = NULL, *where = NULL;
    CHECK_OK(tsr_zeros(&a, NULL, 0, cases[k].a, NULL));
    CHECK_OK(tsr_zeros(&b, NULL, 0, cases[k].b, NULL));
    CHECK_OK(tsr_add(&sum, a, b, NULL));
    CHECK_OK(tsr_divide(&quotient, b, a, NULL));
    CHECK_OK(tsr_less(&less, a, b, NULL));
    CHECK_OK(tsr_where(&where, less, a, b, NULL));
    CHECK_EQ_INT(tsr_array_dtype(sum), cases[k].sum);
    CHECK_EQ_INT(tsr_array_dtype(quotient), cases[k].quotient);
    CHECK_EQ_INT(tsr_array_dtype(less), TSR_BOOL);
    CHECK_EQ_INT(tsr_array_dtype(where), cases[k].sum);
    CHECK(ref_promote(cases[k].a, cases[k].b) == cases[k].sum);
    tsr_array_release(a), tsr_array_release(b), tsr_array_release(sum);
    tsr_array_release(quotient), tsr_array_release(less), tsr_array_release(where);
  }
}

/* ---- shapes and layouts -----------------------------------------------------------------------
 */

static double ramp[4096];

static void check_all_ops(tsr_array *a, tsr_array *b) {
  for (int op = 0; op < NOPS; op++)
    if (op != OP_POWER) check_op((op_id)op, a, b);
}

static void test_broadcast_shapes(void) {
  int64_t s314[3] = {3, 1, 4}, s21[2] = {2, 1}, s23[2] = {2, 3}, s03[2] = {0, 3}, s3[1] = {3};
  int64_t s20[2] = {2, 0}, s1[1] = {1}, s0[1] = {0};
  tsr_array *a = make(TSR_FLOAT32, ramp, s314, 3), *b = make(TSR_FLOAT32, ramp + 20, s21, 2);
  check_all_ops(a, b); /* [3, 1, 4] with [2, 1]: [3, 2, 4] */
  check_all_ops(b, a);
  tsr_array *scalar = make(TSR_INT32, ramp + 7, NULL, 0), *m = make(TSR_FLOAT16, ramp, s23, 2);
  check_all_ops(scalar, m);
  check_all_ops(m, scalar);
  check_all_ops(scalar, scalar);
  tsr_array *e03 = make(TSR_FLOAT32, ramp, s03, 2), *v3 = make(TSR_INT8, ramp, s3, 1);
  tsr_array *e20 = make(TSR_UINT8, ramp, s20, 2), *v1 = make(TSR_UINT8, ramp, s1, 1);
  tsr_array *e0 = make(TSR_BFLOAT16, ramp, s0, 1);
  check_all_ops(e03, v3); /* [0, 3] */
  check_all_ops(v1, e20); /* [2, 0] */
  check_all_ops(e0, scalar);
  check_all_ops(e0, v1);
  tsr_array *arrays[] = {a, b, scalar, m, e03, v3, e20, v1, e0};
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
    tsr_array_release(arrays[i]);
}

/* Transposed and reversed views as either operand, and rows longer than the 256-element chunks
   (float32 runs its direct loop, the others the converted scratch rows). */
static void test_layouts(void) {
  int64_t s45[2] = {4, 5}, s4[1] = {4}, s3x700[2] = {3, 700}, s700[1] = {700};
  tsr_array *m = make(TSR_FLOAT32, ramp, s45, 2), *t = NULL, *r = NULL;
  CHECK_OK(tsr_transpose(&t, m, NULL, 0, NULL)); /* [5, 4] */
  int64_t start[2] = {-1, 0}, stop[2] = {INT64_MIN, 5}, step[2] = {-1, 2};
  CHECK_OK(tsr_slice(&r, m, start, stop, step, 2, NULL)); /* m[::-1, ::2]: [4, 3] */
  tsr_array *v4 = make(TSR_FLOAT32, ramp + 100, s4, 1), *h4 = make(TSR_FLOAT16, ramp + 3, s4, 1);
  check_all_ops(t, v4);
  check_all_ops(v4, t);
  check_all_ops(t, h4);
  check_all_ops(t, t);
  tsr_array *tr = NULL;
  CHECK_OK(tsr_transpose(&tr, r, NULL, 0, NULL)); /* [3, 4], both axes strided */
  check_all_ops(tr, v4);
  int64_t s3[1] = {3};
  tsr_array *v3 = make(TSR_INT32, ramp + 50, s3, 1);
  check_all_ops(r, v3);
  check_all_ops(v3, r);
  tsr_array *big = make(TSR_FLOAT32, ramp, s3x700, 2), *row = make(TSR_FLOAT32, ramp + 9, s700, 1);
  tsr_array *big16 = make(TSR_FLOAT16, ramp, s3x700, 2), *row8 = make(TSR_INT8, ramp, s700, 1);
  check_op(OP_ADD, big, big);
  check_op(OP_MULTIPLY, big, row);
  check_op(OP_LESS, row, big);
  check_op(OP_SUBTRACT, big16, row8);
  check_op(OP_DIVIDE, row8, big16);
  tsr_array *arrays[] = {m, t, r, v4, h4, tr, v3, big, row, big16, row8};
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
    tsr_array_release(arrays[i]);
}

/* ---- literal cases: wrap, bool, NaN -----------------------------------------------------------
 */

/* op(a, b) on one-element arrays of raw values, read back as `out` bytes. */
static void literal(op_id op, tsr_dtype ta, const void *a, tsr_dtype tb, const void *b, void *out,
                    size_t out_bytes) {
  tsr_array *x = NULL, *y = NULL, *r = NULL;
  CHECK_OK(tsr_array_from_data(&x, a, ta, NULL, 0));
  CHECK_OK(tsr_array_from_data(&y, b, tb, NULL, 0));
  CHECK_OK(ops[op].fn(&r, x, y, NULL));
  CHECK_OK(tsr_array_read(r, out, out_bytes));
  tsr_array_release(x), tsr_array_release(y), tsr_array_release(r);
}

static void test_integer_wrap_and_bool(void) {
  int8_t i8max = 127, one8 = 1, i8got = 0;
  literal(OP_ADD, TSR_INT8, &i8max, TSR_INT8, &one8, &i8got, 1);
  CHECK_EQ_INT(i8got, -128);
  uint8_t zero = 0, oneu8 = 1, u8got = 0;
  literal(OP_SUBTRACT, TSR_UINT8, &zero, TSR_UINT8, &oneu8, &u8got, 1);
  CHECK_EQ_INT(u8got, 255);
  int32_t big = 65536, i32got = 0, three = 3, minus = -3;
  literal(OP_MULTIPLY, TSR_INT32, &big, TSR_INT32, &big, &i32got, 4);
  CHECK_EQ_INT(i32got, 0);
  literal(OP_POWER, TSR_INT32, &minus, TSR_INT32, &three, &i32got, 4);
  CHECK_EQ_INT(i32got, -27);
  uint32_t u4e9 = 4000000000u, u1e9 = 1000000000u, u32got = 0;
  literal(OP_ADD, TSR_UINT32, &u4e9, TSR_UINT32, &u1e9, &u32got, 4);
  CHECK_EQ_U64(u32got, 705032704u);
  int64_t i64max = INT64_MAX, one64 = 1, i64got = 0;
  literal(OP_ADD, TSR_INT64, &i64max, TSR_INT64, &one64, &i64got, 8);
  CHECK(i64got == INT64_MIN);
  int32_t seven = 7, two = 2;
  float quotient = 0;
  literal(OP_DIVIDE, TSR_INT32, &seven, TSR_INT32, &two, &quotient, 4);
  CHECK(quotient == 3.5f);
  /* bool on 0/1, stored != 0: add or, subtract xor, multiply and, maximum or, minimum and */
  static const uint8_t tt[2] = {1, 1}, ft[2] = {0, 1};
  static const struct {
    op_id op;
    uint8_t want[2]; /* for (1, 0) and (1, 1) */
  } bools[] = {{OP_ADD, {1, 1}},     {OP_SUBTRACT, {1, 0}}, {OP_MULTIPLY, {0, 1}},
               {OP_MAXIMUM, {1, 1}}, {OP_MINIMUM, {0, 1}},  {OP_POWER, {1, 1}}};
  int64_t two_shape[1] = {2};
  for (size_t k = 0; k < sizeof bools / sizeof bools[0]; k++) {
    tsr_array *x = NULL, *y = NULL, *r = NULL;
    uint8_t got[2];
    CHECK_OK(tsr_array_from_data(&x, tt, TSR_BOOL, two_shape, 1));
    CHECK_OK(tsr_array_from_data(&y, ft, TSR_BOOL, two_shape, 1));
    CHECK_OK(ops[bools[k].op].fn(&r, x, y, NULL));
    CHECK_EQ_INT(tsr_array_dtype(r), TSR_BOOL);
    CHECK_OK(tsr_array_read(r, got, 2));
    CHECK_EQ_INT(got[0], bools[k].want[0]);
    CHECK_EQ_INT(got[1], bools[k].want[1]);
    tsr_array_release(x), tsr_array_release(y), tsr_array_release(r);
  }
}

static void test_nan(void) {
  float nan = NAN, one = 1.0f, got = 0;
  literal(OP_MAXIMUM, TSR_FLOAT32, &nan, TSR_FLOAT32, &one, &got, 4);
  CHECK(isnan(got));
  literal(OP_MAXIMUM, TSR_FLOAT32, &one, TSR_FLOAT32, &nan, &got, 4);
  CHECK(isnan(got));
  literal(OP_MINIMUM, TSR_FLOAT32, &nan, TSR_FLOAT32, &one, &got, 4);
  CHECK(isnan(got));
  literal(OP_MINIMUM, TSR_FLOAT32, &one, TSR_FLOAT32, &nan, &got, 4);
  CHECK(isnan(got));
  uint16_t nan16 = 0x7e00, got16 = 0;
  int8_t small = -5;
  literal(OP_MAXIMUM, TSR_INT8, &small, TSR_FLOAT16, &nan16, &got16, 2);
  CHECK((got16 & 0x7fff) > 0x7c00);
  for (int op = OP_EQUAL; op < NOPS; op++) {
    uint8_t cmp = 2;
    literal((op_id)op, TSR_FLOAT32, &nan, TSR_FLOAT32, &nan, &cmp, 1);
    CHECK_EQ_INT(cmp, op == OP_NOT_EQUAL);
    literal((op_id)op, TSR_FLOAT32, &one, TSR_FLOAT32, &nan, &cmp, 1);
    CHECK_EQ_INT(cmp, op == OP_NOT_EQUAL);
  }
  /* comparisons happen in the promoted dtype: 2049 as float16 is 2048 */
  int32_t i2049 = 2049;
  uint16_t f2048 = tsr_f32_to_f16(2048.0f);
  uint8_t eq = 0;
  literal(OP_EQUAL, TSR_INT32, &i2049, TSR_FLOAT16, &f2048, &eq, 1);
  CHECK_EQ_INT(eq, 1);
}

/* ---- where ------------------------------------------------------------------------------------
 */

static void expect_converted(long double v, tsr_dtype t, void *dst) {
  if (ref_is_float(t))
    ref_from_real(v, t, dst);
  else
    ref_from_int((int64_t)v, t, dst); /* exact: the promoted dtype holds a's and b's values */
}

static void check_where(tsr_array *cond, tsr_array *a, tsr_array *b) {
  read_logical(cond, &lc);
  read_logical(a, &la);
  read_logical(b, &lb);
  const logical *in[3] = {&lc, &la, &lb};
  int64_t shape[8], index[8] = {0};
  int ndim = broadcast_shape(in, 3, shape);
  tsr_dtype t = ref_promote(la.dtype, lb.dtype);
  tsr_array *out = NULL;
  CHECK_OK(tsr_where(&out, cond, a, b, NULL));
  check_shape(out, shape, ndim);
  CHECK_EQ_INT(tsr_array_dtype(out), t);
  read_logical(out, &lout);
  size_t size = tsr_dtype_size(t);
  for (int64_t k = 0; k < lout.size; k++, next_index(index, shape, ndim)) {
    bool take_a = broadcast_value(&lc, index, ndim) != 0.0L; /* NaN is true */
    unsigned char expected[8];
    expect_converted(broadcast_value(take_a ? &la : &lb, index, ndim), t, expected);
    const unsigned char *got = lout.data + (size_t)k * size;
    if (memcmp(got, expected, size) != 0 && !ref_is_nan_pattern(got, t))
      CHECK_FAIL_("where element %lld (%s): got %.17Lg, want %.17Lg", (long long)k,
                  tsr_dtype_name(t), ref_value(got, t), ref_value(expected, t));
  }
  tsr_array_release(out);
}

static void test_where(void) {
  static const double conditions[] = {1, 0, NAN, -0.0, -2, 0.5, 0, 1};
  int64_t s211[3] = {2, 1, 1}, s131[3] = {1, 3, 1}, s4[1] = {4}, s8[1] = {8}, s23[2] = {2, 3};
  int64_t s01[2] = {0, 1}, s13[2] = {1, 3}, s700[1] = {700}, s3x700[2] = {3, 700};
  tsr_array *c211 = make(TSR_BOOL, conditions, s211, 3), *a131 = make(TSR_FLOAT32, ramp, s131, 3);
  tsr_array *b4 = make(TSR_INT8, ramp + 10, s4, 1);
  check_where(c211, a131, b4); /* [2, 3, 4] */
  check_where(b4, c211, a131); /* an int8 condition, a bool operand */
  tsr_array *c8 = make(TSR_FLOAT32, conditions, s8, 1), *c8h = make(TSR_FLOAT16, conditions, s8, 1);
  tsr_array *a8 = make(TSR_INT64, ramp, s8, 1), *b1 = make(TSR_UINT32, ramp + 40, s8, 0);
  check_where(c8, a8, b1);
  check_where(c8h, b1, a8);
  tsr_array *c0 = make(TSR_INT64, conditions + 4, NULL, 0), *m = make(TSR_FLOAT16, ramp, s23, 2);
  tsr_array *mt = NULL, *b0 = make(TSR_BFLOAT16, ramp + 5, NULL, 0);
  CHECK_OK(tsr_transpose(&mt, m, NULL, 0, NULL));
  check_where(c0, mt, b0); /* float16 with bfloat16: float32 */
  check_where(c0, b0, c0); /* all 0-d */
  tsr_array *c01 = make(TSR_BOOL, conditions, s01, 2), *a13 = make(TSR_UINT8, ramp, s13, 2);
  check_where(c01, a13, b0); /* [0, 3] */
  tsr_array *c700 = make(TSR_BOOL, ramp, s700, 1), *a3x700 = make(TSR_FLOAT16, ramp, s3x700, 2);
  tsr_array *b700 = make(TSR_INT32, ramp + 3, s700, 1);
  check_where(c700, a3x700, b700);
  for (int i = 0; i < NDTYPES; i++) {
    tsr_array *a = make(all_dtypes[i], seeds_a, (int64_t[]){COUNT(seeds_a), 1}, 2);
    for (int j = 0; j < NDTYPES; j++) {
      tsr_array *b = make(all_dtypes[j], seeds_b, (int64_t[]){COUNT(seeds_b)}, 1);
      tsr_array *c = make(all_dtypes[(i + j) % NDTYPES], seeds_b, (int64_t[]){COUNT(seeds_b)}, 1);
      check_where(c, a, b);
      tsr_array_release(b), tsr_array_release(c);
    }
    tsr_array_release(a);
  }
  tsr_array *arrays[] = {c211, a131, b4, c8,  c8h, a8,   b1,     c0,
                         m,    mt,   b0, c01, a13, c700, a3x700, b700};
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
    tsr_array_release(arrays[i]);
}

/* ---- bad inputs -------------------------------------------------------------------------------
 */

static void test_bad_inputs(void) {
  int64_t s23[2] = {2, 3}, s4[1] = {4}, s5[1] = {5};
  tsr_array *a = make(TSR_FLOAT32, ramp, s23, 2), *b = make(TSR_INT32, ramp, s4, 1);
  tsr_array *c = make(TSR_BOOL, ramp, s5, 1);
  tsr_array *sentinel = (tsr_array *)0x1, *out = sentinel;
  char message[64];
  for (int op = 0; op < NOPS; op++) {
    snprintf(message, sizeof message, "%s: out is NULL", ops[op].name);
    CHECK_STATUS(ops[op].fn(NULL, a, a, NULL), TSR_ERR_INVALID);
    CHECK_MESSAGE(message);
    snprintf(message, sizeof message, "%s: a is NULL", ops[op].name);
    CHECK_STATUS(ops[op].fn(&out, NULL, a, NULL), TSR_ERR_INVALID);
    CHECK_MESSAGE(message);
    snprintf(message, sizeof message, "%s: b is NULL", ops[op].name);
    CHECK_STATUS(ops[op].fn(&out, a, NULL, NULL), TSR_ERR_INVALID);
    CHECK_MESSAGE(message);
    snprintf(message, sizeof message, "%s: shapes [2, 3] and [4]", ops[op].name);
    CHECK_STATUS(ops[op].fn(&out, a, b, NULL), TSR_ERR_INVALID);
    CHECK_MESSAGE(message);
    CHECK_STATUS(ops[op].fn(&out, b, a, NULL), TSR_ERR_INVALID);
    CHECK_MESSAGE("[4] and [2, 3]");
  }
  CHECK_STATUS(tsr_where(NULL, c, a, a, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("where: out is NULL");
  CHECK_STATUS(tsr_where(&out, NULL, a, a, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("where: cond is NULL");
  CHECK_STATUS(tsr_where(&out, a, NULL, a, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("where: a is NULL");
  CHECK_STATUS(tsr_where(&out, a, a, NULL, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("where: b is NULL");
  CHECK_STATUS(tsr_where(&out, c, a, a, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("[5] (cond), [2, 3] (a) and [2, 3] (b)");
  CHECK_STATUS(tsr_where(&out, a, a, b, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("[2, 3] (cond), [2, 3] (a) and [4] (b)");
  CHECK(out == sentinel);
  tsr_array_release(a), tsr_array_release(b), tsr_array_release(c);
}

int main(void) {
  for (int i = 0; i < 4096; i++) /* varied values: negatives, fractions, zeros */
    ramp[i] = (double)(i % 37) * 1.75 - 30.0 + (i % 5 == 0 ? 0.125 : 0.0);
  test_promotion_table();
  test_all_pairs();
  test_broadcast_shapes();
  test_layouts();
  test_integer_wrap_and_bool();
  test_nan();
  test_where();
  test_bad_inputs();
  CHECK_OK(tsr_memory_clear_cache(cpu));
  CHECK_NO_LEAKS();
  tsr_shutdown();
  puts("test_elementwise: ok");
  return 0;
}
