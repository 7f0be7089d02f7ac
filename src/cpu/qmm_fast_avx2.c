/* cpu/qmm_fast_avx2.c — the AVX2+FMA+F16C kernels of the fast quantized matmul
 * (cpu/qmm_fast_isa.h): qmv rows and natural-order dequantization, 8 lanes wide. Affine codes are
 * converted and scaled (2-bit ones through an 8-entry table per group), E2M1 codes read one of two
 * 8-entry tables (value * scale, by the sign bit), E4M3 codes are decoded through float16 in qmv
 * (with bit arithmetic where a segment has a NaN code or a scale of 2^120 or more, and in
 * dequantization), 3/5/6-bit codes are unpacked to bytes first. qmv takes affine in the factored
 * form (cpu/qmm_fast_isa.h): s * q in float32, never rounded to the scales' dtype, and b * (sum of
 * x over the group) added once per group; dequantization keeps the exact weights. Every function
 * carries target("avx2,fma,f16c"), so the library builds and runs without them; cpu/qmm_fast.c
 * calls these only when the CPU has all three. */
#include "cpu/qmm_fast_isa.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma,f16c")))
#define AVX2_INLINE static inline __attribute__((always_inline, target("avx2,fma,f16c")))

enum { ROWS_AT_ONCE = 4, LANES = 8, MAX_GROUP = TSRI_QMM_MAX_GROUP };

/* How far ahead of the codes being read the kernels ask for the next ones (the AVX-512 file
   has the measurements). */
enum { PREFETCH_BYTES = 8192 };

/* The kinds of rows, each with its own way from codes to weights. */
enum { AFFINE2, AFFINE4, FP4, AFFINE8, MXFP8, UNPACKED, KINDS };

static int kind_of(const tsri_qmm_problem *p) {
  if (p->mode == TSRI_QF_MXFP8) return MXFP8;
  if (p->mode != TSRI_QF_AFFINE) return FP4; /* mxfp4, nvfp4 */
  if (p->bits == 2) return AFFINE2;
  if (p->bits == 4) return AFFINE4;
  return p->bits == 8 ? AFFINE8 : UNPACKED;
}

/* ---- weights from codes ---------------------------------------------------------------------- */

/* v rounded to the affine scales' dtype T and widened back (float32: unchanged), bit for bit
   tsri_qmm_round_to_scale_dtype (see the AVX-512 twin). */
AVX2_INLINE __m256 round_to(__m256 v, tsr_dtype dtype) {
  if (dtype == TSR_FLOAT16)
    return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  if (dtype != TSR_BFLOAT16) return v;
  __m256i bits = _mm256_castps_si256(v);
  __m256i odd = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  __m256i rounded = _mm256_add_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x7fff)), odd);
  __m256i quiet = _mm256_or_si256(bits, _mm256_set1_epi32(0x00400000));
  __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff)),
                                   _mm256_set1_epi32(0x7f800000));
  __m256i chosen = _mm256_blendv_epi8(rounded, quiet, nan);
  return _mm256_castsi256_ps(_mm256_and_si256(chosen, _mm256_set1_epi32((int)0xffff0000u)));
}

/* Affine weights T(T(s * q) + b) of codes q already in float32 (cpu/qmm.h). */
AVX2_INLINE __m256 affine_weights(__m256 q, __m256 scale, __m256 bias, tsr_dtype dtype) {
  __m256 scaled = round_to(_mm256_mul_ps(scale, q), dtype);
  return round_to(_mm256_add_ps(scaled, bias), dtype);
}

/* One group's constants: scale and bias, the scales' dtype, and for the table kinds 8-entry
   tables (AFFINE2: the weights of codes i & 3; FP4: E2M1 value of code i * scale in `table`, of
   code 8 + i in `negative`: products formed as the scalar decode forms them, so that even the
   NaN of 0 * Inf or of a NaN scale has its bits). */
typedef struct {
  __m256 scale, bias, table, negative;
  tsr_dtype dtype;
} group_consts;

