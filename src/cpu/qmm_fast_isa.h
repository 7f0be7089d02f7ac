/* cpu/qmm_fast_isa.h — what the fast quantized-matmul driver (cpu/qmm_fast.c) asks of each
 * instruction set's kernels (cpu/qmm_fast_avx512.c, cpu/qmm_fast_avx2.c, the scalar ones in
 * cpu/qmm_fast.c), and the per-group scale/bias reads they share. Internal to those files; the
 * rest of the library sees cpu/qmm_fast.h only.
 *
 * Dequantized weights (dequantize_span: the sgemm tiles, the fused GEMM's panels,
 * tsr_dequantize) are bit for bit cpu/qmm.h's: affine T(T(s * q) + b) in the scales' dtype T — a
 * float32 product rounded to T, then a float32 sum rounded to T, never fused
 * (tsri_qmm_affine_weight) — and fp modes value(code) * scale in float32, with s, b and scale
 * widened exactly from their stored form. qmv (decode) keeps the fp weights but takes affine in
 * the factored form quant-spec Part A §4 allows: per group g of weight row n,
 *   y[m][n] += s_g * sum_{k in g} x[m][k] q_k  +  b_g * xsum[m][g],   xsum[m][g] = sum_{k in g}
 * x[m][k] in float32, s_g * q_k formed in float32 (through a table, or per code) and never rounded
 * to T, xsum computed once per product by the driver (in float32, natural order) and shared by
 * every row. It is within cpu/qmm.h's factored bound of the float64 product, not equal to the exact
 * weights' sum; where x, a scale or a bias is not finite the result is not finite. Kernels may
 * reorder every float32 sum, and for one row of x whose values are moderate (x_moderate in
 * cpu/qmm.h) may factor an fp mode's scale out of a lane's codes of one group (nvfp4:
 * scale * sum value(q) x in float32): each term then meets about 10 + K / 128 roundings, far
 * inside the fp bound gamma_K, and no product comes near the ends of float32's range.
 */
#ifndef TSR_CPU_QMM_FAST_ISA_H
#define TSR_CPU_QMM_FAST_ISA_H

#include "base/half.h"
#include "base/quant_format.h"
#include "cpu/qmm.h"

/* The order a qmv kernel reads x in, along K: x is copied once per product into that order
 * (the weights' codes are then decoded into SIMD lanes without shuffles). Within each block of
 * `lanes * per_byte` codes (16 bytes of codes for lanes = 16), lane i of the block's vector j
 * holds code per_byte * i + j, so xp[block + j * lanes + i] = x[block + per_byte * i + j]; a
 * final half block (K = 16 mod 32 for nvfp4, 32 mod 64 for 2 bits) does the same with
 * lanes / 2; per_byte 1 is the natural order. */
typedef struct {
  int lanes;    /* lanes of one vector of decoded weights; 0 = natural order */
  int per_byte; /* codes per lane: 8 / bits for 2 and 4 bits read as bytes, 8 for 4-bit codes
                   read as 32-bit words, else 1 */
} tsri_qmm_x_order;

/* The register-blocked core of the fused quantized GEMM (cpu/qgemm.c) in one instruction set:
   an mr x nr tile of C from an A panel packed k-major (a[k * mr + i], row i of the tile) and a B
   panel packed k-major (b[k * nr + j], column j), both read in full (zero padded by the driver). */
typedef struct {
  int mr, nr;
  /* Largest M for which this beats the dequantized tiles through sgemm (0: any M). */
  int64_t max_m;
  /* c[i * ldc + j] = (accumulate ? c[i * ldc + j] : 0) + sum over k < kc of a[k mr + i] b[k nr +
     j], for every i < mr, j < nr; the sum in float32, in increasing k. */
  void (*multiply)(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                   bool accumulate);
  /* dst[k * nr + j] = src[j * ld + k] for j < nr and k < kc, kc a multiple of 16. */
  void (*transpose_panel)(const float *src, int64_t ld, int64_t kc, float *dst);
} tsri_qgemm_kernel;

const tsri_qgemm_kernel *tsri_qgemm_kernel_avx512(void); /* cpu/qgemm_avx512.c (NULL off x86) */
const tsri_qgemm_kernel *tsri_qgemm_kernel_avx2(void);   /* cpu/qgemm_avx2.c (NULL off x86) */

typedef struct tsri_qmm_isa {
  const char *name;
  /* Largest M a qmv call handles at once (larger M is run in chunks of this many rows). */
  int qmv_rows_at_once;
  /* Largest M for which qmv beats the tiled path on problem p (transpose). */
  int64_t (*qmv_max_m)(const tsri_qmm_problem *p);
  /* How x must be laid out for qmv_rows on problem p. */
  tsri_qmm_x_order (*x_order)(const tsri_qmm_problem *p);
  /* y[m][r] for r in [row_begin, row_end) and m in [0, p->m), p->transpose: each weight row is
     read once and dotted with the M rows of xp (M x K floats in x_order, row stride K); for
     affine, xsums holds each row of x summed over each group (M x K / group_size floats, natural
     order; NULL otherwise), for the factored form above. */
  void (*qmv_rows)(const tsri_qmm_problem *p, const float *xp, const float *xsums,
                   int64_t row_begin, int64_t row_end);
  /* Codes [begin, begin + count) of packed row `row`, whole groups, dequantized into dst[0 ..
     count) in natural order (the sgemm tiles' rows, the fused GEMM's panels, tsr_dequantize's
     rows). */
  void (*dequantize_span)(const tsri_qmm_problem *p, int64_t row, int64_t begin, int64_t count,
                          float *dst);
  /* The fused GEMM's micro-kernel for prefill-sized M (NULL: dequantized tiles through sgemm). */
  const tsri_qgemm_kernel *(*gemm)(void);
} tsri_qmm_isa;

