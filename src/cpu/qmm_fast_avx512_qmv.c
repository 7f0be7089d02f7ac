/* cpu/qmm_fast_avx512_qmv.c — the AVX-512F qmv kernels (cpu/qmm_fast_isa.h's qmv_rows): one pass
 * over each weight row, dotted with up to ROWS_AT_ONCE rows of x. 2- and 4-bit codes index a
 * 16-entry table per group (vpermps) formed in the loop with one multiply: E2M1 value * scale
 * (mxfp4) or, for affine in the factored form (quant-spec Part A §4), s * q in float32 — never
 * rounded to the scales' dtype, with b * (sum of x over the group) added to the sums once per
 * group; nvfp4 codes are read as 32-bit words, their values times each lane's group scale; mxfp8
 * codes are taken even and odd from 16-bit words (E4M3 through float16) and affine 8-bit and
 * unpacked 3/5/6-bit codes converted, then multiplied by the scale.
 * bench/qmv_loops times these inner loops alone. */
#include "cpu/qmm_fast_isa.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include "cpu/qmm_fast_avx512.h"

/* How far ahead of the codes being read qmv asks for the next ones (rows lie one after the
   other, so this runs on into the next rows). Measured on the dev VM (AMD EPYC, 2 cores,
   4096 x 4096 affine 4-bit from memory): no prefetch 6.6 GB/s on one core, 1 KiB 8.2, 4 KiB
   15.4, 8 KiB 18.6 (28 on two cores), 16 KiB 16.7, 32 KiB 18.4. */
enum { PREFETCH_BYTES = 16384 };

/* Called for each 16 bytes of a row in turn; one call in four — the one in the first 16 bytes of
   a cache line — asks for the line PREFETCH_BYTES ahead (a prefetch per 16 bytes cost a few
   percent: affine 4-bit from memory, one core, 6.3-7.1 -> 7.0-7.7 GB per CPU-second). */
AVX512_INLINE void prefetch(const uint8_t *codes) {
  if (((uintptr_t)codes & 63) >= 16) return;
  /* An address past the weights is harmless to a prefetch; computed as an integer so that no
     pointer leaves its object. */
  _mm_prefetch((const char *)((uintptr_t)codes + PREFETCH_BYTES), _MM_HINT_T0);
}

/* Called once for each group of a row whose codes are read a group at a time (bytes: 12-128):
   asks for each 64 bytes of it PREFETCH_BYTES ahead, without prefetch's test (a test per 16
   bytes cost mxfp8 a tenth of its time; the 4-bit tables, read 16 bytes at a time, measured the
   other way round and keep prefetch). */
AVX512_INLINE void prefetch_group(const uint8_t *codes, int64_t bytes) {
  for (int64_t line = 0; line < bytes; line += 64)
    _mm_prefetch((const char *)((uintptr_t)codes + line + PREFETCH_BYTES), _MM_HINT_T0);
}

/* Partial sums [x row][weight row][chain]. Each sum runs in two chains (alternate vectors), and
   with one or two x rows two weight rows are walked together: enough independent FMAs in flight
   to hide their latency, where one chain per output left the loop latency-bound. */
typedef struct {
  __m512 acc[ROWS_AT_ONCE][2][2];
} sums;

/* Groups [first, first + count) of one or two weight rows, their scales and biases widened. */
typedef struct {
  const tsri_qmm_problem *p;
  const float *xp;    /* M x K, in x_order */
  const float *xsums; /* M x groups: affine's sums of x over each group */
  const uint8_t *bytes[2];
  int64_t first, count;
  /* Each row's scale codes (fp modes) and, for nvfp4, their values (tsri_qmm_e4m3_table: nvfp4
     decodes its scales itself, 16 at a time, where widening them into an array first took a
     fifth of its qmv time); for the other modes the segment's scales (and biases) widened, which
     a group reads with one load (a load through the table, code then value, cost mxfp4 5-10%). */
  const uint8_t *scale_codes[2];
  const float *scale_table;
  float scales[2][TSRI_QMM_SEGMENT_GROUPS], biases[2][TSRI_QMM_SEGMENT_GROUPS];
} qmv_segment;