AVX2_INLINE group_consts group_setup(int kind, float scale, float bias, tsr_dtype dtype,
                                     bool factored) {
  group_consts c = {_mm256_set1_ps(scale), _mm256_set1_ps(bias), _mm256_setzero_ps(),
                    _mm256_setzero_ps(), dtype};
  if (kind == AFFINE2) {
    __m256 q = _mm256_setr_ps(0.0f, 1.0f, 2.0f, 3.0f, 0.0f, 1.0f, 2.0f, 3.0f);
    c.table = factored ? _mm256_mul_ps(q, c.scale) : affine_weights(q, c.scale, c.bias, dtype);
  } else if (kind == FP4) {
    __m256 e2m1 = _mm256_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f);
    __m256 negative = _mm256_setr_ps(-0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f);
    /* Opaque to the compiler, which would otherwise form (-v) * s as -(v * s): equal but for
       the sign of a NaN (0 * Inf), which the scalar decode's multiply leaves as the CPU's. */
    __asm__("" : "+x"(negative));
    c.table = _mm256_mul_ps(e2m1, c.scale);
    c.negative = _mm256_mul_ps(negative, c.scale);
  }
  return c;
}

/* E4M3 codes (one per lane) to float32, exactly tsri_qf_e4m3_decode, never forming a float32
   subnormal (see the AVX-512 twin): normal codes by placing the magnitude at float32's
   exponent/mantissa boundary with the bias difference 120 added, subnormal ones as m * 2^-9;
   0x7F / 0xFF the quiet NaN with the code's sign, bit for bit tsri_qf_e4m3_decode. */
AVX2_INLINE __m256 e4m3_values(__m256i codes) {
  __m256i magnitude = _mm256_and_si256(codes, _mm256_set1_epi32(0x7f));
  __m256i sign =
      _mm256_and_si256(_mm256_slli_epi32(codes, 24), _mm256_set1_epi32((int)0x80000000u));
  __m256 normal = _mm256_castsi256_ps(
      _mm256_add_epi32(_mm256_slli_epi32(magnitude, 20), _mm256_set1_epi32(120 << 23)));
  __m256 subnormal = _mm256_mul_ps(_mm256_cvtepi32_ps(magnitude), _mm256_set1_ps(0x1p-9f));
  __m256 is_subnormal = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(8), magnitude));
  __m256 nan = _mm256_castsi256_ps(_mm256_cmpeq_epi32(magnitude, _mm256_set1_epi32(0x7f)));
  __m256 values = _mm256_blendv_ps(normal, subnormal, is_subnormal);
  values = _mm256_blendv_ps(values, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000)), nan);
  return _mm256_or_ps(_mm256_castsi256_ps(sign), values); /* a NaN keeps the code's sign too */
}

/* 8 E4M3 codes to float32 values times 2^-8 through float16, exactly (the AVX-512 twin,
   e4m3_values_over_256, says how); NaN codes come out as 1.875 * 2^-8, so only for codes that
   mxfp8_half_ok has ruled them out of. */
AVX2_INLINE __m256 e4m3_values_over_256(const uint8_t *bytes) {
  __m128i extended = _mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)bytes));
  return _mm256_cvtph_ps(_mm_and_si128(_mm_slli_epi16(extended, 7), _mm_set1_epi16(-0x4001)));
}

/* The weights of the codes in the low bits of each lane (bits above them are ignored); affine
   `factored`: s * q only. */
AVX2_INLINE __m256 weights(__m256i codes, int kind, const group_consts *c, bool factored) {
  switch (kind) {
    case AFFINE2:
      return _mm256_permutevar8x32_ps(c->table, codes);
    case FP4: { /* the code's sign bit, moved to bit 31, picks the table */
      __m256 sign = _mm256_castsi256_ps(_mm256_slli_epi32(codes, 28));
      return _mm256_blendv_ps(_mm256_permutevar8x32_ps(c->table, codes),
                              _mm256_permutevar8x32_ps(c->negative, codes), sign);
    }
    case MXFP8:
      return _mm256_mul_ps(e4m3_values(codes), c->scale);
    case AFFINE4:
      codes = _mm256_and_si256(codes, _mm256_set1_epi32(15)); /* fall through */
    default:
      if (factored) return _mm256_mul_ps(_mm256_cvtepi32_ps(codes), c->scale);
      return affine_weights(_mm256_cvtepi32_ps(codes), c->scale, c->bias, c->dtype);
  }
}

AVX2_INLINE __m256i load_bytes8(const uint8_t *bytes) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)bytes));
}

static inline int bits_of(int kind) {
  return kind == AFFINE2 ? 2 : kind == AFFINE4 || kind == FP4 ? 4 : 8;
}

