/* src/backends.c — the one place that knows every backend this build has: it registers their
 * kernel tables with core (core/backend.h), so core never depends on a backend. */
#include "core/backend.h"
#include "cpu/backend.h"

void tsri_register_backends(void) {
  tsri_backend_register(TSR_CPU, tsri_cpu_backend());
}