const tsri_qmm_isa *tsri_qmm_isa_avx512(void); /* cpu/qmm_fast_avx512.c: AVX-512F */
const tsri_qmm_isa *tsri_qmm_isa_avx2(void);   /* cpu/qmm_fast_avx2.c: AVX2 + FMA + F16C */
const tsri_qmm_isa *tsri_qmm_isa_scalar(void); /* cpu/qmm_fast.c: any CPU */

/* Codes in one packed row: K with transpose (groups along K), N without. */
static inline int64_t tsri_qmm_row_codes(const tsri_qmm_problem *p) {
  return p->transpose ? p->k : p->n;
}

/* Group g's scale of packed row `row`, widened exactly to float32 (E8M0 for mxfp4/mxfp8, E4M3
   for nvfp4, the stored float for affine). */
static inline float tsri_qmm_scale(const tsri_qmm_problem *p, int64_t row, int64_t g) {
  int64_t i = row * p->scale_row_stride + g;
  if (p->mode == TSRI_QF_AFFINE) return tsri_qmm_load_float(p->scales, p->scale_dtype, i);
  uint32_t code = ((const uint8_t *)p->scales)[i];
  return p->mode == TSRI_QF_NVFP4 ? tsri_qf_e4m3_decode(code) : tsri_qf_e8m0_decode(code);
}

/* Group g's bias of packed row `row` (affine only). */
static inline float tsri_qmm_bias(const tsri_qmm_problem *p, int64_t row, int64_t g) {
  return tsri_qmm_load_float(p->biases, p->scale_dtype, row * p->scale_row_stride + g);
}

/* Every E4M3 scale code's value (256 floats), exactly tsri_qmm_scale's for nvfp4: its qmv reads
   a group's scale as one load through it (cpu/qmm_fast.c). */
const float *tsri_qmm_e4m3_table(void);

/* The kernels read a row's scales (and biases) a segment of groups at a time, widened into float
   arrays first, so that no call (a float16 or E4M3 decode) sits inside their SIMD loops. */
enum { TSRI_QMM_SEGMENT_GROUPS = 64 };

/* Scales (and, for affine, biases; else zeros) of groups [first, first + count) of packed row
   `row`, count <= TSRI_QMM_SEGMENT_GROUPS; one loop per stored format. */
static inline void tsri_qmm_group_params(const tsri_qmm_problem *p, int64_t row, int64_t first,
                                         int64_t count, float *scales, float *biases) {
  int64_t at = row * p->scale_row_stride + first;
  if (p->mode != TSRI_QF_AFFINE) {
    const uint8_t *codes = (const uint8_t *)p->scales + at;
    for (int64_t i = 0; i < count; i++) {
      scales[i] =
          p->mode == TSRI_QF_NVFP4 ? tsri_qf_e4m3_decode(codes[i]) : tsri_qf_e8m0_decode(codes[i]);
      biases[i] = 0.0f;
    }
    return;
  }
  if (p->scale_dtype == TSR_FLOAT32) {
    memcpy(scales, (const float *)p->scales + at, (size_t)count * sizeof *scales);
    memcpy(biases, (const float *)p->biases + at, (size_t)count * sizeof *biases);
    return;
  }
  const uint16_t *s = (const uint16_t *)p->scales + at, *b = (const uint16_t *)p->biases + at;
  for (int64_t i = 0; i < count; i++) {
    bool half = p->scale_dtype == TSR_FLOAT16;
    scales[i] = half ? tsri_f16_to_f32(s[i]) : tsri_bf16_to_f32(s[i]);
    biases[i] = half ? tsri_f16_to_f32(b[i]) : tsri_bf16_to_f32(b[i]);
  }
}

enum { TSRI_QMM_MAX_GROUP = 128 };

/* Codes [begin, begin + count) of a packed row, one byte each, for any bits 2..8, count <=
   TSRI_QMM_MAX_GROUP, begin * bits and count * bits multiples of 32 (whole groups): exactly the
   words holding those codes are read (copied once into a padded buffer, from which each code
   is a 16-bit window at its bit offset: the codes do not depend on each other). */
static inline void tsri_qmm_unpack_codes(const uint32_t *row, int64_t begin, int64_t count,
                                         int bits, uint8_t *codes) {
  uint32_t words[TSRI_QMM_MAX_GROUP * 8 / 32 + 1];
  int64_t word_count = count * bits / 32;
  memcpy(words, row + begin * bits / 32, (size_t)word_count * sizeof *words);
  words[word_count] = 0; /* the window of the last code may reach one byte past */
  const uint8_t *bytes = (const uint8_t *)words;
  uint32_t mask = (1u << bits) - 1u;
  for (int64_t i = 0; i < count; i++) {
    int64_t bit = i * bits;
    uint16_t window;
    memcpy(&window, bytes + (bit >> 3), sizeof window);
    codes[i] = (uint8_t)(((uint32_t)window >> (bit & 7)) & mask);
  }
}

#endif
