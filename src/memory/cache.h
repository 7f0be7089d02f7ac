/* memory/cache.h — the buffer cache of one device: free blocks kept for reuse, grouped by size.
 * Not thread-safe by itself: its ledger's mutex guards it together with the counters.
 *
 * The cache is a sorted array of size classes (one per distinct block size held), each a stack
 * of blocks linked through tsri_buffer.cache_next. A chain of equal-size allocations therefore
 * hits with one binary search and one pop, and never touches the system allocator.
 *
 * Reuse rule: a request of `need` bytes takes the smallest cached block of at least `need`
 * bytes that wastes at most min(need, 1 MiB) (so a small request may take a block up to twice
 * its size, a large one at most 1 MiB more than it asked for). The block keeps its own size:
 * the ledger counts what the system backs, not what was asked for.
 */
#ifndef TSR_MEMORY_CACHE_H
#define TSR_MEMORY_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "memory/buffer.h"

/* The most a cache hit may waste beyond the request (for requests above it). */
#define TSRI_CACHE_MAX_WASTE ((uint64_t)1 << 20)

typedef struct {
  uint64_t bytes;    /* the size of every block in this class */
  tsri_buffer *head; /* never NULL: an emptied class is removed */
} tsri_cache_class;

typedef struct {
  tsri_cache_class *classes; /* sorted by bytes, ascending */
  size_t count, capacity;
  uint64_t bytes; /* the bytes of the blocks held (reusable now) */
} tsri_cache;

/* The block the reuse rule picks for `need` (> 0) bytes, removed from the cache; NULL if none. */
tsri_buffer *tsri_cache_pop_fit(tsri_cache *c, uint64_t need);
/* Adds a free block; false (and the cache unchanged) when its class array cannot grow. */
bool tsri_cache_push(tsri_cache *c, tsri_buffer *b);
/* A block to evict when `shortfall` more bytes must leave: the smallest block that covers it
 * alone, else the largest (so few blocks are freed); NULL when the cache is empty. */
tsri_buffer *tsri_cache_pop_victim(tsri_cache *c, uint64_t shortfall);
/* Frees the class array of an empty cache (shutdown); a non-empty cache is left as it is. */
void tsri_cache_release_storage(tsri_cache *c);

#endif