/* Group g's scale of weight row r (not nvfp4: nvfp4_scale). */
AVX512_INLINE float segment_scale(const qmv_segment *t, int r, int64_t g) {
  return t->scales[r][g];
}

/* Group g's scale of nvfp4 weight row r, through the table. */
AVX512_INLINE float nvfp4_scale(const qmv_segment *t, int r, int64_t g) {
  return t->scale_table[t->scale_codes[r][t->first + g]];
}

AVX512_INLINE void add_products(sums *s, int r, int chain, __m512 w, const float *x,
                                int64_t k_stride, int rows) {
#pragma GCC unroll 8
  for (int m = 0; m < rows; m++)
    s->acc[m][r][chain] =
        _mm512_fmadd_ps(w, _mm512_loadu_ps(x + m * k_stride), s->acc[m][r][chain]);
}

/* The values of codes 0..15 before scaling: E2M1, or affine q (for 2 bits q & 3). */
AVX512_INLINE __m512 code_values(int kind) {
  if (kind == FP4)
    return _mm512_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f, -0.5f, -1.0f,
                          -1.5f, -2.0f, -3.0f, -4.0f, -6.0f);
  if (kind == TABLE2)
    return _mm512_setr_ps(0.0f, 1.0f, 2.0f, 3.0f, 0.0f, 1.0f, 2.0f, 3.0f, 0.0f, 1.0f, 2.0f, 3.0f,
                          0.0f, 1.0f, 2.0f, 3.0f);
  return _mm512_setr_ps(0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f,
                        12.0f, 13.0f, 14.0f, 15.0f);
}

/* Group g's table of weight row r, formed here with one multiply: value * scale (E2M1), or the
   factored affine s * q, whose bias is added per group (bias_products). Writing and re-reading
   a table per group cost mxfp4 qmv a quarter of its time; the affine tables of exact weights
   (T(T(s * q) + b), rounded twice to the scales' dtype) cost affine 4-bit a third of its time. */
AVX512_INLINE __m512 group_table(const qmv_segment *t, int r, int64_t g, __m512 values) {
  return _mm512_mul_ps(values, _mm512_set1_ps(segment_scale(t, r, g)));
}

/* 2- or 4-bit codes (the table kinds); x in the (16 lanes, 8 / bits) order. */
AVX512_INLINE void table_segment(const qmv_segment *t, int rows, int wrows, int bits, int kind,
                                 sums *s) {
  const __m512 values = code_values(kind);
  const int per_byte = 8 / bits;
  const int64_t k = t->p->k, group_size = t->p->group_size, block = LANES * per_byte;
  __m512 table[2];
  if (group_size >= block) {
    for (int64_t g = 0; g < t->count; g++) {
      for (int r = 0; r < wrows; r++)
        table[r] = group_table(t, r, g, values);
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
  /* Two groups per 16 bytes (32 codes a group at 2 bits; nvfp4 reads words, nvfp4_segment): the
     codes' values through the constant table, times each half's scale (lanes 0..7 the first
     group's, 8..15 the second's): the same products as a table per group, without the two-table
     permute and the index arithmetic it needs (12 -> 9 vector operations per 16 bytes). */
  int64_t g = 0;
  for (; g + 2 <= t->count; g += 2) {
    int64_t at = (t->first + g) * group_size;
#pragma GCC unroll 2
    for (int r = 0; r < wrows; r++) {
      __m512 scale = _mm512_mask_blend_ps(0xff00, _mm512_set1_ps(segment_scale(t, r, g)),
                                          _mm512_set1_ps(segment_scale(t, r, g + 1)));
      prefetch(t->bytes[r] + at / per_byte);
      __m512i v = load_bytes16(t->bytes[r] + at / per_byte);
#pragma GCC unroll 4
      for (int j = 0; j < per_byte; j++) {
        __m512 w =
            _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(v, j * bits), values), scale);
        add_products(s, r, j & 1, w, t->xp + at + j * LANES, k, rows);
      }
    }
  }
  if (g == t->count) return;
  /* The row's last group alone: a half block in 8 lanes. */
  int64_t at = (t->first + g) * group_size;
  for (int r = 0; r < wrows; r++) {
    table[r] = group_table(t, r, g, values);
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

/* nvfp4 read as 32-bit words (MLX's stored layout as it lies): a 64-byte load is 128 codes, lane i
   the 8 codes of word i, so lanes 2i and 2i + 1 hold group i of the block (16 codes a group); each
   nibble shifted down goes through the constant E2M1 table and is multiplied by a vector holding
   each lane's group scale, which one permute spreads from 16 decoded scales: the exact weights
   value * scale, with one shuffle per 32 codes fewer than the widened bytes and no per-group
   broadcasts (bare loops, one core, L1-resident: 18-20 G codes/s against 12 for the byte path with
   either scale handling). x in the (16 lanes, 8 codes) order, then 64-code half blocks, then
   natural order for the last groups. (Affine 4-bit read this way, with partial sums of x q per
   block times the block's scales, ran its bare loop at 25-26 G codes/s, no faster than its byte
   path's 22-28: not kept.) */
static inline bool nvfp4_words(const tsri_qmm_problem *p) {
  return p->mode == TSRI_QF_NVFP4;
}

/* Lanes 2i and 2i + 1 of the result hold lane first + i of scales. */
AVX512_INLINE __m512 scale_pairs(__m512 scales, int first) {
  __m512i lane =
      _mm512_srli_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), 1);
  return _mm512_permutexvar_ps(_mm512_add_epi32(lane, _mm512_set1_epi32(first)), scales);
}

