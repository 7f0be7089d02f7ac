/* cpu/qmm_fast.c — the driver of the fast quantized-matmul paths (cpu/qmm_fast.h): chooses the
 * instruction set (once per CPU context, cpu/context.h, which keeps it with the pool; kernels
 * reach both through p->cpu), lays x out for the qmv kernels, splits rows across the pool
 * (cpu/parallel.h), picks qmv, the fused GEMM (cpu/qgemm.c) or the tiled path (dequantize a tile
 * of weight rows to float32, then cblas_sgemm on it), which it runs; also the portable scalar
 * kernels. Not the SIMD kernels themselves (cpu/qmm_fast_avx512.c, cpu/qmm_fast_avx2.c,
 * cpu/qgemm_avx512.c, cpu/qgemm_avx2.c). */
#include "cpu/qmm_fast.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/discovery.h"
#include "base/env.h"
#include "base/log.h"
#include "cpu/context.h"
#include "cpu/gemm.h"
#include "cpu/parallel.h"
#include "cpu/qgemm.h"
#include "cpu/qmm_fast_isa.h"
#include "cpu/sgemm.h"

enum {
  /* Weight bytes one chunk of a parallel loop reads at least: smaller problems run on the
     calling thread alone, where waking the pool would cost more than it saves. */
  CHUNK_MIN_BYTES = 32 * 1024,
  /* Float32 elements of one dequantized tile of the tiled path (16 MiB). Measured on the dev VM,
     4096 x 4096 affine 4-bit, 2 threads, tiles of 0.25 / 1 / 4 / 16 / 64 MiB: M = 16 21 / 13 /
     5.6 / 5.6 / 8.4 ms; M = 64 19 / 15 / 12.9 / 13.9 / 15.9 ms; M = 512 129 / 98 / 93 / 82 /
     81 ms. 4 MiB tiles for M < 256 then lost to 16 MiB in bench/qmm_cpu's M = 64 rows (sgemm /
     qmm 0.67-0.86 against 0.77-0.97 over two runs each), so one size. */
  TILE_FLOATS = 4 * 1024 * 1024,
  /* Codes the scalar kernels dequantize at a time (a multiple of every group size). */
  SCALAR_SEGMENT = 512
};

/* ---- the instruction set ------------------------------------------------------------------- */

const tsri_qmm_isa *tsri_qmm_fast_choose_isa(void) {
  const tsri_qmm_isa *levels[3] = {tsri_qmm_isa_scalar(), tsri_qmm_isa_avx2(),
                                   tsri_qmm_isa_avx512()};
  static const char *const names[3] = {"scalar", "avx2", "avx512"};
  const tsri_discovery_result *d = tsri_discovery();
  int best = 0;
  bool avx2 = d->has_avx2 && d->has_fma && d->has_f16c;
  if (levels[1] && avx2) best = 1;
  if (levels[2] && avx2 && d->has_avx512f) best = 2;
  int level = best;
  const tsri_env_knobs *env = tsri_env(); /* an unknown name was warned about there */
  if (env->cpu_isa != TSRI_ENV_ISA_UNSET) {
    int asked = (int)env->cpu_isa;
    if (asked > best)
      tsri_log(TSRI_LOG_WARN, "TSR_CPU_ISA=%s: this CPU lacks it; using %s", env->cpu_isa_text,
               names[best]);
    else
      level = asked;
  }
  return levels[level];
}

void tsri_qmm_fast_dequantize_row(const tsri_qmm_problem *p, int64_t row, float *dst) {
  p->cpu->isa->dequantize_span(p, row, 0, tsri_qmm_row_codes(p), dst);
}

/* ---- nvfp4's scale table -------------------------------------------------------------------- */

/* Pure constants (each code's value, the same for every device and never written after they are
   filled): a named process-wide table, filled once, rather than state of a device's context. The
   e8m0 scales need none: their value is an exponent shift. */
static pthread_once_t e4m3_once = PTHREAD_ONCE_INIT;
static float e4m3_table[256];

static void fill_e4m3_table(void) {
  for (uint32_t code = 0; code < 256; code++)
    e4m3_table[code] = tsri_qf_e4m3_decode(code);
}

const float *tsri_qmm_e4m3_table(void) {
  pthread_once(&e4m3_once, fill_e4m3_table);
  return e4m3_table;
}

/* ---- the portable kernels ------------------------------------------------------------------- */

/* Codes [begin, begin + count) of packed row `row` dequantized into dst, exactly as
   base/quant_format.h decodes them (begin and count multiples of the group size). */
