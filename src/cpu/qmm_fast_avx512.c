/* cpu/qmm_fast_avx512.c — the AVX-512F natural-order dequantization of the fast quantized matmul
 * (cpu/qmm_fast_isa.h: the sgemm tiles, the fused GEMM's panels, tsr_dequantize) and the ISA
 * table; the qmv kernels are cpu/qmm_fast_avx512_qmv.c. 2- and 4-bit codes become weights through
 * a 16-entry table per group (vpermps: T(T(s * q) + b) for affine, E2M1 value * scale for
 * mxfp4/nvfp4), 8-bit codes through a conversion (affine) or, for mxfp8, through float16
 * (vcvtph2ps; E4M3 bit arithmetic for a group with a NaN code or a scale of 2^120 or more),
 * 3/5/6-bit codes are unpacked to bytes first; affine weights are rounded to the scales' dtype
 * exactly as cpu/qmm.h says (these are tsr_dequantize's values, bit for bit). Every function
 * carries target("avx512f"), so the library builds and runs without it; cpu/qmm_fast.c calls
 * these only when the CPU has AVX-512F. */
#include "cpu/qmm_fast_isa.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include "cpu/qmm_fast_avx512.h"

/* ---- weights from codes ---------------------------------------------------------------------- */

/* v rounded to the affine scales' dtype T and widened back (float32: unchanged), bit for bit
   tsri_qmm_round_to_scale_dtype: float16 by vcvtps2ph (nearest even, overflow to Inf, as
   tsri_f32_to_f16), bfloat16 by nearest even on the bits — with NaN kept a quiet NaN when
   `nan_possible`; without NaN among v the plain rounding is exact (Inf stays Inf, the largest
   values round up to Inf), and a group whose scale and bias are finite never makes one. */
AVX512_INLINE __m512 round_to(__m512 v, tsr_dtype dtype, bool nan_possible) {
  if (dtype == TSR_FLOAT16)
    return _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  if (dtype != TSR_BFLOAT16) return v;
  __m512i bits = _mm512_castps_si512(v), upper = _mm512_set1_epi32((int)0xffff0000u);
  __m512i odd = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  __m512i rounded = _mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7fff)), odd);
  if (nan_possible) {
    __m512i quiet = _mm512_or_si512(bits, _mm512_set1_epi32(0x00400000));
    __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(bits, _mm512_set1_epi32(0x7fffffff)),
                                            _mm512_set1_epi32(0x7f800000));
    rounded = _mm512_mask_blend_epi32(nan, rounded, quiet);
  }
  return _mm512_castsi512_ps(_mm512_and_si512(rounded, upper));
}

/* Affine weights T(T(s * q) + b) of codes q already in float32 (cpu/qmm.h). */
AVX512_INLINE __m512 affine_weights(__m512 q, __m512 scale, __m512 bias, tsr_dtype dtype,
                                    bool nan_possible) {
  __m512 scaled = round_to(_mm512_mul_ps(scale, q), dtype, nan_possible);
  return round_to(_mm512_add_ps(scaled, bias), dtype, nan_possible);
}

static inline bool finite(float v) {
  uint32_t bits;
  memcpy(&bits, &v, sizeof bits);
  return (bits & 0x7f800000u) != 0x7f800000u;
}

/* 16 values at a time: bfloat16 tables check a segment's scales and biases before every
   segment, and that check as a scalar loop cost affine 4-bit qmv a fifth of its time (one core,
   4096 x 4096: 10.4 -> 13.4 GB/s). */
static AVX512 bool all_finite(const float *v, int64_t count) {
  __mmask16 infinite = 0;
  int64_t i = 0;
  for (; i + LANES <= count; i += LANES) {
    __m512i exponent = _mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(v + i)),
                                        _mm512_set1_epi32(0x7f800000));
    infinite |= _mm512_cmpeq_epi32_mask(exponent, _mm512_set1_epi32(0x7f800000));
  }
  bool all = infinite == 0;
  for (; i < count; i++)
    all &= finite(v[i]);
  return all;
}

