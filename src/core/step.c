/* core/step.c — tsr_step (tessera/step.h): an evaluation recorded once and replayed.
 *
 * The first run is an ordinary evaluation whose nodes carry the step's recording: dispatch
 * appends each kernel's resolved descriptor to it (core/step.h) and holds the node and its
 * inputs, so every buffer the descriptors name keeps its address; a stream whose backend can
 * record (CUDA: a stream capture) records the launches as one unit meanwhile. A later run is one
 * node of primitive STEP on the step's stream: it copies the run's values into the inputs and
 * replays — the backend's recording when there is one, else the descriptors op by op through the
 * kernel table (still no graph walk and no allocation). */
#include "core/step.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "core/dispatch.h"
#include "core/eval.h"
#include "core/lock.h"
#include "core/stream.h"
#include "core/views.h"
#include "tessera/step.h"

struct tsri_step_recording {
  tsri_op *ops;
  size_t count, capacity;
  tsri_ptrvec held; /* arrays retained: recorded nodes and their inputs */
  bool failed;      /* out of host memory while recording */
};

struct tsr_step {
  tsr_array *inputs[TSR_STEP_MAX_INPUTS];
  size_t ninputs;
  tsr_array **outputs;
  size_t noutputs;
  tsri_stream *stream; /* the graph's one stream, retained */
  size_t lazy_nodes;   /* what tsr_step_new saw: the first run must record the same graph */
  tsri_step_recording recording;
  void *graph; /* the stream backend's recording, or NULL: replayed op by op */
  bool recorded;
  tsr_status failed; /* the first run's error: the step is done for */
  char failure[TSR_ERROR_MAX];
};

/* The STEP node's parameters. */
typedef struct {
  tsr_step *step;
  bool replay; /* false for the first run's node, which only copies the values in */
} step_params;

/* ---- recording (dispatch, on the step's stream) --------------------------------------------- */

static bool hold(tsri_step_recording *r, tsr_array *a) {
  if (!tsri_ptrvec_push(&r->held, a)) return false;
  tsr_array_retain(a);
  return true;
}

void tsri_step_record_op(tsri_step_recording *r, tsr_array *node, const tsri_op *op) {
  if (r->failed) return;
  if (r->count == r->capacity) {
    size_t grown = r->capacity ? 2 * r->capacity : 256;
    tsri_op *bigger = realloc(r->ops, grown * sizeof *bigger);
    if (!bigger) goto out_of_memory;
    r->ops = bigger;
    r->capacity = grown;
  }
  tsri_op copy = *op;
  if (op->params && op->params_size > 0) {
    void *params = malloc(op->params_size);
    if (!params) goto out_of_memory;
    memcpy(params, op->params, op->params_size);
    copy.params = params;
  }
  r->ops[r->count++] = copy;
  if (!hold(r, node)) goto out_of_memory;
  for (int i = 0; i < node->ninputs; i++)
    if (!hold(r, node->inputs[i])) goto out_of_memory;
  return;
out_of_memory:
  r->failed = true;
}

static void recording_free(tsri_step_recording *r) {
  for (size_t i = 0; i < r->count; i++)
    free((void *)r->ops[i].params);
  free(r->ops);
  for (size_t i = 0; i < r->held.len; i++)
    tsr_array_release(r->held.items[i]);
  tsri_ptrvec_free(&r->held);
  memset(r, 0, sizeof *r);
}

/* ---- the step node ----------------------------------------------------------------------------
 */

/* Copies value (any layout, on the step's device) into the packed input through the device's copy
   kernel; the output view is rebased so the kernel sees offset 0, as for any output. */
static tsr_status copy_in(const tsr_array *value, const tsr_array *input, tsri_stream *stream) {
  if (value == input || input->size == 0) return TSR_OK;
  tsri_op op = {
      .primitive = TSRI_PRIM_COPY, .ninputs = 1, .device = input->device, .stream = stream};
  tsri_view_of(value, &op.in[0]);
  tsri_view_of(input, &op.out);
  op.out.data = tsri_view_at(&op.out, op.out.offset);
  op.out.offset = 0;
  return tsri_kernel_call(&op);
}

