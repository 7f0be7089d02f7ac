/* cpu/compare.c — the comparison kernels (through the binary row runner of cpu/binary.h) and
 * where, the one three-input elementwise kernel. Not the arithmetic ops (cpu/binary.c).
 *
 * Comparisons convert both operands to their promoted dtype, as the arithmetic ops do, and
 * compare there: float16 == int32 rounds the int32 to float16 first. NaN compares false except
 * under not_equal. where converts a and b to the result dtype the same way; its condition is
 * true where nonzero (NaN is true, -0.0 false).
 */
#include "cpu/binary.h"

#include "base/dtype.h"
#include "cpu/kernels.h"
#include "cpu/rows.h"
#include "cpu/strided.h"

#define CHUNK 256

TSRI_BINARY_F32(equal_f32, a == b ? 1.0f : 0.0f)
TSRI_BINARY_I64(equal_i64, a == b)
TSRI_BINARY_F32(not_equal_f32, a != b ? 1.0f : 0.0f)
TSRI_BINARY_I64(not_equal_i64, a != b)
TSRI_BINARY_F32(less_f32, a < b ? 1.0f : 0.0f)
TSRI_BINARY_I64(less_i64, a < b)
TSRI_BINARY_F32(less_equal_f32, a <= b ? 1.0f : 0.0f)
TSRI_BINARY_I64(less_equal_i64, a <= b)
TSRI_BINARY_F32(greater_f32, a > b ? 1.0f : 0.0f)
TSRI_BINARY_I64(greater_i64, a > b)
TSRI_BINARY_F32(greater_equal_f32, a >= b ? 1.0f : 0.0f)
TSRI_BINARY_I64(greater_equal_i64, a >= b)

static const tsri_binary_fns compare_ops[TSRI_PRIM_COUNT] = {
    [TSRI_PRIM_EQUAL] = {equal_f32, equal_i64},
    [TSRI_PRIM_NOT_EQUAL] = {not_equal_f32, not_equal_i64},
    [TSRI_PRIM_LESS] = {less_f32, less_i64},
    [TSRI_PRIM_LESS_EQUAL] = {less_equal_f32, less_equal_i64},
    [TSRI_PRIM_GREATER] = {greater_f32, greater_i64},
    [TSRI_PRIM_GREATER_EQUAL] = {greater_equal_f32, greater_equal_i64},
};

static tsr_status cpu_compare(const tsri_op *op) {
  return tsri_cpu_binary_run(op, &compare_ops[op->primitive]);
}

/* One row of where: cond, a and b at their strides, out contiguous. */
typedef struct {
  const unsigned char *data[3]; /* cond, a, b */
  int64_t stride[3];
  unsigned char *out;
  int64_t n;
} where_row;

static void where_chunk(const tsri_op *op, const where_row *row, int64_t start, int64_t n) {
  union {
    float f[CHUNK];
    int64_t i[CHUNK];
  } x, y;
  float cond[CHUNK];
  const unsigned char *from[3];
  for (int k = 0; k < 3; k++)
    from[k] = row->data[k] + start * row->stride[k] * (int64_t)tsr_dtype_size(op->in[k].dtype);
  tsr_dtype dtype = op->out.dtype;
  tsri_cpu_load_f32(from[0], op->in[0].dtype, row->stride[0], n, cond);
  tsri_cpu_load_operand(from[1], op->in[1].dtype, row->stride[1], n, dtype, &x);
  tsri_cpu_load_operand(from[2], op->in[2].dtype, row->stride[2], n, dtype, &y);
  unsigned char *out = row->out + start * (int64_t)tsr_dtype_size(dtype);
  if (tsri_dtype_is_float(dtype)) {
    for (int64_t i = 0; i < n; i++)
      x.f[i] = cond[i] != 0.0f ? x.f[i] : y.f[i];
    tsri_cpu_store_f32(out, dtype, n, x.f);
  } else {
    for (int64_t i = 0; i < n; i++)
      x.i[i] = cond[i] != 0.0f ? x.i[i] : y.i[i];
    tsri_cpu_store_i64(out, dtype, n, x.i);
  }
}

/* The row walker carries three operands; where has four (cond, a, b, out), so a second walker
   over the same shape moves b in lockstep with the first. */
static tsr_status cpu_where(const tsri_op *op) {
  const tsri_view *out = &op->out;
  if (out->size == 0) return TSR_OK;
  int64_t strides[3][TSR_MAX_NDIM];
  for (int k = 0; k < 3; k++)
    tsri_broadcast_strides(&op->in[k], out, strides[k]);
  const int64_t *first_strides[3] = {strides[0], strides[1], out->strides};
  const int64_t *second_strides[1] = {strides[2]};
  int64_t first_offsets[3] = {op->in[0].offset, op->in[1].offset, out->offset};
  int64_t second_offsets[1] = {op->in[2].offset};
  tsri_row_walker first, second;
  tsri_row_walker_init(&first, out, 3, first_strides, first_offsets);
  tsri_row_walker_init(&second, out, 1, second_strides, second_offsets);
  int last = out->ndim - 1;
  int64_t out_size = (int64_t)tsr_dtype_size(out->dtype);
  do {
    int64_t offsets[3] = {first.offset[0], first.offset[1], second.offset[0]};
    where_row row = {.out = (unsigned char *)out->data + first.offset[2] * out_size,
                     .n = last >= 0 ? out->shape[last] : 1};
    for (int k = 0; k < 3; k++) {
      const tsri_view *in = &op->in[k];
      row.data[k] =
          (const unsigned char *)in->data + offsets[k] * (int64_t)tsr_dtype_size(in->dtype);
      row.stride[k] = last >= 0 ? strides[k][last] : 0;
    }
    for (int64_t start = 0; start < row.n; start += CHUNK)
      where_chunk(op, &row, start, row.n - start < CHUNK ? row.n - start : CHUNK);
    tsri_row_walker_next(&second);
  } while (tsri_row_walker_next(&first));
  return TSR_OK;
}

void tsri_cpu_register_compare(tsri_kernel_fn *table) {
  for (int p = 0; p < TSRI_PRIM_COUNT; p++)
    if (compare_ops[p].f32) table[p] = cpu_compare;
  table[TSRI_PRIM_WHERE] = cpu_where;
}
