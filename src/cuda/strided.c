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

void tsri_cuda_strided_simplify(tsri_cuda_strided *s) {
  int kept = 0;
  for (int d = 0; d < s->ndim; d++) {
    if (s->shape[d] == 1) continue;
    bool merge = kept > 0;
    for (int k = 0; merge && k < s->noperands; k++)
      merge = s->strides[k][kept - 1] == s->strides[k][d] * s->shape[d];
    int to = merge ? kept - 1 : kept++;
    s->shape[to] = merge ? s->shape[to] * s->shape[d] : s->shape[d];
    for (int k = 0; k < s->noperands; k++)
      s->strides[k][to] = s->strides[k][d];
  }
  for (int d = kept; d < TSR_MAX_NDIM; d++) {
    s->shape[d] = 1;
    for (int k = 0; k < s->noperands; k++)
      s->strides[k][d] = 0;
  }
  s->ndim = kept;
}
