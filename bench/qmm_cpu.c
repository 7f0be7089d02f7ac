/* bench/qmm_cpu.c — tsr_quantized_matmul on the CPU against what bounds it, side by side in one
 * run, at GLM-sized weights (N x K = 4096 x 4096, 13696 x 4096, 4096 x 13696, 4096 x 14336;
 * transpose, x float32, affine scales/biases bfloat16): for decode (M = 1) and prefill (M = 64,
 * 512),
 *  - GB/s of weight bytes (w_q + scales + biases) of the op (graph build + tsr_eval + kernel)
 *    against the read roof: the same bytes (the arrays' own buffers) read with the widest vector
 *    loads the CPU has (AVX-512, else AVX2, else uint64) on as many threads as the op uses —
 *    goals (issue 11) >= 0.70 for 4-bit formats, >= 0.75 for 8-bit at M = 1. The scalar uint64
 *    summing loop the Step 3 figures were measured against is printed too: it reached only
 *    0.64-0.68 of the machine's read, which made those ratios look ~1.5x better;
 *  - the op's time against cblas_sgemm on the weights already dequantized to float32 — goal
 *    >= 1.0 (ours includes the dequantization).
 * Each measurement walks several copies of the weights (>= 256 MiB in all) in turn, so weights
 * come from memory as in a model whose layers do not fit the caches. The op, the roof and the
 * scalar read are timed in interleaved rounds (op, roof, scalar, op, ...) after a warm-up, each
 * the best of its rounds, so that a noisy moment of the shared machine does not favour one of
 * them. Not a test: it checks only that results are finite.
 * `qmm_cpu quick` skips M = 512 and the 13696-wide shapes; `qmm_cpu decode` runs M = 1 only;
 * `qmm_cpu prefill` runs M = 64 and 512 at 4096 x 4096; `qmm_cpu dequantize` times
 * tsr_dequantize to float32 at 4096 x 4096 against a memcpy of its output. TSR_BENCH_FORMAT
 * (a substring of a format's name, e.g. "affine 4") and TSR_BENCH_SHAPES (how many of the shapes,
 * in the order above) narrow a run. */
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tessera/tessera.h>

#include "openblas_core.h"
#include "read_roof.h"

/* Rounds per measurement: the shared VM has noisy stretches, and each figure is its best round. */
enum { REPEATS = 10, MAX_COPIES = 256 };

/* Weight bytes each measurement walks through in turn, so that weights come from memory: 256 MiB
   or four times the L3 the C library reports, whichever is more (the dev VM's L3 is now 260 MiB,
   the H200 host's 300 MiB); TSR_BENCH_ROTATION_MIB sets another. The header prints it. */
static double rotation_bytes(void) {
  const char *v = getenv("TSR_BENCH_ROTATION_MIB");
  double mib = v && *v ? strtod(v, NULL) : 0.0;
  if (mib > 0.0) return mib * 1048576.0;
  long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  double from_l3 = l3 > 0 ? 4.0 * (double)l3 : 0.0;
  return from_l3 > 256.0 * 1048576.0 ? from_l3 : 256.0 * 1048576.0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, tsr_status st) {
  fprintf(stderr, "qmm_cpu: %s: %s: %s\n", what, tsr_status_name(st), tsr_last_error());
  exit(1);
}

static void *checked_malloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p) die("malloc", TSR_ERR_NOMEM);
  return p;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t next_random(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return rng_state >> 16;
}
static float random_float(void) { /* [-1, 1) */
  return (float)((double)(next_random() & 0xffffff) * 0x1p-23 - 1.0);
}

typedef struct {
  void (*run)(void *);
  void *ctx;
  int iterations;
  double best; /* seconds per call */
} timed;

/* Seconds per call of each run(ctx): a warm-up sizing each one's batch to ~20 ms, then REPEATS
   rounds in which each runs its batch in turn; the best round of each. */
static void time_interleaved(timed *t, int count) {
  for (int i = 0; i < count; i++) {
    double t0 = now_s();
    t[i].run(t[i].ctx);
    double once = now_s() - t0;
    t[i].iterations = once > 0.02 ? 1 : (int)(0.02 / (once > 1e-7 ? once : 1e-7));
    t[i].best = 1e30;
  }
  for (int r = 0; r < REPEATS; r++)
    for (int i = 0; i < count; i++) {
      double t0 = now_s();
      for (int j = 0; j < t[i].iterations; j++)
        t[i].run(t[i].ctx);
      double s = (now_s() - t0) / t[i].iterations;
      if (s < t[i].best) t[i].best = s;
    }
}

