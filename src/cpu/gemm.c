/* cpu/gemm.c — float32 GEMM operands for OpenBLAS (cpu/gemm.h): in place when the layout
 * allows, gathered into ledger scratch otherwise. */
#include "cpu/gemm.h"

#include <limits.h>
#include <stdio.h>

#include "base/status.h"
#include "cpu/rows.h"
#include "cpu/sgemm.h"

tsr_status tsri_cpu_scratch(tsr_device device, int64_t count, tsri_buffer **out) {
  uint64_t bytes = (uint64_t)count * sizeof(float);
  tsr_status status = tsri_buffer_alloc(device, bytes, out);
  if (status == TSR_OK) return TSR_OK;
  char message[TSR_ERROR_MAX];
  snprintf(message, sizeof message, "float32 scratch of %llu bytes: %s", (unsigned long long)bytes,
           tsr_last_error());
  return tsri_error_copy(status, message);
}

static int64_t at_least_one(int64_t v) {
  return v > 1 ? v : 1;
}

/* Row-major (CblasNoTrans) in place: unit column stride, rows at least `cols` apart. */
static bool fits_row_major(const tsri_gemm_operand *op, int64_t *ld) {
  if (op->cols > 1 && op->col_stride != 1) return false;
  *ld = op->rows <= 1 ? at_least_one(op->cols) : op->row_stride;
  return *ld >= at_least_one(op->cols) && *ld <= INT_MAX;
}

/* Column-major (CblasTrans) in place: unit row stride, columns at least `rows` apart. */
static bool fits_col_major(const tsri_gemm_operand *op, int64_t *ld) {
  if (op->rows > 1 && op->row_stride != 1) return false;
  *ld = op->cols <= 1 ? at_least_one(op->rows) : op->col_stride;
  return *ld >= at_least_one(op->rows) && *ld <= INT_MAX;
}

tsr_status tsri_gemm_operand_init(tsri_gemm_operand *op, const tsri_view *view, tsr_device device,
                                  int64_t max_rows, int64_t cols, int64_t row_stride,
                                  int64_t col_stride) {
  *op = (tsri_gemm_operand){.view = view,
                            .rows = max_rows,
                            .cols = cols,
                            .row_stride = row_stride,
                            .col_stride = col_stride,
                            .loaded_offset = -1};
  int64_t ld = 0;
  if (view->dtype == TSR_FLOAT32) {
    if (fits_row_major(op, &ld)) {
      op->direct = true;
    } else if (fits_col_major(op, &ld)) {
      op->direct = op->transposed = true;
    }
    op->ld = (int)ld;
    if (op->direct) return TSR_OK;
  }
  /* A strided, broadcast, reversed or non-float32 matrix: gathered per use. */
  return tsri_cpu_scratch(device, max_rows * cols, &op->scratch);
}

/* Gathers rows x cols elements into scratch in the order that walks the source's smaller stride
 * innermost: a transposed float16 weight is read along its rows, then used as CblasTrans. */
static void gather(tsri_gemm_operand *op, int64_t offset, int64_t rows) {
  const tsri_view *x = op->view;
  int64_t element = (int64_t)tsr_dtype_size(x->dtype);
  const unsigned char *base = (const unsigned char *)x->data;
  float *dst = (float *)op->scratch->data;
  int64_t abs_row = op->row_stride < 0 ? -op->row_stride : op->row_stride;
  int64_t abs_col = op->col_stride < 0 ? -op->col_stride : op->col_stride;
  op->transposed = abs_row < abs_col;
  if (op->transposed) {
    for (int64_t c = 0; c < op->cols; c++)
      tsri_cpu_load_f32(base + (offset + c * op->col_stride) * element, x->dtype, op->row_stride,
                        rows, dst + c * rows);
    op->ld = (int)at_least_one(rows);
  } else {
    for (int64_t r = 0; r < rows; r++)
      tsri_cpu_load_f32(base + (offset + r * op->row_stride) * element, x->dtype, op->col_stride,
                        op->cols, dst + r * op->cols);
    op->ld = (int)at_least_one(op->cols);
  }
  op->data = dst;
}

void tsri_gemm_operand_at(tsri_gemm_operand *op, int64_t offset, int64_t rows) {
  if (op->direct) {
    op->data = (const float *)op->view->data + offset;
    return;
  }
  if (offset == op->loaded_offset && rows == op->loaded_rows) return;
  gather(op, offset, rows);
  op->loaded_offset = offset;
  op->loaded_rows = rows;
}

void tsri_gemm_operand_free(tsri_gemm_operand *op) {
  tsri_buffer_release(op->scratch);
  op->scratch = NULL;
}

void tsri_gemm(tsri_parallel_pool *pool, const tsri_gemm_operand *a, const tsri_gemm_operand *b,
               bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, float beta, float *c,
               int64_t ldc) {
  tsri_sgemm(pool, a->transposed, b->transposed != transpose_b, m, n, k, alpha, a->data, a->ld,
             b->data, b->ld, beta, c, ldc);
}