/* Scales of `count` <= 16 groups of row r from group g on (beyond count: zero codes, never read
   past the row's scales). */
AVX512_INLINE __m512 nvfp4_scales(const qmv_segment *t, int r, int64_t g, int64_t count) {
  const uint8_t *codes = t->scale_codes[r] + t->first + g;
  if (count >= LANES) return e4m3_values(load_bytes16(codes));
  uint8_t some[LANES] = {0};
  memcpy(some, codes, (size_t)count);
  return e4m3_values(load_bytes16(some));
}

/* One block of weight row r from code `at`: `lanes` 16 (128 codes) or 8 (64). */
AVX512_INLINE void nvfp4_block(const qmv_segment *t, int rows, int r, int64_t at, __m512 scale,
                               int lanes, bool factored, sums *s) {
  const __m512 values = code_values(FP4);
  const uint8_t *codes = t->bytes[r] + at / 2;
  prefetch(codes);
  __m512i v = lanes == LANES ? _mm512_loadu_si512((const void *)codes)
                             : _mm512_maskz_loadu_epi32(0xff, (const void *)codes);
  if (factored && lanes == LANES) {
    /* One row of x: each lane's 8 codes share a group, so the scale multiplies their sum once
       (value * x products, then the scale: 24 vector operations for 128 codes where scaling
       every weight takes 31; one core, L2-resident rows: 9.2 -> 11.3-11.6 GB per CPU-second).
       x_moderate keeps value * x and the sums normal and finite, so the result stays within the
       bound of cpu/qmm_fast_isa.h. Chosen once per segment, nvfp4_segment. */
    __m512 part[2];
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) {
      __m512 w = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 4 * j), values);
      __m512 x = _mm512_loadu_ps(t->xp + at + j * LANES);
      part[j & 1] = j < 2 ? _mm512_mul_ps(w, x) : _mm512_fmadd_ps(w, x, part[j & 1]);
    }
    s->acc[0][r][0] = _mm512_fmadd_ps(part[0], scale, s->acc[0][r][0]);
    s->acc[0][r][1] = _mm512_fmadd_ps(part[1], scale, s->acc[0][r][1]);
    return;
  }
#pragma GCC unroll 8
  for (int j = 0; j < 8; j++) {
    __m512 w = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(v, 4 * j), values), scale);
#pragma GCC unroll 8
    for (int m = 0; m < rows; m++) {
      __m512 x = _mm512_maskz_loadu_ps(lanes == LANES ? 0xffff : 0xff,
                                       t->xp + m * t->p->k + at + j * lanes);
      s->acc[m][r][j & 1] = _mm512_fmadd_ps(w, x, s->acc[m][r][j & 1]);
    }
  }
}

/* One group (16 codes, x in natural order) of weight row r from code `at`: byte i / 2 in lane i,
   shifted down by 4 in odd lanes. */
