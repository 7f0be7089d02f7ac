/* base/element.h — the conversion rules of one element between dtypes, shared by the CPU kernels
 * (cpu/rows.c, cpu/convert.c) and the CUDA kernels (cuda/kernels/elementwise.cuh,
 * creation.cuh), so that both backends round, truncate, saturate and wrap the same way by
 * construction. Not the row loops (cpu/rows.h, cpu/convert.h) and not the ops.
 *
 * The rules (tessera/ops.h, tsr_astype; cpu/convert.h says the same):
 *  - to float32/float16/bfloat16: correctly rounded, ties to even, from the exact source value
 *    (an int64 or a float64 is rounded once, never through float32 first); overflow gives
 *    infinity, NaN stays NaN;
 *  - float to integer: truncation toward zero, NaN gives 0, values outside the target's range
 *    saturate;
 *  - integer to integer: two's complement wrap;
 *  - to bool: != 0 (NaN is true, -0.0 false).
 * A row loader widens an integer to float32 with the plain conversion (round to nearest), which
 * is also correctly rounded; float16/bfloat16 go through base/half.h.
 *
 * Plain C that cc, nvcc and NVRTC compile: every function is TSRI_ELEMENT_HD static inline, no
 * libc beyond memcpy and the math classification functions, no floating-point expression that
 * a compiler could contract into a fused multiply-add (nvcc fuses by default). A dtype is an int
 * here, with the values of tsr_dtype (tessera/base.h; the C build checks them below): kernels
 * see no public header. With a constant dtype every switch folds away. */
#ifndef TSR_BASE_ELEMENT_H
#define TSR_BASE_ELEMENT_H

/* NVRTC has no libc headers: a GPU kernel source includes its own stand-in for them (and
 * base/half.h) before this file (base depends on no backend). */
#ifndef __CUDACC_RTC__
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#endif
#ifndef __CUDACC__
#include "tessera/base.h" /* only for the check of the dtype values below */
#endif

#include "base/half.h"

#ifdef __CUDACC__
#define TSRI_ELEMENT_HD __host__ __device__
#else
#define TSRI_ELEMENT_HD
#endif

/* tsr_dtype's values. */
#define TSRI_ELEMENT_BOOL 0
#define TSRI_ELEMENT_UINT8 1
#define TSRI_ELEMENT_UINT32 2
#define TSRI_ELEMENT_INT8 3
#define TSRI_ELEMENT_INT32 4
#define TSRI_ELEMENT_INT64 5
#define TSRI_ELEMENT_FLOAT16 6
#define TSRI_ELEMENT_BFLOAT16 7
#define TSRI_ELEMENT_FLOAT32 8

#ifndef __CUDACC__
_Static_assert(TSRI_ELEMENT_BOOL == TSR_BOOL && TSRI_ELEMENT_UINT8 == TSR_UINT8 &&
                   TSRI_ELEMENT_UINT32 == TSR_UINT32 && TSRI_ELEMENT_INT8 == TSR_INT8 &&
                   TSRI_ELEMENT_INT32 == TSR_INT32 && TSRI_ELEMENT_INT64 == TSR_INT64 &&
                   TSRI_ELEMENT_FLOAT16 == TSR_FLOAT16 && TSRI_ELEMENT_BFLOAT16 == TSR_BFLOAT16 &&
                   TSRI_ELEMENT_FLOAT32 == TSR_FLOAT32,
               "base/element.h's dtype values are tsr_dtype's");
#endif

/* The limits <stdint.h> and <float.h> would give (NVRTC has neither). */
#define TSRI_ELEMENT_INT64_MAX ((int64_t)0x7fffffffffffffffLL)
#define TSRI_ELEMENT_INT64_MIN (-TSRI_ELEMENT_INT64_MAX - 1)
#define TSRI_ELEMENT_FLT_MAX 0x1.fffffep127f

/* ---- dtypes ----------------------------------------------------------------------------- */

static inline TSRI_ELEMENT_HD int tsri_element_size(int dtype) {
  switch (dtype) {
    case TSRI_ELEMENT_UINT32:
    case TSRI_ELEMENT_INT32:
    case TSRI_ELEMENT_FLOAT32:
      return 4;
    case TSRI_ELEMENT_INT64:
      return 8;
    case TSRI_ELEMENT_FLOAT16:
    case TSRI_ELEMENT_BFLOAT16:
      return 2;
    default:
      return 1;
  }
}