/* ---- scales and biases ----------------------------------------------------------------------- */

/* Scales and biases of groups [first, first + count) of packed row `row` (as
   tsri_qmm_group_params), 8 at a time; the rest by the portable loop. */
static AVX2 void widen_params(const tsri_qmm_problem *p, int64_t row, int64_t first, int64_t count,
                              float *scales, float *biases) {
  const int64_t at = row * p->scale_row_stride + first;
  int64_t i = 0;
  for (; i + LANES <= count; i += LANES) {
    __m256 scale, bias = _mm256_setzero_ps();
    if (p->mode == TSRI_QF_NVFP4) {
      scale = e4m3_values(load_bytes8((const uint8_t *)p->scales + at + i));
    } else if (p->mode != TSRI_QF_AFFINE) { /* E8M0: 2^(c - 127); 0 is 2^-127, 255 is +Inf */
      __m256i codes = load_bytes8((const uint8_t *)p->scales + at + i);
      __m256i zero = _mm256_cmpeq_epi32(codes, _mm256_setzero_si256());
      __m256i bits =
          _mm256_blendv_epi8(_mm256_slli_epi32(codes, 23), _mm256_set1_epi32(0x00400000), zero);
      scale = _mm256_castsi256_ps(bits);
    } else if (p->scale_dtype == TSR_FLOAT32) {
      scale = _mm256_loadu_ps((const float *)p->scales + at + i);
      bias = _mm256_loadu_ps((const float *)p->biases + at + i);
    } else {
      __m128i s_raw =
          _mm_loadu_si128((const __m128i *)(const void *)((const uint16_t *)p->scales + at + i));
      __m128i b_raw =
          _mm_loadu_si128((const __m128i *)(const void *)((const uint16_t *)p->biases + at + i));
      if (p->scale_dtype == TSR_FLOAT16) { /* exact widening, as tsri_f16_to_f32 */
        scale = _mm256_cvtph_ps(s_raw);
        bias = _mm256_cvtph_ps(b_raw);
      } else { /* bfloat16: the upper half of a float32 */
        scale = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(s_raw), 16));
        bias = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(b_raw), 16));
      }
    }
    _mm256_storeu_ps(scales + i, scale);
    _mm256_storeu_ps(biases + i, bias);
  }
  if (i < count) tsri_qmm_group_params(p, row, first + i, count - i, scales + i, biases + i);
}

/* ---- one segment of groups of one or two packed rows ---------------------------------------- */

typedef struct {
  const tsri_qmm_problem *p;
  const float *xsums;      /* qmv of affine: M x groups sums of x (cpu/qmm_fast_isa.h) */
  const uint8_t *bytes[2]; /* the packed rows */
  int64_t first, count;    /* groups [first, first + count) */
  float scales[2][TSRI_QMM_SEGMENT_GROUPS], biases[2][TSRI_QMM_SEGMENT_GROUPS];
} segment;

/* Partial sums [x row][weight row][chain]: two chains per sum (alternate vectors) and, with one
   or two x rows, two weight rows at once, so that enough FMAs are in flight (one chain per
   output left the loop latency-bound, as in the AVX-512 twin). */
typedef struct {
  __m256 acc[ROWS_AT_ONCE][2][2];
} sums;

AVX2_INLINE void prefetch(const uint8_t *codes) {
  _mm_prefetch((const char *)((uintptr_t)codes + PREFETCH_BYTES), _MM_HINT_T0);
}

/* The codes of one group of row r: in place, or unpacked to bytes for 3/5/6 bits. */
AVX2_INLINE const uint8_t *group_codes(const segment *t, int r, int kind, int64_t begin,
                                       uint8_t *unpacked) {
  if (kind != UNPACKED) return t->bytes[r] + begin * bits_of(kind) / 8;
  tsri_qmm_unpack_codes((const uint32_t *)(const void *)t->bytes[r], begin, t->p->group_size,
                        t->p->bits, unpacked);
  return unpacked;
}

/* Every weight of the segment's rows times the matching x values (xp in x_order) into the sums.
   8-bit codes take two blocks per step (groups hold at least 32), the others a block whose
   per_byte vectors alternate chains. */