AVX512_INLINE void nvfp4_natural_group(const qmv_segment *t, int rows, int r, int64_t at,
                                       __m512 scale, sums *s) {
  __m128i bytes = _mm_loadl_epi64((const __m128i *)(const void *)(t->bytes[r] + at / 2));
  bytes = _mm_shuffle_epi8(bytes, _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7));
  __m512i v = _mm512_srlv_epi32(_mm512_cvtepu8_epi32(bytes),
                                _mm512_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4));
  __m512 w = _mm512_mul_ps(_mm512_permutexvar_ps(v, code_values(FP4)), scale);
#pragma GCC unroll 8
  for (int m = 0; m < rows; m++)
    s->acc[m][r][0] =
        _mm512_fmadd_ps(w, _mm512_loadu_ps(t->xp + m * t->p->k + at), s->acc[m][r][0]);
}

AVX512_INLINE void nvfp4_blocks(const qmv_segment *t, int rows, int wrows, bool factored, sums *s) {
  const int64_t group_size = t->p->group_size, begin = t->first * group_size;
  __m512 scales[2];
  int64_t g = 0;
  for (; g + 8 <= t->count; g += 16) { /* blocks of 8 groups, scales decoded 16 at a time */
#pragma GCC unroll 2
    for (int r = 0; r < wrows; r++)
      scales[r] = nvfp4_scales(t, r, g, t->count - g);
#pragma GCC unroll 2
    for (int half = 0; half < 2; half++)
#pragma GCC unroll 2
      for (int r = 0; r < wrows; r++)
        if (g + 8 * half + 8 <= t->count)
          nvfp4_block(t, rows, r, begin + (g + 8 * half) * group_size,
                      scale_pairs(scales[r], 8 * half), LANES, factored, s);
  }
  if (g > t->count) g -= 8; /* the loop's last step held one block of 8 groups */
  if (g + 4 <= t->count) {
#pragma GCC unroll 2
    for (int r = 0; r < wrows; r++)
      nvfp4_block(t, rows, r, begin + g * group_size, scale_pairs(nvfp4_scales(t, r, g, 4), 0),
                  LANES / 2, factored, s);
    g += 4;
  }
  for (; g < t->count; g++)
#pragma GCC unroll 2
    for (int r = 0; r < wrows; r++)
      nvfp4_natural_group(t, rows, r, begin + g * group_size, _mm512_set1_ps(nvfp4_scale(t, r, g)),
                          s);
}

/* The factored form for one row of moderate x, each as its own inlined copy. */
AVX512_INLINE void nvfp4_segment(const qmv_segment *t, int rows, int wrows, sums *s) {
  if (rows == 1 && t->p->x_moderate)
    nvfp4_blocks(t, rows, wrows, true, s);
  else
    nvfp4_blocks(t, rows, wrows, false, s);
}

/* One group of affine 8-bit codes or of 3/5/6-bit codes unpacked to bytes, of each weight row;
   x in natural order. Groups hold at least 32 codes: two vectors, one per chain.
   Affine in the factored form: s * q, one multiply per weight (the exact weights' two roundings
   to bfloat16 cost ~15 vector operations per 16 codes). */
AVX512_INLINE void byte_group(const qmv_segment *t, int rows, int wrows, int64_t begin,
                              const uint8_t *const *codes, const __m512 *scale, sums *s) {
  const int64_t k = t->p->k, group_size = t->p->group_size;
  for (int64_t i = 0; i < group_size; i += 2 * LANES)
#pragma GCC unroll 2
    for (int r = 0; r < wrows; r++)
#pragma GCC unroll 2
      for (int chain = 0; chain < 2; chain++) {
        const uint8_t *at = codes[r] + i + chain * LANES;
        __m512 w = _mm512_mul_ps(_mm512_cvtepi32_ps(load_bytes16(at)), scale[r]);
        add_products(s, r, chain, w, t->xp + begin + i + chain * LANES, k, rows);
      }
}

/* Whether every one of `count` E8M0 codes is below `limit` (32 at a time: a scalar loop over a
   segment's 64 scale codes took a tenth of mxfp8's qmv time). */
