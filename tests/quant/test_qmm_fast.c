/* tests/quant/test_qmm_fast.c — tsr_quantized_matmul across the CPU's dispatch: every mode x bits
 * x group size, M on both sides of every qmv/GEMM threshold (1 .. 129), N and K not multiples
 * of any tile, both transposes, against a float64 product of the weights decoded here from the
 * packed bits (random codes, scales and biases built directly, no quantize). The same checks run
 * again in child processes with TSR_CPU_ISA=scalar and =avx2 (the portable and AVX2 paths, which
 * the CPU would not otherwise take) and with TSR_NUM_THREADS=3; then two products evaluated at
 * once on two streams (one finds the worker pool busy and runs on its own thread); then one
 * product before and after tsr_shutdown (the CPU device's context, pool included, is made again:
 * the same bytes, and the next shutdown joins the new pool's workers).
 *
 * Tolerance per output element against ref = the float64 product of x and the dequantized weights
 * w_k (exactly tsr_dequantize's). fp modes (float32 accumulation of K products, any order, each
 * weight exact in float32 — cpu/qmm.h): |y - ref| <= gamma_K * sum_k |x_k w_k| with gamma_K =
 * K u / (1 - K u), u = 2^-24 (Higham, Accuracy and Stability, 3.1), plus K * 2^-149 for products
 * that underflow; where ref is NaN (a NaN weight, or 0 * an Inf scale) y must be NaN, where it is
 * +-Inf (an Inf scale, no NaN) the same infinity. Affine, which decode takes in the factored form
 * s * sum x q + b * sum x per group (quant-spec Part A §4; tests/quant/qmm_ref.h derives the
 * bound): |y - ref| <= gamma_{2K+1} sum_k |x_k| (|s q_k| + |b|) + (1 + gamma_K) sum_k |x_k|
 * |s q_k + b - w_k| + 4K * 2^-149, the same bound covering the exact-weight GEMM and tiles. */
#include <dirent.h>
#include <math.h>
#include <pthread.h>

#include "check.h"
#include "child.h"

typedef struct {
  tsr_quant_mode mode;
  int bits, group_size;
  tsr_dtype scale_dtype;
} format;

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint32_t next_u32(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 16);
}
static float uniform(void) { /* [-1, 1) */
  return (float)((double)(next_u32() & 0xffffff) * 0x1p-23 - 1.0);
}

/* ---- the oracle: decoding written from quant-spec.md, bit by bit -------------------------- */

static uint32_t code_at(const uint32_t *row, int64_t i, int bits) {
  uint32_t code = 0;
  for (int b = 0; b < bits; b++) {
    int64_t bit = i * bits + b;
    code |= ((row[bit / 32] >> (bit % 32)) & 1u) << b;
  }
  return code;
}

