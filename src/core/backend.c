/* core/backend.c — the backend registry: one table per device type, filled once. */
#include "core/backend.h"

#include <pthread.h>

#include "base/discovery.h"

static const tsri_backend *backends[TSRI_DEVICE_TYPE_COUNT];
static pthread_once_t backends_once = PTHREAD_ONCE_INIT;

void tsri_backend_register(tsr_device_type type, const tsri_backend *backend) {
  if ((unsigned)type < TSRI_DEVICE_TYPE_COUNT) backends[type] = backend;
}

const tsri_backend *tsri_backend_for(tsr_device_type type) {
  pthread_once(&backends_once, tsri_register_backends);
  return (unsigned)type < TSRI_DEVICE_TYPE_COUNT ? backends[type] : NULL;
}

void tsri_backends_shutdown(void) {
  for (int type = 0; type < TSRI_DEVICE_TYPE_COUNT; type++) {
    const tsri_backend *backend = tsri_backend_for((tsr_device_type)type);
    if (backend && backend->shutdown) backend->shutdown();
  }
}

const char *tsri_primitive_name(tsri_primitive p) {
  static const char *const names[] = {
#define TSRI_PRIMITIVE_NAME(e, name) name,
      TSRI_PRIMITIVE_LIST(TSRI_PRIMITIVE_NAME)
#undef TSRI_PRIMITIVE_NAME
  };
  return (unsigned)p < TSRI_PRIM_COUNT ? names[p] : "unknown";
}
