/* tests/ops/ref_convert.h — the ops tests' own conversion rules, written from tessera/ops.h and
 * sharing no code with the library: rounding to float32/float16/bfloat16 by a binary search over
 * bit patterns (values held exactly in long double, which holds every int64 and every double),
 * saturating truncation to integers, two's complement wrap, bool as != 0. Pattern values come
 * from the public widening conversions (exact, tested exhaustively in tests/base). Not a
 * conversion library: slow, meant for a few thousand elements per test. */
#ifndef TSR_TESTS_OPS_REF_CONVERT_H
#define TSR_TESTS_OPS_REF_CONVERT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <tessera/tessera.h>

static inline bool ref_is_float(tsr_dtype t) {
  return t == TSR_FLOAT16 || t == TSR_BFLOAT16 || t == TSR_FLOAT32;
}

/* The infinity pattern of a float dtype: it stands for 2^(emax+1), the next value after the
   largest finite one, so that rounding to it is IEEE overflow. */
static inline uint32_t ref_inf_pattern(tsr_dtype dtype) {
  return dtype == TSR_FLOAT16 ? 0x7c00u : dtype == TSR_BFLOAT16 ? 0x7f80u : 0x7f800000u;
}

/* The value of a float pattern (any sign; NaN patterns give NaN, infinity gives infinity). */
static inline long double ref_pattern_value(tsr_dtype dtype, uint32_t pattern) {
  if (dtype == TSR_FLOAT16) return (long double)tsr_f16_to_f32((uint16_t)pattern);
  if (dtype == TSR_BFLOAT16) return (long double)tsr_bf16_to_f32((uint16_t)pattern);
  float f;
  memcpy(&f, &pattern, sizeof f);
  return (long double)f;
}

/* A positive pattern's value for the search, the infinity pattern counting as 2^(emax+1). */
static inline long double ref_search_value(tsr_dtype dtype, uint32_t pattern) {
  if (pattern == ref_inf_pattern(dtype)) return ldexpl(1.0L, dtype == TSR_FLOAT16 ? 16 : 128);
  return ref_pattern_value(dtype, pattern);
}

/* The bit pattern of `value` (not NaN) rounded to nearest, ties to even, in the float dtype. */
static inline uint32_t ref_round(long double value, tsr_dtype dtype) {
  uint32_t sign = signbit(value) ? (dtype == TSR_FLOAT32 ? 0x80000000u : 0x8000u) : 0u;
  long double magnitude = fabsl(value);
  uint32_t inf = ref_inf_pattern(dtype);
  if (magnitude >= ref_search_value(dtype, inf)) return sign | inf;
  uint32_t low = 0, high = inf; /* value(low) <= magnitude < value(high) */
  while (high - low > 1) {
    uint32_t mid = low + (high - low) / 2;
    if (ref_search_value(dtype, mid) <= magnitude)
      low = mid;
    else
      high = mid;
  }
  long double below = magnitude - ref_search_value(dtype, low);
  long double above = ref_search_value(dtype, high) - magnitude;
  uint32_t chosen = below < above ? low : above < below ? high : (low & 1u) ? high : low;
  return sign | chosen;
}

/* `value` rounded to a float dtype, as a value (NaN stays NaN). */
static inline long double ref_round_value(long double value, tsr_dtype dtype) {
  return isnan(value) ? value : ref_pattern_value(dtype, ref_round(value, dtype));
}

/* The distance from |value| to the next larger value of the float dtype (its ulp there). */
static inline long double ref_ulp(long double value, tsr_dtype dtype) {
  int precision = dtype == TSR_FLOAT16 ? 11 : dtype == TSR_BFLOAT16 ? 8 : 24;
  int min_exponent = dtype == TSR_FLOAT16 ? -14 : -126;
  int exponent = 0;
  frexpl(value, &exponent); /* |value| in [2^(exponent-1), 2^exponent) */
  exponent = exponent - 1 < min_exponent ? min_exponent : exponent - 1;
  return ldexpl(1.0L, exponent - (precision - 1));
}

static inline int64_t ref_min(tsr_dtype t) {
  return t == TSR_INT8 ? INT8_MIN : t == TSR_INT32 ? INT32_MIN : t == TSR_INT64 ? INT64_MIN : 0;
}