AVX512_INLINE bool e8m0_below(const uint8_t *codes, int64_t count, uint8_t limit) {
  __m256i most = _mm256_setzero_si256();
  int64_t i = 0;
  for (; i + 32 <= count; i += 32)
    most = _mm256_max_epu8(most, _mm256_loadu_si256((const __m256i *)(const void *)(codes + i)));
  uint8_t largest = 0;
  for (; i < count; i++)
    largest = codes[i] > largest ? codes[i] : largest;
  __m256i at_limit = _mm256_cmpeq_epi8(_mm256_max_epu8(most, _mm256_set1_epi8((char)limit)), most);
  return largest < limit && _mm256_movemask_epi8(at_limit) == 0;
}

/* Whether weight row r's segment of mxfp8 may take the float16 decode (e4m3_pairs_over_256): no NaN
   code (which it would decode as 480) and every scale below 2^120, so that scale * 256 is finite
   and (value / 256) * (scale * 256) is the weight value * scale exactly (two exact factors whose
   product has at most 4 significant bits, within float32's range, subnormal weights included: the
   smallest is 2^-9 * 2^-127). Else (an Inf scale, a NaN code, scales near the top) the segment
   takes the exact decode, whose NaN and Inf weights are the reference's. */
AVX512_INLINE bool mxfp8_half_ok(const qmv_segment *t, int r) {
  const int64_t group_size = t->p->group_size;
  if (!e4m3_nan_free(t->bytes[r] + t->first * group_size, t->count * group_size)) return false;
  return e8m0_below(t->scale_codes[r] + t->first, t->count, 247); /* E8M0 code 247 is 2^120 */
}

AVX512_INLINE void byte_segment(const qmv_segment *t, int rows, int wrows, bool unpack, sums *s) {
  const int64_t group_size = t->p->group_size;
  uint8_t unpacked[2][MAX_GROUP];
  for (int64_t g = 0; g < t->count; g++) {
    int64_t begin = (t->first + g) * group_size;
    const uint8_t *codes[2];
    __m512 scale[2];
    for (int r = 0; r < wrows; r++) {
      scale[r] = _mm512_set1_ps(segment_scale(t, r, g));
      codes[r] = t->bytes[r] + begin * t->p->bits / 8;
      prefetch_group(codes[r], group_size * t->p->bits / 8);
      if (unpack) {
        tsri_qmm_unpack_codes((const uint32_t *)(const void *)t->bytes[r], begin, group_size,
                              t->p->bits, unpacked[r]);
        codes[r] = unpacked[r];
      }
    }
    byte_group(t, rows, wrows, begin, codes, scale, s);
  }
}

/* 32 E4M3 codes as float32 in (16 lanes, 2 codes) order: even codes 0, 2, .., 30 and odd codes
   1, 3, .., 31, each byte taken from its 16-bit word by shifts in place of a widening shuffle.
   The float16 way (values times 2^-8, as e4m3_values_over_256, NaN codes ruled out by the
   caller): a byte in a word's top half, shifted right by one with its sign repeated, is the
   float16 of the same fields with bit 14 to clear (5 operations for 32 codes where
   e4m3_values_over_256 takes two sign-extending shuffles and 4 operations). */
AVX512_INLINE void e4m3_pairs_over_256(const uint8_t *bytes, __m512 *even, __m512 *odd) {
  __m256i words = _mm256_loadu_si256((const __m256i *)(const void *)bytes);
  const __m256i fields = _mm256_set1_epi16((short)0xbf80);
  *even =
      _mm512_cvtph_ps(_mm256_and_si256(_mm256_srai_epi16(_mm256_slli_epi16(words, 8), 1), fields));
  *odd = _mm512_cvtph_ps(_mm256_and_si256(_mm256_srai_epi16(words, 1), fields));
}

/* The same order, exactly (NaN codes and all), through e4m3_values. */
AVX512_INLINE void e4m3_pairs(const uint8_t *bytes, __m512 *even, __m512 *odd) {
  __m256i words = _mm256_loadu_si256((const __m256i *)(const void *)bytes);
  *even = e4m3_values(_mm512_cvtepu16_epi32(_mm256_and_si256(words, _mm256_set1_epi16(0xff))));
  *odd = e4m3_values(_mm512_cvtepu16_epi32(_mm256_srli_epi16(words, 8)));
}

