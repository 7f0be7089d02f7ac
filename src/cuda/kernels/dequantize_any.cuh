/* cuda/kernels/dequantize_any.cuh — TSRI_PRIM_DEQUANTIZE on the GPU for every mode, bit width,
 * group size, scale dtype and output dtype, one output element per thread, bit for bit with
 * cpu/quant.c (docs/quant-rules.md "Decoding"): affine T(T(s * q) + b) in the scales' dtype T;
 * mxfp4/mxfp8/nvfp4 T(value * T(scale)) in the output dtype T; nvfp4 with a global scale g
 * float32(value * float32(dec(scale) * float32(g / 2688))); each then stored as the output dtype.
 * Specialized by TSR_QF_MODE, TSR_QF_BITS, TSR_QF_GROUP_SIZE, TSR_S_DTYPE (the scales' and
 * biases' dtype: tsr_dtype's value; uint8 codes for the fp modes) and TSR_OUT_DTYPE. Operands are
 * packed (the launcher, cuda/quant.c, gathers strided ones first). The float32-only
 * dequantize.cuh stays for the kernel-module tests. */
#include "cuda/kernels/common.cuh" /* first: NVRTC's libc stand-in */
#include "cuda/kernels/quant_common.cuh"

#if !defined(TSR_QF_MODE) || !defined(TSR_QF_BITS) || !defined(TSR_QF_GROUP_SIZE) || \
    !defined(TSR_S_DTYPE) || !defined(TSR_OUT_DTYPE)
#error \
    "dequantize_any.cuh is specialized by TSR_QF_MODE, TSR_QF_BITS, TSR_QF_GROUP_SIZE, TSR_S_DTYPE, TSR_OUT_DTYPE"
#endif
#if TSR_QF_GROUP_SIZE * TSR_QF_BITS % 32 != 0
#error "a group must be whole 32-bit words"
#endif

/* Mirrors cuda/quant.c's dequantize_args. */
struct tsr_dequantize_args {
  int64_t size;        /* output elements: rows * k */
  int64_t k;           /* elements per row */
  int64_t words;       /* uint32 words per packed row: k * bits / 32 */
  int64_t groups;      /* scales per row: k / group size */
  float global_factor; /* nvfp4 with a global scale: float32(g / 2688) (host float32) */
  int has_global_scale;
};

/* One output element from its code and its group's scale (and bias). */
static __device__ __forceinline__ float dequantize_one(const tsr_dequantize_args &a, uint32_t code,
                                                       const void *scales, const void *biases,
                                                       int64_t group) {
#if TSR_QF_MODE == TSRI_QF_AFFINE
  (void)a;
  float s = tsr_q_load(scales, group, TSR_S_DTYPE), b = tsr_q_load(biases, group, TSR_S_DTYPE);
  float product = tsr_q_round(__fmul_rn(s, (float)code), TSR_S_DTYPE); /* T(s * q), T(. + b) */
  return tsr_q_round(__fadd_rn(product, b), TSR_S_DTYPE);
#else
  (void)biases;
  uint32_t scale_code = ((const uint8_t *)scales)[group];
  float element = tsr_q_fp_value(code, TSR_QF_BITS);
#if TSR_QF_MODE == TSRI_QF_NVFP4
  if (a.has_global_scale)
    return __fmul_rn(element, __fmul_rn(tsri_qf_e4m3_decode(scale_code), a.global_factor));
  float scale = tsr_q_round(tsri_qf_e4m3_decode(scale_code), TSR_OUT_DTYPE);
#else
  float scale = tsr_q_round(tsri_qf_e8m0_decode(scale_code), TSR_OUT_DTYPE);
#endif
  return tsr_q_round(__fmul_rn(element, scale), TSR_OUT_DTYPE);
#endif
}

/* w_q [rows, words] uint32, scales and biases [rows, groups] (biases affine only), out [rows, k]:
   all packed. */
TSR_KERNEL_ENTRY(tsr_dequantize_any)
(tsr_dequantize_args a, const uint32_t *w_q, const void *scales, const void *biases, void *out) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t index = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; index < a.size;
       index += stride) {
    int64_t row = index / a.k, column = index - row * a.k;
    uint32_t code = tsri_qf_get_code(w_q + row * a.words, column, TSR_QF_BITS);
    int64_t group = row * a.groups + column / TSR_QF_GROUP_SIZE;
    tsr_q_store(out, index, TSR_OUT_DTYPE, dequantize_one(a, code, scales, biases, group));
  }
}
