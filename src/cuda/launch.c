/* cuda/launch.c — kernel launches for ops (cuda/launch.h). */
#include "cuda/launch.h"

#include "base/env.h"
#include "base/status.h"
#include "core/profile.h"
#include "core/stream.h"
#include "cuda/modules.h"
#include "cuda/runtime.h"
#include "cuda/stream.h"

cudaStream_t tsri_cuda_op_stream(const tsri_op *op) {
  return (cudaStream_t)op->stream->iface->native(op->stream);
}

tsr_status tsri_cuda_launch(const tsri_op *op, const char *kernel, const char *options, dim3 grid,
                            dim3 block, size_t shared_bytes, void **args) {
  return tsri_cuda_launch_shared(op, kernel, options, grid, block, shared_bytes, 0, args);
}

tsr_status tsri_cuda_launch_shared(const tsri_op *op, const char *kernel, const char *options,
                                   dim3 grid, dim3 block, size_t shared_bytes, size_t static_bytes,
                                   void **args) {
  cudaKernel_t entry = NULL;
  uint64_t lookup_start = tsri_profile_now();
  tsr_status status = tsri_cuda_kernel_get(kernel, options, op->device.index, &entry);
  tsri_profile_phase_add(TSRI_PROFILE_LOOKUP, lookup_start);
  if (status != TSR_OK) return status;
  cudaError_t err = cudaSuccess;
  /* beyond the default, static and dynamic together, a kernel must opt in (up to 227 KiB) */
  if (shared_bytes > 0 && shared_bytes + static_bytes > 48 * 1024)
    err = cudaKernelSetAttributeForDevice(entry, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          (int)shared_bytes, op->device.index);
  uint64_t launch_start = tsri_profile_now();
  if (err == cudaSuccess)
    err = tsri_cuda_stream_launch(op->stream, entry, grid, block, args, shared_bytes);
  tsri_profile_phase_add(TSRI_PROFILE_LAUNCH, launch_start);
  return tsri_cuda_status(err, kernel);
}

tsr_status tsri_cuda_poison_output(const tsri_op *op) {
  if (!tsri_env()->debug_poison || op->out_is_in0 || op->out.size == 0) return TSR_OK;
  /* Core allocates a fresh output packed row-major from its offset (core/op.h). */
  size_t bytes = (size_t)op->out.size * tsr_dtype_size(op->out.dtype);
  return tsri_cuda_status(
      cudaMemsetAsync(tsri_view_at(&op->out, op->out.offset), 0xff, bytes, tsri_cuda_op_stream(op)),
      "TSR_DEBUG_POISON: filling an output with NaN");
}

unsigned tsri_cuda_blocks_for(int64_t n, unsigned block) {
  /* 132 SMs x 16 resident blocks of 256 covers an H200 twice; grid-stride loops do the rest. */
  const int64_t most = 132 * 16 * 2;
  int64_t blocks = (n + block - 1) / block;
  return (unsigned)(blocks < 1 ? 1 : blocks > most ? most : blocks);
}

tsri_cuda_position tsri_cuda_position_of(const tsri_view *scalar) {
  tsri_cuda_position p = {NULL, 0};
  if (!scalar) return p;
  p.at = tsri_view_at(scalar, scalar->offset);
  p.bytes = (int)tsr_dtype_size(scalar->dtype);
  return p;
}
