/* core/stream.c — streams as core sees them (core/stream.h): sequence numbers, waits with deadlock
 * detection for waits issued while running a stream's task, the handle table behind the public
 * tsr_stream *, default streams, and the public stream functions. How a stream runs its tasks is
 * its backend's (src/cpu/stream.c); what a node computes is core/eval.c's. */
#include "core/stream.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/discovery.h"
#include "base/log.h"
#include "base/status.h"
#include "core/backend.h"
#include "core/device.h"
#include "core/lock.h"
#include "tessera/spi.h"

static tsri_stream *default_streams[1 + TSRI_MAX_GPUS]; /* evaluation lock */

/* The stream whose task this thread runs (a CPU stream's worker); NULL on any other thread. */
static _Thread_local tsri_stream *current_worker;

void tsri_stream_set_current(tsri_stream *s) {
  current_worker = s;
}

tsri_stream *tsri_stream_current(void) {
  return current_worker;
}

static int default_slot(tsr_device d) {
  return d.type == TSR_CPU ? 0 : 1 + d.index;
}

const char *tsri_stream_name(const tsri_stream *s, char buf[64]) {
  char device[16];
  tsri_device_str(s->device, device);
  if (s->is_default)
    snprintf(buf, 64, "the default stream of %s", device);
  else
    snprintf(buf, 64, "stream %llu (%s)", (unsigned long long)s->serial, device);
  return buf;
}

/* ---- the handle table ----------------------------------------------------------------------
   A handle is (serial << SLOT_BITS) | slot, never 0. Serial numbers grow for the life of the
   process, across tsr_shutdown, so a stale handle never matches a later stream in its slot. */

_Static_assert(sizeof(uintptr_t) >= 8, "stream handles pack a 44-bit serial into a pointer");
enum { SLOT_BITS = 20, MAX_SLOTS = 1 << SLOT_BITS, NO_SLOT = -1 };

typedef struct {
  uint64_t serial; /* 0 when free */
  tsri_stream *stream;
  int next_free;
} handle_slot;

static struct {
  pthread_mutex_t mutex; /* innermost: taken under the evaluation lock, never the other way */
  handle_slot *slots;
  int count, capacity, free_head;
  uint64_t next_serial;
} handles = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, NO_SLOT, 1};

static tsr_stream *encode(uint64_t serial, int slot) {
  return (tsr_stream *)(uintptr_t)((serial << SLOT_BITS) | (uint64_t)slot);
}

/* Gives s a slot, a serial and its handle. */
static tsr_status handle_register(tsri_stream *s) {
  tsr_status status = TSR_OK;
  pthread_mutex_lock(&handles.mutex);
  int slot = handles.free_head;
  if (slot != NO_SLOT) {
    handles.free_head = handles.slots[slot].next_free;
  } else if (handles.count == MAX_SLOTS) {
    status = tsri_error(TSR_ERR_NOMEM, "stream_new: %d streams are live (the most there can be)",
                        MAX_SLOTS);
  } else {
    if (handles.count == handles.capacity) {
      int grown = handles.capacity ? handles.capacity * 2 : 16;
      handle_slot *bigger = realloc(handles.slots, (size_t)grown * sizeof *bigger);
      if (!bigger) status = tsri_error(TSR_ERR_NOMEM, "stream_new: out of host memory");
      if (bigger) handles.slots = bigger, handles.capacity = grown;
    }
    if (status == TSR_OK) slot = handles.count++;
  }
  if (status == TSR_OK) {
    s->serial = handles.next_serial++;
    s->handle = encode(s->serial, slot);
    handles.slots[slot] = (handle_slot){s->serial, s, NO_SLOT};
  }
  pthread_mutex_unlock(&handles.mutex);
  return status;
}

/* The live stream behind a handle, retained; NULL when it is not one. handles.mutex held. */
static tsri_stream *lookup_locked(const tsr_stream *handle) {
  uintptr_t bits = (uintptr_t)handle;
  int slot = (int)(bits & (MAX_SLOTS - 1));
  uint64_t serial = (uint64_t)bits >> SLOT_BITS;
  if (serial == 0 || slot >= handles.count || handles.slots[slot].serial != serial) return NULL;
  return tsri_stream_retain(handles.slots[slot].stream);
}

