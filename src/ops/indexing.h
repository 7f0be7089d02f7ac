/* ops/indexing.h — parameters of the indexing primitives (take, take_along_axis; slice_update
 * keeps core/views.h's tsri_slice_params). */
#ifndef TSR_OPS_INDEXING_H
#define TSR_OPS_INDEXING_H

#include "core/op.h"

/* TSRI_PRIM_TAKE and TSRI_PRIM_TAKE_ALONG_AXIS: the (non-negative) axis of `a` indexed. */
typedef struct {
  int axis;
} tsri_take_params;

#endif
