/* cuda/launch.h — launching a kernel for an op: the op's cudaStream_t, the kernel module for a
 * specialization (cuda/modules.h: AOT or JIT by TSR_KERNELS), and the launch itself, with errors
 * as statuses. Every CUDA kernel area (cuda/<area>.c) goes through it. */
#ifndef TSR_CUDA_LAUNCH_H
#define TSR_CUDA_LAUNCH_H

#include <cuda_runtime_api.h>

#include "core/op.h"

/* dim3 {x, 1, 1}: C has no dim3 constructor. */
static inline dim3 tsri_dim3(unsigned x) {
  dim3 d = {x, 1, 1};
  return d;
}

/* The stream the op runs on. */
cudaStream_t tsri_cuda_op_stream(const tsri_op *op);
/* Launches entry tsr_<kernel> of the specialization `options` ("-DNAME=VALUE ...") on the op's
 * device and stream with `args` (cudaLaunchKernel's array of pointers to the arguments); more
 * than 48 KiB of dynamic shared memory is opted into.
 * TSR_ERR_DEVICE (or the module loader's status) with the message set on failure. */
tsr_status tsri_cuda_launch(const tsri_op *op, const char *kernel, const char *options, dim3 grid,
                            dim3 block, size_t shared_bytes, void **args);
/* tsri_cuda_launch for a kernel that also declares `static_bytes` of static shared memory: the
 * opt-in is made when both together pass the default 48 KiB (the dynamic part alone may not). */
tsr_status tsri_cuda_launch_shared(const tsri_op *op, const char *kernel, const char *options,
                                   dim3 grid, dim3 block, size_t shared_bytes, size_t static_bytes,
                                   void **args);
/* TSR_DEBUG_POISON=1 (base/env.h): fills the op's output with 0xFF bytes on its stream, a NaN in
 * every float dtype, so that an element its kernel leaves unwritten reads back as NaN and fails
 * the tests that compare it (tests/cuda/test_qmm_sweep.c); unset or 0: does nothing. An output
 * that is input 0's donated buffer is left alone (it holds values the op reads). Asynchronous on
 * the op's stream; TSR_ERR_DEVICE with the message set when the memset cannot be queued. Called
 * by the quantized ops (cuda/quant.c, cuda/qmm.c) before their launches. */
tsr_status tsri_cuda_poison_output(const tsri_op *op);
/* A dynamic op's position scalar (one int32 or int64 element, ops/indexing.h) as two kernel
 * arguments, read on the device by cuda/kernels/position.cuh: its element's address and byte size;
 * {NULL, 0} for a NULL view (the op is static). */
typedef struct {
  const void *at;
  int bytes;
} tsri_cuda_position;
tsri_cuda_position tsri_cuda_position_of(const tsri_view *scalar);
/* Blocks of `block` threads for a grid-stride loop over n items (at least 1, at most enough to
 * fill the GPU a few times over). */
unsigned tsri_cuda_blocks_for(int64_t n, unsigned block);

#endif
