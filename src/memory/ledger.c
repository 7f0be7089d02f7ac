/* memory/ledger.c — the per-device ledgers: counters, the cap, reservation with eviction,
 * commit, refunds and snapshots. It does not allocate or free memory itself (system*.c does)
 * and does not choose which cached block a request reuses (cache.c does). */
#include "memory/ledger.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/discovery.h"
#include "base/env.h"
#include "base/status.h"

/* The process-wide ledgers (DESIGN.md names them): the CPU's first, then one per GPU index. */
static tsri_ledger ledgers[1 + TSRI_MAX_GPUS];
static pthread_once_t ledgers_once = PTHREAD_ONCE_INIT;

static void ledgers_init(void) {
  for (int i = 0; i < 1 + TSRI_MAX_GPUS; i++) {
    tsri_ledger *l = &ledgers[i];
    if (pthread_mutex_init(&l->lock, NULL) != 0) abort();
    l->device = i == 0 ? (tsr_device){TSR_CPU, 0} : (tsr_device){TSR_GPU, i - 1};
    atomic_init(&l->cache_limit_ready, false);
    atomic_init(&l->fail_countdown, 0);
  }
}

static uint64_t default_cache_limit(tsr_device d) {
  const tsri_env_knobs *env = tsri_env();
  if (env->has_cache_limit) return env->cache_limit;
  const tsri_discovery_result *found = tsri_discovery();
  uint64_t memory = found->cpu.memory_bytes;
  if (d.type == TSR_GPU) {
    /* The registered allocator knows the device best; discovery's number serves until the
       backend has registered one. */
    const tsri_system_allocator *sys = tsri_system_allocator_for(TSR_GPU);
    memory =
        sys && sys->total_bytes ? sys->total_bytes(d.index) : found->gpus[d.index].memory_bytes;
  }
  return memory / 4;
}

tsri_ledger *tsri_ledger_at(tsr_device d) {
  pthread_once(&ledgers_once, ledgers_init);
  return &ledgers[d.type == TSR_CPU ? 0 : 1 + d.index];
}

tsr_status tsri_ledger_get(tsr_device d, const char *what, tsri_ledger **out) {
  tsr_status st = tsri_device_check(d, what);
  if (st != TSR_OK) return st;
  if (!(d.type == TSR_CPU && d.index == 0) &&
      !(d.type == TSR_GPU && d.index >= 0 && d.index < TSRI_MAX_GPUS)) {
    char dev[16];
    return tsri_error(TSR_ERR_DEVICE, "%s: no ledger for device %s", what, tsri_device_str(d, dev));
  }
  tsri_ledger *l = tsri_ledger_at(d);
  /* The default cache limit needs discovery (and, for a GPU, maybe the driver): compute it
     outside the lock, once, on the device's first use. */
  if (!atomic_load_explicit(&l->cache_limit_ready, memory_order_acquire)) {
    uint64_t limit = default_cache_limit(d);
    tsri_ledger_lock(l);
    if (!atomic_load_explicit(&l->cache_limit_ready, memory_order_relaxed)) {
      l->cache_limit = limit;
      atomic_store_explicit(&l->cache_limit_ready, true, memory_order_release);
    }
    tsri_ledger_unlock(l);
  }
  *out = l;
  return TSR_OK;
}

void tsri_ledger_for_each(void (*fn)(tsri_ledger *l)) {
  pthread_once(&ledgers_once, ledgers_init);
  for (int i = 0; i < 1 + TSRI_MAX_GPUS; i++)
    fn(&ledgers[i]);
}

void tsri_ledger_lock(tsri_ledger *l) {
  if (pthread_mutex_lock(&l->lock) != 0) abort();
}

void tsri_ledger_unlock(tsri_ledger *l) {
  if (pthread_mutex_unlock(&l->lock) != 0) abort();
}

static uint64_t ledger_total(const tsri_ledger *l) {
  return l->active + l->cached + l->pending + l->fixed;
}

void tsri_ledger_changed_locked(tsri_ledger *l) {
  l->sequence++;
  uint64_t total = ledger_total(l);
  if (total > l->peak) l->peak = total;
}

static uint64_t *counter(tsri_ledger *l, tsri_counter c) {
  switch (c) {
    case TSRI_PENDING:
      return &l->pending;
    case TSRI_ACTIVE:
      return &l->active;
    case TSRI_CACHED:
      return &l->cached;
    case TSRI_FIXED:
      return &l->fixed;
  }
  abort();
}

void tsri_ledger_add_locked(tsri_ledger *l, tsri_counter c, uint64_t bytes) {
  *counter(l, c) += bytes;
}

