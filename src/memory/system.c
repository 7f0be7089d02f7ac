/* memory/system.c — which system allocator serves each device type, and the real free (through
 * the testing hook when one is set). It keeps no counts: the ledger does. */
#include <stdatomic.h>

#include "base/discovery.h"
#include "memory/ledger.h"

/* Indexed by tsr_device_type. The CPU's is built in; a GPU backend registers its own before its
 * first allocation. Atomic because registration may race with a first use on another thread. */
static _Atomic(const tsri_system_allocator *) registered[TSRI_DEVICE_TYPE_COUNT];

void tsri_memory_register_allocator(tsr_device_type type, const tsri_system_allocator *a) {
  if ((unsigned)type >= TSRI_DEVICE_TYPE_COUNT) return;
  atomic_store_explicit(&registered[type], a, memory_order_release);
}

const tsri_system_allocator *tsri_system_allocator_for(tsr_device_type type) {
  if ((unsigned)type >= TSRI_DEVICE_TYPE_COUNT) return NULL;
  const tsri_system_allocator *a = atomic_load_explicit(&registered[type], memory_order_acquire);
  if (!a && type == TSR_CPU) a = &tsri_cpu_allocator;
  return a;
}

void tsri_memory_settle(void) {
  for (int type = 0; type < TSRI_DEVICE_TYPE_COUNT; type++) {
    const tsri_system_allocator *a = tsri_system_allocator_for((tsr_device_type)type);
    if (a && a->settle) a->settle();
  }
}

void tsri_route_free(const tsri_dealloc_route *route, void *ptr, uint64_t bytes) {
  /* A 0-byte buffer has nothing to free; a device without an allocator never allocated. */
  if (!ptr || !route->sys) return;
  if (route->hook)
    route->hook(ptr, bytes, route->sys->free, route->hook_ctx);
  else
    route->sys->free(ptr, bytes);
}
