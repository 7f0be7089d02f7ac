/* core/dispatch.c — one node's run (core/dispatch.h): output allocation or donation, the
 * descriptor, and the call into the device's kernel table. */
#include "core/dispatch.h"

#include <string.h>

#include "base/status.h"
#include "core/backend.h"
#include "core/views.h"

tsr_status tsri_op_alloc_out(tsri_op *op, tsr_dtype dtype, const int64_t *shape, int ndim,
                             tsri_buffer **buffer) {
  tsri_view *out = &op->out;
  memset(out, 0, sizeof *out);
  out->dtype = dtype;
  out->ndim = ndim;
  if (ndim > 0) memcpy(out->shape, shape, (size_t)ndim * sizeof *shape);
  out->size = 1;
  for (int d = 0; d < ndim; d++)
    out->size *= shape[d];
  tsri_contiguous_strides(out->shape, ndim, out->strides);
  *buffer = NULL;
  uint64_t bytes = (uint64_t)out->size * tsr_dtype_size(dtype);
  tsr_status status = tsri_buffer_alloc(op->device, bytes, buffer);
  if (status == TSR_OK) out->data = (*buffer)->data;
  return status;
}

tsr_status tsri_kernel_call(const tsri_op *op) {
  const tsri_backend *backend = tsri_backend_for(op->device.type);
  tsri_kernel_fn kernel = backend ? backend->kernels[op->primitive] : NULL;
  if (!kernel)
    return tsri_error(TSR_ERR_UNSUPPORTED, "no %s kernel in this build",
                      backend ? backend->name : "backend");
  return kernel(op);
}

/* Input 0's buffer may become the output when nothing else can ever read it: this node holds the
   only reference to the input, the input the only reference to its buffer (no views, no stream
   records), the layout is packed, the memory is tessera's (wrapped caller memory is never
   written) and on the node's device. Only slice_update asks. */
static bool can_donate_input0(const tsr_array *node) {
  const tsr_array *in = node->inputs[0];
  return node->primitive == TSRI_PRIM_SLICE_UPDATE && atomic_load(&in->refs) == 1 && in->buffer &&
         !in->buffer->external && atomic_load(&in->buffer->refs) == 1 &&
         tsri_array_is_contiguous(in) && in->dtype == node->dtype &&
         in->device.type == node->device.type && in->device.index == node->device.index;
}

static tsr_status prepare_output(tsr_array *node, tsri_op *op) {
  if (can_donate_input0(node)) {
    tsr_array *in = node->inputs[0];
    node->buffer = tsri_buffer_retain(in->buffer);
    node->offset = in->offset;
    memcpy(node->strides, in->strides, sizeof node->strides);
    op->out = op->in[0];
    op->out_is_in0 = true;
    return TSR_OK;
  }
  return tsri_op_alloc_out(op, node->dtype, node->shape, node->ndim, &node->buffer);
}

tsr_status tsri_node_dispatch(tsr_array *node) {
  if (tsri_primitive_is_view(node->primitive)) return tsri_view_run(node);
  tsri_op op = {.primitive = node->primitive,
                .params = node->params,
                .params_size = node->params_size,
                .ninputs = node->ninputs,
                .device = node->device,
                .stream = node->stream};
  for (int i = 0; i < node->ninputs; i++)
    tsri_view_of(node->inputs[i], &op.in[i]);
  tsr_status status = prepare_output(node, &op);
  if (status == TSR_OK) status = tsri_kernel_call(&op);
  if (status != TSR_OK) {
    tsri_buffer_release(node->buffer); /* nothing half-written stays behind a failed array */
    node->buffer = NULL;
    return status;
  }
  node->offset = op.out.offset;
  memcpy(node->strides, op.out.strides, sizeof node->strides);
  return TSR_OK;
}
