/* core/eval.c — tsr_eval: the graph walk (an explicit stack, never recursion), submission to
 * streams under the evaluation lock, waiting after the lock is released, and the run of one node
 * on its stream's worker (fences, error propagation, releasing inputs as soon as it has run). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "base/vec.h"
#include "core/collective.h"
#include "core/dispatch.h"
#include "core/lock.h"
#include "core/profile.h"
#include "core/eval.h"
#include "core/stream.h"

static uint64_t walk_epoch; /* evaluation lock */

typedef struct {
  tsr_array *node;
  int next_input;
} walk_frame;

static bool is_lazy(const tsr_array *a) {
  return atomic_load(&a->state) == TSRI_NODE_LAZY;
}

/* Appends the lazy nodes reachable from the roots to `order`, inputs before consumers. */
static tsr_status collect_lazy(tsr_array *const *roots, size_t n, tsri_ptrvec *order) {
  uint64_t epoch = ++walk_epoch;
  walk_frame *stack = NULL;
  size_t depth = 0, capacity = 0;
  tsr_status status = TSR_OK;
  for (size_t r = 0; r < n && status == TSR_OK; r++) {
    if (!is_lazy(roots[r]) || roots[r]->visit_epoch == epoch) continue;
    roots[r]->visit_epoch = epoch;
    tsr_array *push = roots[r];
    while (push || depth > 0) {
      if (push) {
        if (depth == capacity) {
          size_t grown = capacity ? capacity * 2 : 256;
          walk_frame *bigger = realloc(stack, grown * sizeof *bigger);
          if (!bigger) goto out_of_memory;
          stack = bigger;
          capacity = grown;
        }
        stack[depth++] = (walk_frame){push, 0};
        push = NULL;
      }
      walk_frame *top = &stack[depth - 1];
      if (top->next_input < top->node->ninputs) {
        tsr_array *input = top->node->inputs[top->next_input++];
        if (is_lazy(input) && input->visit_epoch != epoch) {
          input->visit_epoch = epoch;
          push = input;
        }
        continue;
      }
      if (!tsri_ptrvec_push(order, top->node)) goto out_of_memory;
      depth--;
    }
  }
  free(stack);
  return status;
out_of_memory:
  free(stack);
  return tsri_error(TSR_ERR_NOMEM, "eval: out of host memory walking a graph");
}

static tsr_status check_streams_open(const tsri_ptrvec *order) {
  for (size_t i = 0; i < order->len; i++) {
    tsr_array *node = order->items[i];
    if (atomic_load(&node->stream->closed)) {
      char what[160];
      return tsri_error(TSR_ERR_STATE, "eval: %s names a stream that was freed",
                        tsri_array_describe(node, what, sizeof what));
    }
  }
  return TSR_OK;
}

/* Streams a submission touched, each retained once per run of its nodes, so each can be told the
   batch is complete (tsri_stream_iface.flush) after the last node went in: by then the nodes
   themselves may have run and been freed. */
typedef struct {
  tsri_stream *items[16];
  int count;
} touched_streams;

static void touch(touched_streams *t, tsri_stream *s) {
  for (int i = 0; i < t->count; i++)
    if (t->items[i] == s) return;
  if (t->count == 16) { /* rare: a graph over many streams; flush the oldest now */
    tsri_stream *oldest = t->items[0];
    if (oldest->iface->flush) oldest->iface->flush(oldest);
    tsri_stream_release(oldest);
    memmove(t->items, t->items + 1, 15 * sizeof *t->items);
    t->count--;
  }
  t->items[t->count++] = tsri_stream_retain(s);
}

static void flush_touched(touched_streams *t) {
  for (int i = 0; i < t->count; i++) {
    if (t->items[i]->iface->flush) t->items[i]->iface->flush(t->items[i]);
    tsri_stream_release(t->items[i]);
  }
}

/* submit_all's hook (a step's recording, core/step.c): called after the last node went in,
   before the streams are flushed. */
