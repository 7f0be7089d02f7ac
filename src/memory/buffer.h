/* memory/buffer.h — backing buffers: every byte of array data passes through here, and through
 * the device's ledger (memory/ledger.c), so a cap holds and the counts are true.
 *
 * tsri_buffer_alloc reserves the bytes as pending (evicting the buffer cache if that makes room
 * under the cap), then asks the system; success moves them to active, failure refunds them.
 * tsri_buffer_release on the last reference either keeps the block in the cache (active ->
 * cached) or really frees it and only then refunds the bytes.
 */
#ifndef TSR_MEMORY_BUFFER_H
#define TSR_MEMORY_BUFFER_H

#include <stdatomic.h>
#include <stdint.h>

#include "tessera/array.h"

typedef struct tsri_buffer {
  void *data;     /* NULL only for a 0-byte buffer */
  uint64_t bytes; /* the bytes the system backs, as counted on the ledger */
  tsr_device device;
  atomic_int refs;
  bool external; /* wrapped caller memory: deleter instead of free/cache */
  /* Handed to outside code by tsr_array_data (the SPI's raw work may write it): values known at
     construction (core/value_range.h) no longer hold. Cleared when the block is handed out again.
   */
  atomic_bool exposed;
  void (*deleter)(void *ctx);
  void *deleter_ctx;
  struct tsri_buffer *cache_next; /* memory layer only: the next free block of its cache class */
} tsri_buffer;

/* A new buffer of at least `nbytes` on d, one reference. TSR_ERR_CAP (the cap's, the ledger's and
 * the request's numbers in the message), TSR_ERR_NOMEM, TSR_ERR_DEVICE; the message begins with
 * what failed so the caller can prefix the op. Any thread. */
tsr_status tsri_buffer_alloc(tsr_device d, uint64_t nbytes, tsri_buffer **out);
/* Wraps caller memory: `nbytes` counted as active (the cap may refuse: TSR_ERR_CAP, and the
 * deleter is not run); deleter(ctx) runs when the last reference is dropped, then the bytes are
 * refunded. */
tsr_status tsri_buffer_wrap(tsr_device d, void *data, uint64_t nbytes, void (*deleter)(void *),
                            void *ctx, tsri_buffer **out);
tsri_buffer *tsri_buffer_retain(tsri_buffer *b);
/* Drops a reference (NULL is fine); the last one returns the block to the cache or frees it. */
void tsri_buffer_release(tsri_buffer *b);

/* How a device's memory is really obtained and returned; the CPU's is built in, a GPU backend
 * registers its own (cudaMalloc/cudaFree) before its first allocation. round() gives the bytes
 * the system will back for a request, so the reservation is exact before the call. There is no
 * stream here: buffers come back stream-ordered already (core releases a node's inputs only once
 * its stream has passed them: core/stream.h, after_current), so the system calls need none. */
typedef struct {
  uint64_t (*round)(uint64_t nbytes);
  void *(*alloc)(int device_index, uint64_t bytes); /* NULL when the system has none */
  void (*free)(void *ptr, uint64_t bytes);          /* any thread; the pointer names its device */
  uint64_t (*total_bytes)(int device_index);        /* device memory, for the default cache limit */
  /* Optional (NULL: untracked reads 0): device memory in use as the driver sees it, so a snapshot
     can report what is in use but not on the ledger (`untracked`). */
  uint64_t (*used_bytes)(int device_index);
  /* Optional (NULL: nothing held back): runs the releases that wait only for work already queued
     on the device (a GPU's stream-ordered releases), waiting a bounded time for that work. The
     ledger asks every registered allocator before refusing a reservation under a cap, since
     those bytes, on any device's ledger, are about to come back. */
  void (*settle)(void);
} tsri_system_allocator;
void tsri_memory_register_allocator(tsr_device_type type, const tsri_system_allocator *a);

/* Fixed bytes (workspaces and pools tessera owns), reserved under the cap like any buffer. */
tsr_status tsri_ledger_reserve_fixed(tsr_device d, uint64_t bytes);
void tsri_ledger_release_fixed(tsr_device d, uint64_t bytes);

/* Empties every device's cache (tsr_shutdown). */
void tsri_memory_shutdown(void);

#endif
