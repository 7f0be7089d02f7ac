/* cuda/runtime.c — CUDA errors as statuses, the current device, and the per-device contexts
 * (cuda/runtime.h). */
#include "cuda/runtime.h"

#include <pthread.h>
#include <stdlib.h>

#include "base/status.h"

tsr_status tsri_cuda_status(cudaError_t err, const char *what) {
  if (err == cudaSuccess) return TSR_OK;
  (void)cudaGetLastError();
  tsr_status status = err == cudaErrorMemoryAllocation ? TSR_ERR_NOMEM : TSR_ERR_DEVICE;
  return tsri_error(status, "%s: %s (%s)", what, cudaGetErrorName(err), cudaGetErrorString(err));
}

tsr_status tsri_cuda_use_device(int index) {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current == index) return TSR_OK;
  return tsri_cuda_status(cudaSetDevice(index), "cudaSetDevice");
}

static pthread_mutex_t contexts_lock = PTHREAD_MUTEX_INITIALIZER;
static tsri_cuda_context *contexts[TSRI_MAX_GPUS];

tsr_status tsri_cuda_context_get(int index, tsri_cuda_context **out) {
  if (index < 0 || index >= TSRI_MAX_GPUS)
    return tsri_error(TSR_ERR_DEVICE, "gpu:%d: no such device", index);
  pthread_mutex_lock(&contexts_lock);
  tsr_status status = TSR_OK;
  if (!contexts[index]) {
    const tsri_discovery_result *info = tsri_discovery();
    tsri_cuda_context *c = calloc(1, sizeof *c);
    if (!c) status = tsri_error(TSR_ERR_NOMEM, "gpu:%d: out of host memory", index);
    if (c && index >= info->gpu_count) {
      free(c);
      c = NULL;
      status = tsri_error(TSR_ERR_DEVICE, "gpu:%d: no such device", index);
    }
    if (c) {
      c->index = index;
      c->cc_major = info->gpus[index].cc_major;
      c->cc_minor = info->gpus[index].cc_minor;
      pthread_mutex_init(&c->matmul_lock, NULL);
      contexts[index] = c;
    }
  }
  *out = contexts[index];
  pthread_mutex_unlock(&contexts_lock);
  return status;
}

void tsri_cuda_contexts_release(void) {
  pthread_mutex_lock(&contexts_lock);
  for (int i = 0; i < TSRI_MAX_GPUS; i++) {
    if (!contexts[i]) continue;
    tsri_cuda_matmul_context_release(contexts[i]);
    pthread_mutex_destroy(&contexts[i]->matmul_lock);
    free(contexts[i]);
    contexts[i] = NULL;
  }
  pthread_mutex_unlock(&contexts_lock);
}
