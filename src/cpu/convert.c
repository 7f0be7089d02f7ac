/* cpu/convert.c — exact dtype conversions (cpu/convert.h): rounding from int64 and float64
 * without double rounding, saturating float-to-integer truncation, astype's row loop. */
#include "cpu/convert.h"

#include <float.h>
#include <math.h>

#include "base/dtype.h"
#include "base/half.h"
#include "cpu/rows.h"

#define CHUNK 256

/* Significant bits of each float dtype (the implicit one included). */
static int float_precision(tsr_dtype dtype) {
  return dtype == TSR_FLOAT16 ? 11 : dtype == TSR_BFLOAT16 ? 8 : 24;
}

/* 2^e as a float32, 0 <= e <= 127. */
static float pow2f(int e) {
  return tsri_f32_from_bits((uint32_t)(127 + e) << 23);
}

/* A float32 holding `value` rounded to nearest even at the dtype's precision: the magnitude is
 * rounded on its bits, so an int64 above 2^24 is rounded once, not to float32 and then again. */
float tsri_cpu_round_int(int64_t value, tsr_dtype dtype) {
  uint64_t magnitude = value < 0 ? 0u - (uint64_t)value : (uint64_t)value;
  int bits = float_precision(dtype), width = bits;
  for (uint64_t m = magnitude >> bits; m; m >>= 1)
    width++;
  float rounded;
  if (width == bits) {
    rounded = (float)magnitude; /* exact: at most 24 significant bits */
  } else {
    int shift = width - bits;
    uint64_t q = magnitude >> shift, rem = magnitude & ((UINT64_C(1) << shift) - 1);
    uint64_t half = UINT64_C(1) << (shift - 1);
    q += (uint64_t)(rem > half || (rem == half && (q & 1u)));
    rounded = (float)q * pow2f(shift); /* q <= 2^bits and a power of two: exact */
  }
  if (dtype == TSR_FLOAT16)
    rounded = tsri_f16_to_f32(tsri_f32_to_f16(rounded)); /* inf past 65504 */
  return value < 0 ? -rounded : rounded;
}

/* float64 -> float32 rounding to odd (an inexact result gets an odd last bit). Rounding that to
 * float16/bfloat16 (at least 2 fewer bits, also in the subnormal range) then gives the correctly
 * rounded result of the float64: the classic cure for double rounding (Boldo & Melquiond). */
static float f64_to_f32_round_odd(double value) {
  if (isnan(value)) return (float)value;
  double magnitude = fabs(value);
  if (magnitude > (double)FLT_MAX) /* finite values stay finite and odd; infinity stays */
    return copysignf(isinf(value) ? INFINITY : FLT_MAX, (float)copysign(1.0, value));
  float f = (float)value;
  uint32_t bits = tsri_f32_bits(f);
  if ((double)f != value && !(bits & 1u)) bits += (double)fabsf(f) < magnitude ? 1u : (uint32_t)-1;
  return tsri_f32_from_bits(bits);
}

/* float64 -> float32 to nearest even, overflow to infinity without a float-cast overflow. */
static float f64_to_f32(double value) {
  double magnitude = fabs(value);
  if (magnitude > (double)FLT_MAX && !isnan(value)) {
    /* FLT_MAX + half its ulp (2^103) and above rounds to infinity. */
    float limit = magnitude >= 0x1.ffffffp127 ? INFINITY : FLT_MAX;
    return value < 0 ? -limit : limit;
  }
  return (float)value;
}

/* Truncation toward zero, NaN to 0, saturating to int64's range. */
static int64_t f64_to_i64_saturating(double value) {
  if (isnan(value)) return 0;
  if (value >= 0x1p63) return INT64_MAX;
  if (value <= -0x1p63) return INT64_MIN;
  return (int64_t)value;
}

static int64_t clamp_to_dtype(int64_t value, tsr_dtype dtype) {
  int64_t low = INT64_MIN, high = INT64_MAX;
  switch (dtype) {
    case TSR_UINT8:
      low = 0, high = UINT8_MAX;
      break;
    case TSR_UINT32:
      low = 0, high = UINT32_MAX;
      break;
    case TSR_INT8:
      low = INT8_MIN, high = INT8_MAX;
      break;
    case TSR_INT32:
      low = INT32_MIN, high = INT32_MAX;
      break;
    default:
      break;
  }
  return value < low ? low : value > high ? high : value;
}

