/* cuda/stream.c — CUDA streams behind core/stream.h's interface. Submission launches at once, on
 * the submitting thread (a launch only queues work), so no thread sits between core and the GPU.
 * Completion is tracked with events recorded lazily: a "marker" (seq, event) is recorded only
 * when someone asks about a task not yet covered (a wait, a query, a cross-stream edge, a batch of
 * releases), and since a stream runs in order, a marker at seq covers every task before it.
 *
 * Releases (core's after_current: a node's inputs) are collected per stream and handed, with one
 * marker, to the backend's release thread, which waits for the marker and then runs them: buffers
 * return to the cache only after the kernels that read them are done, and the release thread may
 * call cudaFree (a CUDA host callback may not). A device fault fails the stream: later work on it
 * fails with TSR_ERR_DEVICE, waiters get the fault's message. */
#include "cuda/stream.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/status.h"
#include "core/profile.h"
#include "cuda/graph.h"
#include "cuda/release.h"
#include "cuda/runtime.h"

typedef struct marker {
  struct marker *next;
  uint64_t seq;
  cudaEvent_t event;
  int waiters; /* threads in cudaEventSynchronize on it: not freed meanwhile */
} marker;

typedef struct cuda_stream {
  cudaStream_t stream;
  int device;
  pthread_mutex_t mutex;         /* the fields below */
  atomic_uint_fast64_t launched; /* last seq whose work is queued on the stream */
  uint64_t completed;            /* last seq known done */
  marker *head, *tail;           /* recorded markers, oldest first */
  bool failed;
  char failure[TSR_ERROR_MAX];
  tsri_cuda_release_batch *pending; /* releases since the last marker handed to the thread */
  tsri_cuda_graph_batch graphs;     /* kernels being captured into a graph (cuda/graph.h) */
  bool step_capturing;           /* a step's first run is being captured (begin_recording, below) */
  struct cuda_stream *next_live; /* the list of live streams (settle) */
} cuda_stream;

/* Every created stream until destroyed, for tsri_cuda_settle_all. Lock order: this mutex, then a
   stream's. */
static struct {
  pthread_mutex_t mutex;
  cuda_stream *head;
} live = {.mutex = PTHREAD_MUTEX_INITIALIZER};

/* Set on CUDA's callback thread while a host function runs: work after it waits for it. */
static _Thread_local bool in_host_task;

static cuda_stream *ctx_of(tsri_stream *s) {
  return s->ctx;
}

/* A failure of the device: the stream is done for (mutex held). */
static void fail_locked(cuda_stream *c, cudaError_t err, const char *what) {
  if (c->failed) return;
  c->failed = true;
  snprintf(c->failure, sizeof c->failure, "gpu:%d: %s: %s (%s)", c->device, what,
           cudaGetErrorName(err), cudaGetErrorString(err));
  (void)cudaGetLastError();
}

/* Queues the kernels being captured for real, before anything else is enqueued on the stream
   (mutex held). A failure loses them: the stream is failed. */
static void end_graph_locked(cuda_stream *c);

/* The calling thread's device switched to `device` for a call that needs it (an event is
   created on the current device, and recording it on another device's stream fails); returns
   the previous one for leave_device, so no caller (a user thread settling a cap refusal, a
   synchronize) finds its current device changed. */
static int enter_device(int device) {
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess) (void)cudaGetLastError();
  if (previous != device && cudaSetDevice(device) != cudaSuccess) (void)cudaGetLastError();
  return previous;
}

static void leave_device(int previous, int device) {
  if (previous >= 0 && previous != device && cudaSetDevice(previous) != cudaSuccess)
    (void)cudaGetLastError();
}

/* A step's recording: its executable graph, and the releases its capture queued (scratch buffers
   of packed operands, inputs of its nodes), which the graph reuses at every replay: they run
   when the recording is freed. */
typedef struct {
  cudaGraphExec_t exec;
  tsri_cuda_release_batch *held;
} step_recording;

/* Ends a step's capture (mutex held): its kernels are launched once, as a graph, and the
   executable is returned when `keep`; otherwise (the stream is needed outside the capture
   before the step's submission ended) it is freed and the step replays op by op. NULL on
   failure, which fails the stream: the captured kernels are lost. */
