/* ops/layout.h — parameters of the layout primitives and the slice resolution that
 * ops/indexing.c shares (the view parameters themselves are in core/views.h). */
#ifndef TSR_OPS_LAYOUT_H
#define TSR_OPS_LAYOUT_H

#include "core/views.h"

/* TSRI_PRIM_CONCATENATE: the (non-negative) axis the inputs are joined along. */
typedef struct {
  int axis;
} tsri_concatenate_params;

/* Resolves a[start:stop:step] on axes 0..naxes-1 of `a` by Python's rules (later axes whole)
 * into params (non-negative starts, steps) and the slice's shape (a->ndim axes). TSR_ERR_INVALID
 * for `what` naming the values: NULL start/stop with naxes > 0, naxes outside [0, ndim], step 0. */
tsr_status tsri_slice_resolve(const char *what, const tsr_array *a, const int64_t *start,
                              const int64_t *stop, const int64_t *step, int naxes,
                              tsri_slice_params *params, int64_t *shape);

/* Normalizes `axis` (negative counts from the end) against ndim, or TSR_ERR_INVALID naming it
 * and the shape for `what`. */
tsr_status tsri_axis_resolve(const char *what, int axis, const tsr_array *a, int *resolved);

#endif
