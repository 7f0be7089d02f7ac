/* cuda/strided.c — building the strided layout kernels walk (cuda/strided.h). */
#include "cuda/strided.h"

#include <string.h>

_Static_assert(TSR_MAX_NDIM == 8, "cuda/kernels/strided.cuh is built for 8 axes");

void tsri_cuda_strided_init(tsri_cuda_strided *s, const tsri_view *shape) {
  memset(s, 0, sizeof *s);
  s->n = shape->size;
  s->ndim = shape->ndim;
  memcpy(s->shape, shape->shape, sizeof s->shape);
}

void tsri_cuda_strided_add(tsri_cuda_strided *s, const tsri_view *operand) {
  int k = s->noperands++;
  int lead = s->ndim - operand->ndim;
  for (int d = 0; d < s->ndim; d++) {
    int axis = d - lead;
    s->strides[k][d] = (axis < 0 || operand->shape[axis] == 1) ? 0 : operand->strides[axis];
  }
  s->offset[k] = operand->offset;
}
