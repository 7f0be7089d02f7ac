/* cpu/qmm_fast_avx512.h — what the AVX-512F kernels of the fast quantized matmul share between
 * their two files: qmv (cpu/qmm_fast_avx512_qmv.c) and natural-order dequantization with the ISA
 * table (cpu/qmm_fast_avx512.c). Internal to those two; included only on x86-64 with GCC or
 * Clang. Every function carries target("avx512f"). */
#ifndef TSR_CPU_QMM_FAST_AVX512_H
#define TSR_CPU_QMM_FAST_AVX512_H

#include <immintrin.h>

#include "cpu/qmm_fast_isa.h"

#define AVX512 __attribute__((target("avx512f")))
#define AVX512_INLINE static inline __attribute__((always_inline, target("avx512f")))

enum { ROWS_AT_ONCE = 8, LANES = 16, MAX_GROUP = TSRI_QMM_MAX_GROUP };

/* The kinds of rows, each with its own way from codes to weights. */
enum { TABLE2, TABLE4, FP4, AFFINE8, MXFP8, UNPACKED, KINDS };

static inline int kind_of(const tsri_qmm_problem *p) {
  if (p->mode == TSRI_QF_MXFP8) return MXFP8;
  if (p->bits == 4) return p->mode == TSRI_QF_AFFINE ? TABLE4 : FP4; /* FP4: mxfp4, nvfp4 */
  if (p->bits == 2) return TABLE2;
  return p->bits == 8 ? AFFINE8 : UNPACKED;
}

/* E4M3 codes (one per lane) to float32, exactly tsri_qf_e4m3_decode, without ever forming a
   float32 subnormal (an operand this CPU class takes a slow assist for: on random codes, of
   which 1/16 are E4M3 subnormals, the earlier decode through value * 2^-120 bits ran mxfp8 qmv
   2.7x slower): a normal code's magnitude placed at float32's exponent/mantissa boundary with
   the bias difference 127 - 7 added is its value; a subnormal one (exponent field 0) is
   m * 2^-9, converted. The sign bit is moved over; 0x7F / 0xFF are the quiet NaN with that
   sign, bit for bit tsri_qf_e4m3_decode. */
AVX512_INLINE __m512 e4m3_values(__m512i codes) {
  __m512i magnitude = _mm512_and_si512(codes, _mm512_set1_epi32(0x7f));
  __m512 value = _mm512_castsi512_ps(
      _mm512_add_epi32(_mm512_slli_epi32(magnitude, 20), _mm512_set1_epi32(120 << 23)));
  __mmask16 subnormal = _mm512_cmplt_epi32_mask(magnitude, _mm512_set1_epi32(8));
  value =
      _mm512_mask_mul_ps(value, subnormal, _mm512_cvtepi32_ps(magnitude), _mm512_set1_ps(0x1p-9f));
  __mmask16 nan = _mm512_cmpeq_epi32_mask(magnitude, _mm512_set1_epi32(0x7f));
  __m512i unsigned_bits =
      _mm512_mask_mov_epi32(_mm512_castps_si512(value), nan, _mm512_set1_epi32(0x7fc00000));
  return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(
      _mm512_slli_epi32(codes, 24), _mm512_set1_epi32((int)0x80000000u), unsigned_bits,
      0xea)); /* (sign & mask) | value: a NaN keeps the code's sign, as the scalar decode */
}

/* 16 E4M3 codes to float32 values times 2^-8, exactly, through float16: a code's magnitude bits
   shifted left by 7 are a float16 of the same exponent and mantissa fields with bias 15 instead
   of 7 (a subnormal code becomes a float16 subnormal, which vcvtph2ps widens to a normal float32
   in hardware), and the byte's sign extension puts its sign in bit 15 (bit 14, also set by it, is
   cleared). 4 operations where e4m3_values takes 11; NaN codes (0x7F, 0xFF) come out as 1.875 *
   2^-8 here, so a caller uses this only where it has ruled them out. */
AVX512_INLINE __m512 e4m3_values_over_256(const uint8_t *bytes) {
  __m256i extended = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)bytes));
  __m256i half = _mm256_and_si256(_mm256_slli_epi16(extended, 7), _mm256_set1_epi16(-0x4001));
  return _mm512_cvtph_ps(half);
}

/* Whether none of `count` E4M3 codes (a multiple of 4) is a NaN (0x7F, 0xFF): the codes
   e4m3_values_over_256 would decode as 480. */
AVX512_INLINE bool e4m3_nan_free(const uint8_t *bytes, int64_t count) {
  /* 64 codes at a time with AVX-512F's 32-bit lanes: a byte's (~code & 0x7F) is 0 exactly for a
     NaN code, and adding 0x7F to it sets its top bit unless it is 0 (no carry between bytes), so
     the AND of those sums keeps every top bit while no code is a NaN (half the operations per
     code of a byte-wise maximum over 32-byte vectors). */
  const __m512i low7 = _mm512_set1_epi32(0x7F7F7F7F), tops = _mm512_set1_epi32((int)0x80808080u);
  __m512i all = tops;
  int64_t i = 0;
  for (; i + 64 <= count; i += 64) {
    __m512i codes = _mm512_loadu_si512((const void *)(bytes + i));
    all = _mm512_and_si512(all, _mm512_add_epi32(_mm512_andnot_si512(codes, low7), low7));
  }
  if (i < count) {
    __m512i codes =
        _mm512_maskz_loadu_epi32((__mmask16)((1u << ((count - i) / 4)) - 1u), bytes + i);
    all = _mm512_and_si512(all, _mm512_add_epi32(_mm512_andnot_si512(codes, low7), low7));
  }
  return _mm512_cmpneq_epi32_mask(_mm512_and_si512(all, tops), tops) == 0;
}

AVX512_INLINE __m512i load_bytes16(const uint8_t *bytes) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)bytes));
}

AVX512_INLINE __m512i load_bytes8(const uint8_t *bytes) {
  return _mm512_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)bytes));
}

/* Scales and biases of groups [first, first + count) of packed row `row` (as
   tsri_qmm_group_params), 16 at a time; the rest by the portable loop. */
AVX512 void tsri_avx512_widen_params(const tsri_qmm_problem *p, int64_t row, int64_t first,
                                     int64_t count, float *scales, float *biases);

/* The qmv entries of tsri_qmm_isa (cpu/qmm_fast_isa.h). */
void tsri_avx512_qmv_rows(const tsri_qmm_problem *p, const float *xp, const float *xsums,
                          int64_t row_begin, int64_t row_end);
int64_t tsri_avx512_qmv_max_m(const tsri_qmm_problem *p);
tsri_qmm_x_order tsri_avx512_x_order(const tsri_qmm_problem *p);

#endif
