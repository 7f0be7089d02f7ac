/* ops/indexing.h — parameters of the indexing primitives (take, take_along_axis; slice_update
 * keeps core/views.h's tsri_slice_params). */
#ifndef TSR_OPS_INDEXING_H
#define TSR_OPS_INDEXING_H

#include <stdbool.h>

#include "core/op.h"

/* TSRI_PRIM_TAKE and TSRI_PRIM_TAKE_ALONG_AXIS: the (non-negative) axis of `a` indexed. */
typedef struct {
  int axis;
  /* Every index is known at construction to lie in [0, a's length on the axis)
     (core/value_range.h): a backend may skip its bounds check (the CUDA one reads a device flag
     back, a stream synchronization). */
  bool indices_in_range;
} tsri_take_params;

#endif
