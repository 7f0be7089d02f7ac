/* core/stream.h — streams: an interface owned by the device's backend ({iface, device, ctx}), with
 * a sequence number per submitted task. Core numbers the tasks, keeps the handle table, the
 * default streams and the public stream functions; the backend runs the tasks (the CPU on a worker
 * thread, CUDA on a cudaStream_t) and says when task n has completed. "Task n of stream s has
 * completed" is the event every cross-stream edge and every wait uses (tsri_event).
 *
 * A public tsr_stream * is a handle, not this struct's address: a slot of a process-wide table
 * and the serial number of the stream that took it, packed into the pointer's bits. Every public
 * function resolves it through tsri_stream_acquire, so a freed handle (or one from before
 * tsr_shutdown, whose serial numbers are never reused) is TSR_ERR_STATE, never a read of freed
 * memory. Inside the library a stream is a refcounted tsri_stream. */
#ifndef TSR_CORE_STREAM_H
#define TSR_CORE_STREAM_H

#include <stdatomic.h>

#include "core/array.h"

typedef struct tsri_stream tsri_stream;

/* The completion of task `seq` of `stream` (a node's event: its stream and task.seq). */
typedef struct {
  tsri_stream *stream;
  uint64_t seq;
} tsri_event;

typedef enum { TSRI_COPY_TO_HOST, TSRI_COPY_FROM_HOST } tsri_copy_direction;

/* What a backend provides for its streams. Core calls submit under the evaluation lock; nothing
 * here may take that lock. */
typedef struct tsri_stream_iface {
  /* Sets up s->ctx for a new stream on s->device (a worker thread, a cudaStream_t). */
  tsr_status (*create)(tsri_stream *s);
  /* Queues a task (task->seq already assigned, increasing) to run after everything submitted
     before it: a node through tsri_run_node_task, a host function by calling it. */
  void (*submit)(tsri_stream *s, tsri_task *task);
  /* Whether task `seq` has completed, on the device too. */
  bool (*query)(tsri_stream *s, uint64_t seq);
  /* Blocks the calling thread until task `seq` has completed (core checked the wait can end).
     TSR_ERR_DEVICE with the message set when the device failed the stream's work meanwhile. */
  tsr_status (*host_wait)(tsri_stream *s, uint64_t seq);
  /* Called while s runs a task: work s runs from here on starts after event e of another stream
     (CPU: the worker waits for it; CUDA: cudaStreamWaitEvent, no thread blocks). TSR_OK, or
     TSR_ERR_STATE with the message set when the wait could never end. */
  tsr_status (*wait_event)(tsri_stream *s, tsri_event e, const char *what);
  /* fn(ctx) runs once the device has finished everything submitted to s so far, on a thread
     that may call the device's API and take the memory layer's locks (never inside a device
     callback). Called while s runs a task (CPU: then at once) or under the evaluation lock from
     any thread (CPU: a host task queued behind the work). Core releases buffers this way (a
     node's inputs, a recorded stream's hold), so a buffer goes back to the cache, or is freed and
     refunded, only after the last kernel that reads it is done. */
  void (*after_current)(tsri_stream *s, void (*fn)(void *ctx), void *ctx);
  /* Optional (NULL: nothing to do): core is done submitting a batch of tasks to s (the end of an
     evaluation's submission), so per-batch work such as recording an event can happen now. */
  void (*flush)(tsri_stream *s);
  /* Optional (NULL: releases already run with the work, as on the CPU): called after a
     synchronize of s has returned, runs the releases the synchronized work queued through
     after_current, so the ledger shows what is really in use when the caller goes on. */
  void (*settle)(tsri_stream *s);
  /* The native handle (cudaStream_t), NULL for the CPU. */
  void *(*native)(tsri_stream *s);
  /* Copies bytes between host memory and memory of s's device, ordered after s's work, and
     waits for it. */
  tsr_status (*copy)(tsri_stream *s, void *dst, const void *src, uint64_t bytes,
                     tsri_copy_direction direction);
  /* Optional, all four or none (NULL: a step replays op by op, core/step.c): a recording of the
     kernels s launches from begin_recording until end_recording, replayed as one unit (CUDA: a
     stream capture instantiated as a graph). Called under the evaluation lock, by the thread
     that submits the recorded nodes. begin_recording false: nothing is being recorded.
     end_recording queues the recorded work for real (it has not run yet) and returns the
     recording, or NULL when the work could not all be recorded (something needed the stream
     outside a recording meanwhile: the work still ran, in order). */
  bool (*begin_recording)(tsri_stream *s);
  void *(*end_recording)(tsri_stream *s);
  /* Queues the recorded work again on s, in stream order; TSR_ERR_DEVICE with the message set
     when it cannot be. Called while s runs a task. */
  tsr_status (*replay)(tsri_stream *s, void *recording);
  void (*free_recording)(tsri_stream *s, void *recording);
  /* Runs what was queued, then stops accepting and running work (tsr_stream_free, shutdown). */
  void (*stop)(tsri_stream *s);
  /* Releases s->ctx (the last reference is gone; stop has run if create succeeded). */
  void (*destroy)(tsri_stream *s);
} tsri_stream_iface;