static tsr_status replay_ops(const tsri_step_recording *r) {
  for (size_t i = 0; i < r->count; i++) {
    tsr_status status = tsri_kernel_call(&r->ops[i]);
    if (status != TSR_OK)
      return tsri_error_copy(status, tsr_last_error()); /* the kernel's message, kept */
  }
  return TSR_OK;
}

tsr_status tsri_step_dispatch(tsr_array *node) {
  const step_params *p = TSRI_PARAMS(node, step_params);
  tsr_step *step = p->step;
  for (int i = 0; i < node->ninputs; i++) {
    tsr_status status = copy_in(node->inputs[i], step->inputs[i], step->stream);
    if (status != TSR_OK) return status;
  }
  if (!p->replay) return TSR_OK;
  if (step->graph) return step->stream->iface->replay(step->stream, step->graph);
  return replay_ops(&step->recording);
}

/* ---- the graph a step may hold ----------------------------------------------------------------
 */

static bool same_device(tsr_device a, tsr_device b) {
  return a.type == b.type && a.index == b.index;
}

static tsr_status check_node(const tsr_step *step, const tsr_array *node) {
  char what[160];
  const char *why = NULL;
  if (node->stream != step->stream)
    why = "runs on another stream than the step's outputs (a step records one stream)";
  else if (node->primitive == TSRI_PRIM_STEP)
    why = "is another step's run";
  else if (node->primitive == TSRI_PRIM_COPY && !same_device(node->inputs[0]->device, node->device))
    why = "copies between devices (a step replays the work of one device)";
  if (!why) return TSR_OK;
  return tsri_error(TSR_ERR_UNSUPPORTED, "step: %s %s",
                    tsri_array_describe(node, what, sizeof what), why);
}

static tsr_status check_graph(const tsr_step *step, const tsri_ptrvec *order) {
  for (size_t i = 0; i < order->len; i++) {
    tsr_status status = check_node(step, order->items[i]);
    if (status != TSR_OK) return status;
  }
  return TSR_OK;
}

/* The first run's hooks (core/eval.h), under the evaluation lock. */
static tsr_status mark_recorded(void *ctx, const tsri_ptrvec *order) {
  tsr_step *step = ctx;
  if (order->len != step->lazy_nodes)
    return tsri_error(TSR_ERR_STATE,
                      "step_run: %zu of the step's %zu nodes are still to run: part of its graph "
                      "was evaluated since tsr_step_new, and a replay would leave it stale",
                      order->len, step->lazy_nodes);
  tsr_status status = check_graph(step, order);
  if (status != TSR_OK) return status;
  for (size_t i = 0; i < order->len; i++)
    ((tsr_array *)order->items[i])->recording = &step->recording;
  const tsri_stream_iface *iface = step->stream->iface;
  if (iface->begin_recording && !iface->begin_recording(step->stream)) step->graph = NULL;
  return TSR_OK;
}

static void end_recording(void *ctx) {
  tsr_step *step = ctx;
  const tsri_stream_iface *iface = step->stream->iface;
  if (iface->end_recording) step->graph = iface->end_recording(step->stream);
}

/* ---- the public functions ---------------------------------------------------------------------
 */

static tsr_status check_input(const tsr_array *a, size_t i) {
  char what[160];
  if (!a) return tsri_error(TSR_ERR_INVALID, "step_new: inputs[%zu] is NULL", i);
  int state = atomic_load(&a->state);
  if (state != TSRI_NODE_READY)
    return tsri_error(TSR_ERR_INVALID, "step_new: inputs[%zu] (%s) is %s, not evaluated", i,
                      tsri_array_describe(a, what, sizeof what),
                      state == TSRI_NODE_FAILED ? "failed" : "lazy");
  if (a->buffer && a->buffer->external)
    return tsri_error(TSR_ERR_INVALID,
                      "step_new: inputs[%zu] (%s) wraps caller memory, which a step never writes",
                      i, tsri_array_describe(a, what, sizeof what));
  if (!tsri_array_is_contiguous(a))
    return tsri_error(TSR_ERR_INVALID, "step_new: inputs[%zu] (%s) is not packed row-major", i,
                      tsri_array_describe(a, what, sizeof what));
  return TSR_OK;
}

