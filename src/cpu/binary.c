/* cpu/binary.c — elementwise binary kernels with broadcasting, over any input layout: the shared
 * row runner (cpu/binary.h) and the arithmetic ops. Comparisons and where are in cpu/compare.c.
 *
 * Operands are converted to the op's computation type, which is the promoted dtype (tessera/ops.h)
 * held in float32 for the float dtypes and in int64 for integers and bool: an int32 operand of a
 * bfloat16 op is first rounded to bfloat16, as astype would. Float results are then rounded once
 * to the output's dtype, so float16/bfloat16 add, subtract, multiply and divide are correctly
 * rounded (float32 carries more than 2p+2 bits of either). A row of three float32 operands skips
 * the scratch and runs the op straight on the data.
 *
 * Decisions where tessera/ops.h is silent:
 *  - integer results wrap (two's complement) for subtract, multiply and power, like add;
 *  - bool arithmetic runs on 0/1 and stores != 0: add is or, subtract is xor, multiply is and,
 *    maximum is or, minimum is and, power(a, b) is a or not b;
 *  - integer power with a negative exponent gives the real result truncated toward zero: 1 for
 *    base 1, +-1 for base -1, 0 otherwise (base 0 included: integers have no infinity, and failing
 *    the whole graph for one element would be worse); 0 to the power 0 is 1;
 *  - maximum and minimum return the first NaN operand when either is NaN.
 */
#include "cpu/binary.h"

#include <math.h>

#include "base/dtype.h"
#include "base/element.h"
#include "cpu/convert.h"
#include "cpu/kernels.h"
#include "cpu/rows.h"
#include "cpu/strided.h"

#define CHUNK 256

typedef struct {
  const unsigned char *a, *b;
  unsigned char *out;
  int64_t stride_a, stride_b; /* elements, along the row */
  int64_t n;
} binary_row;

void tsri_cpu_load_operand(const void *base, tsr_dtype dtype, int64_t stride, int64_t n,
                           tsr_dtype compute, void *dst) {
  if (tsri_dtype_is_float(compute))
    tsri_cpu_load_as_float(base, dtype, stride, n, compute, (float *)dst);
  else
    tsri_cpu_load_i64(base, dtype, stride, n, (int64_t *)dst);
}

static void run_row(const tsri_op *op, const tsri_binary_fns *fns, tsr_dtype compute,
                    const binary_row *row) {
  const tsri_view *a = &op->in[0], *b = &op->in[1];
  tsr_dtype out_dtype = op->out.dtype;
  if (a->dtype == TSR_FLOAT32 && b->dtype == TSR_FLOAT32 && out_dtype == TSR_FLOAT32) {
    fns->f32((float *)row->out, (const float *)row->a, row->stride_a, (const float *)row->b,
             row->stride_b, row->n);
    return;
  }
  union {
    float f[CHUNK];
    int64_t i[CHUNK];
  } x, y;
  int64_t step_a = row->stride_a * (int64_t)tsr_dtype_size(a->dtype);
  int64_t step_b = row->stride_b * (int64_t)tsr_dtype_size(b->dtype);
  int64_t out_size = (int64_t)tsr_dtype_size(out_dtype);
  bool as_float = tsri_dtype_is_float(compute);
  for (int64_t start = 0; start < row->n; start += CHUNK) {
    int64_t n = row->n - start < CHUNK ? row->n - start : CHUNK;
    tsri_cpu_load_operand(row->a + start * step_a, a->dtype, row->stride_a, n, compute, &x);
    tsri_cpu_load_operand(row->b + start * step_b, b->dtype, row->stride_b, n, compute, &y);
    if (as_float) {
      fns->f32(x.f, x.f, 1, y.f, 1, n);
      tsri_cpu_store_f32(row->out + start * out_size, out_dtype, n, x.f);
    } else {
      fns->i64(x.i, x.i, y.i, n);
      tsri_cpu_store_i64(row->out + start * out_size, out_dtype, n, x.i);
    }
  }
}