static void scalar_dequantize(const tsri_qmm_problem *p, int64_t row, int64_t begin, int64_t count,
                              float *dst) {
  const uint32_t *codes = p->w + row * p->w_row_words;
  int64_t group_size = p->group_size;
  for (int64_t g = begin / group_size; g < (begin + count) / group_size; g++) {
    float scale = tsri_qmm_scale(p, row, g);
    float bias = p->mode == TSRI_QF_AFFINE ? tsri_qmm_bias(p, row, g) : 0.0f;
    float *out = dst + (g * group_size - begin);
    for (int64_t i = 0; i < group_size; i++) {
      uint32_t code = tsri_qf_get_code(codes, g * group_size + i, p->bits);
      if (p->mode == TSRI_QF_AFFINE)
        out[i] = tsri_qmm_affine_weight(scale, bias, code, tsri_qmm_weight_dtype(p));
      else if (p->mode == TSRI_QF_MXFP8)
        out[i] = tsri_qf_e4m3_decode(code) * scale;
      else
        out[i] = tsri_qf_fp4_decode(code) * scale;
    }
  }
}

static tsri_qmm_x_order scalar_x_order(const tsri_qmm_problem *p) {
  (void)p;
  return (tsri_qmm_x_order){0, 1};
}

/* Measured on the dev VM (4096 x 4096, affine 4-bit and mxfp8): the scalar decode is as slow in
   qmv as in the tiled path, which then multiplies through sgemm; qmv reads the weights once. */
static int64_t scalar_qmv_max_m(const tsri_qmm_problem *p) {
  (void)p;
  return 1;
}

enum { SCALAR_ROWS_AT_ONCE = 8 };

/* Affine in the factored form (cpu/qmm_fast_isa.h): per group s * sum x q + b * xsum. */
static void scalar_affine_rows(const tsri_qmm_problem *p, const float *xp, const float *xsums,
                               int64_t row_begin, int64_t row_end) {
  const int64_t group_size = p->group_size, groups = p->k / group_size;
  const uint32_t mask = (1u << p->bits) - 1u;
  uint8_t codes[TSRI_QMM_MAX_GROUP];
  for (int64_t r = row_begin; r < row_end; r++) {
    const uint32_t *row = p->w + r * p->w_row_words;
    float sums[SCALAR_ROWS_AT_ONCE] = {0};
    for (int64_t g = 0; g < groups; g++) {
      if (p->bits == 4 || p->bits == 8 || p->bits == 2) /* whole codes per byte, LSB first */
        for (int64_t i = 0; i < group_size; i++) {
          int64_t bit = (g * group_size + i) * p->bits;
          codes[i] = (uint8_t)((((const uint8_t *)row)[bit >> 3] >> (bit & 7)) & mask);
        }
      else
        tsri_qmm_unpack_codes(row, g * group_size, group_size, p->bits, codes);
      float scale = tsri_qmm_scale(p, r, g), bias = tsri_qmm_bias(p, r, g);
      for (int64_t m = 0; m < p->m; m++) {
        const float *x = xp + m * p->k + g * group_size;
        float dot = 0.0f;
        for (int64_t i = 0; i < group_size; i++)
          dot += x[i] * (float)codes[i];
        sums[m] += scale * dot + bias * xsums[m * groups + g];
      }
    }
    for (int64_t m = 0; m < p->m; m++)
      p->y[m * p->y_row_stride + r] = sums[m];
  }
}

static void scalar_qmv_rows(const tsri_qmm_problem *p, const float *xp, const float *xsums,
                            int64_t row_begin, int64_t row_end) {
  if (p->mode == TSRI_QF_AFFINE) {
    scalar_affine_rows(p, xp, xsums, row_begin, row_end);
    return;
  }
  float w[SCALAR_SEGMENT];
  for (int64_t r = row_begin; r < row_end; r++) {
    float sums[SCALAR_ROWS_AT_ONCE] = {0};
    for (int64_t begin = 0; begin < p->k; begin += SCALAR_SEGMENT) {
      int64_t count = p->k - begin < SCALAR_SEGMENT ? p->k - begin : SCALAR_SEGMENT;
      scalar_dequantize(p, r, begin, count, w);
      for (int64_t m = 0; m < p->m; m++) {
        const float *x = xp + m * p->k + begin;
        float sum = 0.0f;
        for (int64_t i = 0; i < count; i++)
          sum += x[i] * w[i];
        sums[m] += sum;
      }
    }
    for (int64_t m = 0; m < p->m; m++)
      p->y[m * p->y_row_stride + r] = sums[m];
  }
}