static tsr_status check_outputs(tsr_array *const *outputs, size_t noutputs) {
  if (!outputs || noutputs == 0)
    return tsri_error(TSR_ERR_INVALID, "step_new: no outputs (outputs %s, noutputs %zu)",
                      outputs ? "given" : "NULL", noutputs);
  for (size_t i = 0; i < noutputs; i++) {
    if (!outputs[i]) return tsri_error(TSR_ERR_INVALID, "step_new: outputs[%zu] is NULL", i);
    if (atomic_load(&outputs[i]->state) != TSRI_NODE_LAZY) {
      char what[160];
      return tsri_error(TSR_ERR_INVALID,
                        "step_new: outputs[%zu] (%s) is already evaluated: nothing to record", i,
                        tsri_array_describe(outputs[i], what, sizeof what));
    }
  }
  return TSR_OK;
}

static tsr_status check_arguments(tsr_step **out, tsr_array *const *inputs, size_t ninputs,
                                  tsr_array *const *outputs, size_t noutputs) {
  if (!out) return tsri_error(TSR_ERR_INVALID, "step_new: out is NULL");
  if (ninputs > TSR_STEP_MAX_INPUTS || (!inputs && ninputs > 0))
    return tsri_error(TSR_ERR_INVALID, "step_new: %zu inputs (at most %d, inputs %s)", ninputs,
                      TSR_STEP_MAX_INPUTS, inputs ? "given" : "NULL");
  tsr_status status = check_outputs(outputs, noutputs);
  for (size_t i = 0; i < ninputs && status == TSR_OK; i++)
    status = check_input(inputs[i], i);
  if (status != TSR_OK) return status;
  for (size_t i = 0; i < ninputs; i++)
    if (!same_device(inputs[i]->device, outputs[0]->device)) {
      char what[160];
      return tsri_error(TSR_ERR_INVALID, "step_new: inputs[%zu] (%s) is not on the outputs' %s:%d",
                        i, tsri_array_describe(inputs[i], what, sizeof what),
                        outputs[0]->device.type == TSR_CPU ? "cpu" : "gpu",
                        outputs[0]->device.index);
    }
  return TSR_OK;
}

static tsr_step *step_alloc(tsr_array *const *inputs, size_t ninputs, tsr_array *const *outputs,
                            size_t noutputs) {
  tsr_step *step = calloc(1, sizeof *step);
  tsr_array **held = calloc(noutputs, sizeof *held);
  if (!step || !held) {
    free(step);
    free(held);
    return NULL;
  }
  step->outputs = held;
  step->noutputs = noutputs;
  for (size_t i = 0; i < noutputs; i++)
    step->outputs[i] = tsr_array_retain(outputs[i]);
  step->ninputs = ninputs;
  for (size_t i = 0; i < ninputs; i++)
    step->inputs[i] = tsr_array_retain(inputs[i]);
  step->stream = tsri_stream_retain(outputs[0]->stream);
  return step;
}

tsr_status tsr_step_new(tsr_step **out, tsr_array *const *inputs, size_t ninputs,
                        tsr_array *const *outputs, size_t noutputs) {
  tsr_status status = check_arguments(out, inputs, ninputs, outputs, noutputs);
  if (status != TSR_OK) return status;
  tsr_step *step = step_alloc(inputs, ninputs, outputs, noutputs);
  if (!step) return tsri_error(TSR_ERR_NOMEM, "step_new: out of host memory");
  tsri_ptrvec order = {0};
  status = tsri_lazy_nodes(outputs, noutputs, &order);
  if (status == TSR_OK) status = check_graph(step, &order);
  step->lazy_nodes = order.len;
  tsri_ptrvec_free(&order);
  if (status != TSR_OK) {
    tsr_step_free(step);
    return status;
  }
  /* Their values will change: nothing may rely on the range known from their data. */
  for (size_t i = 0; i < ninputs; i++)
    if (inputs[i]->buffer) atomic_store(&inputs[i]->buffer->exposed, true);
  *out = step;
  return TSR_OK;
}

