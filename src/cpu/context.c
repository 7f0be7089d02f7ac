/* cpu/context.c — the CPU device's context (cpu/context.h): made on first use under one mutex,
 * released at the backend's shutdown. Not what it holds: the pool is cpu/parallel.c's, the
 * instruction-set choice cpu/qmm_fast.c's. */
#include "cpu/context.h"

#include <pthread.h>
#include <stdlib.h>

#include "base/discovery.h"
#include "base/env.h"
#include "base/status.h"
#include "cpu/qmm_fast.h"

/* cpu:0 is the only CPU device (core/device.c, tsri_device_usable). */
enum { CPU_DEVICES = 1 };

/* The backend's table of its devices' contexts, like cuda/runtime.c's: the registry, not state
   kernels share behind the device's back. */
static pthread_mutex_t contexts_lock = PTHREAD_MUTEX_INITIALIZER;
static tsri_cpu_context *contexts[CPU_DEVICES];

/* TSR_NUM_THREADS, else the online cores (the pool caps it at TSRI_PARALLEL_MAX_THREADS). */
static int pool_threads(void) {
  int cores = tsri_discovery()->cpu.compute_units;
  int wanted = tsri_env()->num_threads; /* 0: unset or refused (base/env warned) */
  return wanted > 0 ? wanted : cores > 0 ? cores : 1;
}

static tsr_status context_new(tsr_device device, tsri_cpu_context **out) {
  tsri_cpu_context *c = calloc(1, sizeof *c);
  if (c) c->pool = tsri_parallel_pool_new(pool_threads());
  if (!c || !c->pool) {
    free(c);
    return tsri_error(TSR_ERR_NOMEM, "cpu:%d: out of host memory for the device's context",
                      device.index);
  }
  c->device = device;
  c->isa = tsri_qmm_fast_choose_isa();
  *out = c;
  return TSR_OK;
}

tsr_status tsri_cpu_context_get(tsr_device device, const tsri_cpu_context **out) {
  if (device.type != TSR_CPU || device.index < 0 || device.index >= CPU_DEVICES) {
    char name[16];
    return tsri_error(TSR_ERR_DEVICE, "%s: not a device of the CPU backend",
                      tsri_device_str(device, name));
  }
  pthread_mutex_lock(&contexts_lock);
  tsr_status status = TSR_OK;
  if (!contexts[device.index]) status = context_new(device, &contexts[device.index]);
  *out = contexts[device.index];
  pthread_mutex_unlock(&contexts_lock);
  return status;
}

void tsri_cpu_contexts_release(void) {
  pthread_mutex_lock(&contexts_lock);
  for (int i = 0; i < CPU_DEVICES; i++) {
    if (!contexts[i]) continue;
    tsri_parallel_pool_free(contexts[i]->pool);
    free(contexts[i]);
    contexts[i] = NULL;
  }
  pthread_mutex_unlock(&contexts_lock);
}