static inline int64_t ref_max(tsr_dtype t) {
  return t == TSR_UINT8    ? UINT8_MAX
         : t == TSR_UINT32 ? UINT32_MAX
         : t == TSR_INT8   ? INT8_MAX
         : t == TSR_INT32  ? INT32_MAX
         : t == TSR_BOOL   ? 1
                           : INT64_MAX;
}

/* Two's complement wrap of v into an integer dtype's width (bool: != 0). */
static inline int64_t ref_wrap(int64_t v, tsr_dtype t) {
  uint64_t u = (uint64_t)v;
  switch (t) {
    case TSR_BOOL:
      return v != 0;
    case TSR_UINT8:
      return (int64_t)(u & 0xffu);
    case TSR_UINT32:
      return (int64_t)(u & 0xffffffffu);
    case TSR_INT8:
      return (int64_t)(u & 0xffu) - ((u & 0x80u) ? 256 : 0);
    case TSR_INT32:
      return (int64_t)(u & 0xffffffffu) - ((u & 0x80000000u) ? INT64_C(1) << 32 : 0);
    default:
      return v;
  }
}

/* Writes an integer already in t's range as t. */
static inline void ref_store_int(int64_t v, tsr_dtype t, void *dst) {
  switch (t) {
    case TSR_BOOL:
      *(uint8_t *)dst = (uint8_t)(v != 0);
      break;
    case TSR_UINT8:
      *(uint8_t *)dst = (uint8_t)v;
      break;
    case TSR_UINT32:
      *(uint32_t *)dst = (uint32_t)v;
      break;
    case TSR_INT8:
      *(int8_t *)dst = (int8_t)v;
      break;
    case TSR_INT32:
      *(int32_t *)dst = (int32_t)v;
      break;
    default:
      *(int64_t *)dst = v;
      break;
  }
}

static inline void ref_store_float_bits(uint32_t bits, tsr_dtype t, void *dst) {
  if (t == TSR_FLOAT32) {
    memcpy(dst, &bits, 4);
  } else {
    uint16_t half = (uint16_t)bits;
    memcpy(dst, &half, 2);
  }
}

/* The element a real value (exact in long double, maybe NaN or infinite) becomes in dtype t:
   rounded for floats, truncated and saturated (NaN to 0) for integers, != 0 for bool. */
static inline void ref_from_real(long double v, tsr_dtype t, void *dst) {
  if (t == TSR_BOOL) {
    *(uint8_t *)dst = (uint8_t)(v != 0.0L); /* NaN != 0 */
  } else if (ref_is_float(t)) {
    uint32_t nan = t == TSR_FLOAT32 ? 0x7fc00000u : t == TSR_FLOAT16 ? 0x7e00u : 0x7fc0u;
    ref_store_float_bits(isnan(v) ? nan : ref_round(v, t), t, dst);
  } else if (isnan(v)) {
    ref_store_int(0, t, dst);
  } else {
    long double whole = truncl(v);
    int64_t saturated = whole < (long double)ref_min(t)   ? ref_min(t)
                        : whole > (long double)ref_max(t) ? ref_max(t)
                                                          : (int64_t)whole;
    ref_store_int(saturated, t, dst);
  }
}

/* The element an int64 becomes in dtype t: rounded once for floats, wrapped for integers. */
static inline void ref_from_int(int64_t v, tsr_dtype t, void *dst) {
  if (ref_is_float(t))
    ref_store_float_bits(ref_round((long double)v, t), t, dst);
  else
    ref_store_int(ref_wrap(v, t), t, dst);
}

/* The exact value of an element of dtype t. */
static inline long double ref_value(const void *p, tsr_dtype t) {
  switch (t) {
    case TSR_BOOL:
      return *(const uint8_t *)p != 0;
    case TSR_UINT8:
      return *(const uint8_t *)p;
    case TSR_UINT32:
      return *(const uint32_t *)p;
    case TSR_INT8:
      return *(const int8_t *)p;
    case TSR_INT32:
      return *(const int32_t *)p;
    case TSR_INT64:
      return (long double)*(const int64_t *)p;
    case TSR_FLOAT32: {
      uint32_t bits;
      memcpy(&bits, p, 4);
      return ref_pattern_value(t, bits);
    }
    default: {
      uint16_t bits;
      memcpy(&bits, p, 2);
      return ref_pattern_value(t, bits);
    }
  }
}

static inline bool ref_is_nan_pattern(const void *p, tsr_dtype t) {
  return ref_is_float(t) && isnan(ref_value(p, t));
}

#endif
