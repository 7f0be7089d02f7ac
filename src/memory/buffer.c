/* memory/buffer.c — backing buffers: allocate (cache hit, or reserve then ask the system), wrap
 * caller memory, retain and release. Every byte passes the device's ledger here; the counting
 * rules live in ledger.c and the reuse rule in cache.c. */
#include "memory/buffer.h"

#include <inttypes.h>
#include <stdlib.h>

#include "base/discovery.h"
#include "base/status.h"
#include "memory/ledger.h"

static tsr_status out_of_memory(tsr_device d, uint64_t bytes, uint64_t requested) {
  char dev[16];
  if (bytes == requested)
    return tsri_error(TSR_ERR_NOMEM, "allocation of %" PRIu64 " bytes on %s failed: out of memory",
                      bytes, tsri_device_str(d, dev));
  return tsri_error(TSR_ERR_NOMEM,
                    "allocation of %" PRIu64 " bytes (%" PRIu64
                    " requested) on %s failed: out of memory",
                    bytes, requested, tsri_device_str(d, dev));
}

static void buffer_init(tsri_buffer *b, tsr_device d, void *data, uint64_t bytes) {
  *b = (tsri_buffer){.data = data, .bytes = bytes, .device = d};
  atomic_init(&b->refs, 1);
  atomic_init(&b->exposed, false);
}

/* The system part of an allocation reserved as pending: the buffer struct (host heap, off the
 * ledger) and the block itself, then the commit that settles the pending bytes either way. */
static tsr_status allocate_reserved(tsri_ledger *l, const tsri_system_allocator *sys, uint64_t need,
                                    uint64_t nbytes, tsri_buffer **out) {
  tsri_buffer *b = malloc(sizeof *b);
  void *data = NULL;
  /* Fault injection counts system allocations only, so it sits right before the call. */
  if (b && need > 0) data = tsri_ledger_fault_fires(l) ? NULL : sys->alloc(l->device.index, need);
  bool ok = b && (need == 0 || data);
  tsri_ledger_commit(l, need, ok);
  if (!ok) {
    free(b);
    return out_of_memory(l->device, need, nbytes);
  }
  buffer_init(b, l->device, data, need);
  *out = b;
  return TSR_OK;
}

tsr_status tsri_buffer_alloc(tsr_device d, uint64_t nbytes, tsri_buffer **out) {
  tsri_ledger *l = NULL;
  char dev[16];
  if (!out) return tsri_error(TSR_ERR_INVALID, "allocation: out is NULL");
  tsr_status st = tsri_ledger_get(d, "allocation", &l);
  if (st != TSR_OK) return st;
  const tsri_system_allocator *sys = tsri_system_allocator_for(d.type);
  if (!sys)
    return tsri_error(TSR_ERR_DEVICE, "no allocator for %s in this build", tsri_device_str(d, dev));
  if (nbytes > TSRI_LEDGER_MAX_BYTES) {
    tsri_ledger_count_failed_attempt(l);
    return out_of_memory(d, nbytes, nbytes);
  }
  uint64_t need = nbytes == 0 ? 0 : sys->round(nbytes);
  tsri_buffer *hit = need > 0 ? tsri_cache_take(l, need) : NULL;
  if (hit) {
    atomic_store_explicit(&hit->exposed, false, memory_order_relaxed);
    *out = hit;
    return TSR_OK;
  }
  tsri_reservation r = {
      .bytes = need, .requested = nbytes, .dest = TSRI_PENDING, .what = "allocation"};
  st = tsri_ledger_reserve(l, &r);
  if (st != TSR_OK) return st;
  return allocate_reserved(l, sys, need, nbytes, out);
}

tsr_status tsri_buffer_wrap(tsr_device d, void *data, uint64_t nbytes, void (*deleter)(void *),
                            void *ctx, tsri_buffer **out) {
  tsri_ledger *l = NULL;
  tsri_buffer *b = NULL;
  if (!out) return tsri_error(TSR_ERR_INVALID, "wrap: out is NULL");
  tsr_status st = tsri_ledger_get(d, "wrap", &l);
  if (st != TSR_OK) goto fail;
  if (nbytes > TSRI_LEDGER_MAX_BYTES) {
    tsri_ledger_count_failed_attempt(l);
    st = out_of_memory(d, nbytes, nbytes);
    goto fail;
  }
  /* The struct first, so a failed malloc leaves the ledger untouched and the deleter unrun. */
  b = malloc(sizeof *b);
  if (!b) {
    st = tsri_error(TSR_ERR_NOMEM, "wrap of %" PRIu64 " bytes: out of host memory", nbytes);
    goto fail;
  }
  tsri_reservation r = {.bytes = nbytes, .requested = nbytes, .dest = TSRI_ACTIVE, .what = "wrap"};
  st = tsri_ledger_reserve(l, &r);
  if (st != TSR_OK) goto fail;
  buffer_init(b, d, data, nbytes);
  b->external = true;
  b->deleter = deleter;
  b->deleter_ctx = ctx;
  *out = b;
  return TSR_OK;
fail:
  free(b);
  return st;
}

tsri_buffer *tsri_buffer_retain(tsri_buffer *b) {
  if (b) atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
  return b;
}

void tsri_buffer_release(tsri_buffer *b) {
  if (!b) return;
  /* acq_rel: the last owner must see every other owner's writes before the block is reused. */
  int before = atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel);
  if (before > 1) return;
  if (before < 1) abort(); /* released more often than retained: a broken invariant */
  tsri_ledger *l = tsri_ledger_at(b->device);
  tsri_dealloc_route route;
  if (b->external) {
    /* The caller's memory backs the bytes until its deleter has returned. */
    if (b->deleter) b->deleter(b->deleter_ctx);
    tsri_ledger_refund(l, TSRI_ACTIVE, b->bytes);
    free(b);
    return;
  }
  if (tsri_cache_keep(l, b, &route)) return;
  /* The real free first, outside the lock (a hook may sleep): only then are the bytes refunded,
     so every snapshot meanwhile still counts them as active. */
  tsri_route_free(&route, b->data, b->bytes);
  tsri_ledger_refund(l, TSRI_ACTIVE, b->bytes);
  free(b);
}

tsr_status tsri_ledger_reserve_fixed(tsr_device d, uint64_t bytes) {
  tsri_ledger *l = NULL;
  tsr_status st = tsri_ledger_get(d, "fixed reservation", &l);
  if (st != TSR_OK) return st;
  if (bytes > TSRI_LEDGER_MAX_BYTES) {
    tsri_ledger_count_failed_attempt(l);
    return out_of_memory(d, bytes, bytes);
  }
  tsri_reservation r = {
      .bytes = bytes, .requested = bytes, .dest = TSRI_FIXED, .what = "fixed reservation"};
  return tsri_ledger_reserve(l, &r);
}

void tsri_ledger_release_fixed(tsr_device d, uint64_t bytes) {
  tsri_ledger *l = NULL;
  if (tsri_ledger_get(d, "fixed release", &l) != TSR_OK) return;
  tsri_ledger_refund(l, TSRI_FIXED, bytes);
}
