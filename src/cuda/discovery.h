/* cuda/discovery.h — the CUDA backend's discovery probe, which src/backends.c registers with the
 * discovery pass (base/discovery.h); what it reports is in cuda/discovery.c. */
#ifndef TSR_CUDA_DISCOVERY_H
#define TSR_CUDA_DISCOVERY_H

#include "tessera/device.h"

/* A tsri_discovery_probe: fills up to `max` GPUs, returns how many; 0 when there is no driver or
 * no device (never fails). */
int tsri_cuda_probe(tsr_device_info *out, int max);

#endif