struct tsri_stream {
  const tsri_stream_iface *iface;
  void *ctx; /* the backend's */
  tsr_device device;
  atomic_int refs; /* the handle table's (until freed) + each node naming it + each acquirer */
  bool is_default;
  atomic_bool closed;             /* freed or shut down: no new work */
  uint64_t serial;                /* this stream's number, in its handle and in messages */
  tsr_stream *handle;             /* what the public API hands out */
  atomic_uint_fast64_t submitted; /* last sequence number handed out */

  /* While a thread running one of this stream's tasks is blocked in tsri_stream_wait: what it
     waits for (the wait graph, guarded by one process-wide mutex in stream.c). */
  tsri_stream *waiting_on;
  uint64_t waiting_seq;
};

/* The stream behind a public handle, retained for the caller (tsri_stream_release it). NULL means
 * the default stream of the default device. TSR_ERR_STATE naming `what` for a freed handle or
 * one from before tsr_shutdown, TSR_ERR_DEVICE when the default device has no stream. */
tsr_status tsri_stream_acquire(tsr_stream *handle, const char *what, tsri_stream **out);
tsri_stream *tsri_stream_retain(tsri_stream *s);
void tsri_stream_release(tsri_stream *s);
/* Under the evaluation lock: gives the task the next sequence number and queues it. */
void tsri_stream_submit(tsri_stream *s, tsri_task *task);
/* Blocks until task `seq` of s has completed. From a thread running a stream's task (a node's
 * cross-stream fence on the CPU, or a host function that evaluates or synchronizes), a wait that
 * could never end is refused instead: TSR_ERR_STATE naming the streams, when s is the caller's
 * own stream or waits, through other blocked tasks, on the caller's own stream. */
tsr_status tsri_stream_wait(tsri_stream *s, uint64_t seq, const char *what);
/* Backends: the thread runs tasks of s from now on (NULL: none), for the wait check above. */
void tsri_stream_set_current(tsri_stream *s);
/* The stream whose task the calling thread runs, or NULL. */
tsri_stream *tsri_stream_current(void);
/* "stream 3 (cpu)" or "the default stream of cpu", for messages; buf holds 64 bytes. */
const char *tsri_stream_name(const tsri_stream *s, char buf[64]);
/* Stops every stream after its queued work (tsr_shutdown). False, and nothing done, when called
 * from a thread running a stream's task (it would wait for itself). */
bool tsri_streams_shutdown(void);
/* Runs one node task (core/eval.c); the backend calls it in stream order. */
void tsri_run_node_task(tsri_task *task);
/* Instead of running it: fails the node with this status and message (a backend whose stream
 * can no longer run work, e.g. after a device fault). */
void tsri_fail_node_task(tsri_task *task, tsr_status status, const char *message);

#endif
