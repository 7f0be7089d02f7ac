/* dist/lazy.c — tsr_all_sum and tsr_all_gather: lazy collective nodes (core/collective.h) and
 * their runner, which seals the call and moves the data through the group's transport when the
 * node runs on its stream. Each node depends on the group's previous lazy collective while that
 * one has not run, so one group's collectives seal in creation order on every rank; one that
 * fails before it can seal seals as a refusal unless it failed behind a failed collective
 * (tsri_collective_refuse), so every rank makes the same seals. A local
 * group needs no collective: the result is x itself (a reshape node on the stream); an mpi or
 * nccl group of one rank still goes through its transport. */
#include <stdio.h>
#include <string.h>

#include "base/discovery.h"
#include "base/dtype.h"
#include "core/collective.h"
#include "core/placement.h"
#include "core/stream.h"
#include "dist/seal.h"
#include "dist/transport.h"
#include "tessera/ops.h"

/* Moves one sealed call's data once its turn has come. */
static tsr_status move(tsr_group *g, const tsri_op *op, uint64_t ticket, const char *what) {
  tsr_status status = tsri_group_wait_turn(g, ticket, what);
  if (status != TSR_OK) return status;
  const tsri_view *in = &op->in[0];
  const void *send = in->size > 0 ? tsri_view_at(in, in->offset) : NULL;
  double timeout_s = tsri_group_timeout(g);
  if (op->primitive == TSRI_PRIM_ALL_SUM)
    status = g->transport->all_sum(g, send, op->out.data, (uint64_t)in->size, in->dtype, op->stream,
                                   timeout_s);
  else
    status = g->transport->all_gather(g, send, op->out.data,
                                      (uint64_t)in->size * tsr_dtype_size(in->dtype), op->stream,
                                      timeout_s);
  if (status != TSR_OK) status = tsri_group_move_failed(g, what, status);
  tsri_group_turn_done(g);
  return status;
}

/* The seal of a node this rank cannot run, as a refusal. This thread's message stays this rank's
   own error (the node's message is made from it): the refusal's verdict concerns the others. */
static void seal_refusal(tsr_group *g, const char *what, uint64_t count, tsr_dtype dtype) {
  char kept[TSR_ERROR_MAX];
  snprintf(kept, sizeof kept, "%s", tsr_last_error());
  uint64_t ticket = 0;
  tsri_seal(g, what, TSRI_SEAL_REFUSED, count, dtype, &ticket);
  tsri_error_copy(TSR_ERR_DIST, kept); /* the message only; the caller's status stands */
}

/* The runner core's collective kernel calls (core/collective.h), on the node's stream. */
static tsr_status run_collective(const tsri_op *op) {
  const char *what = tsri_primitive_name(op->primitive);
  const tsri_collective_params *params = TSRI_PARAMS(op, tsri_collective_params);
  tsr_group *g = tsri_group_find(params->group_serial);
  if (!g) return tsri_error(TSR_ERR_STATE, "%s: its group was freed before it ran", what);
  tsr_status status = TSR_OK;
  uint64_t count = (uint64_t)op->in[0].size, ticket = 0;
  if (!tsri_view_is_contiguous(&op->in[0])) {
    status = tsri_error(TSR_ERR_STATE, "%s: the input is not packed", what);
    seal_refusal(g, what, count, op->in[0].dtype);
  }
  tsri_seal_op seal_op = op->primitive == TSRI_PRIM_ALL_SUM ? TSRI_SEAL_SUM : TSRI_SEAL_GATHER;
  if (status == TSR_OK) status = tsri_seal(g, what, seal_op, count, op->in[0].dtype, &ticket);
  if (status == TSR_OK) status = move(g, op, ticket, what);
  tsri_group_release(g);
  return status;
}

/* core/collective.h's refusal, for a node that failed before run_collective (a failed input, an
   output the cap refused). A freed group has no seal to take part in: every rank's node fails
   on it alike. */
static void refuse_collective(uint64_t group_serial, tsri_primitive primitive, uint64_t count,
                              tsr_dtype dtype) {
  tsr_group *g = tsri_group_find(group_serial);
  if (!g) return;
  seal_refusal(g, tsri_primitive_name(primitive), count, dtype);
  tsri_group_release(g);
}

/* The output shape: x's for a sum; [size * d0, d1, ...] for a gather ([size] for a 0-d x). */
static void output_shape(tsri_primitive primitive, const tsr_array *x, int size, int64_t *shape,
                         int *ndim) {
  *ndim = x->ndim;
  memcpy(shape, x->shape, sizeof x->shape);
  if (primitive != TSRI_PRIM_ALL_GATHER) return;
  if (x->ndim == 0) {
    *ndim = 1;
    shape[0] = size;
  } else {
    shape[0] = x->shape[0] * size;
  }
}