void tsri_cpu_store_f64_element(void *dst, tsr_dtype dtype, double value) {
  if (dtype == TSR_FLOAT32) {
    float f = f64_to_f32(value);
    tsri_cpu_store_f32(dst, dtype, 1, &f);
  } else if (tsri_dtype_is_float(dtype)) {
    float f = f64_to_f32_round_odd(value);
    tsri_cpu_store_f32(dst, dtype, 1, &f);
  } else if (dtype == TSR_BOOL) {
    *(uint8_t *)dst = (uint8_t)(value != 0.0);
  } else {
    int64_t i = clamp_to_dtype(f64_to_i64_saturating(value), dtype);
    tsri_cpu_store_i64(dst, dtype, 1, &i);
  }
}

/* A chunk whose source is a float dtype (its values are exact in float32). */
static void convert_float_chunk(float *x, int64_t n, void *dst, tsr_dtype dst_dtype) {
  if (tsri_dtype_is_float(dst_dtype) || dst_dtype == TSR_BOOL) {
    tsri_cpu_store_f32(dst, dst_dtype, n, x);
    return;
  }
  int64_t converted[CHUNK];
  for (int64_t i = 0; i < n; i++)
    converted[i] = clamp_to_dtype(f64_to_i64_saturating((double)x[i]), dst_dtype);
  tsri_cpu_store_i64(dst, dst_dtype, n, converted);
}

/* A chunk whose source is an integer or bool dtype, held exactly in int64. */
static void convert_int_chunk(int64_t *x, int64_t n, void *dst, tsr_dtype dst_dtype) {
  if (!tsri_dtype_is_float(dst_dtype)) {
    tsri_cpu_store_i64(dst, dst_dtype, n, x); /* wraps; bool is != 0 */
    return;
  }
  float rounded[CHUNK];
  for (int64_t i = 0; i < n; i++)
    rounded[i] = tsri_cpu_round_int(x[i], dst_dtype);
  tsri_cpu_store_f32(dst, dst_dtype, n, rounded); /* exact: already at the dtype's precision */
}

void tsri_cpu_convert_row(const void *src, tsr_dtype src_dtype, int64_t stride, int64_t n,
                          void *dst, tsr_dtype dst_dtype) {
  const unsigned char *in = (const unsigned char *)src;
  unsigned char *out = (unsigned char *)dst;
  int64_t in_step = stride * (int64_t)tsr_dtype_size(src_dtype);
  int64_t out_size = (int64_t)tsr_dtype_size(dst_dtype);
  for (int64_t start = 0; start < n; start += CHUNK) {
    int64_t count = n - start < CHUNK ? n - start : CHUNK;
    const unsigned char *from = in + start * in_step;
    unsigned char *to = out + start * out_size;
    if (tsri_dtype_is_float(src_dtype)) {
      float x[CHUNK];
      tsri_cpu_load_f32(from, src_dtype, stride, count, x);
      convert_float_chunk(x, count, to, dst_dtype);
    } else {
      int64_t x[CHUNK];
      tsri_cpu_load_i64(from, src_dtype, stride, count, x);
      if (src_dtype == TSR_BOOL) /* a bool byte other than 0/1 (outside memory) still means 1 */
        for (int64_t i = 0; i < count; i++)
          x[i] = x[i] != 0;
      convert_int_chunk(x, count, to, dst_dtype);
    }
  }
}

void tsri_cpu_load_as_float(const void *base, tsr_dtype dtype, int64_t stride, int64_t n,
                            tsr_dtype compute, float *dst) {
  if (tsri_dtype_is_float(dtype)) {
    /* A float operand's promoted type is float32 or its own: widening is exact. */
    tsri_cpu_load_f32(base, dtype, stride, n, dst);
    return;
  }
  int64_t x[CHUNK];
  const unsigned char *in = (const unsigned char *)base;
  int64_t step = stride * (int64_t)tsr_dtype_size(dtype);
  for (int64_t start = 0; start < n; start += CHUNK) {
    int64_t count = n - start < CHUNK ? n - start : CHUNK;
    tsri_cpu_load_i64(in + start * step, dtype, stride, count, x);
    for (int64_t i = 0; i < count; i++)
      dst[start + i] = tsri_cpu_round_int(dtype == TSR_BOOL ? x[i] != 0 : x[i], compute);
  }
}
