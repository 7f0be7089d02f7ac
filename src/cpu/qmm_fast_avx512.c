/* cpu/qmm_fast_avx512.c — the AVX-512F kernels of the fast quantized matmul (cpu/qmm_fast_isa.h):
 * qmv rows and natural-order dequantization. 2- and 4-bit codes become weights through a
 * 16-entry table per group (vpermps: s * q + b for affine, E2M1 value * scale for mxfp4/nvfp4),
 * 8-bit codes through a conversion (affine) or E4M3 bit arithmetic (mxfp8), 3/5/6-bit codes are
 * unpacked to bytes first; affine weights are rounded to the scales' dtype as cpu/qmm.h says. Every
 * function carries target("avx512f"), so the library builds and runs without it; cpu/qmm_fast.c
 * calls these only when the CPU has AVX-512F. */
#include "cpu/qmm_fast_isa.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f")))
#define AVX512_INLINE static inline __attribute__((always_inline, target("avx512f")))

enum { ROWS_AT_ONCE = 8, LANES = 16, MAX_GROUP = TSRI_QMM_MAX_GROUP };

/* How far ahead of the codes being read qmv asks for the next ones (rows lie one after the
   other, so this runs on into the next rows). Measured on the dev VM (AMD EPYC, 2 cores,
   4096 x 4096 affine 4-bit from memory): no prefetch 6.6 GB/s on one core, 1 KiB 8.2, 4 KiB
   15.4, 8 KiB 18.6 (28 on two cores), 16 KiB 16.7, 32 KiB 18.4. */
enum { PREFETCH_BYTES = 16384 };

AVX512_INLINE void prefetch(const uint8_t *codes) {
  /* An address past the weights is harmless to a prefetch; computed as an integer so that no
     pointer leaves its object. */
  _mm_prefetch((const char *)((uintptr_t)codes + PREFETCH_BYTES), _MM_HINT_T0);
}

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
  switch (p->scale_dtype) {
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

/* 16 byte codes (one per lane) to weights for affine 8-bit or generic bits, or for mxfp8. */
AVX512_INLINE __m512 byte_weights(__m512i codes, int mode, __m512 scale, __m512 bias,
                                  tsr_dtype dtype, bool nan_possible) {
  if (mode == TSRI_QF_MXFP8) return _mm512_mul_ps(e4m3_values(codes), scale);
  return affine_weights(_mm512_cvtepi32_ps(codes), scale, bias, dtype, nan_possible);
}

AVX512_INLINE __m512i load_bytes16(const uint8_t *bytes) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)bytes));
}

AVX512_INLINE __m512i load_bytes8(const uint8_t *bytes) {
  return _mm512_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)bytes));
}

/* Scales and biases of groups [first, first + count) of packed row `row` (as
   tsri_qmm_group_params), 16 at a time; the rest by the portable loop. */
static AVX512 void widen_params(const tsri_qmm_problem *p, int64_t row, int64_t first,
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

/* Which table each lane of a two-group block reads: lanes 8..15 hold the second group. */
AVX512_INLINE __m512i second_half(void) {
  return _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 16, 16, 16, 16, 16, 16, 16, 16);
}

/* ---- qmv: one pass over each weight row, M <= ROWS_AT_ONCE dot products --------------------- */

/* The kinds of rows, each with its own way from codes to weights. */
enum { TABLE2, TABLE4, FP4, AFFINE8, MXFP8, UNPACKED, KINDS };

/* Partial sums [x row][weight row][chain]. Each sum runs in two chains (alternate vectors), and
   with one or two x rows two weight rows are walked together: enough independent FMAs in flight
   to hide their latency, where one chain per output left the loop latency-bound. */
typedef struct {
  __m512 acc[ROWS_AT_ONCE][2][2];
} sums;

/* Groups [first, first + count) of one or two weight rows, their scales and biases widened. */
typedef struct {
  const tsri_qmm_problem *p;
  const float *xp; /* M x K, in x_order */
  const uint8_t *bytes[2];
  int64_t first, count;
  float scales[2][TSRI_QMM_SEGMENT_GROUPS], biases[2][TSRI_QMM_SEGMENT_GROUPS];
  __m512 tables[2][TSRI_QMM_SEGMENT_GROUPS]; /* the table kinds' */
} qmv_segment;

AVX512_INLINE void add_products(sums *s, int r, int chain, __m512 w, const float *x,
                                int64_t k_stride, int rows) {
#pragma GCC unroll 8
  for (int m = 0; m < rows; m++)
    s->acc[m][r][chain] =
        _mm512_fmadd_ps(w, _mm512_loadu_ps(x + m * k_stride), s->acc[m][r][chain]);
}