tsr_status tsri_cpu_binary_run(const tsri_op *op, const tsri_binary_fns *fns) {
  const tsri_view *a = &op->in[0], *b = &op->in[1], *out = &op->out;
  if (out->size == 0) return TSR_OK;
  tsr_dtype compute = tsri_dtype_promote(a->dtype, b->dtype);
  if (!tsri_dtype_is_float(compute) && !fns->i64) compute = TSR_FLOAT32;
  int64_t strides_a[TSR_MAX_NDIM], strides_b[TSR_MAX_NDIM];
  tsri_broadcast_strides(a, out, strides_a);
  tsri_broadcast_strides(b, out, strides_b);
  const int64_t *strides[3] = {strides_a, strides_b, out->strides};
  int64_t offsets[3] = {a->offset, b->offset, out->offset};
  tsri_row_walker walker;
  tsri_row_walker_init(&walker, out, 3, strides, offsets);
  int last = out->ndim - 1;
  int64_t size_a = (int64_t)tsr_dtype_size(a->dtype), size_b = (int64_t)tsr_dtype_size(b->dtype);
  int64_t size_out = (int64_t)tsr_dtype_size(out->dtype);
  do {
    binary_row row = {
        .a = (const unsigned char *)a->data + walker.offset[0] * size_a,
        .b = (const unsigned char *)b->data + walker.offset[1] * size_b,
        .out = (unsigned char *)out->data + walker.offset[2] * size_out,
        .stride_a = last >= 0 ? strides_a[last] : 0,
        .stride_b = last >= 0 ? strides_b[last] : 0,
        .n = last >= 0 ? out->shape[last] : 1,
    };
    run_row(op, fns, compute, &row);
  } while (tsri_row_walker_next(&walker));
  return TSR_OK;
}

/* Wrapping integer arithmetic without signed overflow. */
static int64_t wrap_add(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a + (uint64_t)b);
}
static int64_t wrap_subtract(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a - (uint64_t)b);
}
static int64_t wrap_multiply(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a * (uint64_t)b);
}

static float float_maximum(float a, float b) {
  return isnan(a) ? a : isnan(b) ? b : a > b ? a : b;
}
static float float_minimum(float a, float b) {
  return isnan(a) ? a : isnan(b) ? b : a < b ? a : b;
}

TSRI_BINARY_F32(add_f32, a + b)
TSRI_BINARY_I64(add_i64, wrap_add(a, b))
TSRI_BINARY_F32(subtract_f32, a - b)
TSRI_BINARY_I64(subtract_i64, wrap_subtract(a, b))
TSRI_BINARY_F32(multiply_f32, (a * b))
TSRI_BINARY_I64(multiply_i64, wrap_multiply(a, b))
TSRI_BINARY_F32(divide_f32, a / b)
TSRI_BINARY_F32(maximum_f32, float_maximum(a, b))
TSRI_BINARY_I64(maximum_i64, a > b ? a : b)
TSRI_BINARY_F32(minimum_f32, float_minimum(a, b))
TSRI_BINARY_I64(minimum_i64, a < b ? a : b)
TSRI_BINARY_F32(power_f32, powf(a, b))
TSRI_BINARY_I64(power_i64, tsri_element_i64_power(a, b))

static const tsri_binary_fns arithmetic_ops[TSRI_PRIM_COUNT] = {
    [TSRI_PRIM_ADD] = {add_f32, add_i64},
    [TSRI_PRIM_SUBTRACT] = {subtract_f32, subtract_i64},
    [TSRI_PRIM_MULTIPLY] = {multiply_f32, multiply_i64},
    [TSRI_PRIM_DIVIDE] = {divide_f32, NULL}, /* integers divide as float32 */
    [TSRI_PRIM_MAXIMUM] = {maximum_f32, maximum_i64},
    [TSRI_PRIM_MINIMUM] = {minimum_f32, minimum_i64},
    [TSRI_PRIM_POWER] = {power_f32, power_i64},
};

static tsr_status cpu_arithmetic(const tsri_op *op) {
  return tsri_cpu_binary_run(op, &arithmetic_ops[op->primitive]);
}

void tsri_cpu_register_binary(tsri_kernel_fn *table) {
  for (int p = 0; p < TSRI_PRIM_COUNT; p++)
    if (arithmetic_ops[p].f32) table[p] = cpu_arithmetic;
  tsri_cpu_register_compare(table);
}
