/* cuda/memory.c — the GPUs' system allocator (memory/buffer.h): cudaMalloc and cudaFree, with the
 * bytes the runtime really backs. The ledger, the cap and the cache sit above it (memory/); this
 * file only talks to the runtime. cudaFree is called from user threads and the release thread,
 * never from a CUDA host callback. */
#include "cuda/memory.h"

#include "base/discovery.h"
#include "base/log.h"
#include "cuda/runtime.h"
#include "cuda/stream.h"

/* cudaMalloc hands out 2 MiB pages for large blocks and 512-byte granules below that; counting
   the rounded size keeps the ledger's numbers near what the device loses. */
#define SMALL_GRANULE ((uint64_t)512)
#define LARGE_GRANULE ((uint64_t)2 << 20)
#define LARGE_FROM ((uint64_t)1 << 20)

static uint64_t gpu_round(uint64_t n) {
  if (n == 0) return 0;
  uint64_t unit = n >= LARGE_FROM ? LARGE_GRANULE : SMALL_GRANULE;
  return (n + unit - 1) / unit * unit;
}

static void *gpu_alloc(int device_index, uint64_t bytes) {
  if (bytes == 0 || tsri_cuda_use_device(device_index) != TSR_OK) return NULL;
  void *ptr = NULL;
  cudaError_t err = cudaMalloc(&ptr, (size_t)bytes);
  if (err != cudaSuccess) {
    (void)cudaGetLastError(); /* out of memory is the caller's TSR_ERR_NOMEM, not sticky */
    return NULL;
  }
  return ptr;
}

static void gpu_free(void *ptr, uint64_t bytes) {
  (void)bytes;
  if (!ptr) return;
  /* Under unified addressing the pointer names its device; cudaFree synchronizes the device,
     which is also what makes the refund after it true. */
  cudaError_t err = cudaFree(ptr);
  if (err != cudaSuccess) {
    tsri_log(TSRI_LOG_ERROR, "cudaFree(%p): %s", ptr, cudaGetErrorString(err));
    (void)cudaGetLastError();
  }
}

static uint64_t gpu_total_bytes(int device_index) {
  const tsri_discovery_result *info = tsri_discovery();
  return device_index >= 0 && device_index < info->gpu_count ? info->gpus[device_index].memory_bytes
                                                             : 0;
}

static uint64_t gpu_used_bytes(int device_index) {
  size_t free_bytes = 0, total = 0;
  if (tsri_cuda_use_device(device_index) != TSR_OK ||
      cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return (uint64_t)(total - free_bytes);
}

const tsri_system_allocator tsri_cuda_allocator = {.round = gpu_round,
                                                   .alloc = gpu_alloc,
                                                   .free = gpu_free,
                                                   .total_bytes = gpu_total_bytes,
                                                   .used_bytes = gpu_used_bytes,
                                                   .settle = tsri_cuda_settle_all};
