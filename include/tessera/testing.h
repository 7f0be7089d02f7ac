/* tessera/testing.h — hooks for test suites; not included by tessera.h.
 *
 * Fault injection goes through the one allocator every backing byte passes, so a test can fail
 * each allocation of a graph in turn (SQLite's OOM loops, Lua's memerr tests):
 *
 *   for (uint64_t k = 1;; k++) {
 *     tsr_testing_fail_allocation(cpu, k);   // the k-th system allocation from now fails
 *     ... build the graph, tsr_eval: TSR_ERR_NOMEM with a message naming the op and size ...
 *     if (tsr_testing_fail_allocation_pending(cpu) == 0) continue;  // it fired
 *     break;                                  // the graph needs fewer than k allocations
 *   }
 *
 * These hooks are process-wide; tests using them run one at a time in their own process.
 */
#ifndef TESSERA_TESTING_H
#define TESSERA_TESTING_H

#include "tessera/array.h"
#include "tessera/dist.h"
#include "tessera/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Makes the k-th system allocation on d from now fail as out of memory (k >= 1); 0 disarms. A
 * cache hit is not a system allocation. */
TSR_API tsr_status tsr_testing_fail_allocation(tsr_device d, uint64_t k);
/* How many allocations remain before the armed failure fires; 0 when none is armed (or fired). */
TSR_API uint64_t tsr_testing_fail_allocation_pending(tsr_device d);
/* Replaces the real deallocation of d's buffers by hook(ptr, bytes, ctx), which must free ptr
 * with real_free(ptr, bytes) (given to it), e.g. after a delay; NULL restores the default. Lets a
 * test watch the ledger while a deallocation is in flight. */
typedef void (*tsr_testing_real_free_fn)(void *ptr, uint64_t bytes);
typedef void (*tsr_testing_dealloc_hook)(void *ptr, uint64_t bytes, tsr_testing_real_free_fn real,
                                         void *ctx);
TSR_API tsr_status tsr_testing_set_dealloc_hook(tsr_device d, tsr_testing_dealloc_hook hook,
                                                void *ctx);

/* Observes the routing of every MoE layer of m from now on (NULL stops it): `experts` is
 * [tokens, k] row-major, each row's expert ids ascending; `layer` is the decoder layer's index.
 * Called on the thread running the forward pass, before the experts run. */
typedef void (*tsr_testing_routing_hook)(void *ctx, int64_t layer, size_t tokens, int64_t k,
                                         const int32_t *experts);
TSR_API void tsr_testing_model_routing_hook(tsr_model *m, tsr_testing_routing_hook hook, void *ctx);

/* What a's values are known at construction to lie in (integer arrays made from host data, and
 * views, copies and value-keeping conversions of them): true with [*min, *max], else false. The
 * indexing ops skip their bounds check, a stream synchronization on the GPU, for indices known
 * in range; a test checks the inference itself with this. */
TSR_API bool tsr_testing_array_value_range(const tsr_array *a, int64_t *min, int64_t *max);

/* The most elements one MPI/NCCL operation of g moves (default INT_MAX, MPI's count limit; bytes
 * for all_gather): larger calls are split into chunks of this size, so a test covers the chunking
 * with small buffers. Every rank sets the same value. TSR_ERR_INVALID for NULL g or a value
 * outside [1, INT_MAX]. */
TSR_API tsr_status tsr_testing_group_set_chunk(tsr_group *g, uint64_t elements);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_TESTING_H */