static tsr_status check_values(const tsr_step *step, tsr_array *const *values, size_t n) {
  if (n == 0) return TSR_OK;
  if (!values || n != step->ninputs)
    return tsri_error(TSR_ERR_INVALID, "step_run: %zu values for %zu inputs (values %s)", n,
                      step->ninputs, values ? "given" : "NULL");
  for (size_t i = 0; i < n; i++) {
    const tsr_array *v = values[i], *in = step->inputs[i];
    if (!v) return tsri_error(TSR_ERR_INVALID, "step_run: values[%zu] is NULL", i);
    bool same_shape = v->ndim == in->ndim && v->dtype == in->dtype &&
                      memcmp(v->shape, in->shape, (size_t)v->ndim * sizeof *v->shape) == 0;
    if (!same_shape) {
      char got[160], want[160];
      return tsri_error(TSR_ERR_INVALID, "step_run: values[%zu] is %s, input %zu is %s", i,
                        tsri_array_describe(v, got, sizeof got), i,
                        tsri_array_describe(in, want, sizeof want));
    }
  }
  return TSR_OK;
}

/* Evaluates one step node over the values (their copy in, and the replay when asked). */
static tsr_status run_step_node(tsr_step *step, tsr_array *const *values, size_t n, bool replay) {
  step_params params = {step, replay};
  int64_t none[1] = {0};
  tsr_array *node = NULL;
  tsr_status status = tsri_node_new(&node, TSRI_PRIM_STEP, &params, sizeof params, TSR_FLOAT32,
                                    none, 1, values, (int)n, step->stream->handle);
  if (status != TSR_OK) return status;
  status = tsr_eval(&node, 1);
  tsr_array_release(node);
  return status;
}

static tsr_status record(tsr_step *step, tsr_array *const *values, size_t n) {
  tsr_status status = n > 0 ? run_step_node(step, values, n, false) : TSR_OK;
  if (status != TSR_OK) return status; /* nothing recorded: the next run tries again */
  tsri_eval_hooks hooks = {step, mark_recorded, end_recording};
  status = tsri_eval_with("step_run", step->outputs, step->noutputs, &hooks);
  if (status == TSR_OK && step->recording.failed)
    status = tsri_error(TSR_ERR_NOMEM, "step_run: out of host memory recording the step");
  if (status != TSR_OK) {
    step->failed = status;
    snprintf(step->failure, sizeof step->failure, "%s", tsr_last_error());
    if (step->graph) step->stream->iface->free_recording(step->stream, step->graph);
    step->graph = NULL;
    return status;
  }
  step->recorded = true;
  return TSR_OK;
}

tsr_status tsr_step_run(tsr_step *step, tsr_array *const *values, size_t n) {
  if (!step) return tsri_error(TSR_ERR_INVALID, "step_run: step is NULL");
  if (step->failed != TSR_OK)
    return tsri_error(TSR_ERR_STATE, "step_run: the step's first run failed: %s", step->failure);
  tsr_status status = check_values(step, values, n);
  if (status != TSR_OK) return status;
  if (!step->recorded) return record(step, values, n);
  return run_step_node(step, values, n, true);
}

bool tsr_step_is_graph(const tsr_step *step) {
  return step && step->graph;
}

void tsr_step_free(tsr_step *step) {
  if (!step) return;
  if (step->graph) step->stream->iface->free_recording(step->stream, step->graph);
  recording_free(&step->recording);
  for (size_t i = 0; i < step->ninputs; i++)
    tsr_array_release(step->inputs[i]);
  for (size_t i = 0; i < step->noutputs; i++)
    tsr_array_release(step->outputs[i]);
  free(step->outputs);
  tsri_stream_release(step->stream);
  free(step);
}
