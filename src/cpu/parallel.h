/* cpu/parallel.h — a parallel-for over the CPU's cores for kernels that split one product across
 * threads (cpu/qmm_fast.c): a process-wide pool of worker threads, created on first use, that runs
 * the chunks of a range together with the calling thread. Not a task system: no futures, no
 * nesting across the pool (a nested or concurrent call runs on its own thread, see below).
 *
 * The pool is one of the process-wide things (shared/DESIGN.md): one set of workers serves every
 * stream. Its size is TSR_NUM_THREADS (an integer in [1, 256], read once per process through
 * base/env, which warns about and ignores anything else) or else the number of online cores
 * (tsri_discovery()->cpu.compute_units, at most 256), the calling thread included.
 */
#ifndef TSR_CPU_PARALLEL_H
#define TSR_CPU_PARALLEL_H

#include <stdint.h>

/* Runs one contiguous chunk [begin, end) of the range. */
typedef void (*tsri_parallel_fn)(int64_t begin, int64_t end, void *ctx);

/* Calls fn over [0, n) in chunks of at least `grain` items (the last may be shorter), on the
 * pool's workers and the calling thread, and returns when every chunk has run. Chunks are
 * claimed dynamically, so fn must not depend on which thread runs which chunk or in what order.
 *
 * Any thread may call it, also several at once (one per stream worker): the pool serves one
 * call at a time, and a call that finds it busy — another thread's, or this thread's own from
 * inside fn — runs the whole range on its calling thread instead of waiting, so it never blocks
 * on another call and never deadlocks. n <= grain, or a pool of one thread, also runs inline.
 * Never fails: if workers cannot be created the calling thread does the work. */
void tsri_parallel_for(int64_t n, int64_t grain, tsri_parallel_fn fn, void *ctx);

/* Threads a call may use, the caller included (>= 1). Reads TSR_NUM_THREADS on first use. */
int tsri_parallel_threads(void);

/* Stops and joins the workers (waiting for a call in progress to finish); a later call starts
 * them again. For tsr_shutdown; no parallel_for may be starting on another thread meanwhile. */
void tsri_parallel_shutdown(void);

#endif
