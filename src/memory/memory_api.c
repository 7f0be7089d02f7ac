/* memory/memory_api.c — the public memory and calibration functions (tessera/memory.h) and the
 * testing hooks (tessera/testing.h): argument checks and messages over the ledger. No counting
 * rule lives here. */
#include <inttypes.h>

#include "base/discovery.h"
#include "base/status.h"
#include "memory/ledger.h"

tsr_status tsr_calibration_install_cap(tsr_device d, uint64_t bytes) {
  tsri_ledger *l = NULL;
  char dev[16];
  tsr_status st = tsri_ledger_get(d, "install_cap", &l);
  if (st != TSR_OK) return st;
  if (bytes == 0)
    return tsri_error(TSR_ERR_INVALID, "install_cap: a cap of 0 bytes on %s (the cap must be > 0)",
                      tsri_device_str(d, dev));
  return tsri_ledger_install_cap(l, bytes);
}

tsr_status tsr_calibration_snapshot(tsr_device d, tsr_backing_snapshot *out) {
  tsri_ledger *l = NULL;
  if (!out) return tsri_error(TSR_ERR_INVALID, "calibration_snapshot: out is NULL");
  tsr_status st = tsri_ledger_get(d, "calibration_snapshot", &l);
  if (st != TSR_OK) return st;
  tsri_ledger_snapshot(l, out);
  return TSR_OK;
}

/* The counters the count-returning functions read: 0 for a device that does not exist. */
static bool snapshot_or_zero(tsr_device d, const char *what, tsr_backing_snapshot *out) {
  tsri_ledger *l = NULL;
  *out = (tsr_backing_snapshot){0};
  if (tsri_ledger_get(d, what, &l) != TSR_OK) return false;
  tsri_ledger_snapshot(l, out);
  return true;
}

uint64_t tsr_memory_active(tsr_device d) {
  tsr_backing_snapshot snap;
  snapshot_or_zero(d, "memory_active", &snap);
  return snap.active;
}

uint64_t tsr_memory_peak(tsr_device d) {
  tsr_backing_snapshot snap;
  snapshot_or_zero(d, "memory_peak", &snap);
  return snap.peak;
}

uint64_t tsr_memory_cached(tsr_device d) {
  tsr_backing_snapshot snap;
  snapshot_or_zero(d, "memory_cached", &snap);
  return snap.cached;
}

void tsr_memory_reset_peak(tsr_device d) {
  tsri_ledger *l = NULL;
  if (tsri_ledger_get(d, "memory_reset_peak", &l) == TSR_OK) tsri_ledger_reset_peak(l);
}

tsr_status tsr_memory_clear_cache(tsr_device d) {
  tsri_ledger *l = NULL;
  tsr_status st = tsri_ledger_get(d, "memory_clear_cache", &l);
  if (st != TSR_OK) return st;
  tsri_cache_trim(l, 0);
  return TSR_OK;
}

tsr_status tsr_memory_set_cache_limit(tsr_device d, uint64_t bytes) {
  tsri_ledger *l = NULL;
  tsr_status st = tsri_ledger_get(d, "memory_set_cache_limit", &l);
  if (st != TSR_OK) return st;
  tsri_cache_set_limit(l, bytes);
  return TSR_OK;
}

static void shutdown_ledger(tsri_ledger *l) {
  tsri_cache_trim(l, 0);
  tsri_ledger_lock(l);
  tsri_cache_release_storage(&l->cache);
  tsri_ledger_unlock(l);
}

void tsri_memory_shutdown(void) {
  tsri_ledger_for_each(shutdown_ledger);
}

tsr_status tsr_testing_fail_allocation(tsr_device d, uint64_t k) {
  tsri_ledger *l = NULL;
  tsr_status st = tsri_ledger_get(d, "testing_fail_allocation", &l);
  if (st != TSR_OK) return st;
  atomic_store(&l->fail_countdown, k);
  return TSR_OK;
}

uint64_t tsr_testing_fail_allocation_pending(tsr_device d) {
  tsri_ledger *l = NULL;
  if (tsri_ledger_get(d, "testing_fail_allocation_pending", &l) != TSR_OK) return 0;
  return atomic_load(&l->fail_countdown);
}

tsr_status tsr_testing_set_dealloc_hook(tsr_device d, tsr_testing_dealloc_hook hook, void *ctx) {
  tsri_ledger *l = NULL;
  tsr_status st = tsri_ledger_get(d, "testing_set_dealloc_hook", &l);
  if (st != TSR_OK) return st;
  tsri_ledger_lock(l);
  l->dealloc_hook = hook;
  l->dealloc_ctx = hook ? ctx : NULL;
  tsri_ledger_unlock(l);
  return TSR_OK;
}
