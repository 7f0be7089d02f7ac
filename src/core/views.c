/* core/views.c — the view primitives (core/views.h): an output that shares its input's buffer with
 * its own offset and strides, computed when the node runs from the input's evaluated layout (a
 * lazy input's layout is only known then; it may itself be a view). Device-independent: no
 * element is touched here, except by the device's COPY kernel when a reshape cannot re-stride. */
#include "core/views.h"

#include <string.h>

#include "base/status.h"
#include "core/dispatch.h"

/* A view of `in`'s buffer. Zero-size results get packed strides and the input's offset, so they
 * read as contiguous whatever they were cut from. */
static void alias_input(tsr_array *node, const tsr_array *in, int64_t offset) {
  node->buffer = tsri_buffer_retain(in->buffer);
  node->offset = offset;
  if (node->size == 0) {
    node->offset = in->offset;
    tsri_contiguous_strides(node->shape, node->ndim, node->strides);
  }
}

bool tsri_view_restride(const int64_t *in_shape, const int64_t *in_strides, int in_ndim,
                        const int64_t *shape, int ndim, int64_t *strides) {
  /* NumPy's _attempt_nocopy_reshape: size-1 input axes carry no layout, so drop them; then match
     runs of input axes to runs of output axes with equal products, and require each input run to
     be one evenly strided block. */
  int64_t old_dims[TSR_MAX_NDIM], old_strides[TSR_MAX_NDIM];
  int old_ndim = 0;
  for (int i = 0; i < in_ndim; i++) {
    if (in_shape[i] == 1) continue;
    old_dims[old_ndim] = in_shape[i];
    old_strides[old_ndim++] = in_strides[i];
  }
  int oi = 0, oj = 1, ni = 0, nj = 1;
  while (ni < ndim && oi < old_ndim) {
    int64_t new_product = shape[ni], old_product = old_dims[oi];
    while (new_product != old_product) {
      if (new_product < old_product)
        new_product *= shape[nj++];
      else
        old_product *= old_dims[oj++];
    }
    for (int k = oi; k < oj - 1; k++)
      if (old_strides[k] != old_dims[k + 1] * old_strides[k + 1]) return false;
    strides[nj - 1] = old_strides[oj - 1];
    for (int k = nj - 1; k > ni; k--)
      strides[k - 1] = strides[k] * shape[k];
    ni = nj++;
    oi = oj++;
  }
  /* Trailing size-1 output axes: any stride reads the same element; keep them packed. */
  int64_t last_stride = ni >= 1 ? strides[ni - 1] : 1;
  for (int k = ni; k < ndim; k++)
    strides[k] = last_stride;
  return true;
}

/* A contiguous copy of `in` made by the device's own COPY kernel; its buffer becomes node's. */
static tsr_status copy_input(tsr_array *node, const tsr_array *in) {
  tsri_op op = {
      .primitive = TSRI_PRIM_COPY, .ninputs = 1, .device = node->device, .stream = node->stream};
  tsri_view_of(in, &op.in[0]);
  tsri_buffer *buffer = NULL;
  tsr_status status = tsri_op_alloc_out(&op, in->dtype, in->shape, in->ndim, &buffer);
  if (status == TSR_OK) status = tsri_kernel_call(&op);
  if (status != TSR_OK) {
    tsri_buffer_release(buffer);
    return status;
  }
  node->buffer = buffer;
  node->offset = 0;
  tsri_contiguous_strides(node->shape, node->ndim, node->strides);
  return TSR_OK;
}

static tsr_status view_reshape(tsr_array *node) {
  tsr_array *in = node->inputs[0];
  bool keep_strides = TSRI_PARAMS(node, tsri_reshape_params)->keep_strides;
  bool packed_input = node->size == 0 || tsri_array_is_contiguous(in);
  if (!packed_input && !keep_strides) return copy_input(node, in);
  if (packed_input) {
    tsri_contiguous_strides(node->shape, node->ndim, node->strides);
  } else if (!tsri_view_restride(in->shape, in->strides, in->ndim, node->shape, node->ndim,
                                 node->strides)) {
    return copy_input(node, in);
  }
  alias_input(node, in, in->offset);
  return TSR_OK;
}

static tsr_status view_transpose(tsr_array *node) {
  const tsri_transpose_params *p = TSRI_PARAMS(node, tsri_transpose_params);
  const tsr_array *in = node->inputs[0];
  for (int i = 0; i < node->ndim; i++)
    node->strides[i] = in->strides[p->axes[i]];
  alias_input(node, in, in->offset);
  return TSR_OK;
}

static tsr_status view_slice(tsr_array *node) {
  const tsri_slice_params *p = TSRI_PARAMS(node, tsri_slice_params);
  const tsr_array *in = node->inputs[0];
  int64_t offset = in->offset;
  for (int i = 0; i < node->ndim; i++) {
    offset += p->start[i] * in->strides[i];
    node->strides[i] = in->strides[i] * p->step[i];
  }
  alias_input(node, in, offset);
  return TSR_OK;
}

static tsr_status view_broadcast_to(tsr_array *node) {
  const tsr_array *in = node->inputs[0];
  int lead = node->ndim - in->ndim;
  for (int i = 0; i < node->ndim; i++) {
    int axis = i - lead;
    node->strides[i] = (axis < 0 || in->shape[axis] == 1) ? 0 : in->strides[axis];
  }
  alias_input(node, in, in->offset);
  return TSR_OK;
}

/* A part of a quantize blob: the blob's buffer, this part's offset in elements of its dtype (the
   byte offset is a multiple of 64, so it divides), packed strides. */
static tsr_status view_quant_part(tsr_array *node) {
  const tsr_array *blob = node->inputs[0];
  const tsri_quant_part_params *p = TSRI_PARAMS(node, tsri_quant_part_params);
  node->buffer = tsri_buffer_retain(blob->buffer);
  node->offset =
      node->size == 0 ? 0 : (blob->offset + p->byte_offset) / (int64_t)tsr_dtype_size(node->dtype);
  tsri_contiguous_strides(node->shape, node->ndim, node->strides);
  return TSR_OK;
}

bool tsri_primitive_is_view(tsri_primitive p) {
  return p == TSRI_PRIM_RESHAPE || p == TSRI_PRIM_TRANSPOSE || p == TSRI_PRIM_SLICE ||
         p == TSRI_PRIM_BROADCAST_TO || p == TSRI_PRIM_QUANT_PART;
}

bool tsri_primitive_in_core(tsri_primitive p) {
  return tsri_primitive_is_view(p) || p == TSRI_PRIM_STEP;
}

tsr_status tsri_view_run(tsr_array *node) {
  switch (node->primitive) {
    case TSRI_PRIM_RESHAPE:
      return view_reshape(node);
    case TSRI_PRIM_TRANSPOSE:
      return view_transpose(node);
    case TSRI_PRIM_SLICE:
      return view_slice(node);
    case TSRI_PRIM_BROADCAST_TO:
      return view_broadcast_to(node);
    case TSRI_PRIM_QUANT_PART:
      return view_quant_part(node);
    default:
      return tsri_error(TSR_ERR_STATE, "%s is not a view", tsri_primitive_name(node->primitive));
  }
}