AVX2_INLINE void dot_segment(const segment *t, int kind, const float *xp, int rows, int wrows,
                             bool half, sums *s) {
  const int bits = bits_of(kind), per_byte = 8 / bits, blocks = per_byte == 1 ? 2 : 1;
  const int64_t k = t->p->k, group_size = t->p->group_size, step = LANES * per_byte * blocks;
  uint8_t unpacked[2][MAX_GROUP];
  for (int64_t g = 0; g < t->count; g++) {
    int64_t begin = (t->first + g) * group_size;
    group_consts c[2];
    const uint8_t *codes[2];
    for (int r = 0; r < wrows; r++) {
      c[r] = group_setup(kind, t->scales[r][g] * (half ? 256.0f : 1.0f), t->biases[r][g],
                         tsri_qmm_weight_dtype(t->p), true);
      codes[r] = group_codes(t, r, kind, begin, unpacked[r]);
    }
    for (int64_t at = begin; at < begin + group_size; at += step)
#pragma GCC unroll 2
      for (int r = 0; r < wrows; r++) {
        prefetch(t->bytes[r] + at * t->p->bits / 8);
#pragma GCC unroll 2
        for (int b = 0; b < blocks; b++) {
          const uint8_t *bytes = codes[r] + (at - begin) / per_byte + b * LANES;
          __m256i v = half ? _mm256_setzero_si256() : load_bytes8(bytes);
#pragma GCC unroll 4
          for (int j = 0; j < per_byte; j++) {
            __m256 w = half ? _mm256_mul_ps(e4m3_values_over_256(bytes), c[r].scale)
                            : weights(_mm256_srli_epi32(v, j * bits), kind, &c[r], true);
            const float *x = xp + at + (b + j) * LANES;
            int chain = (b + j) & 1;
#pragma GCC unroll 4
            for (int m = 0; m < rows; m++)
              s->acc[m][r][chain] =
                  _mm256_fmadd_ps(w, _mm256_loadu_ps(x + m * k), s->acc[m][r][chain]);
          }
        }
      }
  }
}

/* The segment's weights of row 0 in natural order into dst, whose first element is the row's
   code `origin`. */
AVX2_INLINE void dequantize_segment(const segment *t, int kind, float *dst, int64_t origin) {
  const int bits = bits_of(kind), per_byte = 8 / bits;
  const int64_t group_size = t->p->group_size;
  uint8_t unpacked[MAX_GROUP];
  for (int64_t g = 0; g < t->count; g++) {
    int64_t begin = (t->first + g) * group_size;
    group_consts c =
        group_setup(kind, t->scales[0][g], t->biases[0][g], tsri_qmm_weight_dtype(t->p), false);
    const uint8_t *codes = group_codes(t, 0, kind, begin, unpacked);
    for (int64_t at = begin; at < begin + group_size; at += LANES * per_byte) {
      __m256i v = load_bytes8(codes + (at - begin) / per_byte);
      if (per_byte == 1) {
        _mm256_storeu_ps(dst + (at - origin), weights(v, kind, &c, false));
        continue;
      }
      float lanes[4][LANES]; /* lane i of vector j is code per_byte * i + j */
      for (int j = 0; j < per_byte; j++)
        _mm256_storeu_ps(lanes[j], weights(_mm256_srli_epi32(v, j * bits), kind, &c, false));
      for (int i = 0; i < LANES; i++)
        for (int j = 0; j < per_byte; j++)
          dst[at - origin + per_byte * i + j] = lanes[j][i];
    }
  }
}

AVX2_INLINE float sum_lanes(__m256 v) {
  __m128 half = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  half = _mm_add_ps(half, _mm_movehl_ps(half, half));
  half = _mm_add_ss(half, _mm_movehdup_ps(half));
  return _mm_cvtss_f32(half);
}

/* The factored affine form's b * (sum of x over the group) for the segment's groups, added to
   the sums' second chains as further terms of their lanes (tail lanes zero). */
AVX2_INLINE void bias_products(const segment *t, int rows, int wrows, sums *s) {
  const int64_t groups = t->p->k / t->p->group_size;
  for (int64_t i = 0; i < t->count; i += LANES) {
    int64_t n = t->count - i < LANES ? t->count - i : LANES;
    __m256i lanes =
        _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
#pragma GCC unroll 2
    for (int r = 0; r < wrows; r++) {
      __m256 bias = _mm256_maskload_ps(t->biases[r] + i, lanes);
#pragma GCC unroll 4
      for (int m = 0; m < rows; m++) {
        __m256 xsum = _mm256_maskload_ps(t->xsums + m * groups + t->first + i, lanes);
        s->acc[m][r][1] = _mm256_fmadd_ps(bias, xsum, s->acc[m][r][1]);
      }
    }
  }
}