void tsri_ledger_sub_locked(tsri_ledger *l, tsri_counter c, uint64_t bytes) {
  uint64_t *value = counter(l, c);
  if (*value < bytes) {
    char dev[16];
    fprintf(stderr,
            "tessera: ledger of %s broken: taking %" PRIu64 " bytes from counter %d of %" PRIu64
            "\n",
            tsri_device_str(l->device, dev), bytes, (int)c, *value);
    abort();
  }
  *value -= bytes;
}

void tsri_ledger_route_locked(const tsri_ledger *l, tsri_dealloc_route *out) {
  out->hook = l->dealloc_hook;
  out->hook_ctx = l->dealloc_ctx;
  out->sys = tsri_system_allocator_for(l->device.type);
}

/* What admission decided, for the work done after the lock is released. */
typedef struct {
  tsri_buffer *victims; /* detached from the cache, to be really freed */
  uint64_t victim_bytes, victim_count;
  uint64_t hold; /* pending bytes held until the victims are gone: max(request, victims) */
  tsri_dealloc_route route;
  tsr_backing_snapshot seen; /* the counters at a refusal, for its message */
} admission;

/* Picks blocks to evict so that `shortfall` bytes leave; their bytes turn into pending, held
 * for the reservation r, so the room they make cannot be taken by anyone else meanwhile. */
static void evict_for_locked(tsri_ledger *l, const tsri_reservation *r, uint64_t shortfall,
                             admission *a) {
  while (a->victim_bytes < shortfall) {
    tsri_buffer *b = tsri_cache_pop_victim(&l->cache, shortfall - a->victim_bytes);
    b->cache_next = a->victims;
    a->victims = b;
    a->victim_bytes += b->bytes;
    a->victim_count++;
  }
  /* total' = total - victims + hold <= cap: hold = victims leaves it unchanged, and hold =
     request fits because the victims cover the shortfall. */
  a->hold = r->bytes > a->victim_bytes ? r->bytes : a->victim_bytes;
  tsri_ledger_sub_locked(l, TSRI_CACHED, a->victim_bytes);
  tsri_ledger_add_locked(l, TSRI_PENDING, a->hold);
  tsri_ledger_route_locked(l, &a->route);
}

/* Grants r, or refuses it. Only a final refusal counts (and snapshots the counters for its
   message): the first one is followed by a settle and a second try. */
static tsr_status admit_locked(tsri_ledger *l, const tsri_reservation *r, admission *a,
                               bool final) {
  uint64_t total = ledger_total(l), need = r->bytes;
  if (l->cap == 0 || (need <= l->cap && total <= l->cap - need)) {
    tsri_ledger_add_locked(l, r->dest, need);
  } else if (need > l->cap || total - l->cache.bytes > l->cap - need) {
    /* Only blocks still in the cache can be evicted (blocks being trimmed leave on their own);
       when even all of them would not make room, refuse and keep the cache. */
    if (!final) return TSR_ERR_CAP;
    l->refusals++;
    tsri_ledger_changed_locked(l);
    tsri_ledger_snapshot_locked(l, &a->seen);
    return TSR_ERR_CAP;
  } else {
    evict_for_locked(l, r, total - (l->cap - need), a);
  }
  l->reservations++;
  tsri_ledger_changed_locked(l);
  return TSR_OK;
}

static tsr_status refusal_error(const tsri_ledger *l, const tsri_reservation *r,
                                const tsr_backing_snapshot *seen) {
  char dev[16], asked[48] = "";
  if (r->requested != r->bytes)
    snprintf(asked, sizeof asked, " (%" PRIu64 " requested)", r->requested);
  return tsri_error(TSR_ERR_CAP,
                    "%s of %" PRIu64 " bytes%s on %s refused by the cap: cap %" PRIu64
                    ", active %" PRIu64 ", cached %" PRIu64 ", pending %" PRIu64 ", fixed %" PRIu64,
                    r->what, r->bytes, asked, tsri_device_str(l->device, dev), seen->cap,
                    seen->active, seen->cached, seen->pending, seen->fixed);
}

