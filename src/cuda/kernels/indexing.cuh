/* cuda/kernels/indexing.cuh — the GPU halves of cuda/indexing.c, one entry per kind
 * (TSR_INDEXING_KIND):
 *   1  check:   every index of an indices array against [0, dim); the row-major position of the
 *               first one outside goes to a device flag (atomicMin), which the host reads back;
 *   2  gather:  take and take_along_axis: output element i (packed) is a's element at operand 0's
 *               offset + index * axis_stride, the index read at operand 1's offset; words of
 *               TSR_INDEXING_BYTES (1, 2, 4 or 8) bytes. An index outside is skipped: the check
 *               reports it and the output is then thrown away;
 *   3  convert: slice_update's update written into dst's region in dst's dtype (operand 0 the
 *               update, operand 1 the region), by the CPU's rules (cpu/convert.c).
 * Same-dtype copies (concatenate, slice_update) are copy.cuh's. The dtype codes are tsr_dtype's
 * (tessera/base.h; cuda/indexing.c asserts them) and the element conversions are local copies of
 * base/half.h's and cpu/convert.c's, bit for bit, until base/element.h is usable here. */
#include "cuda/kernels/common.cuh" /* first: NVRTC's libc stand-in */
#ifndef __CUDACC_RTC__
#include <stdint.h> /* nvcc (AOT) builds; NVRTC has the stand-in */
#endif
#include "cuda/kernels/strided.cuh"

enum {
  TSR_DT_BOOL,
  TSR_DT_UINT8,
  TSR_DT_UINT32,
  TSR_DT_INT8,
  TSR_DT_INT32,
  TSR_DT_INT64,
  TSR_DT_FLOAT16,
  TSR_DT_BFLOAT16,
  TSR_DT_FLOAT32
};

/* Element `at` of an integer (or bool) array as int64: indices and integer updates. */
static __device__ inline int64_t tsr_load_int(const void *base, int64_t at, int dtype) {
  switch (dtype) {
    case TSR_DT_UINT32:
      return ((const uint32_t *)base)[at];
    case TSR_DT_INT8:
      return ((const int8_t *)base)[at];
    case TSR_DT_INT32:
      return ((const int32_t *)base)[at];
    case TSR_DT_INT64:
      return ((const int64_t *)base)[at];
    default: /* bool, uint8 */
      return ((const uint8_t *)base)[at];
  }
}

#if TSR_INDEXING_KIND == 1

TSR_KERNEL_ENTRY(tsr_indexing)
(tsr_strided layout, const void *indices, int index_dtype, int64_t dim,
 unsigned long long *first_bad) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < layout.n; j += stride) {
    int64_t offsets[TSR_STRIDED_MAX_OPERANDS];
    tsr_strided_offsets(layout, j, offsets);
    int64_t v = tsr_load_int(indices, offsets[0], index_dtype);
    if (v < 0 || v >= dim) atomicMin(first_bad, (unsigned long long)j);
  }
}

#elif TSR_INDEXING_KIND == 2

#if TSR_INDEXING_BYTES == 1
typedef uint8_t tsr_word;
#elif TSR_INDEXING_BYTES == 2
typedef uint16_t tsr_word;
#elif TSR_INDEXING_BYTES == 4
typedef uint32_t tsr_word;
#elif TSR_INDEXING_BYTES == 8
typedef uint64_t tsr_word;
#else
#error "the gather is specialized by TSR_INDEXING_BYTES (1, 2, 4 or 8)"
#endif

TSR_KERNEL_ENTRY(tsr_indexing)
(tsr_strided layout, const tsr_word *a, const void *indices, int index_dtype, int64_t axis_stride,
 int64_t dim, tsr_word *out) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < layout.n; i += stride) {
    int64_t offsets[TSR_STRIDED_MAX_OPERANDS];
    tsr_strided_offsets(layout, i, offsets);
    int64_t v = tsr_load_int(indices, offsets[1], index_dtype);
    if (v < 0 || v >= dim) continue;
    out[i] = a[offsets[0] + v * axis_stride];
  }
}

#elif TSR_INDEXING_KIND == 3

/* ---- base/half.h, on the bits ---- */

static __device__ inline uint32_t tsr_shift_round_even(uint32_t m, uint32_t shift) {
  uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  return q + (uint32_t)(rem > half || (rem == half && (q & 1u)));
}

