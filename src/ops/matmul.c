/* ops/matmul.c — tsr_matmul: argument checks, the batched geometry the node keeps as its
 * parameters (ops/matmul.h) and the result dtype. The product itself is the backends'
 * (cpu/matmul.c). */
#include "ops/matmul.h"

#include <limits.h>

#include "base/dtype.h"
#include "base/shape.h"
#include "base/status.h"
#include "core/array.h"
#include "tessera/ops.h"

static tsr_status mismatch(const tsr_array *a, const tsr_array *b, const char *why, int axis,
                           int64_t da, int64_t db) {
  char sa[96], sb[96];
  return tsri_error(TSR_ERR_INVALID, "matmul: a %s and b %s: %s (axis %d: %lld vs %lld)",
                    tsri_shape_str(a->shape, a->ndim, sa, sizeof sa),
                    tsri_shape_str(b->shape, b->ndim, sb, sizeof sb), why, axis, (long long)da,
                    (long long)db);
}

/* Batch axes of one operand aligned at the right of the broadcast batch shape. */
static void side_batch_axes(const tsr_array *x, int x_batch_ndim, int batch_ndim,
                            tsri_matmul_side *side) {
  for (int i = 0; i < batch_ndim; i++) {
    int axis = x_batch_ndim - batch_ndim + i;
    side->batch_axes[i] = (axis < 0 || x->shape[axis] == 1) ? -1 : axis;
  }
}

static tsr_status broadcast_batch(const tsr_array *a, const tsr_array *b, int a_batch, int b_batch,
                                  tsri_matmul_geometry *g) {
  g->batch_ndim = a_batch > b_batch ? a_batch : b_batch;
  g->batch_count = 1;
  for (int i = 0; i < g->batch_ndim; i++) {
    int ia = a_batch - g->batch_ndim + i, ib = b_batch - g->batch_ndim + i;
    int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
    if (da != db && da != 1 && db != 1)
      return mismatch(a, b, "batch axes do not broadcast", i - g->batch_ndim - 2, da, db);
    g->batch_shape[i] = da == 1 ? db : da;
  }
  if (!tsri_dims_count(g->batch_shape, g->batch_ndim, 1, &g->batch_count)) {
    char text[200];
    return tsri_error(TSR_ERR_INVALID, "matmul: the broadcast batch shape %s overflows int64",
                      tsri_shape_str(g->batch_shape, g->batch_ndim, text, sizeof text));
  }
  side_batch_axes(a, a_batch, g->batch_ndim, &g->a);
  side_batch_axes(b, b_batch, g->batch_ndim, &g->b);
  return TSR_OK;
}

/* The geometry of a @ b from their shapes, or TSR_ERR_INVALID naming both shapes: a 0-d operand,
 * contracting axes that differ, batch axes that do not broadcast, or M, N or K beyond what a
 * 32-bit BLAS int can index. */
static tsr_status matmul_geometry_of(const tsr_array *a, const tsr_array *b,
                                     tsri_matmul_geometry *g) {
  if (a->ndim == 0 || b->ndim == 0)
    return tsri_error(TSR_ERR_INVALID, "matmul: %s is 0-d (a scalar has no matrix axes)",
                      a->ndim == 0 ? "a" : "b");
  /* NumPy: a 1-D a is a row [1, K], a 1-D b a column [K, 1]; the added axis is dropped after. */
  bool a_vector = a->ndim == 1, b_vector = b->ndim == 1;
  int la = a->ndim - 1, lb = b->ndim - 1;
  g->m = a_vector ? 1 : a->shape[la - 1];
  g->k = a->shape[la];
  int64_t kb = b_vector ? b->shape[0] : b->shape[lb - 1];
  g->n = b_vector ? 1 : b->shape[lb];
  if (g->k != kb) return mismatch(a, b, "the contracting axes differ", -1, g->k, kb);
  if (g->m > INT_MAX || g->n > INT_MAX || g->k > INT_MAX)
    return tsri_error(TSR_ERR_INVALID, "matmul: M %lld, N %lld or K %lld exceeds %d (BLAS int)",
                      (long long)g->m, (long long)g->n, (long long)g->k, INT_MAX);
  g->a.row_axis = a_vector ? -1 : la - 1;
  g->a.col_axis = la;
  g->b.row_axis = b_vector ? 0 : lb - 1;
  g->b.col_axis = b_vector ? -1 : lb;
  tsr_status status =
      broadcast_batch(a, b, a_vector ? 0 : a->ndim - 2, b_vector ? 0 : b->ndim - 2, g);
  if (status != TSR_OK) return status;
  g->out_ndim = 0;
  for (int i = 0; i < g->batch_ndim; i++)
    g->out_shape[g->out_ndim++] = g->batch_shape[i];
  if (!a_vector) g->out_shape[g->out_ndim++] = g->m;
  if (!b_vector) g->out_shape[g->out_ndim++] = g->n;
  return TSR_OK;
}

static tsr_status check_operand(const char *name, const tsr_array *x) {
  if (!tsri_dtype_valid(x->dtype) || x->dtype == TSR_BOOL)
    return tsri_error(TSR_ERR_INVALID,
                      "matmul: %s has dtype %s (float or integer needed; convert bool first)", name,
                      tsr_dtype_name(x->dtype));
  return TSR_OK;
}

/* Float and integer operands (bool is rejected: NumPy's logical product is not what a float
 * sgemm gives); the result is their promoted dtype, or float32 when that is an integer. K = 0
 * gives zeros. */
tsr_status tsr_matmul(tsr_array **out, tsr_array *a, tsr_array *b, tsr_stream *s) {
  if (!out || !a || !b)
    return tsri_error(TSR_ERR_INVALID, "matmul: %s is NULL", !out ? "out" : !a ? "a" : "b");
  tsr_status status = check_operand("a", a);
  if (status == TSR_OK) status = check_operand("b", b);
  if (status != TSR_OK) return status;
  tsri_matmul_params p = {0};
  status = matmul_geometry_of(a, b, &p.g);
  if (status != TSR_OK) return status;
  tsr_dtype dtype = tsri_dtype_promote(a->dtype, b->dtype);
  if (!tsri_dtype_is_float(dtype)) dtype = TSR_FLOAT32; /* integer products accumulate in float */
  tsr_array *inputs[2] = {a, b};
  return tsri_node_new(out, TSRI_PRIM_MATMUL, &p, sizeof p, dtype, p.g.out_shape, p.g.out_ndim,
                       inputs, 2, s);
}