/* Frees s's slot: its handle stops resolving. False when it already was. handles.mutex held. */
static bool retire_locked(tsri_stream *s) {
  int slot = (int)((uintptr_t)s->handle & (MAX_SLOTS - 1));
  if (slot >= handles.count || handles.slots[slot].stream != s) return false;
  handles.slots[slot] = (handle_slot){0, NULL, handles.free_head};
  handles.free_head = slot;
  return true;
}

tsr_status tsri_stream_acquire(tsr_stream *handle, const char *what, tsri_stream **out) {
  if (!handle) {
    handle = tsr_default_stream(tsr_default_device());
    if (!handle) return tsri_error(TSR_ERR_DEVICE, "%s: the default device has no stream", what);
  }
  pthread_mutex_lock(&handles.mutex);
  tsri_stream *s = lookup_locked(handle);
  pthread_mutex_unlock(&handles.mutex);
  if (!s)
    return tsri_error(TSR_ERR_STATE,
                      "%s: stream handle %p is not a live stream (freed, or from before "
                      "tsr_shutdown)",
                      what, (void *)handle);
  *out = s;
  return TSR_OK;
}

/* ---- waiting, and the wait graph -------------------------------------------------------------
   Waits issued while running a stream's task can close a cycle: a host function on stream A
   evaluates work on A (queued behind itself), or work on B that needs A's later work. Each
   blocked task records what it waits for; the wait that would close a cycle sees it and is
   refused. Checking and recording
   happen under one mutex, so of two waits closing one cycle the second always sees the first. */

static pthread_mutex_t wait_graph_mutex = PTHREAD_MUTEX_INITIALIZER;

/* True when waiting for task `seq` of t can never end because the chain of blocked workers it
   depends on comes back to self (whose worker is the caller). wait_graph_mutex held. */
static bool wait_closes_cycle(const tsri_stream *self, tsri_stream *t, uint64_t seq) {
  for (int hops = 0; hops <= MAX_SLOTS; hops++) {
    if (t->iface->query(t, seq)) return false;
    if (t == self) return true;
    if (!t->waiting_on) return false; /* t's worker is running: it will get there */
    seq = t->waiting_seq;             /* t cannot pass its current task before this */
    t = t->waiting_on;
  }
  return false;
}

tsr_status tsri_stream_wait(tsri_stream *s, uint64_t seq, const char *what) {
  if (s->iface->query(s, seq)) return TSR_OK;
  tsri_stream *self = current_worker;
  if (self) {
    pthread_mutex_lock(&wait_graph_mutex);
    bool cycle = wait_closes_cycle(self, s, seq);
    if (!cycle) self->waiting_on = s, self->waiting_seq = seq;
    pthread_mutex_unlock(&wait_graph_mutex);
    if (cycle) {
      char mine[64], theirs[64];
      tsri_stream_name(self, mine);
      if (s == self)
        return tsri_error(TSR_ERR_STATE,
                          "%s: a host function running on %s waits for work queued behind it on "
                          "that same stream, which cannot run until it returns",
                          what, mine);
      return tsri_error(TSR_ERR_STATE,
                        "%s: the worker of %s would wait on %s, which needs work queued behind "
                        "the running task on %s: the wait could never end",
                        what, mine, tsri_stream_name(s, theirs), mine);
    }
  }
  tsr_status status = s->iface->host_wait(s, seq);
  if (self) {
    pthread_mutex_lock(&wait_graph_mutex);
    self->waiting_on = NULL;
    pthread_mutex_unlock(&wait_graph_mutex);
  }
  return status;
}

/* ---- life ------------------------------------------------------------------------------------ */

static void stream_destroy(tsri_stream *s) {
  if (s->iface) s->iface->destroy(s);
  free(s);
}

