/* cpu/parallel.h — a parallel-for over the CPU's cores for kernels that split one product across
 * threads (cpu/qmm_fast.c, cpu/sgemm.c): a pool of worker threads, started on its first parallel
 * job, that runs the chunks of a range together with the calling thread. Not a task system: no
 * futures, no nesting across the pool (a nested or concurrent call runs on its own thread, see
 * below).
 *
 * A pool belongs to the CPU device's context (cpu/context.h), which decides its size and frees it
 * at tsr_shutdown; one pool serves every stream of the device. Kernels reach it through
 * tsri_cpu_context_get(op->device), never through a process global.
 */
#ifndef TSR_CPU_PARALLEL_H
#define TSR_CPU_PARALLEL_H

#include <stdint.h>

#include "base/env.h"

/* The most threads a pool runs, the calling thread included. */
enum { TSRI_PARALLEL_MAX_THREADS = TSRI_ENV_MAX_THREADS };

typedef struct tsri_parallel_pool tsri_parallel_pool;

/* Runs one contiguous chunk [begin, end) of the range. */
typedef void (*tsri_parallel_fn)(int64_t begin, int64_t end, void *ctx);

/* A pool for `threads` threads, the calling thread included (clamped to [1,
 * TSRI_PARALLEL_MAX_THREADS]); no worker starts before its first parallel job. NULL when out of
 * host memory. */
tsri_parallel_pool *tsri_parallel_pool_new(int threads);

/* Stops and joins the workers (waiting for a call in progress to finish) and frees the pool. No
 * parallel_for may be starting on it on another thread meanwhile. NULL is ignored. */
void tsri_parallel_pool_free(tsri_parallel_pool *pool);

/* Threads a call may use, the caller included (>= 1): the size the pool was made with. */
int tsri_parallel_threads(const tsri_parallel_pool *pool);

/* Calls fn over [0, n) in chunks of at least `grain` items (the last may be shorter), on the
 * pool's workers and the calling thread, and returns when every chunk has run. Chunks are
 * claimed dynamically, so fn must not depend on which thread runs which chunk or in what order.
 *
 * Any thread may call it, also several at once (one per stream worker): the pool serves one
 * call at a time, and a call that finds it busy — another thread's, or this thread's own from
 * inside fn — runs the whole range on its calling thread instead of waiting, so it never blocks
 * on another call and never deadlocks. n <= grain, or a pool of one thread, also runs inline.
 * Never fails: if workers cannot be created the calling thread does the work. */
void tsri_parallel_for(tsri_parallel_pool *pool, int64_t n, int64_t grain, tsri_parallel_fn fn,
                       void *ctx);

#endif