static __device__ inline uint16_t tsr_f32_to_f16(float f) {
  uint32_t x = __float_as_uint(f);
  uint32_t sign = (x >> 16) & 0x8000u, magnitude = x & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  if (magnitude >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
  if (magnitude >= 0x38800000u) {
    uint32_t lsb = (magnitude >> 13) & 1u;
    return (uint16_t)(sign | ((magnitude - 0x38000000u + 0xfffu + lsb) >> 13));
  }
  uint32_t exponent = magnitude >> 23;
  if (exponent < 102) return (uint16_t)sign;
  uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
  return (uint16_t)(sign | tsr_shift_round_even(significand, 126u - exponent));
}

static __device__ inline float tsr_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0) {
    float magnitude = __fmul_rn((float)mantissa, 0x1p-24f); /* exact */
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return __uint_as_float(sign | 0x7f800000u | (mantissa << 13));
  return __uint_as_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

static __device__ inline uint16_t tsr_f32_to_bf16(float f) {
  uint32_t x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

static __device__ inline float tsr_bf16_to_f32(uint16_t b) {
  return __uint_as_float((uint32_t)b << 16);
}

/* ---- cpu/convert.c and cpu/rows.c ---- */

static __device__ inline bool tsr_is_float(int dtype) {
  return dtype == TSR_DT_FLOAT16 || dtype == TSR_DT_BFLOAT16 || dtype == TSR_DT_FLOAT32;
}

static __device__ inline float tsr_load_float(const void *base, int64_t at, int dtype) {
  if (dtype == TSR_DT_FLOAT16) return tsr_f16_to_f32(((const uint16_t *)base)[at]);
  if (dtype == TSR_DT_BFLOAT16) return tsr_bf16_to_f32(((const uint16_t *)base)[at]);
  return ((const float *)base)[at];
}

/* A float into a float dtype (or bool), as tsri_cpu_store_f32. */
static __device__ inline void tsr_store_float(void *base, int64_t at, int dtype, float v) {
  if (dtype == TSR_DT_FLOAT16)
    ((uint16_t *)base)[at] = tsr_f32_to_f16(v);
  else if (dtype == TSR_DT_BFLOAT16)
    ((uint16_t *)base)[at] = tsr_f32_to_bf16(v);
  else if (dtype == TSR_DT_FLOAT32)
    ((float *)base)[at] = v;
  else /* bool */
    ((uint8_t *)base)[at] = (uint8_t)(v != 0.0f);
}

/* An int64 into an integer dtype (or bool), wrapping, as tsri_cpu_store_i64. */
static __device__ inline void tsr_store_int(void *base, int64_t at, int dtype, int64_t v) {
  switch (dtype) {
    case TSR_DT_BOOL:
      ((uint8_t *)base)[at] = (uint8_t)(v != 0);
      break;
    case TSR_DT_UINT8:
      ((uint8_t *)base)[at] = (uint8_t)v;
      break;
    case TSR_DT_UINT32:
      ((uint32_t *)base)[at] = (uint32_t)v;
      break;
    case TSR_DT_INT8:
      ((int8_t *)base)[at] = (int8_t)(uint8_t)v;
      break;
    case TSR_DT_INT32:
      ((int32_t *)base)[at] = (int32_t)(uint32_t)v;
      break;
    default:
      ((int64_t *)base)[at] = v;
      break;
  }
}

/* Truncation toward zero, NaN to 0, saturating to int64's range. */
static __device__ inline int64_t tsr_f64_to_i64_saturating(double value) {
  if (value != value) return 0;
  if (value >= 0x1p63) return 9223372036854775807LL;
  if (value <= -0x1p63) return -9223372036854775807LL - 1;
  return __double2ll_rz(value);
}

static __device__ inline int64_t tsr_clamp_to_dtype(int64_t value, int dtype) {
  int64_t low = -9223372036854775807LL - 1, high = 9223372036854775807LL;
  switch (dtype) {
    case TSR_DT_UINT8:
      low = 0, high = 255;
      break;
    case TSR_DT_UINT32:
      low = 0, high = 4294967295LL;
      break;
    case TSR_DT_INT8:
      low = -128, high = 127;
      break;
    case TSR_DT_INT32:
      low = -2147483647LL - 1, high = 2147483647LL;
      break;
    default:
      break;
  }
  return value < low ? low : value > high ? high : value;
}

/* tsri_cpu_round_int: the int64 rounded once, to nearest even, at the float dtype's precision. */
static __device__ inline float tsr_round_int(int64_t value, int dtype) {
  uint64_t magnitude = value < 0 ? 0ull - (uint64_t)value : (uint64_t)value;
  int bits = dtype == TSR_DT_FLOAT16 ? 11 : dtype == TSR_DT_BFLOAT16 ? 8 : 24, width = bits;
  for (uint64_t m = magnitude >> bits; m; m >>= 1)
    width++;
  float rounded;
  if (width == bits) {
    rounded = (float)(uint32_t)magnitude; /* exact: at most 24 significant bits */
  } else {
    int shift = width - bits;
    uint64_t q = magnitude >> shift, rem = magnitude & ((1ull << shift) - 1ull);
    uint64_t half = 1ull << (shift - 1);
    q += (uint64_t)(rem > half || (rem == half && (q & 1u)));
    rounded = __fmul_rn((float)(uint32_t)q, __uint_as_float((uint32_t)(127 + shift) << 23));
  }
  if (dtype == TSR_DT_FLOAT16) rounded = tsr_f16_to_f32(tsr_f32_to_f16(rounded));
  return value < 0 ? -rounded : rounded;
}

TSR_KERNEL_ENTRY(tsr_indexing)
(tsr_strided layout, const void *update, int update_dtype, void *out, int out_dtype) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < layout.n; i += stride) {
    int64_t offsets[TSR_STRIDED_MAX_OPERANDS];
    tsr_strided_offsets(layout, i, offsets);
    if (tsr_is_float(update_dtype)) {
      float x = tsr_load_float(update, offsets[0], update_dtype);
      if (tsr_is_float(out_dtype) || out_dtype == TSR_DT_BOOL)
        tsr_store_float(out, offsets[1], out_dtype, x);
      else
        tsr_store_int(out, offsets[1], out_dtype,
                      tsr_clamp_to_dtype(tsr_f64_to_i64_saturating((double)x), out_dtype));
    } else {
      int64_t x = tsr_load_int(update, offsets[0], update_dtype);
      if (update_dtype == TSR_DT_BOOL) x = x != 0;
      if (tsr_is_float(out_dtype))
        tsr_store_float(out, offsets[1], out_dtype, tsr_round_int(x, out_dtype));
      else
        tsr_store_int(out, offsets[1], out_dtype, x);
    }
  }
}

#else
#error "indexing.cuh is specialized by TSR_INDEXING_KIND (1 check, 2 gather, 3 convert)"
#endif