static double e2m1(uint32_t code) {
  static const double magnitude[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
  return (code & 8u) ? -magnitude[code & 7u] : magnitude[code & 7u];
}

static double e4m3(uint32_t code) {
  if ((code & 0x7fu) == 0x7fu) return NAN;
  int e = (int)((code >> 3) & 15u), m = (int)(code & 7u);
  double v = e == 0 ? ldexp(m, -9) : ldexp(8 + m, e - 10);
  return (code & 0x80u) ? -v : v;
}

static double e8m0(uint32_t code) {
  return code == 255u ? (double)INFINITY : ldexp(1.0, (int)code - 127);
}

static float stored_float(const void *base, tsr_dtype dtype, int64_t i) {
  if (dtype == TSR_FLOAT32) return ((const float *)base)[i];
  uint16_t h = ((const uint16_t *)base)[i];
  return dtype == TSR_FLOAT16 ? tsr_f16_to_f32(h) : tsr_bf16_to_f32(h);
}

/* One packed matrix: rows x row_codes codes, groups along the row. */
typedef struct {
  format f;
  int64_t rows, row_codes, words, groups;
  uint32_t *w_q;
  void *scales, *biases;
} packed;

/* v rounded to dtype (nearest even) and widened back. */
static float round_to(float v, tsr_dtype dtype) {
  if (dtype == TSR_FLOAT16) return tsr_f16_to_f32(tsr_f32_to_f16(v));
  if (dtype == TSR_BFLOAT16) return tsr_bf16_to_f32(tsr_f32_to_bf16(v));
  return v;
}

/* Weight of code i of row r, as tessera's rule (docs/quant-rules.md "Matmul"): affine
   T(T(s * q) + b) in the scales' dtype T, each step a float32 operation rounded to T; fp modes
   value * scale (exact in float32 unless it overflows). */
static double weight(const packed *p, int64_t r, int64_t i) {
  uint32_t code = code_at(p->w_q + r * p->words, i, p->f.bits);
  int64_t g = r * p->groups + i / p->f.group_size;
  if (p->f.mode == TSR_QUANT_AFFINE) {
    tsr_dtype t = p->f.scale_dtype;
    float sq = round_to(stored_float(p->scales, t, g) * (float)code, t);
    return (double)round_to(sq + stored_float(p->biases, t, g), t);
  }
  uint32_t s = ((const uint8_t *)p->scales)[g];
  double scale = p->f.mode == TSR_QUANT_NVFP4 ? e4m3(s) : e8m0(s);
  double value = p->f.mode == TSR_QUANT_MXFP8 ? e4m3(code) : e2m1(code);
  return (double)(float)(value * scale);
}

/* The factored form's terms for code i of row r (affine): |s q| + |b|, and |(s q + b) - w|. */
static void affine_terms(const packed *p, int64_t r, int64_t i, double *terms, double *diff) {
  uint32_t code = code_at(p->w_q + r * p->words, i, p->f.bits);
  int64_t g = r * p->groups + i / p->f.group_size;
  double s = stored_float(p->scales, p->f.scale_dtype, g);
  double b = stored_float(p->biases, p->f.scale_dtype, g);
  *terms = fabs(s * code) + fabs(b);
  *diff = fabs(s * code + b - weight(p, r, i));
}

/* ---- random operands ------------------------------------------------------------------------ */

/* Scales (fp modes): random, or every one the largest or smallest of the random ones. */
typedef enum { RANDOM_SCALES, LARGEST_SCALES, SMALLEST_SCALES } scale_choice;

/* `special`: plant Inf / NaN scales and NaN elements (else every weight is finite). */
static void make_packed(packed *p, format f, int64_t rows, int64_t row_codes, bool special,
                        scale_choice scales) {
  *p = (packed){f,    rows, row_codes, row_codes * f.bits / 32, row_codes / f.group_size,
                NULL, NULL, NULL};
  int64_t words = rows * p->words, groups = rows * p->groups;
  p->w_q = malloc((size_t)words * 4);
  CHECK(p->w_q);
  for (int64_t i = 0; i < words; i++) {
    uint32_t v = next_u32() ^ (next_u32() << 16);
    if (f.mode == TSR_QUANT_MXFP8 && !special) /* no NaN elements 0x7F / 0xFF */
      for (int b = 0; b < 32; b += 8)
        if (((v >> b) & 0x7fu) == 0x7fu) v ^= 1u << b;
    p->w_q[i] = v;
  }
  if (f.mode == TSR_QUANT_AFFINE) {
    size_t element = f.scale_dtype == TSR_FLOAT32 ? 4 : 2;
    p->scales = malloc((size_t)groups * element);
    p->biases = malloc((size_t)groups * element);
    CHECK(p->scales && p->biases);
    for (int64_t i = 0; i < groups; i++) {
      float s = uniform() * 0x1p-4f, b = uniform();
      if (element == 4) {
        ((float *)p->scales)[i] = s;
        ((float *)p->biases)[i] = b;
      } else if (f.scale_dtype == TSR_FLOAT16) {
        ((uint16_t *)p->scales)[i] = tsr_f32_to_f16(s);
        ((uint16_t *)p->biases)[i] = tsr_f32_to_f16(b);
      } else {
        ((uint16_t *)p->scales)[i] = tsr_f32_to_bf16(s);
        ((uint16_t *)p->biases)[i] = tsr_f32_to_bf16(b);
      }
    }
    return;
  }
  uint8_t *s = malloc((size_t)groups);
  CHECK(s);
  for (int64_t i = 0; i < groups; i++) {
    uint32_t r = next_u32();
    if (f.mode == TSR_QUANT_NVFP4) /* any sign, 0 or 2^-9 .. 224, never NaN */
      s[i] = (uint8_t)((r & 0x80u) | (r % 0x77u));
    else /* E8M0 2^-9 .. 2^7 */
      s[i] = (uint8_t)(118u + r % 17u);
    if (scales != RANDOM_SCALES) /* E4M3 0x76 is 224, 0x01 2^-9; E8M0 134 is 2^7, 118 2^-9 */
      s[i] = f.mode == TSR_QUANT_NVFP4 ? (scales == LARGEST_SCALES ? 0x76u : 0x01u)
                                       : (scales == LARGEST_SCALES ? 134u : 118u);
  }
  if (special) { /* NaN scale (nvfp4) or Inf and 2^-127 scales (MX) in the first rows */
    s[0] = f.mode == TSR_QUANT_NVFP4 ? 0xffu : 255u;
    if (groups > 2) s[2] = f.mode == TSR_QUANT_NVFP4 ? 0x7fu : 0u;
  }
  if (special && f.mode == TSR_QUANT_MXFP8 && rows > 3 && p->groups > 1)
    for (int64_t r = 2; r < 4; r++) {
      /* Rows 2 and 3 (decode walks them as a pair) without NaN codes, their second group
         scaled by 2^120 with codes below 2 (exponent field < 8): finite weights up to 2^121
         whose scale times 256 is not finite (the exact-decode side of mxfp8_half_ok in
         cpu/qmm_fast_avx512_qmv.c). */
      uint8_t *codes = (uint8_t *)(p->w_q + r * p->words);
      for (int64_t i = 0; i < row_codes; i++)
        if ((codes[i] & 0x7fu) == 0x7fu) codes[i] ^= 1u;
      s[r * p->groups + 1] = 247u;
      for (int i = 0; i < f.group_size; i++)
        codes[f.group_size + i] &= 0xbfu;
    }
  p->scales = s;
}

static void free_packed(packed *p) {
  free(p->w_q);
  free(p->scales);
  free(p->biases);
}

static tsr_array *array_of(const void *data, tsr_dtype dtype, int64_t rows, int64_t cols) {
  int64_t shape[2] = {rows, cols};
  tsr_array *a = NULL;
  CHECK_OK(tsr_array_from_data(&a, data, dtype, shape, 2));
  return a;
}

/* ---- one product --------------------------------------------------------------------------- */

typedef struct {
  format f;
  bool transpose, special;
  int64_t m, n, k;
  int x_exponent; /* x uniform in [-2^e, 2^e) (0: [-1, 1)) */
  scale_choice scales;
} product;

static const char *mode_name(tsr_quant_mode mode) {
  static const char *const names[] = {"affine", "mxfp4", "mxfp8", "nvfp4"};
  return names[mode];
}

static double gamma_of(double n) {
  return n * 0x1p-24 / (1.0 - n * 0x1p-24);
}

/* y (M x N, float32) against the float64 oracle; fails with the case named. */
static void compare(const product *c, const packed *w, const float *x, const float *y) {
  size_t nk = (size_t)(c->n * c->k);
  double *dense = malloc(nk * sizeof *dense); /* [n][k] */
  double *terms = malloc(nk * sizeof *terms), *diffs = malloc(nk * sizeof *diffs);
  CHECK(dense && terms && diffs);
  bool affine = c->f.mode == TSR_QUANT_AFFINE;
  for (int64_t n = 0; n < c->n; n++)
    for (int64_t k = 0; k < c->k; k++) {
      int64_t r = c->transpose ? n : k, i = c->transpose ? k : n, at = n * c->k + k;
      dense[at] = weight(w, r, i);
      if (affine) affine_terms(w, r, i, &terms[at], &diffs[at]);
    }
  double gamma = gamma_of((double)c->k), gamma_2k = gamma_of(2.0 * (double)c->k + 1.0);
  for (int64_t m = 0; m < c->m; m++)
    for (int64_t n = 0; n < c->n; n++) {
      double ref = 0.0, magnitude = 0.0, sum_terms = 0.0, sum_diff = 0.0;
      for (int64_t k = 0; k < c->k; k++) {
        double xk = x[m * c->k + k], term = xk * dense[n * c->k + k];
        ref += term;
        magnitude += fabs(term);
        if (!affine) continue;
        sum_terms += fabs(xk) * terms[n * c->k + k];
        sum_diff += fabs(xk) * diffs[n * c->k + k];
      }
      double got = y[m * c->n + n];
      double bound =
          affine ? gamma_2k * sum_terms + (1.0 + gamma) * sum_diff + 4.0 * (double)c->k * 0x1p-149
                 : gamma * magnitude + (double)c->k * 0x1p-149;
      bool ok = affine && !isfinite(ref) ? !isfinite(got) /* the factored form's pattern */
                : isnan(ref)             ? isnan(got)
                : isinf(ref)             ? got == ref /* every term's magnitude is finite but one */
                                         : fabs(got - ref) <= bound;
      if (!ok)
        CHECK_FAIL_(
            "%s bits %d group %d scales %s transpose %d M %lld N %lld K %lld x 2^%d%s: "
            "y[%lld][%lld] = %.9g, float64 %.9g, bound %.3g",
            mode_name(c->f.mode), c->f.bits, c->f.group_size, tsr_dtype_name(c->f.scale_dtype),
            c->transpose, (long long)c->m, (long long)c->n, (long long)c->k, c->x_exponent,
            c->special ? " (Inf/NaN scales)" : "", (long long)m, (long long)n, got, ref, bound);
    }
  free(dense);
  free(terms);
  free(diffs);
}

/* Builds the operands of c, returns the lazy product in *y (x and w kept for compare). */
static void build(const product *c, packed *w, float **x, tsr_array **y, tsr_stream *s) {
  int64_t rows = c->transpose ? c->n : c->k, row_codes = c->transpose ? c->k : c->n;
  make_packed(w, c->f, rows, row_codes, c->special, c->scales);
  *x = malloc((size_t)(c->m * c->k) * sizeof **x);
  CHECK(*x);
  for (int64_t i = 0; i < c->m * c->k; i++)
    (*x)[i] = ldexpf(uniform(), c->x_exponent);
  tsr_array *xa = array_of(*x, TSR_FLOAT32, c->m, c->k);
  tsr_array *wa = array_of(w->w_q, TSR_UINT32, rows, w->words);
  bool affine = c->f.mode == TSR_QUANT_AFFINE;
  tsr_array *sa = array_of(w->scales, affine ? c->f.scale_dtype : TSR_UINT8, rows, w->groups);
  tsr_array *ba = affine ? array_of(w->biases, c->f.scale_dtype, rows, w->groups) : NULL;
  CHECK_OK(tsr_quantized_matmul(y, xa, wa, sa, ba, c->transpose, c->f.group_size, c->f.bits,
                                c->f.mode, s));
  tsr_array_release(xa);
  tsr_array_release(wa);
  tsr_array_release(sa);
  tsr_array_release(ba);
}

static void check_product(const product *c) {
  packed w;
  float *x = NULL;
  tsr_array *ya = NULL;
  build(c, &w, &x, &ya, NULL);
  float *y = malloc((size_t)(c->m * c->n) * sizeof *y);
  CHECK(y);
  CHECK_OK(tsr_array_read(ya, y, (size_t)(c->m * c->n) * sizeof *y));
  compare(c, &w, x, y);
  tsr_array_release(ya);
  free(y);
  free(x);
  free_packed(&w);
}

/* ---- the cases ----------------------------------------------------------------------------- */

static const format formats[] = {
    {TSR_QUANT_AFFINE, 2, 32, TSR_FLOAT32},   {TSR_QUANT_AFFINE, 2, 64, TSR_FLOAT16},
    {TSR_QUANT_AFFINE, 2, 128, TSR_BFLOAT16}, {TSR_QUANT_AFFINE, 3, 32, TSR_FLOAT16},
    {TSR_QUANT_AFFINE, 3, 64, TSR_BFLOAT16},  {TSR_QUANT_AFFINE, 3, 128, TSR_FLOAT32},
    {TSR_QUANT_AFFINE, 4, 32, TSR_BFLOAT16},  {TSR_QUANT_AFFINE, 4, 64, TSR_FLOAT32},
    {TSR_QUANT_AFFINE, 4, 128, TSR_FLOAT16},  {TSR_QUANT_AFFINE, 5, 32, TSR_FLOAT32},
    {TSR_QUANT_AFFINE, 5, 64, TSR_FLOAT16},   {TSR_QUANT_AFFINE, 5, 128, TSR_BFLOAT16},
    {TSR_QUANT_AFFINE, 6, 32, TSR_FLOAT16},   {TSR_QUANT_AFFINE, 6, 64, TSR_BFLOAT16},
    {TSR_QUANT_AFFINE, 6, 128, TSR_FLOAT32},  {TSR_QUANT_AFFINE, 8, 32, TSR_BFLOAT16},
    {TSR_QUANT_AFFINE, 8, 64, TSR_FLOAT32},   {TSR_QUANT_AFFINE, 8, 128, TSR_FLOAT16},
    {TSR_QUANT_MXFP4, 4, 32, TSR_UINT8},      {TSR_QUANT_MXFP8, 8, 32, TSR_UINT8},
    {TSR_QUANT_NVFP4, 4, 16, TSR_UINT8}};
enum { FORMATS = sizeof formats / sizeof formats[0] };

/* Both sides of every threshold: qmv for M <= 12 (AVX-512; 8 for 3/5/6 bits), <= 16 (AVX2; 8
   for mxfp8 and 3/5/6 bits), 1 (portable), in chunks of 8 (AVX-512) or 4 rows; two weight rows
   at once for M <= 2; above, the fused GEMM (AVX-512: 8-row x panels, 128-column blocks of
   32-column panels, 256 values of k at a time; AVX2: 6-row and 16-column panels, up to M = 128)
   or the tiled path (portable; AVX2 above M = 128: the child's M = 129). */
static const int64_t all_ms[] = {1, 2, 3, 4, 5, 7, 8, 9, 12, 13, 16, 17, 24, 25, 33, 64, 65, 129};
static const int64_t child_ms[] = {1, 2, 3, 5, 8, 9, 16, 17, 65, 129};
static const int64_t ns[] = {13, 67, 250};

static void run_cases(const int64_t *ms, size_t m_count) {
  for (int f = 0; f < FORMATS; f++) {
    int64_t group = formats[f].group_size;
    for (size_t i = 0; i < m_count; i++) { /* transpose: groups along K */
      product c = {
          formats[f], true,         false, ms[i], ns[(i + (size_t)f) % 3], group * (i % 2 ? 7 : 3),
          0,          RANDOM_SCALES};
      check_product(&c);
    }
    for (int64_t m = 1; m <= 3; m += 2) { /* long rows: every block size of the decode kernels */
      product c = {formats[f], true, false, m, 13, group * 37, 0, RANDOM_SCALES};
      check_product(&c);
    }
    for (size_t i = 0; i < 3; i++) { /* x @ W, groups along N */
      product c = {
          formats[f], false, false,        ms[i * (m_count - 1) / 2], group * (i % 2 ? 5 : 3),
          ns[i % 2],  0,     RANDOM_SCALES};
      check_product(&c);
    }
    if (formats[f].mode == TSR_QUANT_AFFINE) continue;
    /* Extreme x with the scales that keep x w in range: x of 2^-149 (the smallest subnormal)
       times the largest scales, and x near 2^126 times the smallest. A decode that multiplied
       the codes' values by x before the scale (nvfp4's factored form for one row, which takes
       moderate x only) would lose 0.5 x to rounding, magnified by the scale, or overflow. */
    for (int64_t m = 1; m <= 2; m++) {
      product tiny = {formats[f], true, false, m, 13, group * 37, -149, LARGEST_SCALES};
      int huge_exponent = formats[f].mode == TSR_QUANT_MXFP8 ? 117 : 126; /* values <= 448, 6 */
      product huge = {formats[f], true, false, m, 13, group * 37, huge_exponent, SMALLEST_SCALES};
      check_product(&tiny);
      check_product(&huge);
    }
    /* The last: 32 groups a row, so that mxfp8's scale check runs its 32-at-a-time part over the
       planted 2^120 and Inf scales, and nvfp4's NaN scale lies in a whole 128-code block of one
       row of x (the factored decode). */
    product inf_nan[] = {{formats[f], true, true, 1, 67, group * 3, 0, RANDOM_SCALES},
                         {formats[f], true, true, 33, 13, group * 7, 0, RANDOM_SCALES},
                         {formats[f], false, true, 9, group * 3, 13, 0, RANDOM_SCALES},
                         {formats[f], true, true, 1, 67, group * 32, 0, RANDOM_SCALES}};
    for (size_t i = 0; i < sizeof inf_nan / sizeof inf_nan[0]; i++)
      check_product(&inf_nan[i]);
  }
}

/* Two products on two streams evaluated together: the stream workers run them at the same time,
   one of them finding the worker pool busy. */
static void check_concurrent(void) {
  tsr_stream *streams[2] = {NULL, NULL};
  for (int i = 0; i < 2; i++)
    CHECK_OK(tsr_stream_new(&streams[i], (tsr_device){TSR_CPU, 0}));
  product cases[2] = {{formats[7], true, false, 3, 1024, 1024, 0, RANDOM_SCALES},
                      {formats[18], true, false, 64, 512, 1024, 0, RANDOM_SCALES}};
  packed w[2];
  float *x[2];
  tsr_array *y[2];
  for (int i = 0; i < 2; i++)
    build(&cases[i], &w[i], &x[i], &y[i], streams[i]);
  CHECK_OK(tsr_eval(y, 2));
  for (int i = 0; i < 2; i++) {
    float *out = malloc((size_t)(cases[i].m * cases[i].n) * sizeof *out);
    CHECK(out);
    CHECK_OK(tsr_array_read(y[i], out, (size_t)(cases[i].m * cases[i].n) * sizeof *out));
    compare(&cases[i], &w[i], x[i], out);
    free(out);
    free(x[i]);
    free_packed(&w[i]);
    tsr_array_release(y[i]);
  }
  for (int i = 0; i < 2; i++)
    CHECK_OK(tsr_stream_free(streams[i]));
}

/* The threads this process has now (Linux: the entries of /proc/self/task). */
static int thread_count(void) {
  DIR *dir = opendir("/proc/self/task");
  CHECK(dir);
  int count = 0;
  for (struct dirent *e = readdir(dir); e; e = readdir(dir))
    if (e->d_name[0] != '.') count++;
  closedir(dir);
  return count;
}

/* One product through the worker pool on a new CPU stream, then tsr_shutdown, twice over with the
   same operands: the second runs on the CPU context made after the first shutdown and gives the
   same bytes, and the second shutdown leaves as many threads as the first did (the new pool's
   workers and the stream's worker joined, none left behind). */
static void check_across_shutdown(void) {
  product c = {formats[7], true, false, 3, 1024, 1024, 0, RANDOM_SCALES};
  size_t bytes = (size_t)(c.m * c.n) * sizeof(float);
  uint64_t seed = rng;
  float *y[2];
  int threads_after[2];
  for (int round = 0; round < 2; round++) {
    rng = seed;
    tsr_stream *s = NULL;
    CHECK_OK(tsr_stream_new(&s, (tsr_device){TSR_CPU, 0}));
    packed w;
    float *x = NULL;
    tsr_array *ya = NULL;
    build(&c, &w, &x, &ya, s);
    y[round] = malloc(bytes);
    CHECK(y[round]);
    CHECK_OK(tsr_array_read(ya, y[round], bytes));
    compare(&c, &w, x, y[round]);
    tsr_array_release(ya);
    free(x);
    free_packed(&w);
    CHECK_OK(tsr_stream_free(s));
    tsr_shutdown();
    threads_after[round] = thread_count();
  }
  CHECK(memcmp(y[0], y[1], bytes) == 0);
  CHECK(threads_after[1] == threads_after[0]);
  free(y[0]);
  free(y[1]);
}

int main(int argc, char **argv) {
  if (test_is_child(argc, argv)) {
    run_cases(child_ms, sizeof child_ms / sizeof child_ms[0]);
  } else {
    run_cases(all_ms, sizeof all_ms / sizeof all_ms[0]);
    check_concurrent();
    test_run_child("TSR_CPU_ISA", "scalar");
    test_run_child("TSR_CPU_ISA", "avx2");
    test_run_child("TSR_NUM_THREADS", "3");
    check_across_shutdown();
  }
  tsr_memory_clear_cache((tsr_device){TSR_CPU, 0});
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