static tsr_status check_args(const char *what, tsri_primitive primitive, tsr_array **out,
                             tsr_array *x, tsr_group *g) {
  if (!out || !x || !g)
    return tsri_error(TSR_ERR_INVALID, "%s: %s is NULL", what, !out ? "out" : !x ? "x" : "g");
  if (primitive == TSRI_PRIM_ALL_SUM && !tsri_seal_sums(x->dtype))
    return tsri_error(TSR_ERR_INVALID,
                      "%s: dtype %s is not summed (float32, float16, bfloat16, int32, int64)", what,
                      tsr_dtype_name(x->dtype));
  if ((x->dtype == TSR_FLOAT16 || x->dtype == TSR_BFLOAT16) && primitive == TSRI_PRIM_ALL_SUM &&
      !g->transport->sums_halves)
    return tsri_error(TSR_ERR_UNSUPPORTED,
                      "%s: a %s group does not sum %s yet (the float32 accumulation the sum "
                      "promises is not implemented there)",
                      what, g->transport->name, tsr_dtype_name(x->dtype));
  return tsri_group_check_usable(g, what);
}

/* The device of stream s (NULL = the default stream), or the error for a freed one. */
static tsr_status stream_device(tsr_stream *s, const char *what, tsr_device *device) {
  tsri_stream *stream = NULL;
  tsr_status status = tsri_stream_acquire(s, what, &stream);
  if (status != TSR_OK) return status;
  *device = stream->device;
  tsri_stream_release(stream);
  return TSR_OK;
}

/* The node, after the group's previous lazy collective if that one has not run yet. */
static tsr_status collective_node(const char *what, tsri_primitive primitive, tsr_array **out,
                                  tsr_array *x, tsr_group *g, tsr_stream *s) {
  int64_t shape[TSR_MAX_NDIM], size = 0;
  int ndim = 0;
  output_shape(primitive, x, g->size, shape, &ndim);
  tsr_status status = tsri_shape_check(what, shape, ndim, x->dtype, &size);
  tsr_array *packed = NULL;
  if (status == TSR_OK) status = tsri_packed_on_home(x, &packed);
  if (status != TSR_OK) return status;
  tsri_collective_params params = {
      .group_serial = g->serial, .run = run_collective, .refuse = refuse_collective};
  pthread_mutex_lock(&g->mutex); /* creation order: the previous one is read and replaced at once */
  tsr_array *inputs[2] = {packed, g->last_lazy};
  int ninputs = 1;
  if (g->last_lazy) {
    int state = atomic_load(&g->last_lazy->state);
    /* A lazy one only the group still holds was abandoned (its caller failed before evaluating
       it and told the group with a refusal instead, glm_tell_group): nothing may run it now, or
       it would seal out of step with the other ranks. */
    bool held = atomic_load(&g->last_lazy->refs) > 1;
    if (state == TSRI_NODE_SUBMITTED || (state == TSRI_NODE_LAZY && held)) ninputs = 2;
  }
  tsr_array *node = NULL;
  status = tsri_node_new(&node, primitive, &params, sizeof params, x->dtype, shape, ndim, inputs,
                         ninputs, s);
  tsr_array *replaced = NULL;
  if (status == TSR_OK) {
    replaced = g->last_lazy;
    g->last_lazy = tsr_array_retain(node);
  }
  pthread_mutex_unlock(&g->mutex);
  tsr_array_release(replaced);
  tsr_array_release(packed);
  if (status == TSR_OK) *out = node;
  return status;
}

static tsr_status collective(const char *what, tsri_primitive primitive, tsr_array **out,
                             tsr_array *x, tsr_group *g, tsr_stream *s) {
  tsr_status status = check_args(what, primitive, out, x, g);
  tsr_device device = {TSR_CPU, 0};
  if (status == TSR_OK) status = stream_device(s, what, &device);
  if (status != TSR_OK) return status;
  if (g->transport == &tsri_local_transport) { /* the sum or the gather of one is x */
    int64_t shape[TSR_MAX_NDIM];
    int ndim = 0;
    output_shape(primitive, x, 1, shape, &ndim);
    return tsr_reshape(out, x, shape, ndim, s);
  }
  if (!g->transport->runs_on(g, device)) {
    char name[16];
    return tsri_error(TSR_ERR_UNSUPPORTED, "%s: a %s group cannot run on %s (its stream's device)",
                      what, g->transport->name, tsri_device_str(device, name));
  }
  return collective_node(what, primitive, out, x, g, s);
}

tsr_status tsr_all_sum(tsr_array **out, tsr_array *x, tsr_group *g, tsr_stream *s) {
  return collective("all_sum", TSRI_PRIM_ALL_SUM, out, x, g, s);
}

tsr_status tsr_all_gather(tsr_array **out, tsr_array *x, tsr_group *g, tsr_stream *s) {
  return collective("all_gather", TSRI_PRIM_ALL_GATHER, out, x, g, s);
}
