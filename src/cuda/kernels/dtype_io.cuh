/* cuda/kernels/dtype_io.cuh — loading and storing one element of a compile-time dtype as float32
 * or int64, rounding exactly as the CPU's row loaders do (cpu/rows.c): floats widen exactly,
 * integers convert to nearest, float16/bfloat16 narrow on the bits (ties to even, NaN kept
 * quiet), integer stores wrap and bool stores v != 0. Included by the reduction and nn kernels;
 * not a kernel itself.
 *
 * A local copy of base/half.h's four conversions, until base/element.h (the shared CPU/GPU
 * element rules) is in the tree: these functions are then thin wrappers over it. */
#ifndef TSR_CUDA_KERNELS_DTYPE_IO_CUH
#define TSR_CUDA_KERNELS_DTYPE_IO_CUH

#ifndef __CUDACC_RTC__ /* nvcc: the real header; NVRTC: common.cuh's stand-in */
#include <stdint.h>
#endif

/* tsr_dtype's values (tessera/base.h; the host launchers check them). */
#define TSR_DT_BOOL 0
#define TSR_DT_UINT8 1
#define TSR_DT_UINT32 2
#define TSR_DT_INT8 3
#define TSR_DT_INT32 4
#define TSR_DT_INT64 5
#define TSR_DT_FLOAT16 6
#define TSR_DT_BFLOAT16 7
#define TSR_DT_FLOAT32 8

#define TSR_DT_IS_FLOAT(d) \
  ((d) == TSR_DT_FLOAT16 || (d) == TSR_DT_BFLOAT16 || (d) == TSR_DT_FLOAT32)

/* ---- float16 / bfloat16, bit for bit base/half.h ------------------------------------------ */

static __device__ inline uint16_t tsr_io_f32_to_f16(float f) {
  uint32_t x = __float_as_uint(f);
  uint32_t sign = (x >> 16) & 0x8000u, magnitude = x & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  if (magnitude >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to inf */
  if (magnitude >= 0x38800000u) {                                  /* a normal float16 */
    uint32_t lsb = (magnitude >> 13) & 1u;
    return (uint16_t)(sign | ((magnitude - 0x38000000u + 0xfffu + lsb) >> 13));
  }
  uint32_t exponent = magnitude >> 23; /* a float16 subnormal (unit 2^-24) or zero */
  if (exponent < 102) return (uint16_t)sign;
  uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u, shift = 126u - exponent;
  uint32_t q = significand >> shift, rem = significand & ((1u << shift) - 1u);
  uint32_t half = 1u << (shift - 1u);
  return (uint16_t)(sign | (q + (uint32_t)(rem > half || (rem == half && (q & 1u)))));
}

static __device__ inline float tsr_io_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0) {
    float magnitude = __fmul_rn((float)mantissa, 0x1p-24f); /* exact */
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return __uint_as_float(sign | 0x7f800000u | (mantissa << 13));
  return __uint_as_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

static __device__ inline uint16_t tsr_io_f32_to_bf16(float f) {
  uint32_t x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

static __device__ inline float tsr_io_bf16_to_f32(uint16_t b) {
  return __uint_as_float((uint32_t)b << 16);
}

/* ---- elements ------------------------------------------------------------------------------ */

/* Element `index` of an array of dtype D as float32 (tsri_cpu_load_f32): bool as its byte. */
template <int D>
static __device__ inline float tsr_load_f32(const void *base, int64_t index) {
  if constexpr (D == TSR_DT_FLOAT32)
    return ((const float *)base)[index];
  else if constexpr (D == TSR_DT_FLOAT16)
    return tsr_io_f16_to_f32(((const uint16_t *)base)[index]);
  else if constexpr (D == TSR_DT_BFLOAT16)
    return tsr_io_bf16_to_f32(((const uint16_t *)base)[index]);
  else if constexpr (D == TSR_DT_BOOL || D == TSR_DT_UINT8)
    return (float)((const uint8_t *)base)[index];
  else if constexpr (D == TSR_DT_UINT32)
    return (float)((const uint32_t *)base)[index];
  else if constexpr (D == TSR_DT_INT8)
    return (float)((const int8_t *)base)[index];
  else if constexpr (D == TSR_DT_INT32)
    return (float)((const int32_t *)base)[index];
  else
    return (float)((const int64_t *)base)[index]; /* int64: to nearest */
}

/* Element `index` of an integer or bool array of dtype D as int64 (tsri_cpu_load_i64): bool as
 * its byte. Float dtypes are not loaded this way here. */
template <int D>
static __device__ inline int64_t tsr_load_i64(const void *base, int64_t index) {
  static_assert(!TSR_DT_IS_FLOAT(D), "tsr_load_i64 reads integer and bool dtypes");
  if constexpr (D == TSR_DT_BOOL || D == TSR_DT_UINT8)
    return (int64_t)((const uint8_t *)base)[index];
  else if constexpr (D == TSR_DT_UINT32)
    return (int64_t)((const uint32_t *)base)[index];
  else if constexpr (D == TSR_DT_INT8)
    return (int64_t)((const int8_t *)base)[index];
  else if constexpr (D == TSR_DT_INT32)
    return (int64_t)((const int32_t *)base)[index];
  else
    return ((const int64_t *)base)[index];
}

/* A float32 stored as the float dtype D (tsri_cpu_store_f32). */
template <int D>
static __device__ inline void tsr_store_f32(void *base, int64_t index, float value) {
  static_assert(TSR_DT_IS_FLOAT(D), "tsr_store_f32 writes float dtypes");
  if constexpr (D == TSR_DT_FLOAT32)
    ((float *)base)[index] = value;
  else if constexpr (D == TSR_DT_FLOAT16)
    ((uint16_t *)base)[index] = tsr_io_f32_to_f16(value);
  else
    ((uint16_t *)base)[index] = tsr_io_f32_to_bf16(value);
}

/* An int64 stored as the integer or bool dtype D (tsri_cpu_store_i64): wraps; bool is != 0. */
template <int D>
static __device__ inline void tsr_store_i64(void *base, int64_t index, int64_t value) {
  static_assert(!TSR_DT_IS_FLOAT(D), "tsr_store_i64 writes integer and bool dtypes");
  if constexpr (D == TSR_DT_BOOL)
    ((uint8_t *)base)[index] = (uint8_t)(value != 0);
  else if constexpr (D == TSR_DT_UINT8)
    ((uint8_t *)base)[index] = (uint8_t)value;
  else if constexpr (D == TSR_DT_UINT32)
    ((uint32_t *)base)[index] = (uint32_t)value;
  else if constexpr (D == TSR_DT_INT8)
    ((int8_t *)base)[index] = (int8_t)(uint8_t)value;
  else if constexpr (D == TSR_DT_INT32)
    ((int32_t *)base)[index] = (int32_t)(uint32_t)value;
  else
    ((int64_t *)base)[index] = value;
}

#endif
