/* tessera/memory.h — the backing ledger and the calibration SPI.
 *
 * Every byte that backs array data on a device is on that device's ledger: active (live
 * buffers) + cached (free buffers kept for reuse) + pending (reserved for an allocation in
 * flight) + fixed (workspaces and pools tessera owns). A cap, installed at most once per device
 * and before that device's first backing attempt, bounds their sum:
 *
 *   tsr_device cpu = {TSR_CPU, 0};
 *   if (tsr_calibration_install_cap(cpu, 1ull << 30) != TSR_OK) ...;  // before any array
 *   ... build and evaluate; an allocation past the cap is TSR_ERR_CAP ...
 *   tsr_backing_snapshot snap;
 *   tsr_calibration_snapshot(cpu, &snap);   // active + cached + pending + fixed <= cap
 *   printf("peak %llu of %llu\n", (unsigned long long)snap.peak, (unsigned long long)snap.cap);
 *
 * What the CPU ledger covers: array data (op outputs, from_data copies, wrapped external
 * memory). It does not cover the process's own heap (graph nodes, messages, thread stacks, the
 * libraries tessera calls): the cap governs backing, not the process heap.
 *
 * On a GPU a released buffer leaves the ledger only once the kernels reading it are done. A
 * reservation the cap would refuse first waits (up to 10 s) for such releases already queued on
 * any device, so TSR_ERR_CAP means the bytes still in use did not leave room; a synchronize of a
 * stream also waits for its work's releases (tsr_stream_synchronize).
 *
 * Bytes are counted as the system backs them: a CPU buffer under 64 KiB is a 64-byte aligned
 * heap block counted at its size rounded up to 64 bytes; a larger one is its own anonymous
 * mapping, counted in whole pages, and unmapped when freed.
 *
 * All functions may be called from any thread. A device that does not exist is TSR_ERR_DEVICE
 * for the functions that return a status, 0 for those that return a count.
 */
#ifndef TESSERA_MEMORY_H
#define TESSERA_MEMORY_H

#include "tessera/array.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  uint64_t cap;     /* installed cap in bytes; 0 = none */
  uint64_t active;  /* bytes backing live arrays */
  uint64_t cached;  /* bytes in the buffer cache, still backing */
  uint64_t pending; /* bytes reserved for allocations in flight */
  uint64_t fixed;   /* bytes of pools/heaps reserved up front */
  uint64_t peak;    /* highest active + cached + pending + fixed so far */
  /* counts since start: reservations granted (a cache hit included), refunds (bytes leaving the
     ledger after a real deallocation, an eviction or a failed allocation), refusals (by the cap) */
  uint64_t reservations, refunds, refusals;
  uint64_t sequence;  /* increases with every ledger change */
  uint64_t untracked; /* GPU: device memory in use that is not on the ledger (context, modules,
                         library workspaces not owned by tessera), from the driver; CPU: 0 */
  uint64_t reserved[7];
} tsr_backing_snapshot;

/* Installs a cap of `bytes` (> 0) on d's ledger. At most once per device per process, and only
 * before the device's first backing attempt (its first reservation of any kind, even of 0 bytes
 * or refused: reservations + refusals > 0 shows it); otherwise TSR_ERR_STATE saying which. The
 * cap cannot be raised or reset. */
TSR_API tsr_status tsr_calibration_install_cap(tsr_device d, uint64_t bytes);
/* Copies d's ledger as of one instant (one lock). */
TSR_API tsr_status tsr_calibration_snapshot(tsr_device d, tsr_backing_snapshot *out);

TSR_API uint64_t tsr_memory_active(tsr_device d);
TSR_API uint64_t tsr_memory_peak(tsr_device d);
/* Sets the peak to the current active + cached + pending + fixed. */
TSR_API void tsr_memory_reset_peak(tsr_device d);
TSR_API uint64_t tsr_memory_cached(tsr_device d);
/* Frees every cached buffer (the bytes are refunded after each real deallocation). */
TSR_API tsr_status tsr_memory_clear_cache(tsr_device d);
/* Keeps at most `bytes` in d's buffer cache, evicting now what is over; 0 disables the cache.
 * The default is a quarter of the device's memory, or TSR_CACHE_LIMIT (bytes) when set. */
TSR_API tsr_status tsr_memory_set_cache_limit(tsr_device d, uint64_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_MEMORY_H */