static double time_it(void (*run)(void *), void *ctx) {
  timed t = {run, ctx, 0, 0.0};
  time_interleaved(&t, 1);
  return t.best;
}

/* ---- weights -----------------------------------------------------------------------------------
 */

typedef struct {
  const char *name;
  tsr_quant_mode mode;
  int bits, group_size;
} format;

typedef struct {
  const format *f;
  int64_t n, k, words, groups;
  int copies;
  tsr_array *w_q[MAX_COPIES], *scales[MAX_COPIES], *biases[MAX_COPIES];
  read_target reads[MAX_COPIES];
  double bytes; /* weight bytes of one copy: w_q + scales + biases */
  float *dense; /* copy 0 dequantized, [n, k] float32, for the sgemm baseline */
} weights;

static float e4m3(uint32_t code) {
  if ((code & 0x7fu) == 0x7fu) return NAN;
  int e = (int)((code >> 3) & 15u), m = (int)(code & 7u);
  float v = e == 0 ? ldexpf((float)m, -9) : ldexpf((float)(8 + m), e - 10);
  return (code & 0x80u) ? -v : v;
}

static float e2m1(uint32_t code) {
  static const float table[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  return (code & 8u) ? -table[code & 7u] : table[code & 7u];
}

static float bf16(uint16_t bits) {
  uint32_t x = (uint32_t)bits << 16;
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

/* Row n of copy 0 decoded into dense (the format's rule: affine s * q + b; fp value * scale). */
static void decode_row(const weights *w, const uint32_t *codes, const void *scales,
                       const uint16_t *biases, int64_t n) {
  const format *f = w->f;
  for (int64_t i = 0; i < w->k; i++) {
    int64_t bit = i * f->bits, g = n * w->groups + i / f->group_size;
    uint64_t pair = codes[n * w->words + bit / 32];
    if (bit % 32 + f->bits > 32) pair |= (uint64_t)codes[n * w->words + bit / 32 + 1] << 32;
    uint32_t q = (uint32_t)(pair >> (bit % 32)) & ((1u << f->bits) - 1u);
    float value;
    if (f->mode == TSR_QUANT_AFFINE) {
      float s = bf16(((const uint16_t *)scales)[g]);
      value = s * (float)q + bf16(biases[g]);
    } else {
      uint8_t sc = ((const uint8_t *)scales)[g];
      float scale = f->mode == TSR_QUANT_NVFP4 ? e4m3(sc) : ldexpf(1.0f, (int)sc - 127);
      value = (f->mode == TSR_QUANT_MXFP8 ? e4m3(q) : e2m1(q)) * scale;
    }
    w->dense[n * w->k + i] = value;
  }
}

static tsr_array *make_array(const void *data, tsr_dtype dtype, int64_t rows, int64_t cols) {
  int64_t shape[2] = {rows, cols};
  tsr_array *a = NULL;
  tsr_status st = tsr_array_from_data(&a, data, dtype, shape, 2);
  if (st != TSR_OK) die("from_data", st);
  return a;
}

static void fill_copy(weights *w, int c) {
  const format *f = w->f;
  int64_t code_words = w->n * w->words, group_count = w->n * w->groups;
  uint32_t *codes = checked_malloc((size_t)code_words * 4);
  for (int64_t i = 0; i < code_words; i++) {
    uint32_t v = (uint32_t)next_random();
    if (f->mode == TSR_QUANT_MXFP8) /* no NaN elements: a bench wants finite results */
      for (int b = 0; b < 32; b += 8)
        if (((v >> b) & 0x7fu) == 0x7fu) v ^= 1u << b;
    codes[i] = v;
  }
  void *scales;
  uint16_t *biases = NULL;
  if (f->mode == TSR_QUANT_AFFINE) {
    uint16_t *s = checked_malloc((size_t)group_count * 2);
    biases = checked_malloc((size_t)group_count * 2);
    for (int64_t i = 0; i < group_count; i++) {
      float scale = 0.01f * random_float(), bias = 0.1f * random_float();
      uint32_t sb, bb;
      memcpy(&sb, &scale, 4);
      memcpy(&bb, &bias, 4);
      s[i] = (uint16_t)(sb >> 16); /* truncation: any bfloat16 will do */
      biases[i] = (uint16_t)(bb >> 16);
    }
    scales = s;
  } else {
    uint8_t *s = checked_malloc((size_t)group_count);
    for (int64_t i = 0; i < group_count; i++) /* E8M0 2^-9..2^-2; E4M3 0.125..2 */
      s[i] = (uint8_t)(f->mode == TSR_QUANT_NVFP4 ? 0x28 + next_random() % 32
                                                  : 118 + next_random() % 8);
    scales = s;
  }
  tsr_dtype scale_dtype = f->mode == TSR_QUANT_AFFINE ? TSR_BFLOAT16 : TSR_UINT8;
  w->w_q[c] = make_array(codes, TSR_UINT32, w->n, w->words);
  w->scales[c] = make_array(scales, scale_dtype, w->n, w->groups);
  w->biases[c] = biases ? make_array(biases, TSR_BFLOAT16, w->n, w->groups) : NULL;
  if (c == 0)
    for (int64_t n = 0; n < w->n; n++)
      decode_row(w, codes, scales, biases, n);
  /* The plain read reads the arrays' own buffers. */
  tsr_array *parts[3] = {w->w_q[c], w->scales[c], w->biases[c]};
  double element_bytes[3] = {4.0, scale_dtype == TSR_UINT8 ? 1.0 : 2.0, 2.0};
  for (int b = 0; b < 3; b++) {
    void *data = NULL;
    if (parts[b] && tsr_array_data(parts[b], &data) != TSR_OK) die("array_data", TSR_ERR_INVALID);
    double part_bytes = parts[b] ? (double)tsr_array_size(parts[b]) * element_bytes[b] : 0.0;
    w->reads[c].words[b] = data;
    w->reads[c].counts[b] = (size_t)(part_bytes / 8.0);
  }
  free(codes);
  free(scales);
  free(biases);
}

static weights *make_weights(const format *f, int64_t n, int64_t k) {
  weights *w = calloc(1, sizeof *w);
  if (!w) die("calloc", TSR_ERR_NOMEM);
  w->f = f;
  w->n = n;
  w->k = k;
  w->words = k * f->bits / 32;
  w->groups = k / f->group_size;
  int scale_bytes = f->mode == TSR_QUANT_AFFINE ? 4 : 1; /* scale (+ bias) per group */
  w->bytes = (double)n * (double)w->words * 4.0 + (double)n * (double)w->groups * scale_bytes;
  int copies = (int)ceil(rotation_bytes() / w->bytes);
  w->copies = copies < 1 ? 1 : copies > MAX_COPIES ? MAX_COPIES : copies;
  w->dense = checked_malloc((size_t)(n * k) * sizeof(float));
  for (int c = 0; c < w->copies; c++)
    fill_copy(w, c);
  return w;
}

static void free_weights(weights *w) {
  for (int c = 0; c < w->copies; c++) {
    tsr_array_release(w->w_q[c]);
    tsr_array_release(w->scales[c]);
    tsr_array_release(w->biases[c]);
  }
  free(w->dense);
  free(w);
}

/* ---- the three measurements -------------------------------------------------------------------
 */

typedef struct {
  weights *w;
  tsr_array *x;
  int next;
} op_ctx;

static void run_op(void *p) {
  op_ctx *o = p;
  weights *w = o->w;
  int c = o->next++ % w->copies;
  tsr_array *y = NULL;
  tsr_status st = tsr_quantized_matmul(&y, o->x, w->w_q[c], w->scales[c], w->biases[c], true,
                                       w->f->group_size, w->f->bits, w->f->mode, NULL);
  if (st == TSR_OK) st = tsr_eval(&y, 1);
  tsr_array_release(y);
  if (st != TSR_OK) die("quantized_matmul", st);
}

typedef struct {
  weights *w;
  int next;
  bool wide;
} read_ctx;

static void run_read(void *p) {
  read_ctx *r = p;
  plain_read(&r->w->reads[r->next++ % r->w->copies], r->wide);
}

typedef struct {
  const float *x, *dense;
  float *y;
  int m, n, k;
} sgemm_ctx;

static void run_sgemm(void *p) {
  sgemm_ctx *s = p;
  /* tessera runs OpenBLAS at one thread on its own pool (cpu/sgemm.h) and sets that before each
     of its products; the baseline gets OpenBLAS's threads, as many as the op uses. */
  openblas_set_num_threads(readers.threads);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s->m, s->n, s->k, 1.0f, s->x, s->k, s->dense,
              s->k, 0.0f, s->y, s->n);
}

typedef struct {
  weights *w;
  int next;
} dequantize_ctx;

static void run_dequantize(void *p) {
  dequantize_ctx *d = p;
  weights *w = d->w;
  int c = d->next++ % w->copies;
  tsr_array *out = NULL;
  tsr_status st = tsr_dequantize(&out, w->w_q[c], w->scales[c], w->biases[c], w->f->group_size,
                                 w->f->bits, w->f->mode, TSR_FLOAT32, NULL);
  if (st == TSR_OK) st = tsr_eval(&out, 1);
  tsr_array_release(out);
  if (st != TSR_OK) die("dequantize", st);
}

typedef struct {
  const float *from;
  float *to;
  size_t bytes;
} copy_ctx;

static void run_copy(void *p) {
  copy_ctx *c = p;
  memcpy(c->to, c->from, c->bytes);
  __asm__ volatile("" : : "r"(c->to) : "memory");
}

/* tsr_dequantize to float32 against memcpy of its output's bytes (one thread). */
static void bench_dequantize(weights *w) {
  size_t bytes = (size_t)(w->n * w->k) * sizeof(float);
  copy_ctx copy = {w->dense, checked_malloc(bytes), bytes};
  dequantize_ctx d = {w, 0};
  double t_dequantize = time_it(run_dequantize, &d), t_copy = time_it(run_copy, &copy);
  printf("| %s | %lld x %lld | %.3f | %.1f | %.1f | %.2f |\n", w->f->name, (long long)w->n,
         (long long)w->k, t_dequantize * 1e3, (double)bytes / t_dequantize * 1e-9,
         (double)bytes / t_copy * 1e-9, t_copy / t_dequantize);
  fflush(stdout);
  free(copy.to);
}

/* One table row: the op, the roof and the scalar read of its weight bytes (interleaved), then
   sgemm on float32 weights (prefill only: at M = 1 it says nothing the roof does not). */
static void bench_case(weights *w, int64_t m) {
  float *x = checked_malloc((size_t)(m * w->k) * sizeof(float));
  float *y = checked_malloc((size_t)(m * w->n) * sizeof(float));
  for (int64_t i = 0; i < m * w->k; i++)
    x[i] = random_float();
  op_ctx op = {w, make_array(x, TSR_FLOAT32, m, w->k), 0};
  read_ctx roof = {w, 0, true}, scalar = {w, 0, false};
  sgemm_ctx sgemm = {x, w->dense, y, (int)m, (int)w->n, (int)w->k};
  timed t[3] = {{run_op, &op, 0, 0.0}, {run_read, &roof, 0, 0.0}, {run_read, &scalar, 0, 0.0}};
  time_interleaved(t, m == 1 ? 3 : 1);
  double t_op = t[0].best, t_roof = t[1].best, t_scalar = t[2].best;
  if (m == 1) {
    printf("| %s | %lld x %lld | 1 | %.3f | %.1f | %.1f | %.2f | %.1f | %.2f | – | – |\n",
           w->f->name, (long long)w->n, (long long)w->k, t_op * 1e3, w->bytes / t_op * 1e-9,
           w->bytes / t_roof * 1e-9, t_roof / t_op, w->bytes / t_scalar * 1e-9, t_scalar / t_op);
  } else {
    double t_sgemm = time_it(run_sgemm, &sgemm);
    if (!isfinite(y[m * w->n - 1])) die("sgemm result", TSR_ERR_INVALID);
    printf("| %s | %lld x %lld | %lld | %.3f | – | – | – | – | – | %.3f | %.2f |\n", w->f->name,
           (long long)w->n, (long long)w->k, (long long)m, t_op * 1e3, t_sgemm * 1e3,
           t_sgemm / t_op);
  }
  fflush(stdout);
  tsr_array_release(op.x);
  free(x);
  free(y);
}

/* OpenBLAS's threads spin for ~2^28 cycles after each call before they sleep; on a machine with
   few cores they then take the cores from the next measurement (half of them on the dev VM:
   a third of the M = 64 rows ran at twice their time, right after the previous row's sgemm).
   OpenBLAS reads OPENBLAS_THREAD_TIMEOUT (log2 of the spin cycles) when it loads, so the bench
   runs itself again with the shortest one unless it is set (tessera itself runs OpenBLAS at one
   thread, cpu/sgemm.h; this is for the sgemm baseline's threads), and with the widest core the
   CPU runs named (bench/openblas_core.h). The header prints the core OpenBLAS used. */
static void without_openblas_spin(char **argv) {
  const char *core = widest_openblas_core(), *set = getenv("OPENBLAS_CORETYPE");
  bool core_named = core ? set && strcmp(set, core) == 0 : !set;
  if (getenv("OPENBLAS_THREAD_TIMEOUT") && core_named) return;
  if (!getenv("OPENBLAS_THREAD_TIMEOUT")) setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1);
  if (core)
    setenv("OPENBLAS_CORETYPE", core, 1);
  else
    unsetenv("OPENBLAS_CORETYPE");
  execv("/proc/self/exe", argv);
  fprintf(stderr,
          "qmm_cpu: could not re-run without OpenBLAS's spinning threads; measuring with\n");
}

