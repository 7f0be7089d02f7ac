/* cuda/lines.c — building the lines layout kernels walk (cuda/lines.h). */
#include "cuda/lines.h"

#include <string.h>

#include "cuda/launch.h"

_Static_assert(sizeof(tsri_cuda_lines) == 336, "cuda/kernels/lines.cuh mirrors this layout");
_Static_assert(TSR_MAX_NDIM == 8, "cuda/kernels/lines.cuh is built for 8 axes");

/* The stride of `operand` along axis `d` of the layout's `ndim` axes, as broadcast to it. */
static int64_t broadcast_stride(const tsri_view *operand, int ndim, int d) {
  int axis = d - (ndim - operand->ndim);
  return (axis < 0 || operand->shape[axis] == 1) ? 0 : operand->strides[axis];
}

void tsri_cuda_lines_init(tsri_cuda_lines *l, const tsri_view *shape, int axis,
                          const tsri_view *const *operands, int noperands) {
  memset(l, 0, sizeof *l);
  l->n = shape->shape[axis];
  l->lines = l->n > 0 ? shape->size / l->n : 0;
  l->noperands = noperands;
  l->lanes = 1;
  for (int d = 0; d < shape->ndim; d++) {
    if (d == axis) continue;
    for (int k = 0; k < noperands; k++)
      l->strides[k][l->ndim] = broadcast_stride(operands[k], shape->ndim, d);
    l->shape[l->ndim++] = shape->shape[d];
  }
  for (int k = 0; k < noperands; k++) {
    l->offset[k] = operands[k]->offset;
    l->step[k] = broadcast_stride(operands[k], shape->ndim, axis);
  }
}

void tsri_cuda_lines_pick_lanes(tsri_cuda_lines *l, int64_t block_from) {
  bool side_by_side = false;
  for (int d = 0; d < l->ndim; d++)
    side_by_side |= l->shape[d] > 1 && (l->strides[0][d] == 1 || l->strides[0][d] == -1);
  side_by_side &= l->step[0] != 1 && l->step[0] != -1 && l->lines >= TSRI_CUDA_LINES_BLOCK;
  if (side_by_side || l->n < 16)
    l->lanes = 1; /* a short line is cheaper whole in one thread than spread over idle lanes */
  else
    l->lanes = l->n > block_from ? TSRI_CUDA_LINES_BLOCK : 32;
}

unsigned tsri_cuda_lines_blocks(const tsri_cuda_lines *l) {
  int64_t per_block = TSRI_CUDA_LINES_BLOCK / l->lanes;
  return tsri_cuda_blocks_for((l->lines + per_block - 1) / per_block, 1);
}
