/* cuda/backend.c — the CUDA backend: its streams (cuda/stream.c), its system allocator
 * (cuda/memory.c, registered with the memory layer here) and its kernel table, filled once by
 * each kernel area (cuda/kernels.h). On a machine without a GPU nothing here touches the driver:
 * discovery finds no device, so no stream or buffer is ever made. */
#include "cuda/backend.h"

#include <pthread.h>

#include "core/collective.h"
#include "cuda/kernels.h"
#include "cuda/memory.h"
#include "cuda/modules.h"
#include "cuda/release.h"
#include "cuda/runtime.h"
#include "cuda/stream.h"

static void cuda_shutdown(void) {
  tsri_cuda_release_shutdown();
  tsri_cuda_contexts_release();
  tsri_cuda_modules_release();
}

static tsri_cuda_supports_fn supports_table[TSRI_PRIM_COUNT];

static bool cuda_supports(const tsri_op *op) {
  tsri_cuda_supports_fn supports = supports_table[op->primitive];
  return !supports || supports(op);
}

static tsri_backend cuda_backend = {.name = "cuda",
                                    .streams = &tsri_cuda_streams,
                                    .supports = cuda_supports,
                                    .shutdown = cuda_shutdown};
static pthread_once_t cuda_backend_once = PTHREAD_ONCE_INIT;

static void fill_table(void) {
  tsri_kernel_fn *k = cuda_backend.kernels;
  tsri_cuda_supports_fn *s = supports_table;
  tsri_cuda_register_copy(k, s);
  tsri_cuda_register_indexing(k, s);
  tsri_cuda_register_sort(k, s);
  tsri_cuda_register_random(k, s);
  tsri_cuda_register_elementwise(k, s);
  tsri_cuda_register_creation(k, s);
  tsri_cuda_register_matmul(k, s);
  tsri_cuda_register_attention(k, s);
  tsri_cuda_register_reduce(k, s);
  tsri_cuda_register_cumsum(k, s);
  tsri_cuda_register_nn(k, s);
  tsri_cuda_register_quant(k, s);
  tsri_register_collectives(k); /* all_sum, all_gather: the group's transport (NCCL) runs them */
  tsri_memory_register_allocator(TSR_GPU, &tsri_cuda_allocator);
}

const tsri_backend *tsri_cuda_backend(void) {
  pthread_once(&cuda_backend_once, fill_table);
  return &cuda_backend;
}