const tsri_qmm_isa *tsri_qmm_isa_scalar(void) {
  static const tsri_qmm_isa scalar = {"scalar",
                                      SCALAR_ROWS_AT_ONCE,
                                      scalar_qmv_max_m,
                                      scalar_x_order,
                                      scalar_qmv_rows,
                                      scalar_dequantize,
                                      NULL};
  return &scalar;
}

/* ---- decode: qmv across the cores ----------------------------------------------------------- */

/* x rearranged into `order` (see tsri_qmm_x_order), M rows of K. */
static void arrange_x(const tsri_qmm_problem *p, tsri_qmm_x_order order, float *xp) {
  for (int64_t m = 0; m < p->m; m++) {
    const float *x = p->x + m * p->x_row_stride;
    float *dst = xp + m * p->k;
    int64_t k = 0;
    for (int lanes = order.lanes; lanes >= order.lanes / 2 && lanes > 0; lanes /= 2) {
      int64_t block = (int64_t)lanes * order.per_byte;
      for (; k + block <= p->k; k += block)
        for (int j = 0; j < order.per_byte; j++)
          for (int i = 0; i < lanes; i++)
            dst[k + j * lanes + i] = x[k + (int64_t)order.per_byte * i + j];
    }
    memcpy(dst + k, x + k, (size_t)(p->k - k) * sizeof *dst);
  }
}

/* Each row of x summed over each group along K, in float32 in increasing k (the factored affine
   form's b * xsum term: computed once per product, shared by every weight row). */
static void sum_groups(const tsri_qmm_problem *p, float *xsums) {
  const int64_t groups = p->k / p->group_size;
  for (int64_t m = 0; m < p->m; m++)
    for (int64_t g = 0; g < groups; g++) {
      const float *x = p->x + m * p->x_row_stride + g * p->group_size;
      float sum = 0.0f;
      for (int64_t i = 0; i < p->group_size; i++)
        sum += x[i];
      xsums[m * groups + g] = sum;
    }
}

/* Whether every x is 0 or finite of magnitude in [2^-60, 2^60] (tsri_qmm_problem.x_moderate),
   on the magnitudes' bits (integer comparisons the compiler vectorizes; NaN and Inf are above
   the range). */
static bool x_moderate(const tsri_qmm_problem *p) {
  const uint32_t low = 0x21800000u, high = 0x5d800000u; /* 2^-60 and 2^60 */
  uint32_t outside = 0;
  for (int64_t m = 0; m < p->m; m++) {
    const float *x = p->x + m * p->x_row_stride;
    for (int64_t k = 0; k < p->k; k++) {
      uint32_t bits;
      memcpy(&bits, &x[k], sizeof bits);
      uint32_t magnitude = bits & 0x7fffffffu;
      outside |= (uint32_t)(magnitude != 0) & (uint32_t)(magnitude - low > high - low);
    }
  }
  return outside == 0;
}

typedef struct {
  const tsri_qmm_problem *p;
  const tsri_qmm_isa *isa;
  const float *xp, *xsums;
} qmv_job;

static void qmv_chunk(int64_t row_begin, int64_t row_end, void *ctx) {
  const qmv_job *job = ctx;
  int64_t at_once = job->isa->qmv_rows_at_once;
  for (int64_t m0 = 0; m0 < job->p->m; m0 += at_once) {
    tsri_qmm_problem part = *job->p;
    part.m = job->p->m - m0 < at_once ? job->p->m - m0 : at_once;
    part.x = job->p->x + m0 * job->p->x_row_stride;
    part.y = job->p->y + m0 * job->p->y_row_stride;
    const float *xsums = job->xsums ? job->xsums + m0 * (job->p->k / job->p->group_size) : NULL;
    job->isa->qmv_rows(&part, job->xp + m0 * job->p->k, xsums, row_begin, row_end);
  }
}

static int64_t rows_per_chunk(const tsri_qmm_problem *p) {
  int64_t row_bytes = p->w_row_words * 4;
  int64_t rows = CHUNK_MIN_BYTES / (row_bytes > 0 ? row_bytes : 1);
  return rows > 1 ? rows : 1;
}

