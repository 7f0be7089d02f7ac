/* src/backends.c — the one place that knows every backend this build has: it registers their
 * kernel tables with core (core/backend.h) and their discovery probes with base
 * (base/discovery.h), so neither core nor base depends on a backend. */
#include "base/discovery.h"
#include "core/backend.h"
#include "cpu/backend.h"
#ifdef TSR_HAVE_CUDA
#include "cuda/backend.h"
#include "cuda/discovery.h"
#endif

void tsri_register_backends(void) {
  tsri_backend_register(TSR_CPU, tsri_cpu_backend());
#ifdef TSR_HAVE_CUDA
  tsri_backend_register(TSR_GPU, tsri_cuda_backend());
#endif
}

void tsri_register_discovery_probes(void) {
#ifdef TSR_HAVE_CUDA
  tsri_discovery_register_probe(TSR_GPU, tsri_cuda_probe);
#endif
}
