/* cuda/strided.h — the host side of cuda/kernels/strided.cuh: an op's operands as one strided
 * layout over its output's shape (inputs broadcast to it), passed to a kernel by value. */
#ifndef TSR_CUDA_STRIDED_H
#define TSR_CUDA_STRIDED_H

#include "core/op.h"

#define TSRI_CUDA_STRIDED_MAX_OPERANDS 4

/* The same layout as the kernels' struct tsr_strided (cuda/kernels/strided.cuh). */
typedef struct {
  int64_t n;
  int ndim, noperands;
  int64_t shape[TSR_MAX_NDIM];
  int64_t strides[TSRI_CUDA_STRIDED_MAX_OPERANDS][TSR_MAX_NDIM];
  int64_t offset[TSRI_CUDA_STRIDED_MAX_OPERANDS];
} tsri_cuda_strided;

/* A layout over `shape`'s view (its shape and element count; no operand yet). */
void tsri_cuda_strided_init(tsri_cuda_strided *s, const tsri_view *shape);
/* Adds an operand: its strides seen through the layout's shape (0 on broadcast axes). */
void tsri_cuda_strided_add(tsri_cuda_strided *s, const tsri_view *operand);
/* Fewer divisions per element: drops the axes of extent 1 and merges axis d into the kept axis
 * before it when every operand steps across the pair as across one axis (outer stride = inner
 * stride x inner extent). Row-major element order is kept, so a packed output indexed by its
 * position is still right. Unused axes end with extent 1 and stride 0 (a 0-d or flat layout
 * reads strides[k][0]). */
void tsri_cuda_strided_simplify(tsri_cuda_strided *s);

#endif