/* Each group's weight for each code, for `count` groups with these scales and biases: entry i
   of tables[g] holds code i's (for 2 bits, code i & 3's, so that the bits above a code in its
   lane never matter). One loop per format, apart from the loops that use the tables: building
   a table per group inside them cost more than the dot products at 64-code groups. */
static AVX512 void build_tables(const tsri_qmm_problem *p, int bits, const float *scales,
                                const float *biases, int64_t count, __m512 *tables) {
  if (p->mode != TSRI_QF_AFFINE) {
    __m512 e2m1 = _mm512_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f, -0.5f,
                                 -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f);
    for (int64_t g = 0; g < count; g++)
      tables[g] = _mm512_mul_ps(e2m1, _mm512_set1_ps(scales[g]));
    return;
  }
  __m512 q = bits == 2 ? _mm512_setr_ps(0.0f, 1.0f, 2.0f, 3.0f, 0.0f, 1.0f, 2.0f, 3.0f, 0.0f, 1.0f,
                                        2.0f, 3.0f, 0.0f, 1.0f, 2.0f, 3.0f)
                       : _mm512_setr_ps(0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f,
                                        10.0f, 11.0f, 12.0f, 13.0f, 14.0f, 15.0f);
  switch (tsri_qmm_weight_dtype(p)) {
    case TSR_FLOAT16:
      for (int64_t g = 0; g < count; g++)
        tables[g] = affine_weights(q, _mm512_set1_ps(scales[g]), _mm512_set1_ps(biases[g]),
                                   TSR_FLOAT16, true);
      break;
    case TSR_BFLOAT16:
      if (all_finite(scales, count) && all_finite(biases, count)) {
        for (int64_t g = 0; g < count; g++)
          tables[g] = affine_weights(q, _mm512_set1_ps(scales[g]), _mm512_set1_ps(biases[g]),
                                     TSR_BFLOAT16, false);
        break;
      }
      for (int64_t g = 0; g < count; g++)
        tables[g] = affine_weights(q, _mm512_set1_ps(scales[g]), _mm512_set1_ps(biases[g]),
                                   TSR_BFLOAT16, true);
      break;
    default:
      for (int64_t g = 0; g < count; g++)
        tables[g] = affine_weights(q, _mm512_set1_ps(scales[g]), _mm512_set1_ps(biases[g]),
                                   TSR_FLOAT32, false);
      break;
  }
}

/* 16 byte codes (one per lane) to weights for affine 8-bit or generic bits, or for mxfp8. */
AVX512_INLINE __m512 byte_weights(__m512i codes, int mode, __m512 scale, __m512 bias,
                                  tsr_dtype dtype, bool nan_possible) {
  if (mode == TSRI_QF_MXFP8) return _mm512_mul_ps(e4m3_values(codes), scale);
  return affine_weights(_mm512_cvtepi32_ps(codes), scale, bias, dtype, nan_possible);
}

/* Declared in cpu/qmm_fast_avx512.h (shared with qmv). */
AVX512 void tsri_avx512_widen_params(const tsri_qmm_problem *p, int64_t row, int64_t first,
                                     int64_t count, float *scales, float *biases) {
  const int64_t at = row * p->scale_row_stride + first;
  int64_t i = 0;
  for (; i + LANES <= count; i += LANES) {
    __m512 scale, bias = _mm512_setzero_ps();
    if (p->mode == TSRI_QF_NVFP4) {
      scale = e4m3_values(load_bytes16((const uint8_t *)p->scales + at + i));
    } else if (p->mode != TSRI_QF_AFFINE) { /* E8M0: 2^(c - 127); 0 is 2^-127, 255 is +Inf */
      __m512i codes = load_bytes16((const uint8_t *)p->scales + at + i);
      __mmask16 zero = _mm512_cmpeq_epi32_mask(codes, _mm512_setzero_si512());
      __m512i bits = _mm512_mask_blend_epi32(zero, _mm512_slli_epi32(codes, 23),
                                             _mm512_set1_epi32(0x00400000));
      scale = _mm512_castsi512_ps(bits);
    } else if (p->scale_dtype == TSR_FLOAT32) {
      scale = _mm512_loadu_ps((const float *)p->scales + at + i);
      bias = _mm512_loadu_ps((const float *)p->biases + at + i);
    } else {
      const uint16_t *s16 = (const uint16_t *)p->scales + at + i;
      const uint16_t *b16 = (const uint16_t *)p->biases + at + i;
      __m256i s_raw = _mm256_loadu_si256((const __m256i *)(const void *)s16);
      __m256i b_raw = _mm256_loadu_si256((const __m256i *)(const void *)b16);
      if (p->scale_dtype == TSR_FLOAT16) { /* exact widening, as tsri_f16_to_f32 */
        scale = _mm512_cvtph_ps(s_raw);
        bias = _mm512_cvtph_ps(b_raw);
      } else { /* bfloat16: the upper half of a float32 */
        scale = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(s_raw), 16));
        bias = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(b_raw), 16));
      }
    }
    _mm512_storeu_ps(scales + i, scale);
    _mm512_storeu_ps(biases + i, bias);
  }
  if (i < count) tsri_qmm_group_params(p, row, first + i, count - i, scales + i, biases + i);
}