int main(int argc, char **argv) {
  without_openblas_spin(argv);
  bool quick = argc > 1 && strcmp(argv[1], "quick") == 0;
  bool decode_only = argc > 1 && strcmp(argv[1], "decode") == 0;
  bool prefill_only = argc > 1 && strcmp(argv[1], "prefill") == 0;
  static const format formats[] = {{"affine 4-bit g64", TSR_QUANT_AFFINE, 4, 64},
                                   {"affine 8-bit g64", TSR_QUANT_AFFINE, 8, 64},
                                   {"mxfp4", TSR_QUANT_MXFP4, 4, 32},
                                   {"mxfp8", TSR_QUANT_MXFP8, 8, 32},
                                   {"nvfp4", TSR_QUANT_NVFP4, 4, 16}};
  static const int64_t shapes[][2] = {{4096, 4096}, {13696, 4096}, {4096, 13696}, {4096, 14336}};
  static const int64_t ms[] = {1, 64, 512};
  readers_start();
  if (argc > 1 && strcmp(argv[1], "dequantize") == 0) {
    printf(
        "## qmm_cpu dequantize: tsr_dequantize to float32 (build + eval) on %d threads\n\n"
        "| format | N x K | ms | output GB/s | memcpy GB/s (1 thread) | memcpy / ours |\n"
        "| --- | --- | --- | --- | --- | --- |\n",
        readers.threads);
    for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
      weights *w = make_weights(&formats[f], shapes[0][0], shapes[0][1]);
      bench_dequantize(w);
      free_weights(w);
    }
    readers_stop();
    tsr_shutdown();
    return 0;
  }
  const char *loads;
  wide_sum(&loads);
  printf(
      "## qmm_cpu: tsr_quantized_matmul (build + eval, transpose, x float32) on %d threads "
      "(%s, core %s; weights rotated over %.0f MiB)\n\n",
      readers.threads, openblas_get_config(), openblas_get_corename(),
      rotation_bytes() / 1048576.0);
  printf(
      "| format | N x K | M | qmm ms | weight GB/s | roof GB/s (%s read) | roof ratio | "
      "scalar-loop read GB/s | scalar-loop ratio (Step 3's) | sgemm ms (float32 weights) | "
      "sgemm / qmm (goal >= 1.0) |\n",
      loads);
  printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  const char *only_format = getenv("TSR_BENCH_FORMAT"), *shape_count = getenv("TSR_BENCH_SHAPES");
  size_t shape_limit = shape_count && *shape_count ? (size_t)strtol(shape_count, NULL, 10) : 99;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0] && s < shape_limit; s++) {
    if ((quick || prefill_only) && s > 0) continue;
    for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
      if (only_format && *only_format && !strstr(formats[f].name, only_format)) continue;
      weights *w = make_weights(&formats[f], shapes[s][0], shapes[s][1]);
      for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        if ((quick && ms[i] > 64) || (decode_only && ms[i] > 1) || (prefill_only && ms[i] == 1))
          continue;
        bench_case(w, ms[i]);
      }
      free_weights(w);
    }
  }
  readers_stop();
  tsr_memory_clear_cache((tsr_device){TSR_CPU, 0});
  tsr_shutdown();
  return 0;
}