static cudaGraphExec_t end_step_capture_locked(cuda_stream *c, bool keep) {
  c->step_capturing = false;
  int previous = enter_device(c->device);
  cudaGraph_t graph = NULL;
  cudaGraphExec_t exec = NULL;
  cudaError_t err = cudaStreamEndCapture(c->stream, &graph);
  if (err == cudaSuccess) err = cudaGraphInstantiate(&exec, graph, 0);
  if (err == cudaSuccess) err = cudaGraphLaunch(exec, c->stream);
  if (graph) cudaGraphDestroy(graph);
  if ((err != cudaSuccess || !keep) && exec) {
    cudaGraphExecDestroy(exec); /* an executable in flight is freed once it completes */
    exec = NULL;
  }
  leave_device(previous, c->device);
  if (err != cudaSuccess) fail_locked(c, err, "launching a step's captured kernels");
  if (err == cudaSuccess && !keep)
    tsri_log(TSRI_LOG_DEBUG,
             "gpu:%d: a step's capture ended early (an event, a copy, a host "
             "function or a wait needed the stream): it replays op by op",
             c->device);
  return exec;
}

static void end_graph_locked(cuda_stream *c) {
  if (c->step_capturing) {
    end_step_capture_locked(c, false);
    return;
  }
  if (!c->graphs.capturing) {
    c->graphs.direct = 0; /* what tsri_cuda_graph_end does when nothing is open */
    return;
  }
  int previous = enter_device(c->device);
  cudaError_t err = tsri_cuda_graph_end(&c->graphs, c->stream);
  leave_device(previous, c->device);
  if (err != cudaSuccess) fail_locked(c, err, "launching a graph of captured kernels");
}

/* The same, for a caller that does not hold the mutex. */
static void end_graph(cuda_stream *c) {
  pthread_mutex_lock(&c->mutex);
  end_graph_locked(c);
  pthread_mutex_unlock(&c->mutex);
}

/* A marker covering every launched task (mutex held). NULL on failure (the stream is failed). */
static marker *cover_launched_locked(cuda_stream *c) {
  end_graph_locked(c);
  uint64_t launched = atomic_load(&c->launched);
  if (c->tail && c->tail->seq >= launched) return c->tail;
  marker *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  m->seq = launched;
  int previous = enter_device(c->device);
  cudaError_t err = cudaEventCreateWithFlags(&m->event, cudaEventDisableTiming);
  if (err == cudaSuccess) err = cudaEventRecord(m->event, c->stream);
  leave_device(previous, c->device);
  if (err != cudaSuccess) {
    fail_locked(c, err, "recording an event");
    if (m->event) cudaEventDestroy(m->event);
    free(m);
    return NULL;
  }
  if (c->tail)
    c->tail->next = m;
  else
    c->head = m;
  c->tail = m;
  return m;
}

/* Drops the done markers at the front (mutex held): their tasks and all before are complete. */
static void retire_done_locked(cuda_stream *c) {
  while (c->head && c->head->waiters == 0) {
    cudaError_t err = c->head->seq <= c->completed ? cudaSuccess : cudaEventQuery(c->head->event);
    if (err == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return;
    }
    if (err != cudaSuccess) fail_locked(c, err, "a kernel on the stream");
    marker *m = c->head;
    if (m->seq > c->completed) c->completed = m->seq; /* a later marker may have said more */
    c->head = m->next;
    if (!c->head) c->tail = NULL;
    cudaEventDestroy(m->event);
    free(m);
  }
}

static bool cuda_query(tsri_stream *s, uint64_t seq) {
  cuda_stream *c = ctx_of(s);
  if (seq > atomic_load(&c->launched)) return false;
  pthread_mutex_lock(&c->mutex);
  if (c->completed < seq && !c->failed) {
    cover_launched_locked(c);
    retire_done_locked(c);
  }
  bool done = c->completed >= seq || c->failed;
  pthread_mutex_unlock(&c->mutex);
  return done;
}

static tsr_status failure_status(cuda_stream *c) {
  return tsri_error(TSR_ERR_DEVICE, "%s", c->failure);
}

