/* ops/matmul.h — the parameters of a matmul node: its geometry under tsr_matmul's shape rules
 * (NumPy's promotion of 1-D operands, broadcasting of batch axes), derived once by the
 * constructor (ops/matmul.c) and read by every backend's kernel so the two cannot disagree. Not
 * the arithmetic: that is the backends' (cpu/matmul.c). */
#ifndef TSR_OPS_MATMUL_H
#define TSR_OPS_MATMUL_H

#include <stdbool.h>
#include <stdint.h>

#include "tessera/array.h"

/* One operand seen as a stack of matrices over the broadcast batch axes: the operand's axis that
 * each batch axis, the rows and the columns step along, or -1 where the step is 0 (a broadcast
 * batch axis, the axis a promoted 1-D operand lacks). The strides themselves are the operand's
 * evaluated layout, known only when the node runs (core/op.h's input views). */
typedef struct {
  int batch_axes[TSR_MAX_NDIM];
  int row_axis, col_axis;
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

/* TSRI_PRIM_MATMUL: inputs a and b (any layout); M, N and K fit a 32-bit BLAS int. */
typedef struct {
  tsri_matmul_geometry g;
} tsri_matmul_params;

#endif
