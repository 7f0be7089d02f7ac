/* ops/indexing.h — parameters of the indexing primitives (take, take_along_axis, slice_update),
 * and the check of the one-element position scalars the dynamic ops read when they run. */
#ifndef TSR_OPS_INDEXING_H
#define TSR_OPS_INDEXING_H

#include "core/op.h"
#include "core/views.h"

/* TSRI_PRIM_TAKE and TSRI_PRIM_TAKE_ALONG_AXIS: the (non-negative) axis of `a` indexed. */
typedef struct {
  int axis;
} tsri_take_params;

/* TSRI_PRIM_SLICE_UPDATE. Inputs: dst, update, and for tsr_slice_update_dynamic the start (an
   int32/int64 array of one element). When dynamic_axis >= 0, the start on that axis is the
   start input's value clamped into [0, dst.shape[axis] - update.shape[axis]] and slice.start
   there is 0; every step is 1. */
typedef struct {
  tsri_slice_params slice;
  int dynamic_axis; /* -1: the slice is all static */
} tsri_slice_update_params;

/* A dynamic op's position scalar (rope's offset, slice_update's start, sdpa's length): int32 or
   int64 with exactly one element, any shape. TSR_ERR_INVALID naming `what`, `name`, the dtype
   and the shape otherwise (NULL included). */
tsr_status tsri_position_scalar_check(const char *what, const char *name, const tsr_array *scalar);

#endif