/* mxfp8, x in (16 lanes, 2 codes) order: the float16 decode where mxfp8_half_ok allows it for
   every row, else the exact one. */
AVX512_INLINE void mxfp8_segment(const qmv_segment *t, int rows, int wrows, sums *s) {
  bool half = true;
  for (int r = 0; r < wrows; r++)
    half = half && mxfp8_half_ok(t, r);
  const int64_t k = t->p->k;
  float scales[2][TSRI_QMM_SEGMENT_GROUPS];
  for (int r = 0; r < wrows; r++) /* times 256 for the float16 decode, once per segment */
    for (int64_t g = 0; g < t->count; g++)
      scales[r][g] = half ? t->scales[r][g] * 256.0f : t->scales[r][g];
  for (int64_t g = 0; g < t->count; g++) {
    int64_t begin = (t->first + g) * 32; /* mxfp8 groups hold 32 codes */
#pragma GCC unroll 2
    for (int r = 0; r < wrows; r++) {
      const uint8_t *codes = t->bytes[r] + begin;
      prefetch_group(codes, 32);
      __m512 scale = _mm512_set1_ps(scales[r][g]), even, odd;
      if (half)
        e4m3_pairs_over_256(codes, &even, &odd);
      else
        e4m3_pairs(codes, &even, &odd);
      add_products(s, r, 0, _mm512_mul_ps(even, scale), t->xp + begin, k, rows);
      add_products(s, r, 1, _mm512_mul_ps(odd, scale), t->xp + begin + LANES, k, rows);
    }
  }
}

/* The factored affine form's b * (sum of x over the group), for the segment's groups, added to
   the sums' second chains as further terms of their lanes. */
AVX512_INLINE void bias_products(const qmv_segment *t, int rows, int wrows, sums *s) {
  const int64_t groups = t->p->k / t->p->group_size;
  for (int64_t i = 0; i < t->count; i += LANES) {
    __mmask16 lanes = (__mmask16)(t->count - i >= LANES ? 0xffffu : (1u << (t->count - i)) - 1u);
#pragma GCC unroll 2
    for (int r = 0; r < wrows; r++) {
      __m512 bias = _mm512_maskz_loadu_ps(lanes, t->biases[r] + i);
#pragma GCC unroll 8
      for (int m = 0; m < rows; m++) {
        __m512 xsum = _mm512_maskz_loadu_ps(lanes, t->xsums + m * groups + t->first + i);
        s->acc[m][r][1] = _mm512_fmadd_ps(bias, xsum, s->acc[m][r][1]);
      }
    }
  }
}

/* Weight rows [row, row + wrows) dotted with the `rows` rows of xp. */
AVX512_INLINE void qmv_rows_at(const tsri_qmm_problem *p, const float *xp, const float *xsums,
                               int64_t row, int kind, int rows, int wrows) {
  sums s;
#pragma GCC unroll 8
  for (int m = 0; m < rows; m++)
    for (int r = 0; r < 2; r++)
      s.acc[m][r][0] = s.acc[m][r][1] = _mm512_setzero_ps();
  qmv_segment t;
  t.p = p;
  t.xp = xp;
  t.xsums = xsums;
  for (int r = 0; r < wrows; r++) {
    t.bytes[r] = (const uint8_t *)(p->w + (row + r) * p->w_row_words);
    t.scale_codes[r] = (const uint8_t *)p->scales + (row + r) * p->scale_row_stride;
  }
  t.scale_table = p->mode == TSRI_QF_NVFP4 ? tsri_qmm_e4m3_table() : NULL;
  const int64_t groups = p->k / p->group_size;
  for (t.first = 0; t.first < groups; t.first += TSRI_QMM_SEGMENT_GROUPS) {
    t.count =
        groups - t.first < TSRI_QMM_SEGMENT_GROUPS ? groups - t.first : TSRI_QMM_SEGMENT_GROUPS;
    if (p->mode != TSRI_QF_NVFP4)
      for (int r = 0; r < wrows; r++)
        tsri_avx512_widen_params(p, row + r, t.first, t.count, t.scales[r], t.biases[r]);
    if (p->mode == TSRI_QF_AFFINE) bias_products(&t, rows, wrows, &s);
    switch (kind) {
      case TABLE2:
        table_segment(&t, rows, wrows, 2, TABLE2, &s);
        break;
      case TABLE4:
        table_segment(&t, rows, wrows, 4, TABLE4, &s);
        break;
      case FP4:
        if (nvfp4_words(p))
          nvfp4_segment(&t, rows, wrows, &s);
        else
          table_segment(&t, rows, wrows, 4, FP4, &s);
        break;
      case AFFINE8:
        byte_segment(&t, rows, wrows, false, &s);
        break;
      case MXFP8:
        mxfp8_segment(&t, rows, wrows, &s);
        break;
      default:
        byte_segment(&t, rows, wrows, true, &s);
        break;
    }
  }
#pragma GCC unroll 8
  for (int m = 0; m < rows; m++)
    for (int r = 0; r < wrows; r++)
      p->y[m * p->y_row_stride + row + r] =
          _mm512_reduce_add_ps(_mm512_add_ps(s.acc[m][r][0], s.acc[m][r][1]));
}

