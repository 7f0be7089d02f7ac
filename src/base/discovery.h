/* base/discovery.h — the process-wide discovery cache behind tessera/device.h.
 *
 * One pass probes every platform this build knows, under pthread_once; every later call reads the
 * cached result. The CPU, the host, is probed here; every other device type through the probe its
 * backend registers (src/backends.c registers them), so base knows no backend. */
#ifndef TSR_BASE_DISCOVERY_H
#define TSR_BASE_DISCOVERY_H

#include "tessera/device.h"

#define TSRI_MAX_GPUS 16

/* How many device types there are (tsr_device_type, tessera/array.h); tables indexed by device
 * type are this long. */
#define TSRI_DEVICE_TYPE_COUNT 2
_Static_assert(TSRI_DEVICE_TYPE_COUNT == TSR_GPU + 1,
               "tsr_device_type changed: update TSRI_DEVICE_TYPE_COUNT");

typedef struct {
  tsr_device_info cpu;
  int gpu_count;
  tsr_device_info gpus[TSRI_MAX_GPUS];
  /* CPU features as flags, for kernels choosing a path at run time (cpuid + OS support). */
  bool has_avx2, has_fma, has_f16c, has_avx512f, has_avx512bw, has_avx512vl;
} tsri_discovery_result;

/* The cached result (runs the one pass on first use). Any thread. */
const tsri_discovery_result *tsri_discovery(void);
/* TSR_OK when d exists; else TSR_ERR_DEVICE with "`what`: no such device gpu:3 (this process has
 * 1 GPU)" style message. */
tsr_status tsri_device_check(tsr_device d, const char *what);
/* "cpu" or "gpu:N", for messages; the buffer must hold 16 bytes. */
const char *tsri_device_str(tsr_device d, char buf[16]);

/* A backend's probe: fills up to `max` devices of its type, returns how many; 0 when there is no
 * driver or no device (never fails). Runs once, inside the discovery pass. */
typedef int (*tsri_discovery_probe)(tsr_device_info *out, int max);
/* Registers the probe for a device type; only tsri_register_discovery_probes calls it. The CPU's
 * slot is never asked (the host is probed here), and a type out of range is ignored. */
void tsri_discovery_register_probe(tsr_device_type type, tsri_discovery_probe probe);
/* Defined in src/backends.c: registers the probe of every backend this build has. The discovery
 * pass calls it once, before it probes. */
void tsri_register_discovery_probes(void);

#endif
