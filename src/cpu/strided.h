/* cpu/strided.h — walking the rows of an n-d output together with broadcast inputs. */
#ifndef TSR_CPU_STRIDED_H
#define TSR_CPU_STRIDED_H

#include "core/op.h"

/* Strides (elements) of `in` seen through the output's shape: 0 on broadcast axes. */
void tsri_broadcast_strides(const tsri_view *in, const tsri_view *out, int64_t *strides);

/* An odometer over every axis but the last: each step gives the element offset of the row's
 * start in up to 3 operands. */
typedef struct {
  int ndim;
  const int64_t *shape;
  const int64_t *strides[3];
  int64_t index[TSR_MAX_NDIM];
  int64_t offset[3];
  int noperands;
} tsri_row_walker;

void tsri_row_walker_init(tsri_row_walker *w, const tsri_view *out, int noperands,
                          const int64_t *const *strides, const int64_t *base_offsets);
/* Moves to the next row; false after the last one. */
bool tsri_row_walker_next(tsri_row_walker *w);

/* One row of a one-input op: n elements of the input from `src` (stride in elements) into the
 * output's contiguous row at `dst`. */
typedef void (*tsri_unary_row_fn)(const tsri_op *op, const unsigned char *src, int64_t src_stride,
                                  unsigned char *dst, int64_t n, void *ctx);
/* Calls fn on every row of op->out (packed rows) and of op->in[0], in any layout: the walk astype,
 * the unary ops and the strided copy share. */
void tsri_for_each_unary_row(const tsri_op *op, tsri_unary_row_fn fn, void *ctx);

#endif