/* ---- dequantization in natural order (tiles, GEMM panels, tsr_dequantize) -------------------- */

/* Groups [first, first + count) of one packed row, with their scales and biases (and tables,
   for the table kinds); code `origin` of the row is written to dst[0]. */
typedef struct {
  const tsri_qmm_problem *p;
  const uint8_t *bytes;
  int64_t first, count, origin;
  const float *scales, *biases;
  const __m512 *tables;
} segment;

/* Lanes 0..7 of a and b interleaved (a0 b0 a1 b1 ...), and lanes 8..15. */
AVX512_INLINE __m512 interleave_low(__m512 a, __m512 b) {
  return _mm512_permutex2var_ps(
      a, _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23), b);
}

AVX512_INLINE __m512 interleave_high(__m512 a, __m512 b) {
  return _mm512_permutex2var_ps(
      a, _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31), b);
}

/* The weights of one block (w[j] lane i = code per_byte * i + j) stored in code order: the first
   `count` of its 16 * per_byte. */
AVX512_INLINE void store_natural(const __m512 *w, int per_byte, float *dst, int count) {
  __m512 out[4];
  if (per_byte == 2) {
    out[0] = interleave_low(w[0], w[1]);
    out[1] = interleave_high(w[0], w[1]);
  } else { /* 4: interleave (w0, w2) and (w1, w3), then the two results */
    __m512 a_low = interleave_low(w[0], w[2]), a_high = interleave_high(w[0], w[2]);
    __m512 b_low = interleave_low(w[1], w[3]), b_high = interleave_high(w[1], w[3]);
    out[0] = interleave_low(a_low, b_low);
    out[1] = interleave_high(a_low, b_low);
    out[2] = interleave_low(a_high, b_high);
    out[3] = interleave_high(a_high, b_high);
  }
  for (int i = 0; i < count / LANES; i++)
    _mm512_storeu_ps(dst + i * LANES, out[i]);
}

/* One segment of a row of 2- or 4-bit codes, dequantized into dst (the row's first weight). */
AVX512_INLINE void dequantize_table_segment(const segment *t, int bits, float *dst) {
  const int per_byte = 8 / bits;
  const int64_t group_size = t->p->group_size, block = LANES * per_byte;
  __m512 w[4];
  for (int64_t g = 0; g < t->count; g++) {
    __m512 table = t->tables[g];
    int64_t begin = (t->first + g) * group_size;
    if (group_size < block) { /* one group is half a block: 8 bytes in the low lanes */
      __m512i v = load_bytes8(t->bytes + begin / per_byte);
      for (int j = 0; j < per_byte; j++)
        w[j] = _mm512_permutexvar_ps(_mm512_srli_epi32(v, j * bits), table);
      store_natural(w, per_byte, dst + (begin - t->origin), (int)group_size);
      continue;
    }
    for (int64_t at = begin; at < begin + group_size; at += block) {
      __m512i v = load_bytes16(t->bytes + at / per_byte);
      for (int j = 0; j < per_byte; j++)
        w[j] = _mm512_permutexvar_ps(_mm512_srli_epi32(v, j * bits), table);
      store_natural(w, per_byte, dst + (at - t->origin), (int)block);
    }
  }
}