/* Group g's table of weight row r: built beforehand for affine (t->tables: rounding to the
   scales' dtype costs as much as a group's dot products), formed here for E2M1 (one multiply;
   writing and re-reading a table per group cost mxfp4 qmv a quarter of its time). */
AVX512_INLINE __m512 group_table(const qmv_segment *t, int r, int64_t g, bool fp4) {
  if (!fp4) return t->tables[r][g];
  __m512 e2m1 = _mm512_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f, -0.5f, -1.0f,
                               -1.5f, -2.0f, -3.0f, -4.0f, -6.0f);
  return _mm512_mul_ps(e2m1, _mm512_set1_ps(t->scales[r][g]));
}

/* 2- or 4-bit codes (the table kinds); x in the (16 lanes, 8 / bits) order; fp4: E2M1 codes. */
AVX512_INLINE void table_segment(const qmv_segment *t, int rows, int wrows, int bits, bool fp4,
                                 sums *s) {
  const int per_byte = 8 / bits;
  const int64_t k = t->p->k, group_size = t->p->group_size, block = LANES * per_byte;
  __m512 table[2], second[2];
  if (group_size >= block) {
    for (int64_t g = 0; g < t->count; g++) {
      for (int r = 0; r < wrows; r++)
        table[r] = group_table(t, r, g, fp4);
      int64_t begin = (t->first + g) * group_size;
      for (int64_t at = begin; at < begin + group_size; at += block)
#pragma GCC unroll 2
        for (int r = 0; r < wrows; r++) {
          const uint8_t *codes = t->bytes[r] + (uint64_t)at / (uint64_t)per_byte;
          prefetch(codes);
          __m512i v = load_bytes16(codes);
#pragma GCC unroll 4
          for (int j = 0; j < per_byte; j++)
            add_products(s, r, j & 1,
                         _mm512_permutexvar_ps(_mm512_srli_epi32(v, j * bits), table[r]),
                         t->xp + at + j * LANES, k, rows);
        }
    }
    return;
  }
  /* Two groups per 16 bytes (nvfp4's 16, or 32 at 2 bits): one table per half of the lanes. */
  int64_t g = 0;
  for (; g + 2 <= t->count; g += 2) {
    int64_t at = (t->first + g) * group_size;
#pragma GCC unroll 2
    for (int r = 0; r < wrows; r++) {
      table[r] = group_table(t, r, g, fp4);
      second[r] = group_table(t, r, g + 1, fp4);
      prefetch(t->bytes[r] + at / per_byte);
      __m512i v = load_bytes16(t->bytes[r] + at / per_byte);
#pragma GCC unroll 4
      for (int j = 0; j < per_byte; j++) {
        __m512i index = _mm512_ternarylogic_epi32(_mm512_srli_epi32(v, j * bits),
                                                  _mm512_set1_epi32(15), second_half(), 0xea);
        add_products(s, r, j & 1, _mm512_permutex2var_ps(table[r], index, second[r]),
                     t->xp + at + j * LANES, k, rows);
      }
    }
  }
  if (g == t->count) return;
  /* The row's last group alone: a half block in 8 lanes. */
  int64_t at = (t->first + g) * group_size;
  for (int r = 0; r < wrows; r++) {
    table[r] = group_table(t, r, g, fp4);
    __m512i v = load_bytes8(t->bytes[r] + at / per_byte);
    for (int j = 0; j < per_byte; j++) {
      __m512 w = _mm512_permutexvar_ps(_mm512_srli_epi32(v, j * bits), table[r]);
      for (int m = 0; m < rows; m++) {
        __m512 x = _mm512_maskz_loadu_ps(0xff, t->xp + m * k + at + j * (LANES / 2));
        s->acc[m][r][0] = _mm512_mask3_fmadd_ps(w, x, s->acc[m][r][0], 0xff);
      }
    }
  }
}

/* One group of 8-bit codes (affine 8, mxfp8) or of 3/5/6-bit codes unpacked to bytes, of each
   weight row; x in natural order. Groups hold at least 32 codes: two vectors, one per chain. */
AVX512_INLINE void byte_group(const qmv_segment *t, int rows, int wrows, int mode, int64_t begin,
                              const uint8_t *const *codes, const __m512 *scale, const __m512 *bias,
                              bool nan_possible, sums *s) {
  const int64_t k = t->p->k, group_size = t->p->group_size;
  for (int64_t i = 0; i < group_size; i += 2 * LANES)
#pragma GCC unroll 2
    for (int r = 0; r < wrows; r++)
#pragma GCC unroll 2
      for (int chain = 0; chain < 2; chain++) {
        prefetch(t->bytes[r] + (begin + i) * t->p->bits / 8 + chain * LANES);
        __m512i v = load_bytes16(codes[r] + i + chain * LANES);
        __m512 w = byte_weights(v, mode, scale[r], bias[r], t->p->scale_dtype, nan_possible);
        add_products(s, r, chain, w, t->xp + begin + i + chain * LANES, k, rows);
      }
}

