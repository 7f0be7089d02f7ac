/* cpu/matmul.c — the matmul kernel: each batch's product through OpenBLAS sgemm, the operands
 * in place when their layout allows and gathered into float32 ledger scratch otherwise
 * (cpu/gemm.h). Batches are folded into one tall product when b is shared by all of them. Not a
 * GEMM of its own. */
#include "cpu/kernels.h"

#include <limits.h>
#include <string.h>

#include "cpu/gemm.h"
#include "cpu/rows.h"
#include "ops/matmul.h"

/* When b is the same matrix for every batch and a's batches follow one another at a fixed row
 * stride (x [B, T, K] @ w [K, N]), the batches are rows of one [B*T, K] @ [K, N] product: one
 * sgemm instead of B small ones. Rewrites g to that product and returns true. */
static bool fold_batches(tsri_matmul_geometry *g) {
  if (g->batch_count <= 1) return false;
  int64_t rows = g->m, stride = g->a.row_stride;
  for (int i = g->batch_ndim - 1; i >= 0; i--) {
    if (g->batch_shape[i] == 1) continue;
    if (g->b.batch_strides[i] != 0) return false;
    if (rows == 1) { /* a single row has no row stride yet: the batch axis gives it one */
      stride = g->a.batch_strides[i];
    } else if (g->a.batch_strides[i] != rows * stride) {
      return false;
    }
    rows *= g->batch_shape[i];
  }
  if (rows > INT_MAX) return false;
  g->m = rows;
  g->a.row_stride = stride;
  g->batch_ndim = 0;
  g->batch_count = 1;
  return true;
}

/* One sgemm per batch, walking the batch axes like an odometer. c_scratch (M x N float32) is
 * where a non-float32 result is formed before it is rounded into the output. */
static void run_batches(tsr_array *node, const tsri_matmul_geometry *g, tsri_gemm_operand *a,
                        tsri_gemm_operand *b, tsri_buffer *c_scratch) {
  int64_t index[TSR_MAX_NDIM] = {0};
  int64_t offset_a = a->array->offset, offset_b = b->array->offset, mn = g->m * g->n;
  int64_t out_element = (int64_t)tsr_dtype_size(node->dtype);
  unsigned char *out = (unsigned char *)node->buffer->data;
  for (int64_t batch = 0; batch < g->batch_count; batch++) {
    tsri_gemm_operand_at(a, offset_a, g->m);
    tsri_gemm_operand_at(b, offset_b, g->k);
    float *c = c_scratch ? (float *)c_scratch->data : (float *)(void *)out + batch * mn;
    tsri_gemm(a, b, false, g->m, g->n, g->k, 1.0f, 0.0f, c, g->n);
    if (c_scratch) tsri_cpu_store_f32(out + batch * mn * out_element, node->dtype, mn, c);
    for (int d = g->batch_ndim - 1; d >= 0; d--) {
      if (++index[d] < g->batch_shape[d]) {
        offset_a += g->a.batch_strides[d];
        offset_b += g->b.batch_strides[d];
        break;
      }
      offset_a -= (g->batch_shape[d] - 1) * g->a.batch_strides[d];
      offset_b -= (g->batch_shape[d] - 1) * g->b.batch_strides[d];
      index[d] = 0;
    }
  }
}

static tsr_status cpu_matmul(tsr_array *node) {
  tsr_status status = tsri_node_alloc(node);
  if (status != TSR_OK || node->size == 0) return status;
  const tsr_array *a = node->inputs[0], *b = node->inputs[1];
  tsri_matmul_geometry g;
  status = tsri_matmul_geometry_of(a, b, &g);
  if (status != TSR_OK) return status;
  if (g.k == 0) { /* an empty sum: zeros (all-zero bits in every float dtype) */
    memset(node->buffer->data, 0, (size_t)node->size * tsr_dtype_size(node->dtype));
    return TSR_OK;
  }
  fold_batches(&g);
  tsri_gemm_operand op_a = {0}, op_b = {0};
  tsri_buffer *c_scratch = NULL;
  status = tsri_gemm_operand_init(&op_a, a, g.m, g.k, g.a.row_stride, g.a.col_stride);
  if (status == TSR_OK)
    status = tsri_gemm_operand_init(&op_b, b, g.k, g.n, g.b.row_stride, g.b.col_stride);
  if (status == TSR_OK && node->dtype != TSR_FLOAT32)
    status = tsri_cpu_scratch(node->device, g.m * g.n, &c_scratch);
  if (status == TSR_OK) run_batches(node, &g, &op_a, &op_b, c_scratch);
  tsri_buffer_release(c_scratch);
  tsri_gemm_operand_free(&op_b);
  tsri_gemm_operand_free(&op_a);
  return status;
}

void tsri_cpu_register_matmul(tsri_kernel_fn *table) {
  table[TSRI_PRIM_MATMUL] = cpu_matmul;
}