static void submit_all(const tsri_ptrvec *order, void (*submitted)(void *ctx), void *ctx) {
  touched_streams touched = {.count = 0};
  for (size_t i = 0; i < order->len; i++) {
    tsr_array *node = order->items[i];
    touch(&touched, node->stream);
    tsr_array_retain(node); /* the task's reference, dropped once the node has run */
    node->task.node = node;
    /* SUBMITTED before the push: the worker's READY/FAILED store must come after it. Only
       holders of the evaluation lock can see the node between the two, and none waits. */
    atomic_store(&node->state, TSRI_NODE_SUBMITTED);
    tsri_stream_submit(node->stream, &node->task);
  }
  if (submitted) submitted(ctx);
  flush_touched(&touched);
}

static tsr_status check_roots(const char *what, tsr_array *const *arrays, size_t n) {
  if (!arrays && n > 0) return tsri_error(TSR_ERR_INVALID, "%s: arrays is NULL (n = %zu)", what, n);
  for (size_t i = 0; i < n; i++)
    if (!arrays[i]) return tsri_error(TSR_ERR_INVALID, "%s: arrays[%zu] is NULL", what, i);
  return TSR_OK;
}

static tsr_status submit_graph(const char *what, tsr_array *const *arrays, size_t n,
                               const tsri_eval_hooks *hooks) {
  tsr_status status = check_roots(what, arrays, n);
  if (status != TSR_OK) return status;
  uint64_t start = tsri_profile_now();
  tsri_ptrvec order = {0};
  tsri_eval_lock();
  status = collect_lazy(arrays, n, &order);
  if (status == TSR_OK) status = check_streams_open(&order);
  if (status == TSR_OK && hooks) status = hooks->before_submit(hooks->ctx, &order);
  if (status == TSR_OK)
    submit_all(&order, hooks ? hooks->submitted : NULL, hooks ? hooks->ctx : NULL);
  tsri_eval_unlock();
  tsri_ptrvec_free(&order);
  tsri_profile_phase_add(TSRI_PROFILE_SUBMIT, start);
  return status;
}

/* Blocks until a has run; its status, with its message made this thread's. */
static tsr_status wait_ready(tsr_array *a) {
  int state = atomic_load(&a->state);
  /* READY says the node's task has run on its stream's host side; on an asynchronous device its
     kernel may still be running, so a computed array is waited for until its stream has passed
     the task (on the CPU that is already so: the query answers at once). */
  if (state == TSRI_NODE_SUBMITTED || (state == TSRI_NODE_READY && a->stream)) {
    /* From a host function, a wait that could never end is TSR_ERR_STATE (core/stream.h); the
       array stays submitted and runs once the host function has returned. */
    tsr_status status = tsri_stream_wait(a->stream, a->task.seq, "eval");
    if (status != TSR_OK) return status;
    state = atomic_load(&a->state);
  }
  if (state == TSRI_NODE_FAILED)
    return tsri_error_copy(a->status, a->message ? a->message : tsr_status_name(a->status));
  return TSR_OK;
}

tsr_status tsr_async_eval(tsr_array *const *arrays, size_t n) {
  return submit_graph("async_eval", arrays, n, NULL);
}

tsr_status tsri_lazy_nodes(tsr_array *const *arrays, size_t n, tsri_ptrvec *order) {
  tsri_eval_lock();
  tsr_status status = collect_lazy(arrays, n, order);
  tsri_eval_unlock();
  return status;
}

tsr_status tsr_eval(tsr_array *const *arrays, size_t n) {
  return tsri_eval_with("eval", arrays, n, NULL);
}

tsr_status tsri_eval_with(const char *what, tsr_array *const *arrays, size_t n,
                          const tsri_eval_hooks *hooks) {
  tsr_status status = submit_graph(what, arrays, n, hooks);
  if (status != TSR_OK) return status;
  uint64_t start = tsri_profile_now();
  for (size_t i = 0; i < n; i++) { /* all waited for; the first error in order wins */
    tsr_status st = wait_ready(arrays[i]);
    if (st != TSR_OK && status == TSR_OK) status = st;
  }
  tsri_profile_phase_add(TSRI_PROFILE_WAIT, start);
  if (status != TSR_OK) { /* an earlier array's message, not a later one's */
    for (size_t i = 0; i < n; i++)
      if (atomic_load(&arrays[i]->state) == TSRI_NODE_FAILED) return wait_ready(arrays[i]);
  }
  return status;
}

/* ---- on the worker ----------------------------------------------------------------------------
 */