AVX512_INLINE void byte_segment(const qmv_segment *t, int rows, int wrows, int mode, bool unpack,
                                sums *s) {
  const int64_t group_size = t->p->group_size;
  uint8_t unpacked[2][MAX_GROUP];
  for (int64_t g = 0; g < t->count; g++) {
    int64_t begin = (t->first + g) * group_size;
    const uint8_t *codes[2];
    __m512 scale[2], bias[2];
    bool nan_possible = false;
    for (int r = 0; r < wrows; r++) {
      scale[r] = _mm512_set1_ps(t->scales[r][g]);
      bias[r] = _mm512_set1_ps(t->biases[r][g]);
      nan_possible |= !finite(t->scales[r][g]) || !finite(t->biases[r][g]);
      codes[r] = t->bytes[r] + begin;
      if (unpack) {
        tsri_qmm_unpack_codes((const uint32_t *)(const void *)t->bytes[r], begin, group_size,
                              t->p->bits, unpacked[r]);
        codes[r] = unpacked[r];
      }
    }
    if (nan_possible && mode == TSRI_QF_AFFINE)
      byte_group(t, rows, wrows, mode, begin, codes, scale, bias, true, s);
    else
      byte_group(t, rows, wrows, mode, begin, codes, scale, bias, false, s);
  }
}

/* Weight rows [row, row + wrows) dotted with the `rows` rows of xp. */
AVX512_INLINE void qmv_rows_at(const tsri_qmm_problem *p, const float *xp, int64_t row, int kind,
                               int rows, int wrows) {
  sums s;
#pragma GCC unroll 8
  for (int m = 0; m < rows; m++)
    for (int r = 0; r < 2; r++)
      s.acc[m][r][0] = s.acc[m][r][1] = _mm512_setzero_ps();
  qmv_segment t;
  t.p = p;
  t.xp = xp;
  for (int r = 0; r < wrows; r++)
    t.bytes[r] = (const uint8_t *)(p->w + (row + r) * p->w_row_words);
  const int64_t groups = p->k / p->group_size;
  for (t.first = 0; t.first < groups; t.first += TSRI_QMM_SEGMENT_GROUPS) {
    t.count =
        groups - t.first < TSRI_QMM_SEGMENT_GROUPS ? groups - t.first : TSRI_QMM_SEGMENT_GROUPS;
    for (int r = 0; r < wrows; r++) {
      widen_params(p, row + r, t.first, t.count, t.scales[r], t.biases[r]);
      if (kind == TABLE2 || kind == TABLE4) /* FP4 forms its tables as it goes */
        build_tables(p, kind == TABLE2 ? 2 : 4, t.scales[r], t.biases[r], t.count, t.tables[r]);
    }
    switch (kind) {
      case TABLE2:
        table_segment(&t, rows, wrows, 2, false, &s);
        break;
      case TABLE4:
        table_segment(&t, rows, wrows, 4, false, &s);
        break;
      case FP4:
        table_segment(&t, rows, wrows, 4, true, &s);
        break;
      case AFFINE8:
        byte_segment(&t, rows, wrows, TSRI_QF_AFFINE, false, &s);
        break;
      case MXFP8:
        byte_segment(&t, rows, wrows, TSRI_QF_MXFP8, false, &s);
        break;
      default:
        byte_segment(&t, rows, wrows, TSRI_QF_AFFINE, true, &s);
        break;
    }
  }
#pragma GCC unroll 8
  for (int m = 0; m < rows; m++)
    for (int r = 0; r < wrows; r++)
      p->y[m * p->y_row_stride + row + r] =
          _mm512_reduce_add_ps(_mm512_add_ps(s.acc[m][r][0], s.acc[m][r][1]));
}

AVX512_INLINE void qmv_kind(const tsri_qmm_problem *p, const float *xp, int64_t row_begin,
                            int64_t row_end, int kind, int rows) {
  int64_t row = row_begin;
  if (rows <= 2)
    for (; row + 2 <= row_end; row += 2)
      qmv_rows_at(p, xp, row, kind, rows, 2);
  for (; row < row_end; row++)
    qmv_rows_at(p, xp, row, kind, rows, 1);
}

typedef void (*qmv_fn)(const tsri_qmm_problem *p, const float *xp, int64_t b, int64_t e);

/* One function per (kind, rows): the compiler keeps the accumulators in registers only when
   both are constants. */
