/* ops/matmul.h — tsr_matmul's shape rules (NumPy's promotion of 1-D operands, broadcasting of
 * batch axes), shared by the constructor and every backend's kernel so the two cannot disagree.
 * Not the arithmetic: that is the backends' (cpu/matmul.c). */
#ifndef TSR_OPS_MATMUL_H
#define TSR_OPS_MATMUL_H

#include "core/array.h"

/* One operand seen as a stack of matrices over the broadcast batch axes. */
typedef struct {
  int64_t batch_strides[TSR_MAX_NDIM]; /* elements per step of each batch axis; 0 where broadcast */
  int64_t row_stride, col_stride;      /* elements; a promoted 1-D axis gets stride 0 */
} tsri_matmul_side;

/* out[batch..., M, N] = a[batch..., M, K] @ b[batch..., K, N] over batch_shape. */
typedef struct {
  int64_t m, n, k;
  int batch_ndim;
  int64_t batch_shape[TSR_MAX_NDIM];
  int64_t batch_count; /* product of batch_shape */
  tsri_matmul_side a, b;
  int out_ndim; /* batch axes, then M unless a is 1-D, then N unless b is 1-D */
  int64_t out_shape[TSR_MAX_NDIM];
} tsri_matmul_geometry;

/* The geometry of a @ b from their shapes and (current) strides, or TSR_ERR_INVALID naming both
 * shapes: a 0-d operand, contracting axes that differ, batch axes that do not broadcast, or M, N
 * or K beyond what a 32-bit BLAS int can index. */
tsr_status tsri_matmul_geometry_of(const tsr_array *a, const tsr_array *b, tsri_matmul_geometry *g);

#endif
