/* memory/cache.c — the buffer cache: size classes of free blocks, and the locked operations that
 * move blocks between the cache and the ledger. It never calls the system allocator under the
 * lock; it does not decide what a device backs (system_cpu.c) or what the cap allows (ledger.c).
 */
#include "memory/cache.h"

#include <stdlib.h>
#include <string.h>

#include "memory/ledger.h"

/* The index of the first class of at least `bytes`, or c->count when none is. */
static size_t class_lower_bound(const tsri_cache *c, uint64_t bytes) {
  size_t lo = 0, hi = c->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (c->classes[mid].bytes < bytes)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Pops the head block of class i, removing the class once it is empty. */
static tsri_buffer *class_pop(tsri_cache *c, size_t i) {
  tsri_cache_class *cls = &c->classes[i];
  tsri_buffer *b = cls->head;
  cls->head = b->cache_next;
  b->cache_next = NULL;
  c->bytes -= b->bytes;
  if (cls->head == NULL) {
    memmove(&c->classes[i], &c->classes[i + 1], (c->count - i - 1) * sizeof c->classes[0]);
    c->count--;
  }
  return b;
}

tsri_buffer *tsri_cache_pop_fit(tsri_cache *c, uint64_t need) {
  size_t i = class_lower_bound(c, need);
  if (i == c->count) return NULL;
  uint64_t waste = need < TSRI_CACHE_MAX_WASTE ? need : TSRI_CACHE_MAX_WASTE;
  if (c->classes[i].bytes - need > waste) return NULL;
  return class_pop(c, i);
}

/* Makes room for one more class; false when the array cannot grow. */
static bool classes_reserve(tsri_cache *c) {
  if (c->count < c->capacity) return true;
  size_t capacity = c->capacity ? 2 * c->capacity : 16;
  tsri_cache_class *grown = realloc(c->classes, capacity * sizeof *grown);
  if (!grown) return false;
  c->classes = grown;
  c->capacity = capacity;
  return true;
}

bool tsri_cache_push(tsri_cache *c, tsri_buffer *b) {
  size_t i = class_lower_bound(c, b->bytes);
  if (i == c->count || c->classes[i].bytes != b->bytes) {
    if (!classes_reserve(c)) return false;
    memmove(&c->classes[i + 1], &c->classes[i], (c->count - i) * sizeof c->classes[0]);
    c->classes[i] = (tsri_cache_class){.bytes = b->bytes, .head = NULL};
    c->count++;
  }
  b->cache_next = c->classes[i].head;
  c->classes[i].head = b;
  c->bytes += b->bytes;
  return true;
}

tsri_buffer *tsri_cache_pop_victim(tsri_cache *c, uint64_t shortfall) {
  if (c->count == 0) return NULL;
  size_t i = class_lower_bound(c, shortfall);
  return class_pop(c, i < c->count ? i : c->count - 1);
}

void tsri_cache_release_storage(tsri_cache *c) {
  if (c->count != 0) return;
  free(c->classes);
  c->classes = NULL;
  c->capacity = 0;
}

tsri_buffer *tsri_cache_take(tsri_ledger *l, uint64_t need) {
  tsri_ledger_lock(l);
  tsri_buffer *b = tsri_cache_pop_fit(&l->cache, need);
  if (b) {
    /* A cache hit is a granted reservation that needs no system call: the block was already
       backing, so it only changes counters (and cannot pass the cap). */
    tsri_ledger_sub_locked(l, TSRI_CACHED, b->bytes);
    tsri_ledger_add_locked(l, TSRI_ACTIVE, b->bytes);
    l->reservations++;
    tsri_ledger_changed_locked(l);
  }
  tsri_ledger_unlock(l);
  if (b) atomic_store_explicit(&b->refs, 1, memory_order_relaxed);
  return b;
}

bool tsri_cache_keep(tsri_ledger *l, tsri_buffer *b, tsri_dealloc_route *route) {
  bool kept = false;
  tsri_ledger_lock(l);
  /* `cached` (not cache.bytes) is what counts against the limit: blocks being trimmed still
     back memory until their real free. A 0-byte buffer holds nothing worth keeping. */
  if (b->bytes > 0 && b->bytes <= l->cache_limit && l->cached <= l->cache_limit - b->bytes &&
      tsri_cache_push(&l->cache, b)) {
    tsri_ledger_sub_locked(l, TSRI_ACTIVE, b->bytes);
    tsri_ledger_add_locked(l, TSRI_CACHED, b->bytes);
    tsri_ledger_changed_locked(l);
    kept = true;
  } else {
    tsri_ledger_route_locked(l, route);
  }
  tsri_ledger_unlock(l);
  return kept;
}

void tsri_cache_trim(tsri_ledger *l, uint64_t keep_bytes) {
  tsri_buffer *victims = NULL;
  tsri_dealloc_route route;
  tsri_ledger_lock(l);
  /* Detach under the lock; the bytes stay `cached` until each real free has returned. */
  while (l->cache.bytes > keep_bytes) {
    tsri_buffer *b = tsri_cache_pop_victim(&l->cache, l->cache.bytes - keep_bytes);
    b->cache_next = victims;
    victims = b;
  }
  tsri_ledger_route_locked(l, &route);
  tsri_ledger_unlock(l);
  while (victims) {
    tsri_buffer *b = victims;
    victims = b->cache_next;
    tsri_route_free(&route, b->data, b->bytes);
    tsri_ledger_refund(l, TSRI_CACHED, b->bytes);
    free(b);
  }
}

void tsri_cache_set_limit(tsri_ledger *l, uint64_t bytes) {
  tsri_ledger_lock(l);
  l->cache_limit = bytes;
  atomic_store(&l->cache_limit_ready, true);
  tsri_ledger_unlock(l);
  tsri_cache_trim(l, bytes);
}
