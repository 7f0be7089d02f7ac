/* base/quant_format.h — MLX's quantized storage formats, one element or group at a time: modes
 * and their group sizes/bits, the LSB-first bit packing of a row, and the FP4 E2M1, FP8 E4M3 and
 * E8M0 codecs, each bit for bit with mlx-cpu 0.32.4 (shared/quant-spec.md, docs/quant-rules.md).
 * Plain C that both cc and nvcc compile (every function is TSRI_QF_HD static inline, no libc
 * beyond memcpy); not the kernels (cpu/quant.c, cpu/qmm.c) and not the ops' validation. */
#ifndef TSR_BASE_QUANT_FORMAT_H
#define TSR_BASE_QUANT_FORMAT_H

/* NVRTC has no libc headers: a GPU kernel source includes its own stand-in for them before this
 * file (base depends on no backend). */
#ifndef __CUDACC_RTC__
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#endif

#ifdef __CUDACC__
#define TSRI_QF_HD __host__ __device__
#else
#define TSRI_QF_HD
#endif

/* The modes, equal to tessera/quant.h's tsr_quant_mode (ops/quant.c asserts it). */
#define TSRI_QF_AFFINE 0
#define TSRI_QF_MXFP4 1
#define TSRI_QF_MXFP8 2
#define TSRI_QF_NVFP4 3

/* fp4 elements are E2M1; MX scales and fp8 elements are one byte; nvfp4's global scale factor. */
#define TSRI_QF_FP4_MAX 6.0f
#define TSRI_QF_FP8_MAX 448.0f
#define TSRI_QF_NVFP4_SCALE_NUMERATOR 2688.0f /* 448 * 6: scale_enc = 2688 / global_scale */

#ifdef __cplusplus
#define TSRI_QF_STATIC_ASSERT(cond, why) static_assert(cond, why)
#else
#define TSRI_QF_STATIC_ASSERT(cond, why) _Static_assert(cond, why)
#endif
TSRI_QF_STATIC_ASSERT(sizeof(float) == 4 && sizeof(uint32_t) == 4, "float32 and its bits");

static inline TSRI_QF_HD uint32_t tsri_qf_bits(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  return x;
}

