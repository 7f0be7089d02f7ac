/* core/device.c — the default device (from TSR_DEFAULT_DEVICE or the hardware, once) and
 * tsr_shutdown, the one place that tears the runtime down in order. */
#include "core/device.h"
#include "core/profile.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/discovery.h"
#include "base/env.h"
#include "base/log.h"
#include "base/status.h"
#include "core/backend.h"
#include "core/stream.h"
#include "core/views.h"

/* Packed as type * 65536 + index, so one atomic holds it. */
static atomic_int default_device_packed = -1;

static int pack(tsr_device d) {
  return (int)d.type * 65536 + d.index;
}
static tsr_device unpack(int v) {
  tsr_device d = {(tsr_device_type)(v / 65536), v % 65536};
  return d;
}

bool tsri_device_usable(tsr_device d) {
  if (!tsri_backend_for(d.type)) return false;
  if (d.type == TSR_CPU) return d.index == 0;
  return d.type == TSR_GPU && d.index >= 0 && d.index < tsri_discovery()->gpu_count;
}

/* What TSR_DEFAULT_DEVICE asks for; false when unset or unparseable (base/env warned). */
static bool parse_env_device(tsr_device *out) {
  const tsri_env_knobs *env = tsri_env();
  if (env->device_kind == TSRI_ENV_DEVICE_UNSET) return false;
  if (env->device_kind == TSRI_ENV_DEVICE_CPU)
    *out = (tsr_device){TSR_CPU, 0};
  else
    *out = (tsr_device){TSR_GPU, env->device_index};
  return true;
}

static tsr_device choose_default(void) {
  tsr_device cpu = {TSR_CPU, 0}, gpu0 = {TSR_GPU, 0}, wanted;
  if (parse_env_device(&wanted)) {
    if (tsri_device_usable(wanted)) return wanted;
    char name[16];
    tsri_log(TSRI_LOG_WARN, "TSR_DEFAULT_DEVICE=%s is not usable in this build/machine; using cpu",
             tsri_device_str(wanted, name));
    return cpu;
  }
  if (!tsri_device_usable(gpu0)) return cpu;
  /* GPU 0 is the default once its backend has a kernel for every primitive (TSR_DEFAULT_DEVICE=
     gpu:0 asks for it before that). A kernel may still refuse some dtypes or shapes at
     construction (supports(): integer matmul, for one): such an op on the default device is
     TSR_ERR_UNSUPPORTED naming it, and runs on the CPU when asked for there. */
  const tsri_backend *gpu = tsri_backend_for(TSR_GPU);
  for (int p = 0; p < TSRI_PRIM_COUNT; p++) {
    /* data nodes are born ready, views and steps run in core: none is ever given to a kernel. */
    bool runs_in_a_kernel = p != TSRI_PRIM_DATA && !tsri_primitive_in_core((tsri_primitive)p);
    if (runs_in_a_kernel && !gpu->kernels[p]) {
      tsri_log(TSRI_LOG_INFO, "default device: cpu (the %s backend has no %s kernel yet)",
               gpu->name, tsri_primitive_name((tsri_primitive)p));
      return cpu;
    }
  }
  return gpu0;
}

tsr_device tsr_default_device(void) {
  int v = atomic_load(&default_device_packed);
  if (v < 0) {
    int chosen = pack(choose_default()), expected = -1;
    /* Two first callers choose the same device; whoever stores first wins. */
    atomic_compare_exchange_strong(&default_device_packed, &expected, chosen);
    v = atomic_load(&default_device_packed);
  }
  return unpack(v);
}

tsr_status tsr_set_default_device(tsr_device d) {
  tsr_status status = tsri_device_check(d, "set_default_device");
  if (status != TSR_OK) return status;
  if (!tsri_device_usable(d)) {
    char name[16];
    return tsri_error(TSR_ERR_DEVICE, "set_default_device: %s has no backend in this build",
                      tsri_device_str(d, name));
  }
  atomic_store(&default_device_packed, pack(d));
  return TSR_OK;
}

/* What layers above core run at tsr_shutdown (core/device.h); process-wide like the runtime. */
#define SHUTDOWN_HOOKS_MAX 4
static void (*shutdown_hooks[SHUTDOWN_HOOKS_MAX])(void);
static pthread_mutex_t shutdown_hooks_mutex = PTHREAD_MUTEX_INITIALIZER;

void tsri_shutdown_hook_add(void (*fn)(void)) {
  pthread_mutex_lock(&shutdown_hooks_mutex);
  for (int i = 0; i < SHUTDOWN_HOOKS_MAX; i++) {
    if (shutdown_hooks[i] == fn) break;
    if (!shutdown_hooks[i]) {
      shutdown_hooks[i] = fn;
      break;
    }
  }
  pthread_mutex_unlock(&shutdown_hooks_mutex);
}

static void run_shutdown_hooks(void) {
  void (*hooks[SHUTDOWN_HOOKS_MAX])(void);
  pthread_mutex_lock(&shutdown_hooks_mutex);
  memcpy(hooks, shutdown_hooks, sizeof hooks);
  pthread_mutex_unlock(&shutdown_hooks_mutex);
  for (int i = 0; i < SHUTDOWN_HOOKS_MAX; i++)
    if (hooks[i]) hooks[i]();
}

void tsr_shutdown(void) {
  /* first: workers may still release buffers into the cache. From a host function it would
     join its own worker: refused, nothing done. */
  if (!tsri_streams_shutdown()) {
    tsri_log(TSRI_LOG_ERROR, "tsr_shutdown called from a host function on a stream; ignored");
    return;
  }
  tsri_profile_report();    /* the streams are idle: the TSR_PROFILE table is complete */
  run_shutdown_hooks();     /* then the layers above core (MPI's finalize), */
  tsri_backends_shutdown(); /* then the kernels' own threads (the CPU's parallel-for pool) */
  tsri_memory_shutdown();
}
