/* core/stream.c — streams: the worker thread and its FIFO, sequence-number fences, the registry
 * of live streams, default streams, and the public stream functions. It runs tasks; it does not
 * know what a node computes (core/eval.c) or how (the backends). */
#include "core/stream.h"

#include <stdlib.h>

#include "base/discovery.h"
#include "base/status.h"
#include "core/backend.h"
#include "core/device.h"
#include "core/lock.h"
#include "tessera/spi.h"

/* Live streams, default ones included; guarded by the evaluation lock. */
static tsr_stream *registry;
static tsr_stream *default_streams[1 + TSR_MAX_GPUS];

static int default_slot(tsr_device d) {
  return d.type == TSR_CPU ? 0 : 1 + d.index;
}

static void run_task(tsri_task *task) {
  if (task->node) {
    tsri_run_node_task(task);
  } else {
    task->host_fn(task->host_ctx);
    free(task);
  }
}

static void mark_completed(tsr_stream *s, uint64_t seq) {
  /* Paired with tsri_stream_wait: both sides use sequentially consistent atomics, so either the
     waiter sees the new count or this side sees the waiter and broadcasts under the mutex. */
  atomic_store(&s->completed, seq);
  if (atomic_load(&s->waiters) > 0) {
    pthread_mutex_lock(&s->done_mutex);
    pthread_cond_broadcast(&s->done_cond);
    pthread_mutex_unlock(&s->done_mutex);
  }
}

static void *worker_main(void *arg) {
  tsr_stream *s = arg;
  pthread_mutex_lock(&s->queue_mutex);
  for (;;) {
    while (!s->head && !s->stop) {
      s->worker_idle = true;
      pthread_cond_wait(&s->queue_cond, &s->queue_mutex);
      s->worker_idle = false;
    }
    tsri_task *batch = s->head;
    s->head = s->tail = NULL;
    if (!batch) break; /* stop requested and nothing left */
    pthread_mutex_unlock(&s->queue_mutex);
    while (batch) {
      tsri_task *task = batch;
      batch = task->next;
      uint64_t seq = task->seq; /* the task may be freed by running it */
      run_task(task);
      mark_completed(s, seq);
    }
    pthread_mutex_lock(&s->queue_mutex);
  }
  pthread_mutex_unlock(&s->queue_mutex);
  return NULL;
}

static void stream_destroy(tsr_stream *s) {
  pthread_mutex_destroy(&s->queue_mutex);
  pthread_cond_destroy(&s->queue_cond);
  pthread_mutex_destroy(&s->done_mutex);
  pthread_cond_destroy(&s->done_cond);
  free(s);
}

static tsr_status stream_create(tsr_device d, bool is_default, tsr_stream **out) {
  tsr_stream *s = calloc(1, sizeof *s);
  if (!s) return tsri_error(TSR_ERR_NOMEM, "stream_new: out of host memory");
  s->device = d;
  s->is_default = is_default;
  atomic_init(&s->refs, 1);
  pthread_mutex_init(&s->queue_mutex, NULL);
  pthread_cond_init(&s->queue_cond, NULL);
  pthread_mutex_init(&s->done_mutex, NULL);
  pthread_cond_init(&s->done_cond, NULL);
  int rc = pthread_create(&s->worker, NULL, worker_main, s);
  if (rc != 0) {
    stream_destroy(s);
    return tsri_error(TSR_ERR_NOMEM, "stream_new: could not start a worker thread (error %d)", rc);
  }
  s->registry_next = registry;
  registry = s;
  *out = s;
  return TSR_OK;
}

static void stop_and_join(tsr_stream *s) {
  pthread_mutex_lock(&s->queue_mutex);
  s->stop = true;
  pthread_cond_signal(&s->queue_cond);
  pthread_mutex_unlock(&s->queue_mutex);
  pthread_join(s->worker, NULL);
}

static void registry_remove(tsr_stream *s) {
  for (tsr_stream **p = &registry; *p; p = &(*p)->registry_next) {
    if (*p == s) {
      *p = s->registry_next;
      return;
    }
  }
}

tsr_stream *tsri_stream_retain(tsr_stream *s) {
  if (s) atomic_fetch_add(&s->refs, 1);
  return s;
}

void tsri_stream_release(tsr_stream *s) {
  if (s && atomic_fetch_sub(&s->refs, 1) == 1) stream_destroy(s);
}

void tsri_stream_submit(tsr_stream *s, tsri_task *task) {
  task->next = NULL;
  task->seq = atomic_fetch_add(&s->submitted, 1) + 1;
  pthread_mutex_lock(&s->queue_mutex);
  if (s->tail)
    s->tail->next = task;
  else
    s->head = task;
  s->tail = task;
  if (s->worker_idle) pthread_cond_signal(&s->queue_cond);
  pthread_mutex_unlock(&s->queue_mutex);
}