static tsr_status cuda_host_wait(tsri_stream *s, uint64_t seq) {
  cuda_stream *c = ctx_of(s);
  pthread_mutex_lock(&c->mutex);
  while (c->completed < seq && !c->failed) {
    marker *m = c->head;
    while (m && m->seq < seq)
      m = m->next;
    if (!m) m = cover_launched_locked(c); /* seq is launched: core waits only for submitted work */
    if (!m) { /* no marker could be made: the stream is failed, or the host is out of memory */
      if (!c->failed) fail_locked(c, cudaErrorMemoryAllocation, "a marker for a wait");
      break;
    }
    m->waiters++;
    pthread_mutex_unlock(&c->mutex);
    cudaError_t err = cudaEventSynchronize(m->event);
    pthread_mutex_lock(&c->mutex);
    m->waiters--;
    if (err != cudaSuccess)
      fail_locked(c, err, "a kernel on the stream");
    else if (m->seq > c->completed)
      /* m covers seq and everything before it (a stream runs in order). Retiring alone would not
         say so while an older marker still has a waiter: this thread would then synchronize on
         m again and again, taking the driver's lock in a loop while that waiter starves for it
         (seen on the H200: test_streams' threads hung, one spinning in cudaEventSynchronize). */
      c->completed = m->seq;
    retire_done_locked(c);
  }
  tsr_status status = c->failed ? failure_status(c) : TSR_OK;
  pthread_mutex_unlock(&c->mutex);
  return status;
}

/* An event of another CUDA stream becomes a device-side wait; anything else (a CPU stream's task)
   is waited for here, on the submitting thread, before later work is launched. */
static tsr_status cuda_wait_event(tsri_stream *s, tsri_event e, const char *what) {
  cuda_stream *c = ctx_of(s);
  if (e.stream->iface != &tsri_cuda_streams) return tsri_stream_wait(e.stream, e.seq, what);
  end_graph(c); /* the wait is enqueued for real, after the kernels before it */
  cuda_stream *other = ctx_of(e.stream);
  pthread_mutex_lock(&other->mutex);
  marker *m = other->completed >= e.seq ? NULL : cover_launched_locked(other);
  cudaError_t err = m ? cudaStreamWaitEvent(c->stream, m->event, 0) : cudaSuccess;
  bool failed = other->failed;
  pthread_mutex_unlock(&other->mutex);
  if (failed) return failure_status(other);
  return tsri_cuda_status(err, what);
}

/* Takes the pending releases with an event recorded after everything launched so far (mutex
   held); the caller hands them to the release thread once the mutex is released. NULL event:
   the release thread synchronizes the device instead. */
static tsri_cuda_release_batch *take_pending_locked(cuda_stream *c, cudaEvent_t *event) {
  tsri_cuda_release_batch *batch = c->pending;
  c->pending = NULL;
  *event = NULL;
  if (!batch) return NULL;
  end_graph_locked(c);
  int previous = enter_device(c->device);
  /* Blocking: the release thread sleeps in cudaEventSynchronize instead of spinning on a core,
     which slowed every launch of the submitting thread by ~0.5–1.5 µs on the H200. */
  if (cudaEventCreateWithFlags(event, cudaEventDisableTiming | cudaEventBlockingSync) ==
          cudaSuccess &&
      cudaEventRecord(*event, c->stream) != cudaSuccess) {
    cudaEventDestroy(*event);
    *event = NULL;
  }
  (void)cudaGetLastError();
  leave_device(previous, c->device);
  return batch;
}

/* A batch the release thread could not take, run by the caller once its locks are released. */
typedef struct {
  tsri_cuda_release_batch *batch;
  cudaEvent_t event;
} leftover_batch;

/* Hands the pending releases to the release thread while the mutex is held, so batches of one
   stream reach it in the order they were taken whoever takes them (a settle's wait for
   everything queued before it then covers every earlier batch of the stream). */
static leftover_batch hand_over_locked(cuda_stream *c) {
  leftover_batch left = {NULL, NULL};
  cudaEvent_t event = NULL;
  tsri_cuda_release_batch *batch = take_pending_locked(c, &event);
  if (batch && !tsri_cuda_release_enqueue(batch, event)) left = (leftover_batch){batch, event};
  return left;
}

static void run_leftover(leftover_batch left) {
  if (left.batch) tsri_cuda_release_submit(left.batch, left.event);
}

static void cuda_flush(tsri_stream *s) {
  cuda_stream *c = ctx_of(s);
  pthread_mutex_lock(&c->mutex);
  end_graph_locked(c); /* the evaluation's kernels run now */
  leftover_batch left = hand_over_locked(c);
  pthread_mutex_unlock(&c->mutex);
  run_leftover(left);
}