static inline TSRI_QF_HD float tsri_qf_from_bits(uint32_t x) {
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

/* ---- modes ------------------------------------------------------------------------------ */

static inline TSRI_QF_HD int tsri_qf_default_group_size(int mode) {
  switch (mode) {
    case TSRI_QF_AFFINE:
      return 64;
    case TSRI_QF_MXFP4:
    case TSRI_QF_MXFP8:
      return 32;
    case TSRI_QF_NVFP4:
      return 16;
    default:
      return 0;
  }
}

static inline TSRI_QF_HD int tsri_qf_default_bits(int mode) {
  switch (mode) {
    case TSRI_QF_AFFINE:
    case TSRI_QF_MXFP4:
    case TSRI_QF_NVFP4:
      return 4;
    case TSRI_QF_MXFP8:
      return 8;
    default:
      return 0;
  }
}

static inline TSRI_QF_HD bool tsri_qf_valid_group_size(int mode, int group_size) {
  if (mode == TSRI_QF_AFFINE) return group_size == 32 || group_size == 64 || group_size == 128;
  return group_size != 0 && group_size == tsri_qf_default_group_size(mode);
}

static inline TSRI_QF_HD bool tsri_qf_valid_bits(int mode, int bits) {
  if (mode == TSRI_QF_AFFINE) return (bits >= 2 && bits <= 6) || bits == 8;
  return bits != 0 && bits == tsri_qf_default_bits(mode);
}

/* The mode's (group_size, bits) pair is one MLX defines (quant-spec.md Part B §1; affine bits 1
   is refused, docs/quant-rules.md). Explicit values only: 0 is not "the default" here. */
static inline TSRI_QF_HD bool tsri_qf_valid(int mode, int group_size, int bits) {
  return tsri_qf_valid_group_size(mode, group_size) && tsri_qf_valid_bits(mode, bits);
}

/* ---- packing: each row of w_q is a little-endian bit stream, element i at bits
   [i*bits, i*bits + bits), LSB first (Part B §2.4). Rows are whole words, and so are groups. -- */

static inline TSRI_QF_HD uint32_t tsri_qf_get_code(const uint32_t *row, int64_t i, int bits) {
  int64_t bit = i * bits;
  int64_t word = bit >> 5;
  uint32_t shift = (uint32_t)(bit & 31);
  uint32_t value = row[word] >> shift;
  /* Straddles a word only for 3, 5, 6 bits; the next word is then inside the row. */
  if (shift + (uint32_t)bits > 32u) value |= row[word + 1] << (32u - shift);
  return value & ((1u << bits) - 1u);
}

/* ORs `code` (< 2^bits) into a row that starts zeroed. */
static inline TSRI_QF_HD void tsri_qf_put_code(uint32_t *row, int64_t i, int bits, uint32_t code) {
  int64_t bit = i * bits;
  int64_t word = bit >> 5;
  uint32_t shift = (uint32_t)(bit & 31);
  row[word] |= code << shift;
  if (shift + (uint32_t)bits > 32u) row[word + 1] |= code >> (32u - shift);
}

/* ---- FP4 E2M1: sign bit 3; codes 0..7 = 0, 0.5, 1, 1.5, 2, 3, 4, 6, codes 8..15 negated ---- */

static inline TSRI_QF_HD float tsri_qf_fp4_decode(uint32_t code) {
  /* Twice the magnitude is an integer: 0, 1, 2, 3, 4, 6, 8, 12. */
  uint32_t magnitude_code = code & 7u;
  uint32_t twice = magnitude_code < 4u ? magnitude_code : (4u + 2u * (magnitude_code - 4u));
  twice = magnitude_code == 7u ? 12u : twice;
  float value = 0.5f * (float)twice;
  return (code & 8u) ? -value : value;
}

/* MLX's CPU encoder, literally: argmin over the 16 table entries of |x - entry| computed in
   float32, the first minimum winning — nearest entry, ties to the LOWER code (0.75 -> 0.5,
   1.75 -> 1.5, 3.5 -> 3, -0.25 -> +0 code 0; a negative x never gets -0, code 8). Where every
   distance is the same float32 the code is 0, as in MLX: |x| so large that the table vanishes in
   the rounding, +-Inf (all distances Inf) and NaN (all NaN). Tessera's saturation of an Inf
   *input* element is the kernels' business (docs/quant-rules.md), not this encoder's. */
static inline TSRI_QF_HD uint32_t tsri_qf_fp4_encode_argmin(float x) {
  uint32_t best = 0u;
  float best_distance = x < 0.0f ? -x : x;
  for (uint32_t code = 1u; code < 16u; code++) {
    float difference = x - tsri_qf_fp4_decode(code);
    float distance = difference < 0.0f ? -difference : difference;
    if (distance < best_distance) {
      best_distance = distance;
      best = code;
    }
  }
  return best;
}

/* The same codes as tsri_qf_fp4_encode_argmin for every float32 (checked exhaustively for
   |x| <= 8, where the float32 distances to the nearest entries are exact, and falling back to
   the argmin elsewhere): thresholds at the midpoints, a midpoint going to the lower code. */
static inline TSRI_QF_HD uint32_t tsri_qf_fp4_encode_nearest_lower(float x) {
  float a = x < 0.0f ? -x : x;
  if (!(a <= 8.0f)) return tsri_qf_fp4_encode_argmin(x); /* large, Inf, NaN */
  uint32_t magnitude = (uint32_t)(a > 0.25f) + (uint32_t)(a > 0.75f) + (uint32_t)(a > 1.25f) +
                       (uint32_t)(a > 1.75f) + (uint32_t)(a > 2.5f) + (uint32_t)(a > 3.5f) +
                       (uint32_t)(a > 5.0f);
  return (magnitude != 0u && x < 0.0f) ? (magnitude | 8u) : magnitude;
}

/* ---- FP8 E4M3 (OCP "fn", bias 7): elements of mxfp8, scales of nvfp4 ---------------------- */

/* Sign bit honoured; 0x7F / 0xFF decode to NaN as mlx-cpu 0.32.4 does (docs/quant-rules.md;
   the spec's older snapshot gave +-480). The encoder never produces them. */
static inline TSRI_QF_HD float tsri_qf_e4m3_decode(uint32_t code) {
  uint32_t sign = (code & 0x80u) << 24;
  uint32_t exponent = (code >> 3) & 0xfu, mantissa = code & 7u;
  if (exponent == 15u && mantissa == 7u) return tsri_qf_from_bits(sign | 0x7fc00000u);
  if (exponent == 0u) { /* subnormal: mantissa * 2^-9, exact */
    float magnitude = (float)mantissa * 0x1p-9f;
    return tsri_qf_from_bits(sign | tsri_qf_bits(magnitude));
  }
  return tsri_qf_from_bits(sign | ((exponent + 120u) << 23) | (mantissa << 20));
}

/* MLX's encoder (CPU ToFP8 / Metal fp8.h, after PyTorch's): on |x|'s float32 bits, sign put back
   afterwards. |x| >= 448 (bits >= 0x43E00000), +-Inf and NaN give 0x7E (448) with x's sign bit;
   below 2^-6 the subnormal is rounded to nearest even by a float32 addition of 2^14; otherwise
   the normal is rounded to nearest even on the bits (1.0625 -> 1.0; 464 -> 448). */
static inline TSRI_QF_HD uint32_t tsri_qf_e4m3_encode(float x) {
  const uint32_t saturation_bits = 543u << 21; /* 448.0f */
  const uint32_t subnormal_bits = 121u << 23;  /* 2^-6, the smallest normal */
  const uint32_t denormal_magic = 141u << 23;  /* 2^14: its float32 ulp is 2^-9 */
  uint32_t bits = tsri_qf_bits(x);
  uint32_t sign = bits & 0x80000000u;
  bits ^= sign;
  uint32_t result;
  if (bits >= saturation_bits) {
    result = 0x7eu;
  } else if (bits < subnormal_bits) {
    float sum = tsri_qf_from_bits(bits) + tsri_qf_from_bits(denormal_magic);
    result = (tsri_qf_bits(sum) - denormal_magic) & 0xffu;
  } else {
    uint32_t mantissa_odd = (bits >> 20) & 1u;
    bits += (uint32_t)(7 - 127) * (1u << 23) + 0x7ffffu + mantissa_odd;
    result = (bits >> 20) & 0xffu;
  }
  return result | (sign >> 24);
}

/* ---- E8M0 (MX scales): 2^(code - 127) ----------------------------------------------------- */

static inline TSRI_QF_HD float tsri_qf_e8m0_decode(uint32_t code) {
  code &= 0xffu;
  if (code == 0u) return tsri_qf_from_bits(0x00400000u); /* 2^-127, a float32 subnormal */
  if (code == 255u) return tsri_qf_from_bits(0x7f800000u);
  return tsri_qf_from_bits(code << 23);
}

/* ceil(log2 |d|) exactly, from d's bits (biased exponent, +1 when the mantissa is not zero;
   float32 subnormals exact), for finite nonzero d: the exponent e of the MX divisor 2^e. */
static inline TSRI_QF_HD int32_t tsri_qf_ceil_log2(float d) {
  uint32_t magnitude = tsri_qf_bits(d) & 0x7fffffffu;
  int32_t exponent = (int32_t)(magnitude >> 23); /* biased */
  uint32_t mantissa = magnitude & 0x7fffffu;
  if (exponent != 0) return exponent - 127 + (mantissa != 0u);
  /* Subnormal: d = mantissa * 2^-149; ceil(log2 mantissa) from its highest bit. */
  int32_t high_bit = 31;
  while (!(mantissa >> high_bit))
    high_bit--;
  return high_bit + ((mantissa & (mantissa - 1u)) != 0u) - 149;
}

/* The scale code for d = amax / M (d already rounded to w's dtype and widened exactly):
   ceil(log2 d) + 127 modulo 256, as mlx-cpu 0.32.4 does: d = 0 -> 127; d < 2^-127 wraps
   (2^-130 -> 253); d in (2^127, FLT_MAX] -> 255. Sign ignored. Non-finite d (excluded by
   tessera's NaN/Inf rule before this point) -> 255. NOTE: MLX divides the elements by
   2^ceil(log2 d) *before* the wrap (2^-130 there, while code 253 decodes to 2^126): use
   tsri_qf_mx_divisor_exponent for the elements, not the decoded code. */
static inline TSRI_QF_HD uint32_t tsri_qf_e8m0_encode_up(float d) {
  uint32_t magnitude = tsri_qf_bits(d) & 0x7fffffffu;
  if (magnitude == 0u) return 127u;
  if (magnitude >= 0x7f800000u) return 255u;
  return (uint32_t)(tsri_qf_ceil_log2(d) + 127) & 0xffu;
}

/* The e of the divisor 2^e MLX's CPU applies to an MX group's elements (w / 2^e, in w's dtype):
   ceil(log2 d) without the code's wrap, 0 for d = 0. Finite d only. */
static inline TSRI_QF_HD int32_t tsri_qf_mx_divisor_exponent(float d) {
  return (tsri_qf_bits(d) & 0x7fffffffu) == 0u ? 0 : tsri_qf_ceil_log2(d);
}

#endif
