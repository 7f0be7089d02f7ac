/* cuda/kernels/dequantize.cuh — dequantize a quantized matrix to float32, one element per thread,
 * bit for bit with the CPU reference (cpu/quant.c) for float32 scales and output. Specialized at
 * compile time by TSR_QF_MODE, TSR_QF_BITS and TSR_QF_GROUP_SIZE (base/quant_format.h's modes);
 * not the fused matmul, and no float16/bfloat16 output yet. */
#include "cuda/kernels/common.cuh" /* first: NVRTC's libc stand-in */
#include "base/quant_format.h"

#if !defined(TSR_QF_MODE) || !defined(TSR_QF_BITS) || !defined(TSR_QF_GROUP_SIZE)
#error "dequantize.cuh is specialized by TSR_QF_MODE, TSR_QF_BITS and TSR_QF_GROUP_SIZE"
#endif
#if TSR_QF_GROUP_SIZE * TSR_QF_BITS % 32 != 0
#error "a group must be whole 32-bit words"
#endif

/* The group's scale: float32 for affine; an e8m0 (mxfp4, mxfp8) or e4m3 (nvfp4) byte otherwise. */
static __device__ float group_scale(const void *scales, int64_t group) {
#if TSR_QF_MODE == TSRI_QF_AFFINE
  return ((const float *)scales)[group];
#elif TSR_QF_MODE == TSRI_QF_NVFP4
  return tsri_qf_e4m3_decode(((const uint8_t *)scales)[group]);
#else
  return tsri_qf_e8m0_decode(((const uint8_t *)scales)[group]);
#endif
}

/* w_q [rows, k * bits / 32] uint32, scales and biases [rows, k / group size] (biases affine only,
   NULL otherwise), out [rows, k] float32; all contiguous. */
TSR_KERNEL_ENTRY(tsr_dequantize)
(const uint32_t *w_q, const void *scales, const float *biases, float *out, int64_t rows,
 int64_t k) {
  const int64_t words_per_row = k * TSR_QF_BITS / 32, groups_per_row = k / TSR_QF_GROUP_SIZE;
  const int64_t total = rows * k, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t index = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; index < total;
       index += stride) {
    int64_t row = index / k, column = index - row * k;
    int64_t group = row * groups_per_row + column / TSR_QF_GROUP_SIZE;
    uint32_t code = tsri_qf_get_code(w_q + row * words_per_row, column, TSR_QF_BITS);
    float scale = group_scale(scales, group);
    /* Rounded products and sums (no fused multiply-add): the CPU rounds each step to float32. */
#if TSR_QF_MODE == TSRI_QF_AFFINE
    out[index] = __fadd_rn(__fmul_rn(scale, (float)code), biases[group]);
#else
    (void)biases;
    float element = TSR_QF_BITS == 8 ? tsri_qf_e4m3_decode(code) : tsri_qf_fp4_decode(code);
    out[index] = __fmul_rn(element, scale);
#endif
  }
}