AVX512_INLINE void dequantize_byte_segment(const segment *t, float *dst) {
  const int64_t group_size = t->p->group_size;
  const int mode = t->p->mode;
  const tsr_dtype weight_dtype = tsri_qmm_weight_dtype(t->p);
  uint8_t unpacked[MAX_GROUP];
  for (int64_t g = 0; g < t->count; g++) {
    __m512 scale = _mm512_set1_ps(t->scales[g]), bias = _mm512_set1_ps(t->biases[g]);
    /* Finite scale and bias never make a NaN weight: the cheaper rounding is exact then. */
    bool nan_possible = !finite(t->scales[g]) || !finite(t->biases[g]);
    int64_t begin = (t->first + g) * group_size;
    const uint8_t *codes = t->bytes + begin;
    if (t->p->bits != 8) {
      tsri_qmm_unpack_codes((const uint32_t *)(const void *)t->bytes, begin, group_size, t->p->bits,
                            unpacked);
      codes = unpacked;
    }
    if (mode == TSRI_QF_MXFP8 && t->scales[g] < 0x1p120f && e4m3_nan_free(codes, group_size)) {
      /* The float16 decode: the same weights (see mxfp8_half_ok in cpu/qmm_fast_avx512_qmv.c). */
      __m512 scaled = _mm512_set1_ps(t->scales[g] * 256.0f);
      for (int64_t i = 0; i < group_size; i += LANES)
        _mm512_storeu_ps(dst + (begin - t->origin) + i,
                         _mm512_mul_ps(e4m3_values_over_256(codes + i), scaled));
      continue;
    }
    for (int64_t i = 0; i < group_size; i += LANES) {
      __m512i v = load_bytes16(codes + i);
      __m512 w = mode == TSRI_QF_MXFP8
                     ? byte_weights(v, TSRI_QF_MXFP8, scale, bias, TSR_FLOAT32, false)
                 : nan_possible ? byte_weights(v, TSRI_QF_AFFINE, scale, bias, weight_dtype, true)
                                : byte_weights(v, TSRI_QF_AFFINE, scale, bias, weight_dtype, false);
      _mm512_storeu_ps(dst + (begin - t->origin) + i, w);
    }
  }
}

static AVX512 void dequantize_span(const tsri_qmm_problem *p, int64_t row, int64_t begin,
                                   int64_t count, float *dst) {
  float scales[TSRI_QMM_SEGMENT_GROUPS], biases[TSRI_QMM_SEGMENT_GROUPS];
  __m512 tables[TSRI_QMM_SEGMENT_GROUPS];
  const int kind = kind_of(p);
  const int64_t end = (begin + count) / p->group_size;
  segment t = {p,     (const uint8_t *)(p->w + row * p->w_row_words), 0, 0, begin, scales, biases,
               tables};
  for (t.first = begin / p->group_size; t.first < end; t.first += TSRI_QMM_SEGMENT_GROUPS) {
    t.count = end - t.first < TSRI_QMM_SEGMENT_GROUPS ? end - t.first : TSRI_QMM_SEGMENT_GROUPS;
    tsri_avx512_widen_params(p, row, t.first, t.count, scales, biases);
    if (kind == TABLE4 ||
        kind == FP4) { /* bits a constant in each call: no division in the loops */
      build_tables(p, 4, scales, biases, t.count, tables);
      dequantize_table_segment(&t, 4, dst);
    } else if (kind == TABLE2) {
      build_tables(p, 2, scales, biases, t.count, tables);
      dequantize_table_segment(&t, 2, dst);
    } else {
      dequantize_byte_segment(&t, dst);
    }
  }
}

const tsri_qmm_isa *tsri_qmm_isa_avx512(void) {
  static const tsri_qmm_isa avx512 = {"avx512",
                                      ROWS_AT_ONCE,
                                      tsri_avx512_qmv_max_m,
                                      tsri_avx512_x_order,
                                      tsri_avx512_qmv_rows,
                                      dequantize_span,
                                      tsri_qgemm_kernel_avx512};
  return &avx512;
}

#else

const tsri_qmm_isa *tsri_qmm_isa_avx512(void) {
  return NULL;
}

#endif