tsr_status tsri_ledger_reserve(tsri_ledger *l, const tsri_reservation *r) {
  admission a = {0};
  tsri_ledger_lock(l);
  tsr_status st = admit_locked(l, r, &a, false);
  tsri_ledger_unlock(l);
  if (st == TSR_ERR_CAP) {
    /* Bytes whose release waits only for queued device work are not in use: let them come back
       (outside the lock: the releases refund to ledgers), then decide for good. A request above
       the cap itself never fits (the cap is fixed once installed). */
    if (r->bytes <= l->cap) tsri_memory_settle();
    tsri_ledger_lock(l);
    st = admit_locked(l, r, &a, true);
    tsri_ledger_unlock(l);
  }
  if (st != TSR_OK) return refusal_error(l, r, &a.seen);
  if (!a.victims) return TSR_OK;
  while (a.victims) {
    tsri_buffer *b = a.victims;
    a.victims = b->cache_next;
    tsri_route_free(&a.route, b->data, b->bytes);
    free(b);
  }
  /* The victims are really gone: refund them, keeping exactly the request. */
  tsri_ledger_lock(l);
  tsri_ledger_sub_locked(l, TSRI_PENDING, a.hold);
  tsri_ledger_add_locked(l, r->dest, r->bytes);
  l->refunds += a.victim_count;
  tsri_ledger_changed_locked(l);
  tsri_ledger_unlock(l);
  return TSR_OK;
}

void tsri_ledger_commit(tsri_ledger *l, uint64_t bytes, bool ok) {
  tsri_ledger_lock(l);
  tsri_ledger_sub_locked(l, TSRI_PENDING, bytes);
  if (ok)
    tsri_ledger_add_locked(l, TSRI_ACTIVE, bytes);
  else
    l->refunds++;
  tsri_ledger_changed_locked(l);
  tsri_ledger_unlock(l);
}

void tsri_ledger_refund(tsri_ledger *l, tsri_counter from, uint64_t bytes) {
  tsri_ledger_lock(l);
  tsri_ledger_sub_locked(l, from, bytes);
  l->refunds++;
  tsri_ledger_changed_locked(l);
  tsri_ledger_unlock(l);
}

void tsri_ledger_count_failed_attempt(tsri_ledger *l) {
  tsri_ledger_lock(l);
  l->reservations++;
  l->refunds++;
  tsri_ledger_changed_locked(l);
  tsri_ledger_unlock(l);
}

bool tsri_ledger_fault_fires(tsri_ledger *l) {
  uint_least64_t left = atomic_load(&l->fail_countdown);
  while (left != 0) {
    if (atomic_compare_exchange_weak(&l->fail_countdown, &left, left - 1)) return left == 1;
  }
  return false;
}

tsr_status tsri_ledger_install_cap(tsri_ledger *l, uint64_t bytes) {
  char dev[16];
  tsri_ledger_lock(l);
  uint64_t cap = l->cap, attempts = l->reservations + l->refusals;
  uint64_t reservations = l->reservations, refusals = l->refusals;
  if (cap == 0 && attempts == 0) {
    l->cap = bytes;
    tsri_ledger_changed_locked(l);
  }
  tsri_ledger_unlock(l);
  if (cap != 0)
    return tsri_error(TSR_ERR_STATE,
                      "install_cap: cap already installed on %s (%" PRIu64
                      " bytes); it cannot be raised or reset",
                      tsri_device_str(l->device, dev), cap);
  if (attempts != 0)
    return tsri_error(TSR_ERR_STATE,
                      "install_cap: %s already had its first backing attempt (%" PRIu64
                      " reservations, %" PRIu64 " refusals); a cap must be installed before it",
                      tsri_device_str(l->device, dev), reservations, refusals);
  return TSR_OK;
}

void tsri_ledger_snapshot_locked(const tsri_ledger *l, tsr_backing_snapshot *out) {
  *out = (tsr_backing_snapshot){
      .cap = l->cap,
      .active = l->active,
      .cached = l->cached,
      .pending = l->pending,
      .fixed = l->fixed,
      .peak = l->peak,
      .reservations = l->reservations,
      .refunds = l->refunds,
      .refusals = l->refusals,
      .sequence = l->sequence,
  };
}

void tsri_ledger_snapshot(tsri_ledger *l, tsr_backing_snapshot *out) {
  /* The driver is asked before the lock (it may be slow); what it reports beyond the ledger's
     own bytes is memory tessera does not own. */
  const tsri_system_allocator *sys = tsri_system_allocator_for(l->device.type);
  bool ask = l->device.type == TSR_GPU && sys && sys->used_bytes;
  uint64_t used = ask ? sys->used_bytes(l->device.index) : 0;
  tsri_ledger_lock(l);
  tsri_ledger_snapshot_locked(l, out);
  uint64_t tracked = ledger_total(l);
  tsri_ledger_unlock(l);
  out->untracked = used > tracked ? used - tracked : 0;
}

void tsri_ledger_reset_peak(tsri_ledger *l) {
  tsri_ledger_lock(l);
  l->peak = ledger_total(l);
  tsri_ledger_changed_locked(l);
  tsri_ledger_unlock(l);
}
