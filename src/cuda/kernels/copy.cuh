/* cuda/kernels/copy.cuh — any layout of an array into a packed one, elements moved as
 * TSR_COPY_BYTES-byte words (1, 2, 4 or 8: the dtype's size). Operand 0 is the input, 1 the
 * output. */
#include "cuda/kernels/common.cuh" /* first: NVRTC's libc stand-in */
#include "cuda/kernels/strided.cuh"

#if TSR_COPY_BYTES == 1
typedef uint8_t tsr_word;
#elif TSR_COPY_BYTES == 2
typedef uint16_t tsr_word;
#elif TSR_COPY_BYTES == 4
typedef uint32_t tsr_word;
#elif TSR_COPY_BYTES == 8
typedef uint64_t tsr_word;
#else
#error "copy.cuh is specialized by TSR_COPY_BYTES (1, 2, 4 or 8)"
#endif

TSR_KERNEL_ENTRY(tsr_copy)(tsr_strided layout, const tsr_word *in, tsr_word *out) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < layout.n; i += stride) {
    int64_t offsets[TSR_STRIDED_MAX_OPERANDS];
    tsr_strided_offsets(layout, i, offsets);
    out[offsets[1]] = in[offsets[0]];
  }
}