static inline TSRI_ELEMENT_HD bool tsri_element_is_float(int dtype) {
  return dtype == TSRI_ELEMENT_FLOAT16 || dtype == TSRI_ELEMENT_BFLOAT16 ||
         dtype == TSRI_ELEMENT_FLOAT32;
}

/* Significant bits of a float dtype (the implicit one included). */
static inline TSRI_ELEMENT_HD int tsri_element_precision(int dtype) {
  return dtype == TSRI_ELEMENT_FLOAT16 ? 11 : dtype == TSRI_ELEMENT_BFLOAT16 ? 8 : 24;
}

/* ---- rounding and truncation ------------------------------------------------------------ */

/* A float32 holding `value` rounded to nearest even at the float dtype's precision: the
 * magnitude is rounded on its bits, so an int64 above 2^24 is rounded once, not to float32 and
 * then again; float16 overflows to infinity past 65504. */
static inline TSRI_ELEMENT_HD float tsri_round_int_to_dtype(int64_t value, int dtype) {
  uint64_t magnitude = value < 0 ? 0u - (uint64_t)value : (uint64_t)value;
  int bits = tsri_element_precision(dtype), width = bits;
  for (uint64_t m = magnitude >> bits; m; m >>= 1)
    width++;
  float rounded;
  if (width == bits) {
    rounded = (float)magnitude; /* exact: at most 24 significant bits */
  } else {
    int shift = width - bits;
    uint64_t q = magnitude >> shift, rem = magnitude & (((uint64_t)1 << shift) - 1);
    uint64_t half = (uint64_t)1 << (shift - 1);
    q += (uint64_t)(rem > half || (rem == half && (q & 1u)));
    /* exact: q <= 2^bits, times a power of two (shift <= 56) */
    rounded = (float)q * tsri_f32_from_bits((uint32_t)(127 + shift) << 23);
  }
  if (dtype == TSRI_ELEMENT_FLOAT16) rounded = tsri_f16_to_f32(tsri_f32_to_f16(rounded));
  return value < 0 ? -rounded : rounded;
}

/* The integer power, square and multiply modulo 2^64 (storing to a narrower dtype then wraps to
 * its width); a negative exponent gives the real result truncated toward zero (1 for base 1, +-1
 * for base -1, else 0). */
static inline TSRI_ELEMENT_HD int64_t tsri_element_i64_power(int64_t base, int64_t exponent) {
  if (exponent < 0) return base == 1 ? 1 : base == -1 ? ((exponent & 1) ? -1 : 1) : 0;
  uint64_t result = 1, factor = (uint64_t)base;
  for (uint64_t e = (uint64_t)exponent; e; e >>= 1) {
    if (e & 1u) result *= factor;
    factor *= factor;
  }
  return (int64_t)result;
}

/* float64 -> float32 rounding to odd (an inexact result gets an odd last bit). Rounding that to
 * float16/bfloat16 (at least 2 fewer bits, also in the subnormal range) then gives the correctly
 * rounded result of the float64: the classic cure for double rounding (Boldo & Melquiond). */
static inline TSRI_ELEMENT_HD float tsri_f64_to_f32_round_odd(double value) {
  if (isnan(value)) return (float)value;
  double magnitude = fabs(value);
  if (magnitude > (double)TSRI_ELEMENT_FLT_MAX) { /* finite stays finite and odd; inf stays */
    float limit = isinf(value) ? tsri_f32_from_bits(0x7f800000u) : TSRI_ELEMENT_FLT_MAX;
    return value < 0 ? -limit : limit;
  }
  float f = (float)value;
  uint32_t bits = tsri_f32_bits(f);
  if ((double)f != value && !(bits & 1u)) bits += (double)fabsf(f) < magnitude ? 1u : (uint32_t)-1;
  return tsri_f32_from_bits(bits);
}

/* float64 -> float32 to nearest even, overflow to infinity without a float-cast overflow. */
static inline TSRI_ELEMENT_HD float tsri_f64_to_f32_nearest(double value) {
  double magnitude = fabs(value);
  if (magnitude > (double)TSRI_ELEMENT_FLT_MAX && !isnan(value)) {
    /* FLT_MAX + half its ulp (2^103) and above rounds to infinity. */
    float limit =
        magnitude >= 0x1.ffffffp127 ? tsri_f32_from_bits(0x7f800000u) : TSRI_ELEMENT_FLT_MAX;
    return value < 0 ? -limit : limit;
  }
  return (float)value;
}