AVX512_INLINE void qmv_kind(const tsri_qmm_problem *p, const float *xp, const float *xsums,
                            int64_t row_begin, int64_t row_end, int kind, int rows) {
  int64_t row = row_begin;
  if (rows <= 2)
    for (; row + 2 <= row_end; row += 2)
      qmv_rows_at(p, xp, xsums, row, kind, rows, 2);
  for (; row < row_end; row++)
    qmv_rows_at(p, xp, xsums, row, kind, rows, 1);
}

typedef void (*qmv_fn)(const tsri_qmm_problem *p, const float *xp, const float *xsums, int64_t b,
                       int64_t e);

/* One function per (kind, rows): the compiler keeps the accumulators in registers only when
   both are constants. */
#define QMV_INSTANCE(KIND, ROWS)                                                     \
  static AVX512 void qmv_##KIND##_##ROWS(const tsri_qmm_problem *p, const float *xp, \
                                         const float *xsums, int64_t b, int64_t e) { \
    qmv_kind(p, xp, xsums, b, e, KIND, ROWS);                                        \
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

void tsri_avx512_qmv_rows(const tsri_qmm_problem *p, const float *xp, const float *xsums,
                          int64_t row_begin, int64_t row_end) {
  static const qmv_fn *const kinds[KINDS] = {qmv_TABLE2,  qmv_TABLE4, qmv_FP4,
                                             qmv_AFFINE8, qmv_MXFP8,  qmv_UNPACKED};
  kinds[kind_of(p)][p->m - 1](p, xp, xsums, row_begin, row_end);
}

/* Measured on the dev VM (bench/RESULTS.md "qmm_cpu"), 4096 x 4096 from memory, 2 threads, ms
   qmv / fused GEMM (cpu/qgemm.c), best of three runs, affine 4-bit, affine 8-bit, mxfp4, mxfp8,
   nvfp4: M = 8 2.45 / 2.27, 1.97 / 2.77, 2.24 / 2.19, 3.40 / 5.05, 2.55 / 2.96; M = 12 3.19 /
   3.27, 3.27 / 3.78, 3.04 / 3.16, 5.72 / 6.47, 3.65 / 3.99; M = 16 4.68 / 2.89, 4.01 / 3.33,
   4.46 / 2.84, 6.19 / 5.98, 4.90 / 3.53. 3/5/6-bit codes are unpacked by a scalar loop that
   qmv repeats for every 8 rows of x. */
int64_t tsri_avx512_qmv_max_m(const tsri_qmm_problem *p) {
  return kind_of(p) == UNPACKED ? 8 : 12;
}

tsri_qmm_x_order tsri_avx512_x_order(const tsri_qmm_problem *p) {
  int kind = kind_of(p);
  if (kind == TABLE2) return (tsri_qmm_x_order){LANES, 4};
  if (nvfp4_words(p)) return (tsri_qmm_x_order){LANES, 8};
  if (kind == TABLE4 || kind == FP4 || kind == MXFP8) return (tsri_qmm_x_order){LANES, 2};
  return (tsri_qmm_x_order){0, 1};
}

#else

typedef int tsri_qmm_fast_avx512_qmv_unused; /* off x86 the AVX-512 table is NULL (ISO C wants a
                                                declaration in every file) */

#endif
