/* cuda/discovery.c — GPUs for the discovery pass, through the CUDA runtime API; not device
 * setup: no context is kept, no stream made, and a machine without a driver simply has no GPUs. */
#include "cuda/discovery.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"

static void append_feature(char *features, size_t size, const char *name) {
  size_t used = strlen(features);
  snprintf(features + used, size - used, "%s%s", used ? " " : "", name);
}

/* "sm_90" and what that compute capability brings that kernels choose paths by. */
static void describe_features(char *features, size_t size, int major, int minor) {
  char arch[32];
  snprintf(arch, sizeof arch, "sm_%d%d", major, minor);
  append_feature(features, size, arch);
  int cc = major * 10 + minor;
  if (cc >= 80) append_feature(features, size, "bf16");
  if (cc >= 89) append_feature(features, size, "fp8");
  if (cc >= 90) append_feature(features, size, "tma");
  if (major == 9) append_feature(features, size, "wgmma");
}

static bool probe_one(int index, tsr_device_info *out) {
  struct cudaDeviceProp prop;
  cudaError_t err = cudaGetDeviceProperties(&prop, index);
  if (err != cudaSuccess) {
    tsri_log(TSRI_LOG_WARN,
             "cuda: properties of GPU %d unavailable (%s); it and the GPUs after it are not used",
             index, cudaGetErrorString(err));
    (void)cudaGetLastError();
    return false;
  }
  memset(out, 0, sizeof *out);
  out->device = (tsr_device){TSR_GPU, index};
  snprintf(out->name, sizeof out->name, "%.*s", (int)sizeof prop.name, prop.name);
  out->memory_bytes = (uint64_t)prop.totalGlobalMem;
  out->compute_units = prop.multiProcessorCount;
  out->cc_major = prop.major;
  out->cc_minor = prop.minor;
  out->l2_bytes = prop.l2CacheSize > 0 ? (uint64_t)prop.l2CacheSize : 0;
  describe_features(out->features, sizeof out->features, prop.major, prop.minor);
  return true;
}

int tsri_cuda_probe(tsr_device_info *out, int max) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    /* No driver, no device, or a driver older than the runtime: this process has no GPUs. The
       runtime remembers the error as its last one; clear it so later calls do not see it. */
    tsri_log(TSRI_LOG_INFO, "cuda: no GPUs (%s)", cudaGetErrorString(err));
    (void)cudaGetLastError();
    return 0;
  }
  if (count > max) {
    tsri_log(TSRI_LOG_WARN, "cuda: %d GPUs present; using the first %d", count, max);
    count = max;
  }
  /* gpu:N is CUDA device N, so the list stops at the first GPU that does not answer. */
  int found = 0;
  while (found < count && probe_one(found, &out[found]))
    found++;
  return found;
}