static bool run_qmv(const tsri_qmm_isa *kernels, const tsri_qmm_problem *problem) {
  tsri_qmm_problem moderated = *problem;
  moderated.x_moderate =
      problem->mode == TSRI_QF_NVFP4 && x_moderate(problem); /* its only reader */
  const tsri_qmm_problem *p = &moderated;
  tsri_qmm_x_order order = kernels->x_order(p);
  bool arrange = order.per_byte > 1 || p->x_row_stride != p->k;
  int64_t sums = p->mode == TSRI_QF_AFFINE ? p->m * (p->k / p->group_size) : 0;
  tsri_buffer *scratch = NULL;
  const float *xp = p->x, *xsums = NULL;
  if (arrange || sums > 0) {
    if (tsri_cpu_scratch(p->device, (arrange ? p->m * p->k : 0) + sums, &scratch) != TSR_OK)
      return false;
    float *data = (float *)scratch->data;
    if (arrange) {
      arrange_x(p, order, data);
      xp = data;
    }
    if (sums > 0) {
      sum_groups(p, data + (arrange ? p->m * p->k : 0));
      xsums = data + (arrange ? p->m * p->k : 0);
    }
  }
  qmv_job job = {p, kernels, xp, xsums};
  tsri_parallel_for(p->cpu->pool, p->n, rows_per_chunk(p), qmv_chunk, &job);
  tsri_buffer_release(scratch);
  return true;
}

/* ---- prefill: dequantized tiles through sgemm ------------------------------------------------ */

typedef struct {
  const tsri_qmm_problem *p;
  const tsri_qmm_isa *isa;
  int64_t first_row, row_codes;
  float *tile;
} tile_job;

static void dequantize_chunk(int64_t begin, int64_t end, void *ctx) {
  const tile_job *job = ctx;
  for (int64_t r = begin; r < end; r++)
    job->isa->dequantize_span(job->p, job->first_row + r, 0, job->row_codes,
                              job->tile + r * job->row_codes);
}

static bool run_tiled(const tsri_qmm_isa *kernels, const tsri_qmm_problem *p) {
  int64_t row_codes = tsri_qmm_row_codes(p), rows = p->transpose ? p->n : p->k;
  int64_t tile_rows = TILE_FLOATS / row_codes;
  tile_rows = tile_rows < 1 ? 1 : tile_rows > rows ? rows : tile_rows;
  tsri_buffer *scratch = NULL;
  if (tsri_cpu_scratch(p->device, tile_rows * row_codes, &scratch) != TSR_OK) return false;
  tile_job job = {p, kernels, 0, row_codes, (float *)scratch->data};
  for (int64_t first = 0; first < rows; first += tile_rows) {
    int64_t count = rows - first < tile_rows ? rows - first : tile_rows;
    job.first_row = first;
    tsri_parallel_for(p->cpu->pool, count, rows_per_chunk(p), dequantize_chunk, &job);
    if (p->transpose) /* y[:, first:first+count] = x @ tile.T */
      tsri_sgemm(p->cpu->pool, false, true, p->m, count, p->k, 1.0f, p->x, p->x_row_stride,
                 job.tile, row_codes, 0.0f, p->y + first, p->y_row_stride);
    else /* y += x[:, first:first+count] @ tile */
      tsri_sgemm(p->cpu->pool, false, false, p->m, p->n, count, 1.0f, p->x + first, p->x_row_stride,
                 job.tile, row_codes, first == 0 ? 0.0f : 1.0f, p->y, p->y_row_stride);
  }
  tsri_buffer_release(scratch);
  return true;
}

/* ---- the entry points ------------------------------------------------------------------------ */

bool tsri_qmm_fast_accepts(const tsri_qmm_problem *p) {
  if (!tsri_qf_valid(p->mode, p->group_size, p->bits)) return false;
  if (p->m <= 0 || p->n <= 0 || p->k <= 0) return false;
  /* cblas takes int sizes and leading dimensions. */
  int64_t largest = p->m > p->n ? p->m : p->n;
  largest = p->k > largest ? p->k : largest;
  largest = p->x_row_stride > largest ? p->x_row_stride : largest;
  largest = p->y_row_stride > largest ? p->y_row_stride : largest;
  return largest <= INT_MAX && tsri_qmm_row_codes(p) % p->group_size == 0;
}

static bool fused_gemm_fits(const tsri_qmm_isa *kernels, const tsri_qmm_problem *p) {
  const tsri_qgemm_kernel *gemm = kernels->gemm ? kernels->gemm() : NULL;
  return gemm && (gemm->max_m == 0 || p->m <= gemm->max_m);
}

void tsri_qmm_fast(const tsri_qmm_problem *p) {
  const tsri_qmm_isa *kernels = p->cpu->isa;
  bool done;
  if (p->transpose && p->m <= kernels->qmv_max_m(p))
    done = run_qmv(kernels, p);
  else if (fused_gemm_fits(kernels, p))
    done = tsri_qgemm_run(kernels, p) || run_tiled(kernels, p);
  else
    done = run_tiled(kernels, p);
  if (!done) tsri_qmm_reference_kernel(p->transpose, p->mode)(p);
}