/* Truncation toward zero, NaN to 0, saturating to int64's range. */
static inline TSRI_ELEMENT_HD int64_t tsri_f64_to_i64_saturating(double value) {
  if (isnan(value)) return 0;
  if (value >= 0x1p63) return TSRI_ELEMENT_INT64_MAX;
  if (value <= -0x1p63) return TSRI_ELEMENT_INT64_MIN;
  return (int64_t)value;
}

/* `value` saturated to an integer dtype's range (int64 and bool: unchanged). */
static inline TSRI_ELEMENT_HD int64_t tsri_clamp_to_dtype(int64_t value, int dtype) {
  int64_t low = TSRI_ELEMENT_INT64_MIN, high = TSRI_ELEMENT_INT64_MAX;
  switch (dtype) {
    case TSRI_ELEMENT_UINT8:
      low = 0, high = 255;
      break;
    case TSRI_ELEMENT_UINT32:
      low = 0, high = 4294967295LL;
      break;
    case TSRI_ELEMENT_INT8:
      low = -128, high = 127;
      break;
    case TSRI_ELEMENT_INT32:
      low = -2147483647LL - 1, high = 2147483647LL;
      break;
    default:
      break;
  }
  return value < low ? low : value > high ? high : value;
}

/* A float value (exact in float32) as an integer dtype: truncated, saturated (astype). */
static inline TSRI_ELEMENT_HD int64_t tsri_float_to_int_dtype(float value, int dtype) {
  return tsri_clamp_to_dtype(tsri_f64_to_i64_saturating((double)value), dtype);
}

/* An integer or bool value (bool_source: any nonzero is 1) as the float dtype `dtype`, held in
 * float32 (astype, and a binary op's integer operand in its float computation type). */
static inline TSRI_ELEMENT_HD float tsri_int_to_float_dtype(int64_t value, bool bool_source,
                                                            int dtype) {
  return tsri_round_int_to_dtype(bool_source ? (int64_t)(value != 0) : value, dtype);
}

/* ---- one element in memory -------------------------------------------------------------- */

/* The element at `p` as float32: floats widened exactly, integers converted to nearest, bool
 * as its byte (0 or 1). */
static inline TSRI_ELEMENT_HD float tsri_element_load_f32(const void *p, int dtype) {
  switch (dtype) {
    case TSRI_ELEMENT_BOOL:
    case TSRI_ELEMENT_UINT8:
      return (float)*(const uint8_t *)p;
    case TSRI_ELEMENT_UINT32:
      return (float)*(const uint32_t *)p;
    case TSRI_ELEMENT_INT8:
      return (float)*(const int8_t *)p;
    case TSRI_ELEMENT_INT32:
      return (float)*(const int32_t *)p;
    case TSRI_ELEMENT_INT64:
      return (float)*(const int64_t *)p;
    case TSRI_ELEMENT_FLOAT16:
      return tsri_f16_to_f32(*(const uint16_t *)p);
    case TSRI_ELEMENT_BFLOAT16:
      return tsri_bf16_to_f32(*(const uint16_t *)p);
    default:
      return *(const float *)p;
  }
}

/* The element at `p` as int64: integers exact, bool as its byte, floats truncated toward zero
 * (NaN 0, saturating to int64's range). */
static inline TSRI_ELEMENT_HD int64_t tsri_element_load_i64(const void *p, int dtype) {
  switch (dtype) {
    case TSRI_ELEMENT_BOOL:
    case TSRI_ELEMENT_UINT8:
      return (int64_t) * (const uint8_t *)p;
    case TSRI_ELEMENT_UINT32:
      return (int64_t) * (const uint32_t *)p;
    case TSRI_ELEMENT_INT8:
      return (int64_t) * (const int8_t *)p;
    case TSRI_ELEMENT_INT32:
      return (int64_t) * (const int32_t *)p;
    case TSRI_ELEMENT_INT64:
      return *(const int64_t *)p;
    default:
      return tsri_f64_to_i64_saturating((double)tsri_element_load_f32(p, dtype));
  }
}

/* A float32 result stored as a float dtype (float16/bfloat16 round to nearest even) or as bool
 * (!= 0); integer dtypes never receive float results, and are left untouched. */
