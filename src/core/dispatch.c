/* core/dispatch.c — one node's run (core/dispatch.h): output allocation or donation, the
 * descriptor, and the call into the device's kernel table. */
#include "core/dispatch.h"

#include <string.h>

#include "base/status.h"
#include "core/backend.h"
#include "core/collective.h"
#include "core/profile.h"
#include "core/step.h"
#include "core/stream.h"
#include "core/value_range.h"
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

/* The stream that moves bytes between host and device for a copy across devices: the GPU side's
   (the node's own when it is the device side, else the input's, or its device's default stream
   for an array made from data). Retained for the caller. */
static tsr_status device_side_stream(const tsr_array *node, tsri_stream **out,
                                     tsri_copy_direction *direction) {
  const tsr_array *in = node->inputs[0];
  if (node->device.type != TSR_CPU) {
    *direction = TSRI_COPY_FROM_HOST;
    *out = tsri_stream_retain(node->stream);
    return TSR_OK;
  }
  *direction = TSRI_COPY_TO_HOST;
  if (in->stream) {
    *out = tsri_stream_retain(in->stream);
    return TSR_OK;
  }
  tsr_stream *home = tsr_default_stream(in->device);
  if (!home) return tsri_error(TSR_ERR_DEVICE, "copy: the input's device has no stream");
  return tsri_stream_acquire(home, "copy", out);
}

/* A copy between the host and a device: placement made the input packed (core/placement.c), so
   its bytes are one block; the device side's stream moves them. */
static tsr_status copy_across_devices(const tsr_array *node, const tsri_op *op) {
  const tsri_view *in = &op->in[0];
  if (!tsri_view_is_contiguous(in))
    return tsri_error(TSR_ERR_STATE, "copy: the input of a copy across devices is not packed");
  if (node->device.type != TSR_CPU && node->inputs[0]->device.type != TSR_CPU)
    return tsri_error(TSR_ERR_UNSUPPORTED, "copy: between two GPUs (only host <-> GPU copies)");
  uint64_t bytes = (uint64_t)in->size * tsr_dtype_size(in->dtype);
  if (bytes == 0) return TSR_OK;
  tsri_stream *mover = NULL;
  tsri_copy_direction direction;
  tsr_status status = device_side_stream(node, &mover, &direction);
  if (status != TSR_OK) return status;
  status = mover->iface->copy(mover, op->out.data, tsri_view_at(in, in->offset), bytes, direction);
  tsri_stream_release(mover);
  return status;
}

static bool crosses_devices(const tsr_array *node) {
  const tsr_array *in = node->inputs[0];
  return node->primitive == TSRI_PRIM_COPY &&
         (in->device.type != node->device.type || in->device.index != node->device.index);
}

/* A view that had to copy its input (a reshape of a strided layout, core/views.c) ran the COPY
   kernel into a buffer of its own: a step's replay must run that copy again. */
static void record_view_copy(tsri_step_recording *recording, tsr_array *node) {
  if (node->ninputs < 1 || node->buffer == node->inputs[0]->buffer) return;
  const tsr_array *in = node->inputs[0];
  tsri_op op = {
      .primitive = TSRI_PRIM_COPY, .ninputs = 1, .device = node->device, .stream = node->stream};
  tsri_view_of(in, &op.in[0]);
  tsri_view_of(node, &op.out);
  tsri_step_record_op(recording, node, &op);
}

tsr_status tsri_node_dispatch(tsr_array *node) {
  tsri_value_range_revalidate(node); /* before the inputs' views carry ranges to the kernel */
  tsri_step_recording *recording = node->recording; /* a step's first run (core/step.h) */
  node->recording = NULL;
  if (node->primitive == TSRI_PRIM_STEP) return tsri_step_dispatch(node);
  if (tsri_primitive_is_view(node->primitive)) {
    tsr_status status = tsri_view_run(node);
    if (status == TSR_OK && recording) record_view_copy(recording, node);
    return status;
  }
  tsri_op op = {.primitive = node->primitive,
                .params = node->params,
                .params_size = node->params_size,
                .ninputs = node->ninputs,
                .device = node->device,
                .stream = node->stream};
  for (int i = 0; i < node->ninputs; i++)
    tsri_view_of(node->inputs[i], &op.in[i]);
  uint64_t output_start = tsri_profile_now();
  tsr_status status = prepare_output(node, &op);
  tsri_profile_phase_add(TSRI_PROFILE_OUTPUT, output_start);
  if (status != TSR_OK) tsri_collective_refuse(node); /* e.g. a cap refused its output */
  if (status == TSR_OK)
    status = crosses_devices(node) ? copy_across_devices(node, &op) : tsri_kernel_call(&op);
  if (status != TSR_OK) {
    tsri_buffer_release(node->buffer); /* nothing half-written stays behind a failed array */
    node->buffer = NULL;
    return status;
  }
  node->offset = op.out.offset;
  memcpy(node->strides, op.out.strides, sizeof node->strides);
  if (recording) tsri_step_record_op(recording, node, &op);
  return TSR_OK;
}