void tsri_stream_wait(tsr_stream *s, uint64_t seq) {
  if (atomic_load(&s->completed) >= seq) return;
  pthread_mutex_lock(&s->done_mutex);
  atomic_fetch_add(&s->waiters, 1);
  while (atomic_load(&s->completed) < seq)
    pthread_cond_wait(&s->done_cond, &s->done_mutex);
  atomic_fetch_sub(&s->waiters, 1);
  pthread_mutex_unlock(&s->done_mutex);
}

/* Under the evaluation lock. NULL when d has no backend in this build or does not exist. */
static tsr_stream *default_stream_locked(tsr_device d) {
  if (tsri_device_check(d, "default_stream") != TSR_OK || !tsri_backend_for(d.type)) return NULL;
  int slot = default_slot(d);
  if (!default_streams[slot]) {
    tsr_stream *s = NULL;
    if (stream_create(d, true, &s) == TSR_OK) default_streams[slot] = s;
  }
  return default_streams[slot];
}

tsr_stream *tsr_default_stream(tsr_device d) {
  tsri_eval_lock();
  tsr_stream *s = default_stream_locked(d);
  tsri_eval_unlock();
  return s;
}

tsr_stream *tsri_stream_resolve(tsr_stream *s) {
  return s ? s : tsr_default_stream(tsr_default_device());
}

tsr_status tsr_stream_new(tsr_stream **out, tsr_device d) {
  if (!out) return tsri_error(TSR_ERR_INVALID, "stream_new: out is NULL");
  tsr_status status = tsri_device_check(d, "stream_new");
  if (status != TSR_OK) return status;
  if (!tsri_backend_for(d.type))
    return tsri_error(TSR_ERR_UNSUPPORTED, "stream_new: this build has no backend for %s devices",
                      d.type == TSR_GPU ? "GPU" : "CPU");
  tsri_eval_lock();
  status = stream_create(d, false, out);
  tsri_eval_unlock();
  return status;
}

tsr_status tsr_stream_free(tsr_stream *s) {
  if (!s) return tsri_error(TSR_ERR_INVALID, "stream_free: stream is NULL");
  if (s->is_default)
    return tsri_error(TSR_ERR_INVALID, "stream_free: a default stream belongs to the library");
  tsri_eval_lock();
  bool was_closed = atomic_exchange(&s->closed, true);
  if (!was_closed) registry_remove(s);
  tsri_eval_unlock();
  if (was_closed) return tsri_error(TSR_ERR_STATE, "stream_free: the stream was already freed");
  stop_and_join(s); /* runs what was queued first */
  tsri_stream_release(s);
  return TSR_OK;
}

tsr_status tsr_stream_synchronize(tsr_stream *s) {
  s = tsri_stream_resolve(s);
  if (!s) return tsri_error(TSR_ERR_DEVICE, "stream_synchronize: no default stream");
  tsri_stream_wait(s, atomic_load(&s->submitted));
  return TSR_OK;
}

tsr_device tsr_stream_device(const tsr_stream *s) {
  tsr_device cpu = {TSR_CPU, 0};
  return s ? s->device : cpu;
}

void *tsr_stream_native(tsr_stream *s) {
  (void)s; /* CPU streams have no native handle; the CUDA backend will answer for its own */
  return NULL;
}

tsr_status tsr_stream_enqueue_host(tsr_stream *s, void (*fn)(void *ctx), void *ctx) {
  if (!fn) return tsri_error(TSR_ERR_INVALID, "stream_enqueue_host: fn is NULL");
  tsri_task *task = calloc(1, sizeof *task);
  if (!task) return tsri_error(TSR_ERR_NOMEM, "stream_enqueue_host: out of host memory");
  task->host_fn = fn;
  task->host_ctx = ctx;
  tsr_status status = TSR_OK;
  tsri_eval_lock();
  tsr_stream *target = tsri_stream_resolve(s);
  if (!target)
    status = tsri_error(TSR_ERR_DEVICE, "stream_enqueue_host: no default stream");
  else if (atomic_load(&target->closed))
    status = tsri_error(TSR_ERR_STATE, "stream_enqueue_host: the stream was freed");
  else
    tsri_stream_submit(target, task);
  tsri_eval_unlock();
  if (status != TSR_OK) free(task);
  return status;
}

void tsri_streams_shutdown(void) {
  tsri_eval_lock();
  tsr_stream *list = registry;
  registry = NULL;
  for (int i = 0; i < 1 + TSR_MAX_GPUS; i++)
    default_streams[i] = NULL;
  for (tsr_stream *s = list; s; s = s->registry_next)
    atomic_store(&s->closed, true);
  tsri_eval_unlock();
  while (list) {
    tsr_stream *s = list;
    list = s->registry_next;
    stop_and_join(s);
    tsri_stream_release(s);
  }
}