/* Whether mxfp8 row r's segment may take the float16 decode: no NaN code and every scale below
   2^120 (the AVX-512 twin, mxfp8_half_ok, says why the weights are then the same). */
AVX2_INLINE bool mxfp8_half_ok(const segment *t, int r) {
  const int64_t group_size = t->p->group_size;
  const uint8_t *bytes = t->bytes[r] + t->first * group_size;
  __m256i most = _mm256_setzero_si256(), sign = _mm256_set1_epi8((char)0x80);
  for (int64_t i = 0; i < t->count * group_size; i += 32) /* a NaN code | 0x80 is 0xFF */
    most = _mm256_max_epu8(
        most,
        _mm256_or_si256(_mm256_loadu_si256((const __m256i *)(const void *)(bytes + i)), sign));
  if (_mm256_movemask_epi8(_mm256_cmpeq_epi8(most, _mm256_set1_epi8(-1))) != 0) return false;
  for (int64_t g = 0; g < t->count; g++)
    if (!(t->scales[r][g] < 0x1p120f)) return false;
  return true;
}

/* Weight rows [row, row + wrows) dotted with the `rows` rows of xp. */
AVX2_INLINE void walk_rows_at(const tsri_qmm_problem *p, const float *xp, const float *xsums,
                              int64_t row, int kind, int rows, int wrows) {
  sums s;
#pragma GCC unroll 4
  for (int m = 0; m < rows; m++)
    for (int r = 0; r < 2; r++)
      s.acc[m][r][0] = s.acc[m][r][1] = _mm256_setzero_ps();
  segment t;
  t.p = p;
  t.xsums = xsums;
  for (int r = 0; r < wrows; r++)
    t.bytes[r] = (const uint8_t *)(p->w + (row + r) * p->w_row_words);
  const int64_t groups = tsri_qmm_row_codes(p) / p->group_size;
  for (t.first = 0; t.first < groups; t.first += TSRI_QMM_SEGMENT_GROUPS) {
    t.count =
        groups - t.first < TSRI_QMM_SEGMENT_GROUPS ? groups - t.first : TSRI_QMM_SEGMENT_GROUPS;
    for (int r = 0; r < wrows; r++)
      widen_params(p, row + r, t.first, t.count, t.scales[r], t.biases[r]);
    if (p->mode == TSRI_QF_AFFINE) bias_products(&t, rows, wrows, &s);
    bool half = kind == MXFP8;
    for (int r = 0; r < wrows && half; r++)
      half = mxfp8_half_ok(&t, r);
    if (half)
      dot_segment(&t, kind, xp, rows, wrows, true, &s);
    else
      dot_segment(&t, kind, xp, rows, wrows, false, &s);
  }
#pragma GCC unroll 4
  for (int m = 0; m < rows; m++)
    for (int r = 0; r < wrows; r++)
      p->y[m * p->y_row_stride + row + r] =
          sum_lanes(_mm256_add_ps(s.acc[m][r][0], s.acc[m][r][1]));
}

/* Rows [row_begin, row_end) dotted with xp. */
AVX2_INLINE void walk_rows(const tsri_qmm_problem *p, const float *xp, const float *xsums,
                           int64_t row_begin, int64_t row_end, int kind, int rows) {
  int64_t row = row_begin;
  if (rows <= 2)
    for (; row + 2 <= row_end; row += 2)
      walk_rows_at(p, xp, xsums, row, kind, rows, 2);
  for (; row < row_end; row++)
    walk_rows_at(p, xp, xsums, row, kind, rows, 1);
}

/* Codes [begin, begin + count) of packed row `row`, whole groups, into dst (the fused GEMM's
   panels). */
AVX2_INLINE void dequantize_span_of(const tsri_qmm_problem *p, int64_t row, int64_t begin,
                                    int64_t count, float *dst, int kind) {
  segment t;
  t.p = p;
  t.bytes[0] = (const uint8_t *)(p->w + row * p->w_row_words);
  const int64_t end = (begin + count) / p->group_size;
  for (t.first = begin / p->group_size; t.first < end; t.first += TSRI_QMM_SEGMENT_GROUPS) {
    t.count = end - t.first < TSRI_QMM_SEGMENT_GROUPS ? end - t.first : TSRI_QMM_SEGMENT_GROUPS;
    widen_params(p, row, t.first, t.count, t.scales[0], t.biases[0]);
    dequantize_segment(&t, kind, dst, begin);
  }
}

