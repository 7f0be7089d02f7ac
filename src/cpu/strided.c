/* cpu/strided.c — broadcast strides and the row odometer (cpu/strided.h). */
#include "cpu/strided.h"

void tsri_broadcast_strides(const tsri_view *in, const tsri_view *out, int64_t *strides) {
  for (int i = 0; i < out->ndim; i++) {
    int axis = in->ndim - out->ndim + i;
    strides[i] = (axis < 0 || in->shape[axis] == 1) ? 0 : in->strides[axis];
  }
}

void tsri_row_walker_init(tsri_row_walker *w, const tsri_view *out, int noperands,
                          const int64_t *const *strides, const int64_t *base_offsets) {
  w->ndim = out->ndim;
  w->shape = out->shape;
  w->noperands = noperands;
  for (int d = 0; d < TSR_MAX_NDIM; d++)
    w->index[d] = 0;
  for (int k = 0; k < noperands; k++) {
    w->strides[k] = strides[k];
    w->offset[k] = base_offsets[k];
  }
}

bool tsri_row_walker_next(tsri_row_walker *w) {
  for (int d = w->ndim - 2; d >= 0; d--) {
    if (++w->index[d] < w->shape[d]) {
      for (int k = 0; k < w->noperands; k++)
        w->offset[k] += w->strides[k][d];
      return true;
    }
    for (int k = 0; k < w->noperands; k++)
      w->offset[k] -= (w->shape[d] - 1) * w->strides[k][d];
    w->index[d] = 0;
  }
  return false;
}

void tsri_for_each_unary_row(const tsri_op *op, tsri_unary_row_fn fn, void *ctx) {
  const tsri_view *in = &op->in[0], *out = &op->out;
  const int64_t *strides[2] = {in->strides, out->strides};
  int64_t offsets[2] = {in->offset, out->offset};
  tsri_row_walker walker;
  tsri_row_walker_init(&walker, out, 2, strides, offsets);
  int last = out->ndim - 1;
  int64_t n = last >= 0 ? out->shape[last] : 1, stride = last >= 0 ? in->strides[last] : 0;
  int64_t in_size = (int64_t)tsr_dtype_size(in->dtype);
  int64_t out_size = (int64_t)tsr_dtype_size(out->dtype);
  const unsigned char *src = (const unsigned char *)in->data;
  unsigned char *dst = (unsigned char *)out->data;
  do {
    fn(op, src + walker.offset[0] * in_size, stride, dst + walker.offset[1] * out_size, n, ctx);
  } while (tsri_row_walker_next(&walker));
}
