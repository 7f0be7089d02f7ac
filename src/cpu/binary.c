/* cpu/binary.c — elementwise binary kernels with broadcasting, over any input layout. Rows are
 * converted to float32 (float results: float16/bfloat16 sums are then correctly rounded, since
 * float32 carries more than 2p+2 bits of either) or int64 (integer results, wrapping). A
 * contiguous float32 row takes a direct loop. */
#include "cpu/kernels.h"

#include "base/dtype.h"
#include "cpu/rows.h"
#include "cpu/strided.h"

#define CHUNK 256

typedef struct {
  const unsigned char *a, *b;
  unsigned char *out;
  int64_t stride_a, stride_b; /* elements, along the row */
  int64_t n;
} binary_row;

static void add_row_f32(const tsr_array *node, const binary_row *row) {
  const tsr_array *a = node->inputs[0], *b = node->inputs[1];
  if (a->dtype == TSR_FLOAT32 && b->dtype == TSR_FLOAT32 && node->dtype == TSR_FLOAT32) {
    const float *x = (const float *)row->a, *y = (const float *)row->b;
    float *o = (float *)row->out;
    for (int64_t i = 0; i < row->n; i++)
      o[i] = x[i * row->stride_a] + y[i * row->stride_b];
    return;
  }
  float x[CHUNK], y[CHUNK];
  size_t out_size = tsr_dtype_size(node->dtype);
  for (int64_t start = 0; start < row->n; start += CHUNK) {
    int64_t n = row->n - start < CHUNK ? row->n - start : CHUNK;
    tsri_cpu_load_f32(row->a + start * row->stride_a * (int64_t)tsr_dtype_size(a->dtype), a->dtype,
                      row->stride_a, n, x);
    tsri_cpu_load_f32(row->b + start * row->stride_b * (int64_t)tsr_dtype_size(b->dtype), b->dtype,
                      row->stride_b, n, y);
    for (int64_t i = 0; i < n; i++)
      x[i] += y[i];
    tsri_cpu_store_f32(row->out + start * (int64_t)out_size, node->dtype, n, x);
  }
}

static void add_row_i64(const tsr_array *node, const binary_row *row) {
  const tsr_array *a = node->inputs[0], *b = node->inputs[1];
  int64_t x[CHUNK], y[CHUNK];
  size_t out_size = tsr_dtype_size(node->dtype);
  for (int64_t start = 0; start < row->n; start += CHUNK) {
    int64_t n = row->n - start < CHUNK ? row->n - start : CHUNK;
    tsri_cpu_load_i64(row->a + start * row->stride_a * (int64_t)tsr_dtype_size(a->dtype), a->dtype,
                      row->stride_a, n, x);
    tsri_cpu_load_i64(row->b + start * row->stride_b * (int64_t)tsr_dtype_size(b->dtype), b->dtype,
                      row->stride_b, n, y);
    if (node->dtype == TSR_BOOL) {
      for (int64_t i = 0; i < n; i++)
        x[i] = (x[i] != 0) | (y[i] != 0);
    } else { /* wrap like two's complement hardware, without signed overflow */
      for (int64_t i = 0; i < n; i++)
        x[i] = (int64_t)((uint64_t)x[i] + (uint64_t)y[i]);
    }
    tsri_cpu_store_i64(row->out + start * (int64_t)out_size, node->dtype, n, x);
  }
}

static tsr_status cpu_add(tsr_array *node) {
  tsr_status status = tsri_node_alloc(node);
  if (status != TSR_OK || node->size == 0) return status;
  const tsr_array *a = node->inputs[0], *b = node->inputs[1];
  int64_t strides_a[TSR_MAX_NDIM], strides_b[TSR_MAX_NDIM];
  tsri_broadcast_strides(a, node, strides_a);
  tsri_broadcast_strides(b, node, strides_b);
  const int64_t *strides[3] = {strides_a, strides_b, node->strides};
  int64_t offsets[3] = {a->offset, b->offset, 0};
  tsri_row_walker walker;
  tsri_row_walker_init(&walker, node, 3, strides, offsets);
  int last = node->ndim - 1;
  size_t size_a = tsr_dtype_size(a->dtype), size_b = tsr_dtype_size(b->dtype);
  size_t size_out = tsr_dtype_size(node->dtype);
  bool as_float = tsri_dtype_is_float(node->dtype);
  do {
    binary_row row = {
        .a = (const unsigned char *)a->buffer->data + walker.offset[0] * (int64_t)size_a,
        .b = (const unsigned char *)b->buffer->data + walker.offset[1] * (int64_t)size_b,
        .out = (unsigned char *)node->buffer->data + walker.offset[2] * (int64_t)size_out,
        .stride_a = last >= 0 ? strides_a[last] : 0,
        .stride_b = last >= 0 ? strides_b[last] : 0,
        .n = last >= 0 ? node->shape[last] : 1,
    };
    if (as_float)
      add_row_f32(node, &row);
    else
      add_row_i64(node, &row);
  } while (tsri_row_walker_next(&walker));
  return TSR_OK;
}

void tsri_cpu_register_binary(tsri_kernel_fn *table) { table[TSRI_PRIM_ADD] = cpu_add; }
