/* cpu/gemm.h — float32 GEMM operands for OpenBLAS: a strided matrix of any dtype is handed to
 * cblas_sgemm as it lies when it is float32 and row-major or column-major (the latter as
 * CblasTrans, never a copy), and is otherwise gathered into float32 scratch on the ledger.
 * Shared by cpu/matmul.c and cpu/attention.c. Not the GEMM itself: OpenBLAS does that. */
#ifndef TSR_CPU_GEMM_H
#define TSR_CPU_GEMM_H

#include "core/op.h"
#include "cpu/parallel.h"
#include "memory/buffer.h"

typedef struct {
  /* What sgemm reads, valid after tsri_gemm_operand_at: the matrix is `data` with leading
     dimension `ld`, transposed (CblasTrans) when it lies column-major. */
  const float *data;
  int ld;
  bool transposed;

  /* The source: a rows x cols matrix of `view` with these element strides. */
  const tsri_view *view;
  int64_t rows, cols, row_stride, col_stride;
  bool direct;           /* read in place: float32, unit stride on one axis */
  tsri_buffer *scratch;  /* rows x cols float32 when gathered */
  int64_t loaded_offset; /* source offset now in scratch (-1: none), so a broadcast operand is
                            gathered once, not once per batch */
  int64_t loaded_rows;
} tsri_gemm_operand;

/* Decides how `view`'s matrices of at most max_rows x cols will reach sgemm and allocates the
 * scratch they need (through the ledger of `device`, the op's: TSR_ERR_CAP/NOMEM with the
 * message set). The view must outlive the operand. */
tsr_status tsri_gemm_operand_init(tsri_gemm_operand *op, const tsri_view *view, tsr_device device,
                                  int64_t max_rows, int64_t cols, int64_t row_stride,
                                  int64_t col_stride);
/* Points the operand at the matrix of `rows` rows starting at element `offset` of the view's
 * data, gathering it when it cannot be read in place. */
void tsri_gemm_operand_at(tsri_gemm_operand *op, int64_t offset, int64_t rows);
void tsri_gemm_operand_free(tsri_gemm_operand *op);

/* C (rows x cols, leading dimension ldc) = alpha * op(A) @ op(B) + beta * C: the cblas call with
 * each operand's own transposition, on `pool` (the device's, cpu/context.h). */
void tsri_gemm(tsri_parallel_pool *pool, const tsri_gemm_operand *a, const tsri_gemm_operand *b,
               bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, float beta, float *c,
               int64_t ldc);

/* Scratch float32 through the ledger, for kernels that need working space. */
tsr_status tsri_cpu_scratch(tsr_device device, int64_t count, tsri_buffer **out);

#endif
