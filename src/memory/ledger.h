/* memory/ledger.h — one ledger per device: the counters, the cap and the buffer cache under one
 * mutex, so a snapshot is one lock, one instant. Private to src/memory/.
 *
 * Eviction never frees under the lock (a dealloc hook may sleep, and a real free may be slow):
 * blocks are detached from the cache under the lock, freed outside it, and only then refunded.
 * While they are being freed their bytes stay on the ledger, so no snapshot undercounts what
 * the system backs and no concurrent reservation can take room that is not free yet:
 *   - evicted to make room for a reservation: the bytes move from `cached` to `pending`, held for
 *     the reservation that evicted them (it holds max(its bytes, the victims' bytes) until they
 *     are gone, then exactly its bytes);
 *   - evicted by trimming (clear_cache, set_cache_limit, shutdown): the bytes stay `cached`
 *     (still backing, no longer reusable) until each block's real free, then are refunded.
 */
#ifndef TSR_MEMORY_LEDGER_H
#define TSR_MEMORY_LEDGER_H

#include <pthread.h>
#include <stdatomic.h>

#include "memory/buffer.h"
#include "memory/cache.h"
#include "tessera/memory.h"
#include "tessera/testing.h"

/* Larger requests (4 PiB) fail as out of memory before they reach the counters: no device backs
 * that much, and it keeps every sum of the counters far from overflowing even with thousands of
 * such requests in flight at once (there is no cap to stop them when none is installed). */
#define TSRI_LEDGER_MAX_BYTES ((uint64_t)1 << 52)

/* The ledger counters a reservation or refund moves bytes into or out of. */
typedef enum { TSRI_PENDING, TSRI_ACTIVE, TSRI_CACHED, TSRI_FIXED } tsri_counter;

/* How to really free a block of this device: the testing hook if one is set, else the system
 * allocator's free. Read under the lock, used after it is released. */
typedef struct {
  tsr_testing_dealloc_hook hook;
  void *hook_ctx;
  const tsri_system_allocator *sys;
} tsri_dealloc_route;

typedef struct tsri_ledger {
  pthread_mutex_t lock; /* guards everything below except the atomics */
  tsr_device device;
  uint64_t cap, active, cached, pending, fixed, peak;
  uint64_t reservations, refunds, refusals, sequence;
  uint64_t cache_limit;
  tsri_cache cache;
  tsr_testing_dealloc_hook dealloc_hook;
  void *dealloc_ctx;
  atomic_bool cache_limit_ready;        /* cache_limit holds the default or a set value */
  atomic_uint_least64_t fail_countdown; /* tsr_testing_fail_allocation: 0 = disarmed */
} tsri_ledger;

/* A reservation request: `bytes` as the ledger counts them, placed into `dest` when granted. */
typedef struct {
  uint64_t bytes;
  uint64_t requested; /* what the caller asked for, named in messages when it differs */
  tsri_counter dest;  /* PENDING (a system allocation follows), ACTIVE (a wrap) or FIXED */
  const char *what;   /* "allocation", "wrap", "fixed reservation": the message's subject */
} tsri_reservation;

/* d's ledger, after checking that d exists (TSR_ERR_DEVICE naming `what` otherwise). */
tsr_status tsri_ledger_get(tsr_device d, const char *what, tsri_ledger **out);
/* d's ledger for a device already checked (a buffer's own device). */
tsri_ledger *tsri_ledger_at(tsr_device d);
/* Calls fn on every ledger (shutdown). */
void tsri_ledger_for_each(void (*fn)(tsri_ledger *l));

void tsri_ledger_lock(tsri_ledger *l);
void tsri_ledger_unlock(tsri_ledger *l);
/* With the lock held: a change happened (sequence++, peak updated). */
void tsri_ledger_changed_locked(tsri_ledger *l);
/* With the lock held: adds to or takes from one counter; taking more than it holds aborts (a
 * broken internal invariant, never something a user can reach). */
void tsri_ledger_add_locked(tsri_ledger *l, tsri_counter c, uint64_t bytes);
void tsri_ledger_sub_locked(tsri_ledger *l, tsri_counter c, uint64_t bytes);
/* With the lock held: how this device's blocks are really freed now. */
void tsri_ledger_route_locked(const tsri_ledger *l, tsri_dealloc_route *out);

/* Grants r (evicting cached blocks when the cap needs room) or refuses it: TSR_ERR_CAP with the
 * cap and every counter in the message, and nothing left pending. Counts a reservation or a
 * refusal either way. */
tsr_status tsri_ledger_reserve(tsri_ledger *l, const tsri_reservation *r);
/* Ends an allocation reserved as pending: success moves the bytes to active, failure refunds. */
void tsri_ledger_commit(tsri_ledger *l, uint64_t bytes, bool ok);
/* The bytes left the system (after the real free, deleter or eviction): counter -= bytes. */
void tsri_ledger_refund(tsri_ledger *l, tsri_counter from, uint64_t bytes);
/* A backing attempt too large for any device: a reservation and its refund, nothing held. */
void tsri_ledger_count_failed_attempt(tsri_ledger *l);
/* True when the armed fault fires for this system allocation (counts it down otherwise). */
bool tsri_ledger_fault_fires(tsri_ledger *l);

tsr_status tsri_ledger_install_cap(tsri_ledger *l, uint64_t bytes);
void tsri_ledger_snapshot(tsri_ledger *l, tsr_backing_snapshot *out);
/* With the lock held: the counters (untracked left 0). */
void tsri_ledger_snapshot_locked(const tsri_ledger *l, tsr_backing_snapshot *out);
void tsri_ledger_reset_peak(tsri_ledger *l);

/* cache.c: the cache operations that take the lock. */
/* A cached block fitting `need` bytes, moved cached -> active (a reservation, no system call),
 * with one reference; NULL when none fits. */
tsri_buffer *tsri_cache_take(tsri_ledger *l, uint64_t need);
/* Keeps a block whose last reference is gone (active -> cached) when the cache limit allows;
 * otherwise returns false with `route` filled in for the caller's real free. */
bool tsri_cache_keep(tsri_ledger *l, tsri_buffer *b, tsri_dealloc_route *route);
/* Evicts until at most `keep_bytes` stay cached, refunding each block after its real free. */
void tsri_cache_trim(tsri_ledger *l, uint64_t keep_bytes);
/* Sets the limit, then trims to it. */
void tsri_cache_set_limit(tsri_ledger *l, uint64_t bytes);

/* system.c: the system allocators and the real free. */
/* The allocator serving a device type: the CPU's built in, a GPU's as registered; NULL if none. */
const tsri_system_allocator *tsri_system_allocator_for(tsr_device_type type);
/* Asks every registered allocator that has one to settle (tsri_system_allocator.settle). */
void tsri_memory_settle(void);
/* Really frees one block through the route (the hook, or the system's free). */
void tsri_route_free(const tsri_dealloc_route *route, void *ptr, uint64_t bytes);

/* system_cpu.c */
extern const tsri_system_allocator tsri_cpu_allocator;

#endif