/* Releases ride in batches; a long graph flushes every so many so memory comes back while it
   runs. */
enum { RELEASES_PER_BATCH = 64 };

static void cuda_after_current(tsri_stream *s, void (*fn)(void *ctx), void *ctx) {
  cuda_stream *c = ctx_of(s);
  leftover_batch left = {NULL, NULL};
  pthread_mutex_lock(&c->mutex);
  if (!c->pending) c->pending = tsri_cuda_release_batch_new();
  bool queued = c->pending && tsri_cuda_release_batch_add(c->pending, fn, ctx);
  /* While kernels are being captured the batch waits for the graph's end (a marker would end
     it early); TSRI_CUDA_GRAPH_CHUNK bounds how long that is. */
  if (queued && !c->graphs.capturing && !c->step_capturing &&
      tsri_cuda_release_batch_count(c->pending) >= RELEASES_PER_BATCH)
    left = hand_over_locked(c);
  pthread_mutex_unlock(&c->mutex);
  run_leftover(left);
  if (!queued) { /* out of host memory for the list: wait for the device, then release */
    end_graph(c);
    cudaStreamSynchronize(c->stream);
    (void)cudaGetLastError();
    fn(ctx);
  }
}

/* A host function runs from CUDA's callback thread in stream order; the task is freed after. */
static void CUDART_CB run_host_task(void *arg) {
  tsri_task *task = arg;
  in_host_task = true;
  task->host_fn(task->host_ctx);
  in_host_task = false;
  free(task);
}

static void cuda_submit(tsri_stream *s, tsri_task *task) {
  cuda_stream *c = ctx_of(s);
  uint64_t prelude_start = tsri_profile_now();
  tsr_status status = tsri_cuda_use_device(c->device);
  pthread_mutex_lock(&c->mutex);
  bool failed = c->failed;
  char failure[TSR_ERROR_MAX];
  snprintf(failure, sizeof failure, "%s", c->failure);
  pthread_mutex_unlock(&c->mutex);
  tsri_profile_phase_add(TSRI_PROFILE_PRELUDE, prelude_start);
  if (task->node) {
    if (failed || status != TSR_OK)
      tsri_fail_node_task(task, TSR_ERR_DEVICE, failed ? failure : tsr_last_error());
    else
      tsri_run_node_task(task); /* launches the node's kernels on c->stream */
  } else {
    end_graph(c);
    /* Runs even on a failed stream (the SPI promises it, so fn can release what it owns), as
       long as the runtime still takes the callback; otherwise here and now. */
    if (cudaLaunchHostFunc(c->stream, run_host_task, task) != cudaSuccess) {
      (void)cudaGetLastError();
      cudaStreamSynchronize(c->stream);
      (void)cudaGetLastError();
      run_host_task(task);
    }
  }
  atomic_store(&c->launched, task->seq);
}

static tsr_status cuda_create(tsri_stream *s) {
  cuda_stream *c = calloc(1, sizeof *c);
  if (!c) return tsri_error(TSR_ERR_NOMEM, "stream_new: out of host memory");
  c->device = s->device.index;
  tsr_status status = tsri_cuda_use_device(c->device);
  if (status == TSR_OK)
    status = tsri_cuda_status(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking),
                              "stream_new: cudaStreamCreateWithFlags");
  if (status != TSR_OK) {
    free(c);
    return status;
  }
  pthread_mutex_init(&c->mutex, NULL);
  s->ctx = c;
  pthread_mutex_lock(&live.mutex);
  c->next_live = live.head;
  live.head = c;
  pthread_mutex_unlock(&live.mutex);
  return TSR_OK;
}

static void unlink_live(cuda_stream *c) {
  pthread_mutex_lock(&live.mutex);
  cuda_stream **link = &live.head;
  while (*link && *link != c)
    link = &(*link)->next_live;
  if (*link) *link = c->next_live;
  pthread_mutex_unlock(&live.mutex);
}

/* For work enqueued on the raw stream (cuBLAS, copies, memsets, collectives, a caller through
   tsr_stream_native): the kernels captured so far are queued first. */
static void *cuda_native(tsri_stream *s) {
  cuda_stream *c = ctx_of(s);
  /* A step's capture ends here too (the step replays op by op): cuBLASLt's workspace is ordered
     across streams by an event recorded outside any capture, which a capture cannot wait for. */
  end_graph(c);
  return c->stream;
}