static void record_failure(tsr_array *node, tsr_status status, const char *message) {
  node->status = status;
  node->message = strdup(message); /* NULL on exhaustion: the status name stands in */
}

/* A cross-stream edge: the node's stream waits for the input's event (its stream's backend says
   how: the CPU worker waits, CUDA enqueues the wait; both return at once for a passed event).
   Same stream: already ordered. */
static tsr_status wait_for_input(tsr_array *node, const tsr_array *input) {
  int state = atomic_load(&input->state);
  /* READY included: an asynchronous device may still be running the input's kernel. */
  if (!input->stream || input->stream == node->stream ||
      (state != TSRI_NODE_SUBMITTED && state != TSRI_NODE_READY))
    return TSR_OK;
  tsri_event e = {input->stream, input->task.seq};
  return node->stream->iface->wait_event(node->stream, e, "eval");
}

/* Fences on inputs from other streams, every one of them even after a failure (a collective's
   refusal must not seal ahead of the collective it is ordered behind, tsri_collective_refuse);
   then the first failed input's error becomes the node's. */
static bool inputs_ready(tsr_array *node) {
  bool failed = false;
  for (int i = 0; i < node->ninputs; i++) {
    /* Refused if the other stream's worker is blocked, directly or through others, on work
       queued behind this node (a host function's wait). */
    tsr_status status = wait_for_input(node, node->inputs[i]);
    if (status != TSR_OK && !failed) {
      char what[160], message[TSR_ERROR_MAX + 200];
      snprintf(message, sizeof message, "%s: %s", tsri_array_describe(node, what, sizeof what),
               tsr_last_error());
      record_failure(node, status, message);
      failed = true;
    }
  }
  for (int i = 0; i < node->ninputs && !failed; i++) {
    tsr_array *input = node->inputs[i];
    if (atomic_load(&input->state) != TSRI_NODE_FAILED) continue;
    record_failure(node, input->status,
                   input->message ? input->message : tsr_status_name(input->status));
    failed = true;
  }
  return !failed;
}

static void run_kernel(tsr_array *node) {
  tsr_status status = tsri_node_dispatch(node);
  if (status == TSR_OK) return;
  char what[160], message[TSR_ERROR_MAX + 200];
  snprintf(message, sizeof message, "%s: %s", tsri_array_describe(node, what, sizeof what),
           tsr_last_error());
  record_failure(node, status, message);
}

/* Once the device has finished the node's kernel: its inputs (and their buffers) can go, then
   the task's reference to the node. */
static void release_inputs(void *ctx) {
  tsr_array *node = ctx;
  for (int i = 0; i < node->ninputs; i++)
    tsr_array_release(node->inputs[i]);
  node->ninputs = 0;
  tsr_array_release(node); /* the task's reference */
}

void tsri_run_node_task(tsri_task *task) {
  tsr_array *node = task->node;
  /* The node may be gone once its inputs are released (after_current may run release_inputs at
     once): what the profile needs is read first. Its clock starts after the waits for inputs of
     other streams (their time is theirs). */
  tsr_device_type type = node->device.type;
  tsri_primitive primitive = node->primitive;
  uint64_t fences_start = tsri_profile_now();
  bool ready = inputs_ready(node);
  tsri_profile_phase_add(TSRI_PROFILE_INPUTS, fences_start);
  uint64_t start = tsri_profile_now();
  if (ready)
    run_kernel(node);
  else
    tsri_collective_refuse(node); /* its peers still see this rank's seal */
  atomic_store(&node->state, node->status == TSR_OK ? TSRI_NODE_READY : TSRI_NODE_FAILED);
  /* Stream-ordered: an asynchronous device may still read the inputs' buffers. */
  uint64_t release_start = tsri_profile_now();
  node->stream->iface->after_current(node->stream, release_inputs, node);
  tsri_profile_phase_add(TSRI_PROFILE_RELEASE, release_start);
  tsri_profile_node(type, primitive, start);
}

void tsri_fail_node_task(tsri_task *task, tsr_status status, const char *message) {
  tsr_array *node = task->node;
  record_failure(node, status, message);
  tsri_collective_refuse(node);
  atomic_store(&node->state, TSRI_NODE_FAILED);
  release_inputs(node); /* nothing of the node ever reached the device */
}
