/* base/half.h — exact float32 <-> float16/bfloat16 conversions, inline for kernels.
 *
 * Narrowing rounds to nearest, ties to even, on the bits (no dependence on the FPU's rounding
 * mode); overflow gives infinity; NaN stays a quiet NaN with its sign. Widening is exact.
 * The public tsr_f32_to_f16 & co. (base/half.c) call these. Plain C that nvcc and NVRTC compile
 * too (every function is TSRI_HALF_HD static inline, no libc beyond memcpy), so the CUDA kernels
 * round exactly as the CPU does (CUDA's own __float2half_rn & co. treat NaN payloads their own
 * way).
 */
#ifndef TSR_BASE_HALF_H
#define TSR_BASE_HALF_H

/* NVRTC has no libc headers: a GPU kernel source includes its own stand-in for them before this
 * file (base depends on no backend). */
#ifndef __CUDACC_RTC__
#include <stdint.h>
#include <string.h>
#endif

#ifdef __CUDACC__
#define TSRI_HALF_HD __host__ __device__
#else
#define TSRI_HALF_HD
#endif

static inline TSRI_HALF_HD uint32_t tsri_f32_bits(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  return x;
}

static inline TSRI_HALF_HD float tsri_f32_from_bits(uint32_t x) {
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

/* Rounds m / 2^shift to the nearest integer, ties to even (shift >= 1). */
static inline TSRI_HALF_HD uint32_t tsri_shift_round_even(uint32_t m, uint32_t shift) {
  uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  return q + (uint32_t)(rem > half || (rem == half && (q & 1u)));
}

static inline TSRI_HALF_HD uint16_t tsri_f32_to_f16(float f) {
  uint32_t x = tsri_f32_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u, magnitude = x & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  if (magnitude >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to inf */
  if (magnitude >= 0x38800000u) {                                  /* a normal float16 */
    /* Rebias the exponent (127 -> 15) and round away the 13 low mantissa bits; a carry out of
       the mantissa correctly bumps the exponent. */
    uint32_t lsb = (magnitude >> 13) & 1u;
    return (uint16_t)(sign | ((magnitude - 0x38000000u + 0xfffu + lsb) >> 13));
  }
  /* A float16 subnormal (unit 2^-24) or zero: the significand m * 2^(e - 150) over 2^-24. */
  uint32_t exponent = magnitude >> 23;
  if (exponent < 102) return (uint16_t)sign; /* below 2^-25: rounds to zero */
  uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
  return (uint16_t)(sign | tsri_shift_round_even(significand, 126u - exponent));
}

static inline TSRI_HALF_HD float tsri_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0) {
    float magnitude = (float)mantissa * 0x1p-24f; /* exact: at most 10 significant bits */
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return tsri_f32_from_bits(sign | 0x7f800000u | (mantissa << 13));
  return tsri_f32_from_bits(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

static inline TSRI_HALF_HD uint16_t tsri_f32_to_bf16(float f) {
  uint32_t x = tsri_f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

static inline TSRI_HALF_HD float tsri_bf16_to_f32(uint16_t b) {
  return tsri_f32_from_bits((uint32_t)b << 16);
}

#endif