cudaError_t tsri_cuda_stream_launch(tsri_stream *s, cudaKernel_t kernel, dim3 grid, dim3 block,
                                    void **args, size_t shared_bytes) {
  cuda_stream *c = ctx_of(s);
  pthread_mutex_lock(&c->mutex);
  if (c->step_capturing) {
    cudaError_t err =
        cudaLaunchKernel((const void *)kernel, grid, block, args, shared_bytes, c->stream);
    if (err != cudaSuccess) { /* the capture is invalidated, with the step's earlier kernels */
      cudaGraph_t lost = NULL;
      c->step_capturing = false;
      if (cudaStreamEndCapture(c->stream, &lost) == cudaSuccess && lost) cudaGraphDestroy(lost);
      fail_locked(c, err, "a kernel launch while capturing a step");
    }
    pthread_mutex_unlock(&c->mutex);
    return err;
  }
  unsigned captured_before = c->graphs.capturing ? c->graphs.captured : 0;
  cudaError_t err =
      tsri_cuda_graph_launch(&c->graphs, c->stream, kernel, grid, block, args, shared_bytes);
  if (err != cudaSuccess && c->graphs.capturing) {
    /* The capture is invalidated: the kernels captured before this one (of earlier nodes, which
       count as launched) are lost with it. */
    (void)tsri_cuda_graph_end(&c->graphs, c->stream);
    if (captured_before > 0) fail_locked(c, err, "a kernel launch while capturing a graph");
  } else if (c->graphs.capturing && c->graphs.captured >= TSRI_CUDA_GRAPH_CHUNK) {
    end_graph_locked(c); /* a full chunk runs now; a failure fails the stream */
  }
  pthread_mutex_unlock(&c->mutex);
  return err;
}

static tsr_status cuda_copy(tsri_stream *s, void *dst, const void *src, uint64_t bytes,
                            tsri_copy_direction direction) {
  cuda_stream *c = ctx_of(s);
  if (bytes == 0) return TSR_OK;
  end_graph(c);
  tsr_status status = tsri_cuda_use_device(c->device);
  if (status != TSR_OK) return status;
  enum cudaMemcpyKind kind =
      direction == TSRI_COPY_TO_HOST ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice;
  cudaError_t err = cudaMemcpyAsync(dst, src, bytes, kind, c->stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(c->stream);
  if (err != cudaSuccess) {
    pthread_mutex_lock(&c->mutex);
    fail_locked(c, err, "a copy");
    status = failure_status(c);
    pthread_mutex_unlock(&c->mutex);
  }
  return status;
}

/* Everything queued is already launched: wait for the device, then run the last releases. */
static void cuda_stop(tsri_stream *s) {
  cuda_stream *c = ctx_of(s);
  if (!c) return;
  tsri_cuda_use_device(c->device);
  end_graph(c);
  cudaStreamSynchronize(c->stream);
  (void)cudaGetLastError();
  cuda_flush(s);
  tsri_cuda_release_drain();
}

static void cuda_destroy(tsri_stream *s) {
  cuda_stream *c = ctx_of(s);
  if (!c) return;
  unlink_live(c);
  tsri_cuda_use_device(c->device);
  while (c->head) {
    marker *m = c->head;
    c->head = m->next;
    cudaEventDestroy(m->event);
    free(m);
  }
  tsri_cuda_graph_destroy(&c->graphs);
  cudaStreamDestroy(c->stream);
  (void)cudaGetLastError();
  pthread_mutex_destroy(&c->mutex);
  free(c);
  s->ctx = NULL;
}

/* After a synchronize of s: its releases run before the caller goes on (bounded, see
   TSRI_CUDA_SETTLE_MS), so a snapshot taken next shows what is really in use. */
static void cuda_settle(tsri_stream *s) {
  if (in_host_task) return;
  cuda_flush(s);
  tsri_cuda_release_drain_within(TSRI_CUDA_SETTLE_MS);
}

/* Hands every live stream's pending releases to the release thread. A batch it cannot take
   (no thread) is run after the live list's lock is released, since a release may destroy a
   stream, which takes that lock; out of host memory for that list, the rest wait for their
   streams' own flushes. */
static void hand_over_all(void) {
  size_t count = 0, capacity = 0;
  leftover_batch *left = NULL;
  pthread_mutex_lock(&live.mutex);
  for (cuda_stream *c = live.head; c; c = c->next_live) {
    if (count == capacity) {
      size_t grown = capacity ? 2 * capacity : 8;
      leftover_batch *bigger = realloc(left, grown * sizeof *bigger);
      if (!bigger) break;
      left = bigger;
      capacity = grown;
    }
    pthread_mutex_lock(&c->mutex);
    left[count] = hand_over_locked(c);
    pthread_mutex_unlock(&c->mutex);
    if (left[count].batch) count++;
  }
  pthread_mutex_unlock(&live.mutex);
  for (size_t i = 0; i < count; i++)
    run_leftover(left[i]);
  free(left);
}

void tsri_cuda_settle_all(void) {
  if (in_host_task) return;
  hand_over_all();
  tsri_cuda_release_drain_within(TSRI_CUDA_SETTLE_MS);
}

/* ---- a step's recording (core/stream.h): a stream capture kept as an executable graph ---- */

static bool cuda_begin_recording(tsri_stream *s) {
  cuda_stream *c = ctx_of(s);
  pthread_mutex_lock(&c->mutex);
  end_graph_locked(c); /* a batch of TSR_CUDA_GRAPHS runs first */
  /* Earlier releases go now: what is pending from here on is the capture's (end_recording). */
  leftover_batch left = hand_over_locked(c);
  bool capturing = false;
  if (!c->failed) {
    int previous = enter_device(c->device);
    /* Relaxed, as for batches: buffers are allocated between the captured launches. */
    capturing = cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeRelaxed) == cudaSuccess;
    if (!capturing) (void)cudaGetLastError();
    leave_device(previous, c->device);
  }
  c->step_capturing = capturing;
  pthread_mutex_unlock(&c->mutex);
  run_leftover(left);
  return capturing;
}