/* Under the evaluation lock. */
static tsr_status stream_create(tsr_device d, bool is_default, tsri_stream **out) {
  const tsri_backend *backend = tsri_backend_for(d.type);
  tsri_stream *s = calloc(1, sizeof *s);
  if (!s) return tsri_error(TSR_ERR_NOMEM, "stream_new: out of host memory");
  s->device = d;
  s->is_default = is_default;
  atomic_init(&s->refs, 1);
  tsr_status status = handle_register(s);
  if (status != TSR_OK) {
    free(s);
    return status;
  }
  status = backend->streams->create(s);
  if (status != TSR_OK) {
    pthread_mutex_lock(&handles.mutex);
    retire_locked(s);
    pthread_mutex_unlock(&handles.mutex);
    free(s);
    return status;
  }
  s->iface = backend->streams;
  *out = s;
  return TSR_OK;
}

tsri_stream *tsri_stream_retain(tsri_stream *s) {
  if (s) atomic_fetch_add(&s->refs, 1);
  return s;
}

void tsri_stream_release(tsri_stream *s) {
  if (s && atomic_fetch_sub(&s->refs, 1) == 1) stream_destroy(s);
}

void tsri_stream_submit(tsri_stream *s, tsri_task *task) {
  task->next = NULL;
  task->seq = atomic_fetch_add(&s->submitted, 1) + 1;
  s->iface->submit(s, task);
}

/* Under the evaluation lock. NULL when d has no backend in this build or does not exist. */
static tsri_stream *default_stream_locked(tsr_device d) {
  if (tsri_device_check(d, "default_stream") != TSR_OK || !tsri_backend_for(d.type)) return NULL;
  int slot = default_slot(d);
  if (!default_streams[slot]) {
    tsri_stream *s = NULL;
    if (stream_create(d, true, &s) == TSR_OK) default_streams[slot] = s;
  }
  return default_streams[slot];
}

tsr_stream *tsr_default_stream(tsr_device d) {
  tsri_eval_lock();
  tsri_stream *s = default_stream_locked(d);
  tsr_stream *handle = s ? s->handle : NULL;
  tsri_eval_unlock();
  return handle;
}

tsr_status tsr_stream_new(tsr_stream **out, tsr_device d) {
  if (!out) return tsri_error(TSR_ERR_INVALID, "stream_new: out is NULL");
  tsr_status status = tsri_device_check(d, "stream_new");
  if (status != TSR_OK) return status;
  if (!tsri_backend_for(d.type))
    return tsri_error(TSR_ERR_UNSUPPORTED, "stream_new: this build has no backend for %s devices",
                      d.type == TSR_GPU ? "GPU" : "CPU");
  tsri_stream *s = NULL;
  tsri_eval_lock();
  status = stream_create(d, false, &s);
  tsri_eval_unlock();
  if (status == TSR_OK) *out = s->handle;
  return status;
}

/* From another stream's worker, freeing s waits for its work: refused if that could not end. */
static tsr_status free_allowed(tsri_stream *s) {
  char name[64];
  if (s->is_default)
    return tsri_error(TSR_ERR_INVALID, "stream_free: a default stream belongs to the library");
  if (current_worker == s)
    return tsri_error(TSR_ERR_STATE,
                      "stream_free: called by a host function running on %s (freeing waits for "
                      "its work, which waits for that function)",
                      tsri_stream_name(s, name));
  if (current_worker) return tsri_stream_wait(s, atomic_load(&s->submitted), "stream_free");
  return TSR_OK;
}

