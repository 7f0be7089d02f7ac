/* core/stream.h — streams: a FIFO of tasks run in order by one worker thread, with a sequence
 * number per task, so "wait until task n of stream s has run" is the fence every cross-stream
 * edge and every wait uses. Submission (tsri_stream_submit) happens under the evaluation lock;
 * the worker never takes that lock.
 *
 * A public tsr_stream * is a handle, not this struct's address: a slot of a process-wide table
 * and the serial number of the stream that took it, packed into the pointer's bits. Every public
 * function resolves it through tsri_stream_acquire, so a freed handle (or one from before
 * tsr_shutdown, whose serial numbers are never reused) is TSR_ERR_STATE, never a read of freed
 * memory. Inside the library a stream is a refcounted tsri_stream. */
#ifndef TSR_CORE_STREAM_H
#define TSR_CORE_STREAM_H

#include <pthread.h>
#include <stdatomic.h>

#include "core/array.h"

typedef struct tsri_stream tsri_stream;

struct tsri_stream {
  tsr_device device;
  atomic_int refs; /* the handle table's (until freed) + each node naming it + each acquirer */
  bool is_default;
  atomic_bool closed; /* freed or shut down: no new work */
  uint64_t serial;    /* this stream's number, in its handle and in messages */
  tsr_stream *handle; /* what the public API hands out */

  pthread_mutex_t queue_mutex;
  pthread_cond_t queue_cond;
  tsri_task *head, *tail;
  bool stop;
  bool worker_idle; /* waiting on queue_cond */
  pthread_t worker;

  atomic_uint_fast64_t submitted; /* last sequence number handed out */
  atomic_uint_fast64_t completed; /* last sequence number whose task has run */
  pthread_mutex_t done_mutex;
  pthread_cond_t done_cond;
  atomic_int waiters;

  /* While this stream's worker is blocked in tsri_stream_wait: what it waits for (the wait graph,
     guarded by one process-wide mutex in stream.c). */
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
/* Blocks until task `seq` of s has run. Called from a stream's worker (a node's cross-stream
 * fence, or a host function that evaluates or synchronizes), a wait that could never end is
 * refused instead: TSR_ERR_STATE naming the streams, when s is the caller's own stream or waits,
 * through other blocked workers, on the caller's own stream. */
tsr_status tsri_stream_wait(tsri_stream *s, uint64_t seq, const char *what);
/* "stream 3 (cpu)" or "the default stream of cpu", for messages; buf holds 64 bytes. */
const char *tsri_stream_name(const tsri_stream *s, char buf[64]);
/* Stops and joins every stream's worker, after its queued work (tsr_shutdown). False, and nothing
 * done, when called from a stream's worker (it would join itself). */
bool tsri_streams_shutdown(void);
/* Runs one node task on the calling worker (core/eval.c). */
void tsri_run_node_task(tsri_task *task);

#endif
