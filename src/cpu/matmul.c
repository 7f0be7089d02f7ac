/* cpu/matmul.c — the matmul kernel: each batch's product through OpenBLAS sgemm, the operands
 * in place when their layout allows and gathered into float32 ledger scratch otherwise
 * (cpu/gemm.h). Batches are folded into one tall product when b is shared by all of them. Not a
 * GEMM of its own. */
#include "cpu/kernels.h"

#include <limits.h>
#include <string.h>

#include "cpu/context.h"
#include "cpu/gemm.h"
#include "cpu/rows.h"
#include "ops/matmul.h"

/* One operand's element strides for the geometry's roles (ops/matmul.h's tsri_matmul_side),
 * read from its evaluated layout: 0 where the side names no axis. */
typedef struct {
  int64_t batch_strides[TSR_MAX_NDIM]; /* elements per step of each batch axis; 0 where broadcast */
  int64_t row_stride, col_stride;      /* elements; a promoted 1-D axis gets stride 0 */
} matmul_strides;

static int64_t stride_of(const tsri_view *x, int axis) {
  return axis < 0 ? 0 : x->strides[axis];
}

static void strides_of(const tsri_view *x, const tsri_matmul_side *side, int batch_ndim,
                       matmul_strides *s) {
  for (int i = 0; i < batch_ndim; i++)
    s->batch_strides[i] = stride_of(x, side->batch_axes[i]);
  s->row_stride = stride_of(x, side->row_axis);
  s->col_stride = stride_of(x, side->col_axis);
}

/* When b is the same matrix for every batch and a's batches follow one another at a fixed row
 * stride (x [B, T, K] @ w [K, N]), the batches are rows of one [B*T, K] @ [K, N] product: one
 * sgemm instead of B small ones. Rewrites g and a's strides to that product and returns true. */
static bool fold_batches(tsri_matmul_geometry *g, matmul_strides *a, const matmul_strides *b) {
  if (g->batch_count <= 1) return false;
  int64_t rows = g->m, stride = a->row_stride;
  for (int i = g->batch_ndim - 1; i >= 0; i--) {
    if (g->batch_shape[i] == 1) continue;
    if (b->batch_strides[i] != 0) return false;
    if (rows == 1) { /* a single row has no row stride yet: the batch axis gives it one */
      stride = a->batch_strides[i];
    } else if (a->batch_strides[i] != rows * stride) {
      return false;
    }
    rows *= g->batch_shape[i];
  }
  if (rows > INT_MAX) return false;
  g->m = rows;
  a->row_stride = stride;
  g->batch_ndim = 0;
  g->batch_count = 1;
  return true;
}

/* One sgemm per batch, walking the batch axes like an odometer. c_scratch (M x N float32) is
 * where a non-float32 result is formed before it is rounded into the output. */
static void run_batches(const tsri_op *op, tsri_parallel_pool *pool, const tsri_matmul_geometry *g,
                        const matmul_strides *sa, const matmul_strides *sb, tsri_gemm_operand *a,
                        tsri_gemm_operand *b, tsri_buffer *c_scratch) {
  int64_t index[TSR_MAX_NDIM] = {0};
  int64_t offset_a = a->view->offset, offset_b = b->view->offset, mn = g->m * g->n;
  int64_t out_element = (int64_t)tsr_dtype_size(op->out.dtype);
  unsigned char *out = (unsigned char *)op->out.data;
  for (int64_t batch = 0; batch < g->batch_count; batch++) {
    tsri_gemm_operand_at(a, offset_a, g->m);
    tsri_gemm_operand_at(b, offset_b, g->k);
    float *c = c_scratch ? (float *)c_scratch->data : (float *)(void *)out + batch * mn;
    tsri_gemm(pool, a, b, false, g->m, g->n, g->k, 1.0f, 0.0f, c, g->n);
    if (c_scratch) tsri_cpu_store_f32(out + batch * mn * out_element, op->out.dtype, mn, c);
    for (int d = g->batch_ndim - 1; d >= 0; d--) {
      if (++index[d] < g->batch_shape[d]) {
        offset_a += sa->batch_strides[d];
        offset_b += sb->batch_strides[d];
        break;
      }
      offset_a -= (g->batch_shape[d] - 1) * sa->batch_strides[d];
      offset_b -= (g->batch_shape[d] - 1) * sb->batch_strides[d];
      index[d] = 0;
    }
  }
}

static tsr_status cpu_matmul(const tsri_op *op) {
  if (op->out.size == 0) return TSR_OK;
  const tsri_view *a = &op->in[0], *b = &op->in[1];
  tsri_matmul_geometry g = TSRI_PARAMS(op, tsri_matmul_params)->g;
  if (g.k == 0) { /* an empty sum: zeros (all-zero bits in every float dtype) */
    memset(op->out.data, 0, (size_t)op->out.size * tsr_dtype_size(op->out.dtype));
    return TSR_OK;
  }
  matmul_strides sa, sb;
  strides_of(a, &g.a, g.batch_ndim, &sa);
  strides_of(b, &g.b, g.batch_ndim, &sb);
  fold_batches(&g, &sa, &sb);
  tsri_gemm_operand op_a = {0}, op_b = {0};
  tsri_buffer *c_scratch = NULL;
  const tsri_cpu_context *cpu = NULL;
  tsr_status status = tsri_cpu_context_get(op->device, &cpu);
  if (status == TSR_OK)
    status = tsri_gemm_operand_init(&op_a, a, op->device, g.m, g.k, sa.row_stride, sa.col_stride);
  if (status == TSR_OK)
    status = tsri_gemm_operand_init(&op_b, b, op->device, g.k, g.n, sb.row_stride, sb.col_stride);
  if (status == TSR_OK && op->out.dtype != TSR_FLOAT32)
    status = tsri_cpu_scratch(op->device, g.m * g.n, &c_scratch);
  if (status == TSR_OK) run_batches(op, cpu->pool, &g, &sa, &sb, &op_a, &op_b, c_scratch);
  tsri_buffer_release(c_scratch);
  tsri_gemm_operand_free(&op_b);
  tsri_gemm_operand_free(&op_a);
  return status;
}

void tsri_cpu_register_matmul(tsri_kernel_fn *table) {
  table[TSRI_PRIM_MATMUL] = cpu_matmul;
}
