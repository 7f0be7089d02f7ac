/* core/placement.c — construction-time placement (core/placement.h). */
#include "core/placement.h"

#include <stdio.h>
#include <string.h>

#include "base/discovery.h"
#include "base/status.h"
#include "core/backend.h"
#include "core/stream.h"
#include "core/views.h"

static bool same_device(tsr_device a, tsr_device b) {
  return a.type == b.type && a.index == b.index;
}

/* A descriptor of the node without data (shapes, dtypes, params), for a backend's supports(). */
static void describe(const tsr_array *node, tsri_op *op) {
  memset(op, 0, sizeof *op);
  op->primitive = node->primitive;
  op->params = node->params;
  op->params_size = node->params_size;
  op->ninputs = node->ninputs;
  op->device = node->device;
  op->stream = node->stream;
  for (int i = 0; i < node->ninputs; i++)
    tsri_view_of(node->inputs[i], &op->in[i]);
  tsri_view_of(node, &op->out);
  for (int i = 0; i < node->ninputs; i++)
    op->in[i].data = NULL; /* not evaluated yet: only the layout of a ready input is real */
  op->out.data = NULL;
}

tsr_status tsri_placement_check(const tsr_array *node) {
  if (tsri_primitive_in_core(node->primitive)) return TSR_OK;
  const tsri_backend *backend = tsri_backend_for(node->device.type);
  bool runs = backend && backend->kernels[node->primitive];
  if (runs && backend->supports) {
    tsri_op op;
    describe(node, &op);
    runs = backend->supports(&op);
  }
  if (runs) return TSR_OK;
  char what[160], device[16];
  return tsri_error(TSR_ERR_UNSUPPORTED, "%s: %s (%s) cannot run it in this build",
                    tsri_array_describe(node, what, sizeof what),
                    tsri_device_str(node->device, device), backend ? backend->name : "no backend");
}

/* The stream `a` was made on, or its device's default stream for a ready array from data. */
static tsr_stream *home_stream(const tsr_array *a) {
  return a->stream ? a->stream->handle : tsr_default_stream(a->device);
}

tsr_status tsri_packed_on_home(tsr_array *a, tsr_array **out) {
  tsr_stream *home = home_stream(a);
  if (!home) {
    char device[16];
    return tsri_error(TSR_ERR_DEVICE, "%s has no stream", tsri_device_str(a->device, device));
  }
  const tsri_reshape_params packed = {.keep_strides = false};
  tsr_array *inputs[1] = {a};
  return tsri_node_new(out, TSRI_PRIM_RESHAPE, &packed, sizeof packed, a->dtype, a->shape, a->ndim,
                       inputs, 1, home);
}

/* The input as the node needs it: packed on its device (a copy node's input), or packed and
   copied onto the node's stream. */
static tsr_status placed_input(const tsr_array *node, tsr_array *input, tsr_array **out) {
  tsr_array *packed = NULL;
  tsr_status status = tsri_packed_on_home(input, &packed);
  if (status != TSR_OK || node->primitive == TSRI_PRIM_COPY) {
    *out = packed;
    return status;
  }
  tsr_array *inputs[1] = {packed};
  status = tsri_node_new(out, TSRI_PRIM_COPY, NULL, 0, input->dtype, input->shape, input->ndim,
                         inputs, 1, node->stream->handle);
  tsr_array_release(packed);
  return status;
}

tsr_status tsri_placement_copy_inputs(tsr_array *node) {
  tsr_array *placed[TSRI_MAX_INPUTS] = {0};
  tsr_status status = TSR_OK;
  for (int i = 0; i < node->ninputs && status == TSR_OK; i++)
    if (!same_device(node->inputs[i]->device, node->device))
      status = placed_input(node, node->inputs[i], &placed[i]);
  for (int i = 0; i < node->ninputs; i++) {
    if (!placed[i]) continue;
    if (status == TSR_OK) {
      tsr_array_release(node->inputs[i]);
      node->inputs[i] = placed[i];
    } else {
      tsr_array_release(placed[i]);
    }
  }
  return status;
}
