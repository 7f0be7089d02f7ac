/* core/views.h — the view primitives: reshape, transpose, slice, broadcast_to and quant_part
 * only touch node metadata (offset, strides) and buffer references, so core runs them itself for
 * every device, with no kernel. Their parameters live here rather than in ops/ because core may
 * not depend on ops (DESIGN.md's layer order); ops/layout.h and ops/quant.h include this header. */
#ifndef TSR_CORE_VIEWS_H
#define TSR_CORE_VIEWS_H

#include "core/array.h"

/* TSRI_PRIM_RESHAPE (target: the node's shape). tsr_reshape and tsr_contiguous promise a packed
 * row-major result: a contiguous input is aliased, any other is copied. expand_dims and squeeze
 * set keep_strides: whatever layout can be re-strided without moving data stays a view. */
typedef struct {
  bool keep_strides;
} tsri_reshape_params;

/* TSRI_PRIM_TRANSPOSE: output axis i is input axis axes[i] (a permutation of 0..ndim-1). */
typedef struct {
  int axes[TSR_MAX_NDIM];
} tsri_transpose_params;

/* TSRI_PRIM_SLICE (and TSRI_PRIM_SLICE_UPDATE): per axis, the first element taken (resolved to
 * [0, dim), or 0 when the axis takes nothing) and the step; the element count per axis is the
 * slice's shape (the node's shape for slice, the update's for slice_update). */
typedef struct {
  int64_t start[TSR_MAX_NDIM];
  int64_t step[TSR_MAX_NDIM];
} tsri_slice_params;

/* TSRI_PRIM_QUANT_PART: a view of one part of its input blob (the node's dtype and shape), packed
   row-major from `byte_offset`; it keeps the blob's buffer alive. */
typedef struct {
  int part; /* tsri_quant_part (ops/quant.h) */
  int64_t byte_offset;
} tsri_quant_part_params;

/* True for the primitives above: core resolves them (tsri_view_run), no backend has a kernel. */
bool tsri_primitive_is_view(tsri_primitive p);
/* Whether core runs nodes of p itself, never a backend's kernel: the views and a step's run
   (core/step.h). */
bool tsri_primitive_in_core(tsri_primitive p);
/* Runs a view node: sets node->buffer (a new reference to the input's buffer, or for a reshape of
 * a layout that cannot be re-strided, a contiguous copy made by the device's COPY kernel),
 * node->offset and node->strides from the input's evaluated layout. TSR_OK, or the copy's error.
 */
tsr_status tsri_view_run(tsr_array *node);

/* Strides that give `shape` the same elements, in row-major order, as the layout (in_shape,
 * in_strides) without moving data (NumPy's no-copy reshape); false when no such strides exist.
 * The element counts must be equal and nonzero. */
bool tsri_view_restride(const int64_t *in_shape, const int64_t *in_strides, int in_ndim,
                        const int64_t *shape, int ndim, int64_t *strides);

#endif
