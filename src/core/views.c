/* core/views.c — the view kernels (core/views.h): an output that shares its input's buffer with
 * its own offset and strides, computed when the node runs from the input's evaluated layout (a
 * lazy input's layout is only known then; it may itself be a view). Device-independent: no
 * element is touched here, except by the device's COPY kernel when a reshape cannot re-stride. */
#include "core/views.h"

#include <string.h>

#include "base/status.h"
#include "core/backend.h"

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

/* A contiguous copy of `in` made by the device's own COPY kernel, run on a stack node that
 * mirrors `node` but has the input's shape; its buffer becomes node's. */
static tsr_status copy_input(tsr_array *node, tsr_array *in) {
  const tsri_backend *backend = tsri_backend_for(node->device.type);
  tsri_kernel_fn copy = backend ? backend->kernels[TSRI_PRIM_COPY] : NULL;
  if (!copy)
    return tsri_error(TSR_ERR_UNSUPPORTED, "no copy kernel for a non-contiguous reshape input");
  tsr_array scratch;
  memset(&scratch, 0, sizeof scratch);
  atomic_init(&scratch.refs, 1);
  atomic_init(&scratch.state, TSRI_NODE_SUBMITTED);
  scratch.dtype = in->dtype;
  scratch.ndim = in->ndim;
  memcpy(scratch.shape, in->shape, sizeof scratch.shape);
  tsri_contiguous_strides(scratch.shape, scratch.ndim, scratch.strides);
  scratch.size = in->size;
  scratch.device = node->device;
  scratch.primitive = TSRI_PRIM_COPY;
  scratch.ninputs = 1;
  scratch.inputs[0] = in;
  scratch.stream = node->stream;
  tsr_status status = copy(&scratch);
  if (status != TSR_OK) {
    tsri_buffer_release(scratch.buffer);
    return status;
  }
  node->buffer = scratch.buffer;
  node->offset = 0;
  tsri_contiguous_strides(node->shape, node->ndim, node->strides);
  return TSR_OK;
}

tsr_status tsri_view_reshape(tsr_array *node) {
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

tsr_status tsri_view_transpose(tsr_array *node) {
  const tsri_transpose_params *p = TSRI_PARAMS(node, tsri_transpose_params);
  const tsr_array *in = node->inputs[0];
  for (int i = 0; i < node->ndim; i++)
    node->strides[i] = in->strides[p->axes[i]];
  alias_input(node, in, in->offset);
  return TSR_OK;
}

tsr_status tsri_view_slice(tsr_array *node) {
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

tsr_status tsri_view_broadcast_to(tsr_array *node) {
  const tsr_array *in = node->inputs[0];
  int lead = node->ndim - in->ndim;
  for (int i = 0; i < node->ndim; i++) {
    int axis = i - lead;
    node->strides[i] = (axis < 0 || in->shape[axis] == 1) ? 0 : in->strides[axis];
  }
  alias_input(node, in, in->offset);
  return TSR_OK;
}
