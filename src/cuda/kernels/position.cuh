/* cuda/kernels/position.cuh — a dynamic op's position scalar (tsr_rope_dynamic's offset,
 * tsr_slice_update_dynamic's start, tsr_sdpa_dynamic's length) read where the kernel runs: an
 * int32 or int64 element of `bytes` bytes in device memory (cuda/launch.h's tsri_cuda_position
 * passes it), so a recorded graph replays with whatever value the step wrote. Included after
 * common.cuh; not a kernel itself. */
#ifndef TSR_CUDA_KERNELS_POSITION_CUH
#define TSR_CUDA_KERNELS_POSITION_CUH

static __device__ inline int64_t tsr_position_load(const void *at, int bytes) {
  return bytes == 8 ? *(const int64_t *)at : (int64_t) * (const int32_t *)at;
}

#endif