tsr_status tsr_stream_free(tsr_stream *handle) {
  if (!handle) return tsri_error(TSR_ERR_INVALID, "stream_free: stream is NULL");
  tsri_stream *s = NULL;
  tsr_status status = tsri_stream_acquire(handle, "stream_free", &s);
  if (status != TSR_OK) return status;
  status = free_allowed(s);
  if (status == TSR_OK) {
    tsri_eval_lock(); /* no submission to s once closed, none in flight while closing */
    pthread_mutex_lock(&handles.mutex);
    bool retired = retire_locked(s); /* another thread may have freed it meanwhile */
    pthread_mutex_unlock(&handles.mutex);
    if (retired) atomic_store(&s->closed, true);
    tsri_eval_unlock();
    if (!retired)
      status = tsri_error(TSR_ERR_STATE, "stream_free: stream handle %p was freed meanwhile",
                          (void *)handle);
  }
  if (status == TSR_OK) {
    s->iface->stop(s);      /* runs what was queued first */
    tsri_stream_release(s); /* the handle table's reference */
  }
  tsri_stream_release(s); /* ours */
  return status;
}

tsr_status tsr_stream_synchronize(tsr_stream *handle) {
  tsri_stream *s = NULL;
  tsr_status status = tsri_stream_acquire(handle, "stream_synchronize", &s);
  if (status != TSR_OK) return status;
  status = tsri_stream_wait(s, atomic_load(&s->submitted), "stream_synchronize");
  if (status == TSR_OK && s->iface->settle) s->iface->settle(s);
  tsri_stream_release(s);
  return status;
}

tsr_device tsr_stream_device(const tsr_stream *handle) {
  tsr_device cpu = {TSR_CPU, 0}, none = {TSR_CPU, -1};
  if (!handle) return cpu;
  tsri_stream *s = NULL;
  if (tsri_stream_acquire((tsr_stream *)(uintptr_t)handle, "stream_device", &s) != TSR_OK)
    return none;
  tsr_device d = s->device;
  tsri_stream_release(s);
  return d;
}

void *tsr_stream_native(tsr_stream *handle) {
  /* The backend's answer (NULL for the CPU). A freed handle gives NULL with TSR_ERR_STATE as the
     thread's last error. */
  tsri_stream *s = NULL;
  if (tsri_stream_acquire(handle, "stream_native", &s) != TSR_OK) return NULL;
  void *native = s->iface->native(s);
  tsri_stream_release(s);
  return native;
}

tsr_status tsr_stream_enqueue_host(tsr_stream *handle, void (*fn)(void *ctx), void *ctx) {
  if (!fn) return tsri_error(TSR_ERR_INVALID, "stream_enqueue_host: fn is NULL");
  tsri_stream *s = NULL;
  tsr_status status = tsri_stream_acquire(handle, "stream_enqueue_host", &s);
  if (status != TSR_OK) return status;
  tsri_task *task = calloc(1, sizeof *task);
  if (!task) {
    tsri_stream_release(s);
    return tsri_error(TSR_ERR_NOMEM, "stream_enqueue_host: out of host memory");
  }
  task->host_fn = fn;
  task->host_ctx = ctx;
  tsri_eval_lock();
  if (atomic_load(&s->closed))
    status = tsri_error(TSR_ERR_STATE, "stream_enqueue_host: the stream was freed");
  else
    tsri_stream_submit(s, task);
  if (status == TSR_OK && s->iface->flush) s->iface->flush(s);
  tsri_eval_unlock();
  if (status != TSR_OK) free(task);
  tsri_stream_release(s);
  return status;
}

bool tsri_streams_shutdown(void) {
  if (current_worker) return false;
  tsri_eval_lock();
  for (int i = 0; i < 1 + TSRI_MAX_GPUS; i++)
    default_streams[i] = NULL;
  pthread_mutex_lock(&handles.mutex);
  int count = handles.count;
  handle_slot *slots = handles.slots;
  handles.slots = NULL;
  handles.count = handles.capacity = 0;
  handles.free_head = NO_SLOT; /* next_serial goes on: old handles never match again */
  pthread_mutex_unlock(&handles.mutex);
  for (int i = 0; i < count; i++)
    if (slots[i].stream) atomic_store(&slots[i].stream->closed, true);
  tsri_eval_unlock();
  for (int i = 0; i < count; i++) {
    if (!slots[i].stream) continue;
    slots[i].stream->iface->stop(slots[i].stream);
    tsri_stream_release(slots[i].stream);
  }
  free(slots);
  return true;
}