#define QMV_INSTANCE(KIND, ROWS)                                                                \
  static AVX512 void qmv_##KIND##_##ROWS(const tsri_qmm_problem *p, const float *xp, int64_t b, \
                                         int64_t e) {                                           \
    qmv_kind(p, xp, b, e, KIND, ROWS);                                                          \
  }
#define QMV_KIND(KIND)                                                                            \
  QMV_INSTANCE(KIND, 1)                                                                           \
  QMV_INSTANCE(KIND, 2)                                                                           \
  QMV_INSTANCE(KIND, 3)                                                                           \
  QMV_INSTANCE(KIND, 4)                                                                           \
  QMV_INSTANCE(KIND, 5)                                                                           \
  QMV_INSTANCE(KIND, 6)                                                                           \
  QMV_INSTANCE(KIND, 7)                                                                           \
  QMV_INSTANCE(KIND, 8)                                                                           \
  static const qmv_fn qmv_##KIND[ROWS_AT_ONCE] = {qmv_##KIND##_1, qmv_##KIND##_2, qmv_##KIND##_3, \
                                                  qmv_##KIND##_4, qmv_##KIND##_5, qmv_##KIND##_6, \
                                                  qmv_##KIND##_7, qmv_##KIND##_8};
QMV_KIND(TABLE2)
QMV_KIND(TABLE4)
QMV_KIND(FP4)
QMV_KIND(AFFINE8)
QMV_KIND(MXFP8)
QMV_KIND(UNPACKED)
#undef QMV_KIND
#undef QMV_INSTANCE

static int kind_of(const tsri_qmm_problem *p) {
  if (p->mode == TSRI_QF_MXFP8) return MXFP8;
  if (p->bits == 4) return p->mode == TSRI_QF_AFFINE ? TABLE4 : FP4; /* FP4: mxfp4, nvfp4 */
  if (p->bits == 2) return TABLE2;
  return p->bits == 8 ? AFFINE8 : UNPACKED;
}

static void qmv_rows(const tsri_qmm_problem *p, const float *xp, int64_t row_begin,
                     int64_t row_end) {
  static const qmv_fn *const kinds[KINDS] = {qmv_TABLE2,  qmv_TABLE4, qmv_FP4,
                                             qmv_AFFINE8, qmv_MXFP8,  qmv_UNPACKED};
  kinds[kind_of(p)][p->m - 1](p, xp, row_begin, row_end);
}

/* Measured on the dev VM (bench/RESULTS.md "qmm_cpu"), 4096 x 4096 from memory, 2 threads, ms
   qmv / fused GEMM (cpu/qgemm.c), best of three runs, affine 4-bit, affine 8-bit, mxfp4, mxfp8,
   nvfp4: M = 8 2.45 / 2.27, 1.97 / 2.77, 2.24 / 2.19, 3.40 / 5.05, 2.55 / 2.96; M = 12 3.19 /
   3.27, 3.27 / 3.78, 3.04 / 3.16, 5.72 / 6.47, 3.65 / 3.99; M = 16 4.68 / 2.89, 4.01 / 3.33,
   4.46 / 2.84, 6.19 / 5.98, 4.90 / 3.53. 3/5/6-bit codes are unpacked by a scalar loop that
   qmv repeats for every 8 rows of x. */
static int64_t qmv_max_m(const tsri_qmm_problem *p) {
  return kind_of(p) == UNPACKED ? 8 : 12;
}

static tsri_qmm_x_order x_order(const tsri_qmm_problem *p) {
  int kind = kind_of(p);
  if (kind == TABLE2) return (tsri_qmm_x_order){LANES, 4};
  if (kind == TABLE4 || kind == FP4) return (tsri_qmm_x_order){LANES, 2};
  return (tsri_qmm_x_order){0, 1};
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
    for (int64_t i = 0; i < group_size; i += LANES) {
      __m512i v = load_bytes16(codes + i);
      __m512 w =
          mode == TSRI_QF_MXFP8 ? byte_weights(v, TSRI_QF_MXFP8, scale, bias, TSR_FLOAT32, false)
          : nan_possible ? byte_weights(v, TSRI_QF_AFFINE, scale, bias, t->p->scale_dtype, true)
                         : byte_weights(v, TSRI_QF_AFFINE, scale, bias, t->p->scale_dtype, false);
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
    widen_params(p, row, t.first, t.count, scales, biases);
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
                                      qmv_max_m,
                                      x_order,
                                      qmv_rows,
                                      dequantize_span,
                                      tsri_qgemm_kernel_avx512};
  return &avx512;
}

#else

const tsri_qmm_isa *tsri_qmm_isa_avx512(void) {
  return NULL;
}

#endif