/* ---- the entry points: one function per (kind, rows) so both are constants ------------------ */

typedef void (*qmv_fn)(const tsri_qmm_problem *p, const float *xp, const float *xsums, int64_t b,
                       int64_t e);
typedef void (*span_fn)(const tsri_qmm_problem *p, int64_t row, int64_t begin, int64_t count,
                        float *dst);

#define QMV_INSTANCE(KIND, ROWS)                                                   \
  static AVX2 void qmv_##KIND##_##ROWS(const tsri_qmm_problem *p, const float *xp, \
                                       const float *xsums, int64_t b, int64_t e) { \
    walk_rows(p, xp, xsums, b, e, KIND, ROWS);                                     \
  }
#define KIND_INSTANCES(KIND)                                                                      \
  QMV_INSTANCE(KIND, 1)                                                                           \
  QMV_INSTANCE(KIND, 2)                                                                           \
  QMV_INSTANCE(KIND, 3)                                                                           \
  QMV_INSTANCE(KIND, 4)                                                                           \
  static const qmv_fn qmv_##KIND[ROWS_AT_ONCE] = {qmv_##KIND##_1, qmv_##KIND##_2, qmv_##KIND##_3, \
                                                  qmv_##KIND##_4};                                \
  static AVX2 void span_##KIND(const tsri_qmm_problem *p, int64_t row, int64_t begin,             \
                               int64_t count, float *dst) {                                       \
    dequantize_span_of(p, row, begin, count, dst, KIND);                                          \
  }
KIND_INSTANCES(AFFINE2)
KIND_INSTANCES(AFFINE4)
KIND_INSTANCES(FP4)
KIND_INSTANCES(AFFINE8)
KIND_INSTANCES(MXFP8)
KIND_INSTANCES(UNPACKED)
#undef KIND_INSTANCES
#undef QMV_INSTANCE

static void qmv_rows(const tsri_qmm_problem *p, const float *xp, const float *xsums,
                     int64_t row_begin, int64_t row_end) {
  static const qmv_fn *const kinds[KINDS] = {qmv_AFFINE2, qmv_AFFINE4, qmv_FP4,
                                             qmv_AFFINE8, qmv_MXFP8,   qmv_UNPACKED};
  kinds[kind_of(p)][p->m - 1](p, xp, xsums, row_begin, row_end);
}

static void dequantize_span(const tsri_qmm_problem *p, int64_t row, int64_t begin, int64_t count,
                            float *dst) {
  static const span_fn kinds[KINDS] = {span_AFFINE2, span_AFFINE4, span_FP4,
                                       span_AFFINE8, span_MXFP8,   span_UNPACKED};
  kinds[kind_of(p)](p, row, begin, count, dst);
}

/* Measured on the dev VM forced to AVX2 (4096 x 4096 from memory, 2 threads): qmv against the
   tiled path, affine 4-bit 5.4 ms / 7.5 ms at M = 8 and 5.6 / 13 at 16; mxfp8 4.7 / 18 at 4,
   9.7 / 18 at 8, 18.7 / 14.7 at 16. */
static int64_t qmv_max_m(const tsri_qmm_problem *p) {
  int kind = kind_of(p);
  return kind == MXFP8 || kind == UNPACKED ? 8 : 16;
}

static tsri_qmm_x_order x_order(const tsri_qmm_problem *p) {
  int bits = bits_of(kind_of(p));
  return bits < 8 ? (tsri_qmm_x_order){LANES, 8 / bits} : (tsri_qmm_x_order){0, 1};
}

const tsri_qmm_isa *tsri_qmm_isa_avx2(void) {
  static const tsri_qmm_isa avx2 = {
      "avx2", ROWS_AT_ONCE, qmv_max_m, x_order, qmv_rows, dequantize_span, tsri_qgemm_kernel_avx2};
  return &avx2;
}

#else

const tsri_qmm_isa *tsri_qmm_isa_avx2(void) {
  return NULL;
}

#endif
