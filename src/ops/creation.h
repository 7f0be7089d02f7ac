/* ops/creation.h — parameters of the creation primitives (ops/creation.c builds the nodes, the
 * backends' creation kernels read them). ASTYPE has none: its target is the node's dtype. */
#ifndef TSR_OPS_CREATION_H
#define TSR_OPS_CREATION_H

#include "core/primitive.h"
#include "tessera/base.h"

/* TSRI_PRIM_FULL: every element is `value` converted to `dtype` (the node's dtype) as astype
 * converts a float64. */
typedef struct {
  double value;
  tsr_dtype dtype;
} tsri_full_params;

/* TSRI_PRIM_ARANGE: element i is start + i * step in float64, then converted to the node's
 * dtype; the element count is the node's shape. */
typedef struct {
  double start;
  double step;
} tsri_arange_params;

#endif
