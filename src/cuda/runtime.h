/* cuda/runtime.h — what every file of the CUDA backend shares: turning a CUDA runtime error into
 * a tessera status with the message set, and the backend's per-device context (created on first
 * use of the device: its cuBLASLt handle and workspace, counted on the device's ledger as fixed).
 * The backend links the runtime API only, never libcuda. */
#ifndef TSR_CUDA_RUNTIME_H
#define TSR_CUDA_RUNTIME_H

#include <cuda_runtime_api.h>
#include <pthread.h>

#include "base/discovery.h"
#include "tessera/array.h"

/* TSR_OK for cudaSuccess; otherwise TSR_ERR_DEVICE (TSR_ERR_NOMEM for cudaErrorMemoryAllocation)
 * with "<what>: <CUDA's name and string>" as the thread's message. Clears the runtime's last
 * error so later calls do not see it. */
tsr_status tsri_cuda_status(cudaError_t err, const char *what);
/* cudaSetDevice(index) when the calling thread's current device differs. */
tsr_status tsri_cuda_use_device(int index);

/* cuda/matmul.c's per-device state: its plan cache and the workspace's last user. */
typedef struct tsri_cuda_matmul_state tsri_cuda_matmul_state;

/* One GPU's context, made once (any thread) and kept until tsri_cuda_contexts_release. */
typedef struct {
  int index;
  int cc_major, cc_minor;
  void *lt_handle; /* cublasLtHandle_t, NULL until matmul first needs it */
  void *workspace; /* cuBLASLt's workspace on the device */
  uint64_t workspace_bytes;
  /* Guards lt_handle, workspace, workspace_bytes and matmul (cuda/matmul.c sets them up lazily
     and runs every cuBLASLt call of the device under it). */
  pthread_mutex_t matmul_lock;
  tsri_cuda_matmul_state *matmul; /* NULL until matmul first needs it */
} tsri_cuda_context;

/* The context of GPU `index` (a usable device), created on first use. TSR_ERR_DEVICE when the
 * device cannot be set up. */
tsr_status tsri_cuda_context_get(int index, tsri_cuda_context **out);
/* Frees every context's handles and workspaces, refunding the ledger (backend shutdown). */
void tsri_cuda_contexts_release(void);
/* Destroys ctx's cuBLASLt handle and plans and frees its workspace, then refunds the workspace's
 * fixed bytes (cuda/matmul.c; nothing when matmul never ran on the device). The device's streams
 * must be idle. */
void tsri_cuda_matmul_context_release(tsri_cuda_context *ctx);

#endif
