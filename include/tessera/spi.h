/* tessera/spi.h — the execution SPI: running outside code serialized with evaluation.
 *
 * One process-wide recursive lock guards graph walking and submission to streams. Code outside
 * tessera that submits work to a tessera stream (a raw collective, a host completion, a fence)
 * runs inside tsr_with_serialized_evaluation so that it is ordered with evaluation:
 *
 *   static tsr_status submit(void *ctx) {
 *     struct job *j = ctx;
 *     tsr_status st = tsr_eval(&j->input, 1);           // recursive evaluation is allowed
 *     if (st == TSR_OK) st = tsr_stream_enqueue_host(j->stream, j->done, j);
 *     return st;
 *   }
 *   ...
 *   tsr_status st = tsr_with_serialized_evaluation(submit, &job);
 *
 * The contract:
 * - the scope is synchronous: fn runs on the calling thread, and returns before the call does;
 * - fn must not suspend or wait for work that another thread must submit while it holds the
 *   lock (that thread would wait for the lock: a deadlock);
 * - it is recursive: fn may call tsr_eval, tsr_async_eval and any op;
 * - it does not make building one graph from several threads at once safe: an unevaluated array
 *   shared across threads needs the caller's own ordering.
 * Stream workers and host functions never take the lock, and tsr_eval releases it before it
 * waits, so nothing waited on can need it.
 */
#ifndef TESSERA_SPI_H
#define TESSERA_SPI_H

#include "tessera/array.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef tsr_status (*tsr_serialized_fn)(void *ctx);
/* Runs fn(ctx) holding the evaluation lock; returns fn's status (TSR_ERR_INVALID for NULL fn). */
TSR_API tsr_status tsr_with_serialized_evaluation(tsr_serialized_fn fn, void *ctx);
/* cudaStream_t for a GPU stream, NULL for a CPU stream (and for a freed handle, with
 * TSR_ERR_STATE as the thread's last error). Work tessera queued on it before the call is on the
 * stream when it returns. With TSR_CUDA_GRAPHS=1 tessera may capture later kernels of this stream
 * into a graph: enqueue on the handle inside tsr_with_serialized_evaluation (or after a
 * synchronize, with no evaluation on the stream meanwhile) so your work is not caught in one. */
TSR_API void *tsr_stream_native(tsr_stream *s);
/* Runs fn(ctx) in stream order: after everything submitted to s before it, before everything
 * after. fn runs on the stream's worker; it must not wait on tessera work or call the CUDA API,
 * and it still runs when the stream has failed, so it can release what it owns. NULL s = the
 * default stream. TSR_ERR_STATE on a freed stream (fn then never runs). A wait fn issues anyway
 * that could never end (tsr_eval or tsr_stream_synchronize of work queued behind fn) returns
 * TSR_ERR_STATE naming the stream instead of deadlocking. */
TSR_API tsr_status tsr_stream_enqueue_host(tsr_stream *s, void (*fn)(void *ctx), void *ctx);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_SPI_H */