static inline TSRI_ELEMENT_HD void tsri_element_store_f32(void *p, int dtype, float value) {
  switch (dtype) {
    case TSRI_ELEMENT_FLOAT16:
      *(uint16_t *)p = tsri_f32_to_f16(value);
      break;
    case TSRI_ELEMENT_BFLOAT16:
      *(uint16_t *)p = tsri_f32_to_bf16(value);
      break;
    case TSRI_ELEMENT_FLOAT32:
      *(float *)p = value;
      break;
    case TSRI_ELEMENT_BOOL:
      *(uint8_t *)p = (uint8_t)(value != 0);
      break;
    default:
      break;
  }
}

/* An int64 result stored as an integer dtype (two's complement wrap) or as bool (!= 0); float
 * dtypes never receive integer results, and are left untouched. */
static inline TSRI_ELEMENT_HD void tsri_element_store_i64(void *p, int dtype, int64_t value) {
  switch (dtype) {
    case TSRI_ELEMENT_BOOL:
      *(uint8_t *)p = (uint8_t)(value != 0);
      break;
    case TSRI_ELEMENT_UINT8:
      *(uint8_t *)p = (uint8_t)value;
      break;
    case TSRI_ELEMENT_UINT32:
      *(uint32_t *)p = (uint32_t)value;
      break;
    case TSRI_ELEMENT_INT8:
      *(int8_t *)p = (int8_t)(uint8_t)value;
      break;
    case TSRI_ELEMENT_INT32:
      *(int32_t *)p = (int32_t)(uint32_t)value;
      break;
    case TSRI_ELEMENT_INT64:
      *(int64_t *)p = value;
      break;
    default:
      break;
  }
}

/* One float64 stored as `dtype` (full, arange): float32 to nearest, float16/bfloat16 through
 * round-to-odd float32 (so rounded once), integers truncated and saturated, bool != 0. */
static inline TSRI_ELEMENT_HD void tsri_element_store_f64(void *p, int dtype, double value) {
  if (dtype == TSRI_ELEMENT_FLOAT32)
    tsri_element_store_f32(p, dtype, tsri_f64_to_f32_nearest(value));
  else if (tsri_element_is_float(dtype))
    tsri_element_store_f32(p, dtype, tsri_f64_to_f32_round_odd(value));
  else if (dtype == TSRI_ELEMENT_BOOL)
    *(uint8_t *)p = (uint8_t)(value != 0.0);
  else
    tsri_element_store_i64(p, dtype, tsri_clamp_to_dtype(tsri_f64_to_i64_saturating(value), dtype));
}

/* The element at `p` as the float dtype `compute` (its precision, held in float32): a binary
 * op's operand in its promoted type. A float operand is never wider than its promoted type, so
 * it only widens; an integer is rounded once at compute's precision. */
static inline TSRI_ELEMENT_HD float tsri_element_load_as_float(const void *p, int dtype,
                                                               int compute) {
  if (tsri_element_is_float(dtype)) return tsri_element_load_f32(p, dtype);
  return tsri_int_to_float_dtype(tsri_element_load_i64(p, dtype), dtype == TSRI_ELEMENT_BOOL,
                                 compute);
}

/* The element at `src` converted to dst_dtype at `dst` (astype). */
static inline TSRI_ELEMENT_HD void tsri_element_convert(const void *src, int src_dtype, void *dst,
                                                        int dst_dtype) {
  if (tsri_element_is_float(src_dtype)) {
    float x = tsri_element_load_f32(src, src_dtype);
    if (tsri_element_is_float(dst_dtype) || dst_dtype == TSRI_ELEMENT_BOOL)
      tsri_element_store_f32(dst, dst_dtype, x);
    else
      tsri_element_store_i64(dst, dst_dtype, tsri_float_to_int_dtype(x, dst_dtype));
    return;
  }
  int64_t x = tsri_element_load_i64(src, src_dtype);
  if (src_dtype == TSRI_ELEMENT_BOOL) x = x != 0; /* a bool byte other than 0/1 still means 1 */
  if (tsri_element_is_float(dst_dtype))
    tsri_element_store_f32(dst, dst_dtype, tsri_round_int_to_dtype(x, dst_dtype));
  else
    tsri_element_store_i64(dst, dst_dtype, x); /* wraps; bool is != 0 */
}

#endif
