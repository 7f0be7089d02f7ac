/* dist/raw.c — tsr_group_all_sum_raw: the seal on the calling thread, then the data moved by a
 * task queued on the stream, in the stream's order. A rank whose own arguments are wrong still
 * takes part in the seal (as a refusal), so the others fail at once instead of waiting for it. */
#include <stdio.h>
#include <stdlib.h>

#include "base/discovery.h"
#include "base/dtype.h"
#include "core/lock.h"
#include "core/stream.h"
#include "dist/seal.h"

#define WHAT "all_sum_raw"

/* What the stream task needs; it owns a group reference. */
typedef struct {
  tsri_task task; /* first: the stream frees the task, which is this block */
  tsr_group *group;
  const void *send;
  void *recv;
  uint64_t count;
  tsr_dtype dtype;
  uint64_t ticket;
  tsri_stream *stream;
} raw_sum;

/* Moves the data of a sealed call once its turn has come; a failure breaks the group (the ranks
   may be part-way through it) and is logged with this rank's tag. */
static tsr_status move(raw_sum *job) {
  tsr_group *g = job->group;
  tsr_status status = tsri_group_wait_turn(g, job->ticket, WHAT);
  if (status != TSR_OK) return status;
  status = g->transport->all_sum(g, job->send, job->recv, job->count, job->dtype, job->stream,
                                 tsri_group_timeout(g));
  if (status != TSR_OK) status = tsri_group_move_failed(g, WHAT, status);
  tsri_group_turn_done(g);
  return status;
}

/* On the stream's worker: nobody waits for a status here, so a failure only breaks the group
   (the next call reports it). */
static void move_raw(void *ctx) {
  raw_sum *job = ctx;
  move(job);
  tsri_stream_release(job->stream);
  tsri_group_release(job->group);
}

/* Local checks; TSR_OK or the error (message set) this rank will report after the seal. */
static tsr_status check_local(tsr_group *g, const void *send, void *recv, size_t count,
                              tsr_dtype dtype, const tsri_stream *s) {
  if (count > 0 && (!send || !recv))
    return tsri_error(TSR_ERR_INVALID, "%s: %s is NULL with count %zu", WHAT,
                      !send ? "send" : "recv", count);
  if (!tsri_seal_sums(dtype))
    return tsri_error(TSR_ERR_INVALID,
                      "%s: dtype %s is not summed (float32, float16, bfloat16, int32, int64)", WHAT,
                      tsr_dtype_name(dtype));
  if ((dtype == TSR_FLOAT16 || dtype == TSR_BFLOAT16) && !g->transport->sums_halves)
    return tsri_error(TSR_ERR_UNSUPPORTED,
                      "%s: a %s group does not sum %s yet (the float32 accumulation the sum "
                      "promises is not implemented there)",
                      WHAT, g->transport->name, tsr_dtype_name(dtype));
  if (!g->transport->runs_on(g, s->device)) {
    char name[16];
    return tsri_error(TSR_ERR_INVALID, "%s: a %s group cannot use memory of %s (the stream's)",
                      WHAT, g->transport->name, tsri_device_str(s->device, name));
  }
  return TSR_OK;
}

/* Queues the data movement on s (the seal has passed: every rank is about to do the same). */
static tsr_status enqueue(raw_sum *job, tsri_stream *s) {
  job->task.host_fn = move_raw;
  job->task.host_ctx = job;
  job->stream = s;
  tsr_status status = TSR_OK;
  tsri_eval_lock();
  if (atomic_load(&s->closed))
    status = tsri_error(TSR_ERR_STATE, "%s: the stream was freed during the seal", WHAT);
  else
    tsri_stream_submit(s, &job->task);
  if (status == TSR_OK && s->iface->flush) s->iface->flush(s);
  tsri_eval_unlock();
  return status;
}

/* A refusal: this rank's own error, after the seal told the others. */
static tsr_status refuse(tsr_group *g, tsr_status status, size_t count, tsr_dtype dtype) {
  char message[TSR_ERROR_MAX];
  snprintf(message, sizeof message, "%s", tsr_last_error());
  uint64_t ticket = 0;
  tsri_seal(g, WHAT, TSRI_SEAL_REFUSED, count, dtype, &ticket);
  return tsri_error(status, "%s", message);
}

static tsr_status sealed_sum(tsr_group *g, const void *send, void *recv, size_t count,
                             tsr_dtype dtype, tsri_stream *s) {
  raw_sum *job = calloc(1, sizeof *job);
  if (!job)
    return refuse(g, tsri_error(TSR_ERR_NOMEM, "%s: out of host memory", WHAT), count, dtype);
  *job = (raw_sum){.group = g, .send = send, .recv = recv, .count = count, .dtype = dtype};
  if (g->transport->moves_at_call(g, s->device)) { /* sealed and moved (or enqueued) at once */
    job->stream = s;
    tsri_eval_lock(); /* serialized with evaluation's submissions to s, as the seam requires */
    tsr_status status = tsri_seal(g, WHAT, TSRI_SEAL_SUM, count, dtype, &job->ticket);
    if (status == TSR_OK) status = move(job);
    tsri_eval_unlock();
    free(job);
    return status;
  }
  tsr_status status = tsri_seal(g, WHAT, TSRI_SEAL_SUM, count, dtype, &job->ticket);
  if (status == TSR_OK) {
    tsri_group_retain(g);
    status = enqueue(job, tsri_stream_retain(s));
    if (status == TSR_OK) return TSR_OK; /* the task owns job, its stream and group references */
    tsri_stream_release(s);
    tsri_group_release(g);
    char reason[TSR_ERROR_MAX];
    snprintf(reason, sizeof reason, "%s", tsr_last_error());
    tsri_group_break(g, reason); /* the others will move data this rank never will */
  }
  free(job);
  return status;
}

tsr_status tsr_group_all_sum_raw(tsr_group *g, const void *send, void *recv, size_t count,
                                 tsr_dtype dtype, tsr_stream *s) {
  if (!g) return tsri_error(TSR_ERR_INVALID, "%s: g is NULL", WHAT);
  tsr_status status = tsri_group_check_usable(g, WHAT);
  if (status != TSR_OK) return status;
  tsri_stream *stream = NULL;
  status = tsri_stream_acquire(s, WHAT, &stream);
  if (status != TSR_OK) return refuse(g, status, count, dtype);
  status = check_local(g, send, recv, count, dtype, stream);
  if (status == TSR_OK)
    status = sealed_sum(g, send, recv, count, dtype, stream);
  else
    status = refuse(g, status, count, dtype);
  tsri_stream_release(stream);
  return status;
}
