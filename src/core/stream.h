/* core/stream.h — streams: a FIFO of tasks run in order by one worker thread, with a sequence
 * number per task, so "wait until task n of stream s has run" is the fence every cross-stream
 * edge and every wait uses. Submission (tsri_stream_submit) happens under the evaluation lock;
 * the worker never takes that lock. */
#ifndef TSR_CORE_STREAM_H
#define TSR_CORE_STREAM_H

#include <pthread.h>
#include <stdatomic.h>

#include "core/array.h"

struct tsr_stream {
  tsr_device device;
  atomic_int refs; /* the registry's (until freed) + each node naming the stream */
  bool is_default;
  atomic_bool closed; /* freed or shut down: no new work */

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

  struct tsr_stream *registry_next;
};

/* The stream a NULL argument means: the default stream of the default device. */
tsr_stream *tsri_stream_resolve(tsr_stream *s);
tsr_stream *tsri_stream_retain(tsr_stream *s);
void tsri_stream_release(tsr_stream *s);
/* Under the evaluation lock: gives the task the next sequence number and queues it. */
void tsri_stream_submit(tsr_stream *s, tsri_task *task);
/* Blocks until task `seq` of s has run. Any thread but s's own worker. */
void tsri_stream_wait(tsr_stream *s, uint64_t seq);
/* Stops and joins every stream's worker, after its queued work (tsr_shutdown). */
void tsri_streams_shutdown(void);
/* Runs one node task on the calling worker (core/eval.c). */
void tsri_run_node_task(tsri_task *task);

#endif
