/* core/views.h — the view kernels: reshape, transpose, slice and broadcast_to only touch node
 * metadata (offset, strides) and buffer references, so every backend registers these same
 * functions. Their parameters live here rather than in ops/layout.h because core may not depend
 * on ops (DESIGN.md's layer order); ops/layout.h includes this header. */
#ifndef TSR_CORE_VIEWS_H
#define TSR_CORE_VIEWS_H

#include "core/array.h"

/* TSRI_PRIM_RESHAPE (target: the node's shape). tsr_reshape and tsr_contiguous promise a packed
 * row-major result: a contiguous input is aliased, any other is copied. expand_dims and squeeze
 * set keep_strides: whatever layout can be re-strided without moving data stays a view. */
typedef struct {
  bool keep_strides;
} tsri_reshape_params;
TSRI_PARAMS_FIT(tsri_reshape_params);

/* TSRI_PRIM_TRANSPOSE: output axis i is input axis axes[i] (a permutation of 0..ndim-1). */
typedef struct {
  int axes[TSR_MAX_NDIM];
} tsri_transpose_params;
TSRI_PARAMS_FIT(tsri_transpose_params);

/* TSRI_PRIM_SLICE (and TSRI_PRIM_SLICE_UPDATE): per axis, the first element taken (resolved to
 * [0, dim), or 0 when the axis takes nothing) and the step; the element count per axis is the
 * slice's shape (the node's shape for slice, the update's for slice_update). */
typedef struct {
  int64_t start[TSR_MAX_NDIM];
  int64_t step[TSR_MAX_NDIM];
} tsri_slice_params;
TSRI_PARAMS_FIT(tsri_slice_params);

/* Each sets node->buffer (a new reference to the input's buffer, or for reshape of a layout
 * that cannot be re-strided, a contiguous copy made by the device's COPY kernel), node->offset
 * and node->strides from the input's evaluated layout. TSR_OK, or the copy's error. */
tsr_status tsri_view_reshape(tsr_array *node);      /* tsri_reshape_params */
tsr_status tsri_view_transpose(tsr_array *node);    /* tsri_transpose_params */
tsr_status tsri_view_slice(tsr_array *node);        /* tsri_slice_params */
tsr_status tsri_view_broadcast_to(tsr_array *node); /* no params: the target is node->shape */

/* Strides that give `shape` the same elements, in row-major order, as the layout (in_shape,
 * in_strides) without moving data (NumPy's no-copy reshape); false when no such strides exist.
 * The element counts must be equal and nonzero. */
bool tsri_view_restride(const int64_t *in_shape, const int64_t *in_strides, int in_ndim,
                        const int64_t *shape, int ndim, int64_t *strides);

#endif
