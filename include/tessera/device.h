/* tessera/device.h — cached device discovery.
 *
 * The first call of any function here runs one discovery pass over every platform this build
 * knows (the CPU, and CUDA when built); its result is cached for the process and shared by all
 * threads, so later calls only copy it.
 *
 *   for (int i = 0; i < tsr_device_count(TSR_GPU); i++) {
 *     tsr_device_info info;
 *     tsr_device d = {TSR_GPU, i};
 *     if (tsr_device_info_get(d, &info) == TSR_OK)
 *       printf("gpu %d: %s, %d SMs, %s\n", i, info.name, info.compute_units, info.features);
 *   }
 */
#ifndef TESSERA_DEVICE_H
#define TESSERA_DEVICE_H

#include "tessera/array.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  tsr_device device;
  char name[256];
  uint64_t memory_bytes;
  int compute_units;      /* multiprocessors, or CPU cores */
  int cc_major, cc_minor; /* GPU compute capability; 0 for CPU */
  uint64_t l2_bytes;
  char features[256]; /* e.g. "avx2 fma f16c" or "sm_90" */
  uint64_t reserved[8];
} tsr_device_info;

/* 0 when none; never fails. The CPU count is 1. */
TSR_API int tsr_device_count(tsr_device_type t);
/* TSR_ERR_DEVICE with the index and the count for a device that does not exist;
 * TSR_ERR_INVALID for NULL out. */
TSR_API tsr_status tsr_device_info_get(tsr_device d, tsr_device_info *out);
/* Discovery passes run so far in this process (1 after the first call, forever). */
TSR_API uint64_t tsr_device_discovery_probes(void);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_DEVICE_H */
