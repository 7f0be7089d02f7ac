/* cpu/stream.c — the CPU's streams (core/stream.h's interface): one worker thread per stream
 * running its FIFO of tasks in order, and a completed-task counter that is the stream's event.
 * A cross-stream edge is a wait on the other stream's counter, on this stream's worker: the CPU
 * runs its kernels synchronously, so the worker is where "after that event" happens. */
#include "cpu/stream.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"

typedef struct {
  pthread_mutex_t queue_mutex;
  pthread_cond_t queue_cond;
  tsri_task *head, *tail;
  bool stop;
  bool worker_idle; /* waiting on queue_cond */
  bool worker_started;
  pthread_t worker;

  atomic_uint_fast64_t completed; /* last sequence number whose task has run */
  pthread_mutex_t done_mutex;
  pthread_cond_t done_cond;
  atomic_int waiters;
} cpu_stream;

static cpu_stream *ctx_of(tsri_stream *s) {
  return s->ctx;
}

static void run_task(tsri_task *task) {
  if (task->node) {
    tsri_run_node_task(task);
  } else {
    task->host_fn(task->host_ctx);
    free(task);
  }
}

static void mark_completed(cpu_stream *c, uint64_t seq) {
  /* Paired with cpu_host_wait: both sides use sequentially consistent atomics, so either the
     waiter sees the new count or this side sees the waiter and broadcasts under the mutex. */
  atomic_store(&c->completed, seq);
  if (atomic_load(&c->waiters) > 0) {
    pthread_mutex_lock(&c->done_mutex);
    pthread_cond_broadcast(&c->done_cond);
    pthread_mutex_unlock(&c->done_mutex);
  }
}

static void *worker_main(void *arg) {
  tsri_stream *s = arg;
  cpu_stream *c = ctx_of(s);
  tsri_stream_set_current(s);
  pthread_mutex_lock(&c->queue_mutex);
  for (;;) {
    while (!c->head && !c->stop) {
      c->worker_idle = true;
      pthread_cond_wait(&c->queue_cond, &c->queue_mutex);
      c->worker_idle = false;
    }
    tsri_task *batch = c->head;
    c->head = c->tail = NULL;
    if (!batch) break; /* stop requested and nothing left */
    pthread_mutex_unlock(&c->queue_mutex);
    while (batch) {
      tsri_task *task = batch;
      batch = task->next;
      uint64_t seq = task->seq; /* the task may be freed by running it */
      run_task(task);
      mark_completed(c, seq);
    }
    pthread_mutex_lock(&c->queue_mutex);
  }
  pthread_mutex_unlock(&c->queue_mutex);
  return NULL;
}

static void cpu_destroy(tsri_stream *s) {
  cpu_stream *c = ctx_of(s);
  if (!c) return;
  pthread_mutex_destroy(&c->queue_mutex);
  pthread_cond_destroy(&c->queue_cond);
  pthread_mutex_destroy(&c->done_mutex);
  pthread_cond_destroy(&c->done_cond);
  free(c);
  s->ctx = NULL;
}

static tsr_status cpu_create(tsri_stream *s) {
  cpu_stream *c = calloc(1, sizeof *c);
  if (!c) return tsri_error(TSR_ERR_NOMEM, "stream_new: out of host memory");
  pthread_mutex_init(&c->queue_mutex, NULL);
  pthread_cond_init(&c->queue_cond, NULL);
  pthread_mutex_init(&c->done_mutex, NULL);
  pthread_cond_init(&c->done_cond, NULL);
  s->ctx = c;
  int rc = pthread_create(&c->worker, NULL, worker_main, s);
  if (rc != 0) {
    cpu_destroy(s);
    return tsri_error(TSR_ERR_NOMEM, "stream_new: could not start a worker thread (error %d)", rc);
  }
  c->worker_started = true;
  return TSR_OK;
}

static void cpu_submit(tsri_stream *s, tsri_task *task) {
  cpu_stream *c = ctx_of(s);
  pthread_mutex_lock(&c->queue_mutex);
  if (c->tail)
    c->tail->next = task;
  else
    c->head = task;
  c->tail = task;
  if (c->worker_idle) pthread_cond_signal(&c->queue_cond);
  pthread_mutex_unlock(&c->queue_mutex);
}

static bool cpu_query(tsri_stream *s, uint64_t seq) {
  return atomic_load(&ctx_of(s)->completed) >= seq;
}

static tsr_status cpu_host_wait(tsri_stream *s, uint64_t seq) {
  cpu_stream *c = ctx_of(s);
  pthread_mutex_lock(&c->done_mutex);
  atomic_fetch_add(&c->waiters, 1);
  while (atomic_load(&c->completed) < seq)
    pthread_cond_wait(&c->done_cond, &c->done_mutex);
  atomic_fetch_sub(&c->waiters, 1);
  pthread_mutex_unlock(&c->done_mutex);
  return TSR_OK; /* the CPU fails nodes, never a stream */
}

/* The worker itself is where the next kernel starts: it waits for the other stream's event here
   (core refuses a wait that would close a cycle of blocked workers). */
static tsr_status cpu_wait_event(tsri_stream *s, tsri_event e, const char *what) {
  (void)s;
  return tsri_stream_wait(e.stream, e.seq, what);
}

/* On the worker, kernels have finished when they return: everything it ran is done. From any
   other thread (under the evaluation lock), a host task behind the work queued so far. */
static void cpu_after_current(tsri_stream *s, void (*fn)(void *ctx), void *ctx) {
  tsri_task *task = tsri_stream_current() == s ? NULL : calloc(1, sizeof *task);
  if (!task) { /* on the worker; or out of host memory: wait for the work instead */
    if (tsri_stream_current() != s) tsri_stream_wait(s, atomic_load(&s->submitted), "release");
    fn(ctx);
    return;
  }
  task->host_fn = fn;
  task->host_ctx = ctx;
  tsri_stream_submit(s, task);
}

static void *cpu_native(tsri_stream *s) {
  (void)s;
  return NULL;
}

/* Host memory on both sides: after the stream's work so far, a plain copy. */
static tsr_status cpu_copy(tsri_stream *s, void *dst, const void *src, uint64_t bytes,
                           tsri_copy_direction direction) {
  (void)direction;
  tsr_status status = tsri_stream_wait(s, atomic_load(&s->submitted), "copy");
  if (status == TSR_OK && bytes > 0) memcpy(dst, src, bytes);
  return status;
}

static void cpu_stop(tsri_stream *s) {
  cpu_stream *c = ctx_of(s);
  if (!c || !c->worker_started) return;
  pthread_mutex_lock(&c->queue_mutex);
  c->stop = true;
  pthread_cond_signal(&c->queue_cond);
  pthread_mutex_unlock(&c->queue_mutex);
  pthread_join(c->worker, NULL);
  c->worker_started = false;
}

const tsri_stream_iface tsri_cpu_streams = {.create = cpu_create,
                                            .submit = cpu_submit,
                                            .query = cpu_query,
                                            .host_wait = cpu_host_wait,
                                            .wait_event = cpu_wait_event,
                                            .after_current = cpu_after_current,
                                            .native = cpu_native,
                                            .copy = cpu_copy,
                                            .stop = cpu_stop,
                                            .destroy = cpu_destroy};
