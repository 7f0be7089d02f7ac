/* cpu/unary.c — CPU kernels of ops/unary.c over any input layout: a table of row functions, one
 * runner. Not the binary ops (cpu/binary.c).
 *
 * Float inputs compute in float32 (float16/bfloat16 widened exactly, the result rounded back
 * once); integer inputs are converted to float32 (correctly rounded) first, except negative and
 * abs, which stay in int64 and wrap. The transcendental ops (exp, log, rsqrt, sigmoid, silu,
 * tanh) evaluate in float64 and round once to float32, so each float32 result is the correctly
 * rounded value except when the exact result lies within float64's error of a rounding midpoint
 * (then it is the neighbour: always within 1 ulp); sqrt is IEEE's correctly rounded sqrtf.
 * sigmoid takes exp of -|x| only, so it never overflows: 1 / (1 + e^-x) for x >= 0 and
 * e^x / (1 + e^x) below; silu(x) = x * sigmoid(x), and silu(-inf) is -0 (the limit), not the
 * NaN of -inf * 0.
 */
#include "cpu/kernels.h"

#include <math.h>

#include "base/dtype.h"
#include "cpu/rows.h"
#include "cpu/strided.h"

#define CHUNK 256

/* out[i] = op(x[i * stride]); out may be x (stride 1). */
typedef void (*unary_f32_fn)(float *out, const float *x, int64_t stride, int64_t n);
/* x[i] = op(x[i]) on contiguous scratch. */
typedef void (*unary_i64_fn)(int64_t *x, int64_t n);

typedef struct {
  unary_f32_fn f32;
  unary_i64_fn i64; /* NULL: integer inputs are converted to float32 (the output's dtype) */
} unary_fns;

#define UNARY_F32_ROW(name, element)                                        \
  static void name(float *out, const float *x, int64_t stride, int64_t n) { \
    for (int64_t i = 0; i < n; i++)                                         \
      out[i] = element(x[i * stride]);                                      \
  }

static float negative_element(float x) {
  return -x;
}
static float exp_element(float x) {
  return (float)exp((double)x);
}
static float log_element(float x) {
  return (float)log((double)x);
}
static float rsqrt_element(float x) {
  return (float)(1.0 / sqrt((double)x));
}
static double sigmoid_f64(double x) {
  if (x >= 0.0) return 1.0 / (1.0 + exp(-x));
  double e = exp(x); /* x < 0 (or NaN): e <= 1, no overflow */
  return e / (1.0 + e);
}
static float sigmoid_element(float x) {
  return (float)sigmoid_f64((double)x);
}
static float silu_element(float x) {
  if (isinf(x) && x < 0.0f) return -0.0f;
  return (float)((double)x * sigmoid_f64((double)x));
}
static float tanh_element(float x) {
  return (float)tanh((double)x);
}

UNARY_F32_ROW(negative_f32, negative_element)
UNARY_F32_ROW(abs_f32, fabsf)
UNARY_F32_ROW(exp_f32, exp_element)
UNARY_F32_ROW(log_f32, log_element)
UNARY_F32_ROW(sqrt_f32, sqrtf)
UNARY_F32_ROW(rsqrt_f32, rsqrt_element)
UNARY_F32_ROW(sigmoid_f32, sigmoid_element)
UNARY_F32_ROW(silu_f32, silu_element)
UNARY_F32_ROW(tanh_f32, tanh_element)

/* Two's complement negation without signed overflow: the most negative value stays itself. */
static void negative_i64(int64_t *x, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    x[i] = (int64_t)(0u - (uint64_t)x[i]);
}
static void abs_i64(int64_t *x, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    x[i] = x[i] < 0 ? (int64_t)(0u - (uint64_t)x[i]) : x[i];
}

static const unary_fns unary_ops[TSRI_PRIM_COUNT] = {
    [TSRI_PRIM_NEGATIVE] = {negative_f32, negative_i64},
    [TSRI_PRIM_ABS] = {abs_f32, abs_i64},
    [TSRI_PRIM_EXP] = {exp_f32, NULL},
    [TSRI_PRIM_LOG] = {log_f32, NULL},
    [TSRI_PRIM_SQRT] = {sqrt_f32, NULL},
    [TSRI_PRIM_RSQRT] = {rsqrt_f32, NULL},
    [TSRI_PRIM_SIGMOID] = {sigmoid_f32, NULL},
    [TSRI_PRIM_SILU] = {silu_f32, NULL},
    [TSRI_PRIM_TANH] = {tanh_f32, NULL},
};

/* One row of n elements at `in` (stride in elements) into the contiguous `out`. */
static void run_row(const tsri_op *op, const unary_fns *fns, const unsigned char *in,
                    int64_t stride, unsigned char *out, int64_t n) {
  tsr_dtype in_dtype = op->in[0].dtype, out_dtype = op->out.dtype;
  if (in_dtype == TSR_FLOAT32 && out_dtype == TSR_FLOAT32) {
    fns->f32((float *)out, (const float *)in, stride, n);
    return;
  }
  union {
    float f[CHUNK];
    int64_t i[CHUNK];
  } x;
  int64_t in_step = stride * (int64_t)tsr_dtype_size(in_dtype);
  int64_t out_size = (int64_t)tsr_dtype_size(out_dtype);
  for (int64_t start = 0; start < n; start += CHUNK) {
    int64_t count = n - start < CHUNK ? n - start : CHUNK;
    if (tsri_dtype_is_float(out_dtype)) {
      tsri_cpu_load_f32(in + start * in_step, in_dtype, stride, count, x.f);
      fns->f32(x.f, x.f, 1, count);
      tsri_cpu_store_f32(out + start * out_size, out_dtype, count, x.f);
    } else {
      tsri_cpu_load_i64(in + start * in_step, in_dtype, stride, count, x.i);
      fns->i64(x.i, count);
      tsri_cpu_store_i64(out + start * out_size, out_dtype, count, x.i);
    }
  }
}

static void unary_row(const tsri_op *op, const unsigned char *src, int64_t src_stride,
                      unsigned char *dst, int64_t n, void *ctx) {
  run_row(op, ctx, src, src_stride, dst, n);
}

static tsr_status cpu_unary(const tsri_op *op) {
  if (op->out.size == 0) return TSR_OK;
  tsri_for_each_unary_row(op, unary_row, (void *)&unary_ops[op->primitive]);
  return TSR_OK;
}

void tsri_cpu_register_unary(tsri_kernel_fn *table) {
  for (int p = 0; p < TSRI_PRIM_COUNT; p++)
    if (unary_ops[p].f32) table[p] = cpu_unary;
}