static void *cuda_end_recording(tsri_stream *s) {
  cuda_stream *c = ctx_of(s);
  step_recording *r = calloc(1, sizeof *r);
  pthread_mutex_lock(&c->mutex);
  cudaGraphExec_t exec = c->step_capturing ? end_step_capture_locked(c, true) : NULL;
  if (exec && r) {
    r->exec = exec;
    r->held = c->pending; /* the graph writes those buffers again at each replay */
    c->pending = NULL;
  } else if (exec) { /* out of host memory: no replay as a graph */
    cudaGraphExecDestroy(exec);
  }
  pthread_mutex_unlock(&c->mutex);
  if (!exec) {
    free(r);
    return NULL;
  }
  return r;
}

static tsr_status cuda_replay(tsri_stream *s, void *recording) {
  cuda_stream *c = ctx_of(s);
  pthread_mutex_lock(&c->mutex);
  end_graph_locked(c);
  if (!c->failed) {
    cudaError_t err = cudaGraphLaunch(((step_recording *)recording)->exec, c->stream);
    if (err != cudaSuccess) fail_locked(c, err, "replaying a step's graph");
  }
  tsr_status status = c->failed ? failure_status(c) : TSR_OK;
  pthread_mutex_unlock(&c->mutex);
  return status;
}

/* Replays run synchronously (tessera/step.h), so nothing of the graph is in flight: its held
   releases run once the stream's earlier work is done. */
static void cuda_free_recording(tsri_stream *s, void *recording) {
  cuda_stream *c = ctx_of(s);
  step_recording *r = recording;
  int previous = enter_device(c->device);
  cudaGraphExecDestroy(r->exec);
  (void)cudaGetLastError();
  leave_device(previous, c->device);
  if (r->held) tsri_cuda_release_submit(r->held, NULL);
  free(r);
}

const tsri_stream_iface tsri_cuda_streams = {.create = cuda_create,
                                             .submit = cuda_submit,
                                             .query = cuda_query,
                                             .host_wait = cuda_host_wait,
                                             .wait_event = cuda_wait_event,
                                             .after_current = cuda_after_current,
                                             .flush = cuda_flush,
                                             .settle = cuda_settle,
                                             .native = cuda_native,
                                             .copy = cuda_copy,
                                             .begin_recording = cuda_begin_recording,
                                             .end_recording = cuda_end_recording,
                                             .replay = cuda_replay,
                                             .free_recording = cuda_free_recording,
                                             .stop = cuda_stop,
                                             .destroy = cuda_destroy};
