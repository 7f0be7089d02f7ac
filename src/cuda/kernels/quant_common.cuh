/* cuda/kernels/quant_common.cuh — what the quantized kernels (quantize, dequantize_any, qmv, qmm)
 * share: one element of a float dtype widened to float32 and stored back with the CPU's rounding
 * (base/element.h), float32 arithmetic rounded to a 16-bit dtype as cpu/quant.c's round_to does,
 * exact powers of two and bit-level NaN/Inf tests (no dependence on math-library flags). Every
 * float step an exact result depends on is written with the _rn intrinsics, so nvcc's default
 * fused multiply-add contraction cannot change a rounding. Included by kernel sources after
 * common.cuh; not a kernel itself. */
#ifndef TSR_CUDA_KERNELS_QUANT_COMMON_CUH
#define TSR_CUDA_KERNELS_QUANT_COMMON_CUH

#include "base/element.h"
#include "base/quant_format.h"

/* Element i of an array of float (or uint8 code) dtype `dtype`, widened exactly to float32. With
   a constant dtype the switch folds away. */
static __device__ __forceinline__ float tsr_q_load(const void *base, int64_t i, int dtype) {
  return tsri_element_load_f32((const unsigned char *)base + i * tsri_element_size(dtype), dtype);
}

/* v stored as element i of a float dtype (float16/bfloat16 rounded to nearest even on the bits,
   NaN kept quiet with its sign: cpu/rows.c's store). */
static __device__ __forceinline__ void tsr_q_store(void *base, int64_t i, int dtype, float v) {
  tsri_element_store_f32((unsigned char *)base + i * tsri_element_size(dtype), dtype, v);
}

/* v rounded to a float dtype and widened again (float32: v itself): one float32 +, * or / of two
   values of that dtype, rounded so, is the operation in that dtype (cpu/quant.c's round_to). */
static __device__ __forceinline__ float tsr_q_round(float v, int dtype) {
  if (dtype == TSRI_ELEMENT_FLOAT16) return tsri_f16_to_f32(tsri_f32_to_f16(v));
  if (dtype == TSRI_ELEMENT_BFLOAT16) return tsri_bf16_to_f32(tsri_f32_to_bf16(v));
  return v;
}

static __device__ __forceinline__ bool tsr_q_isnan(float x) {
  return (__float_as_uint(x) & 0x7fffffffu) > 0x7f800000u;
}

static __device__ __forceinline__ bool tsr_q_isinf(float x) {
  return (__float_as_uint(x) & 0x7fffffffu) == 0x7f800000u;
}

/* 2^e exactly, subnormals included (e >= -149; e >= 128 is +Inf), as ldexpf(1, e) gives. */
static __device__ __forceinline__ float tsr_q_pow2(int e) {
  if (e >= 128) return __uint_as_float(0x7f800000u);
  if (e >= -126) return __uint_as_float((uint32_t)(e + 127) << 23);
  return __uint_as_float(1u << (e + 149));
}

/* The largest finite value of a float dtype (tessera's Inf rule saturates to it). */
static __device__ __forceinline__ float tsr_q_max_finite(int dtype) {
  if (dtype == TSRI_ELEMENT_FLOAT16) return 65504.0f;
  if (dtype == TSRI_ELEMENT_BFLOAT16) return __uint_as_float(0x7f7f0000u);
  return __uint_as_float(0x7f7fffffu);
}

/* +-Inf to +-limit; finite values and NaN unchanged (cpu/quant.c's saturate_inf). */
static __device__ __forceinline__ float tsr_q_saturate_inf(float x, float limit) {
  return x > limit ? limit : x < -limit ? -limit : x;
}

/* The value of an element code: fp4 E2M1 (bits 4) or fp8 E4M3 (bits 8), exact in float32. */
static __device__ __forceinline__ float tsr_q_fp_value(uint32_t code, int bits) {
  return bits == 8 ? tsri_qf_e4m3_decode(code) : tsri_qf_fp4_decode(code);
}

#endif
