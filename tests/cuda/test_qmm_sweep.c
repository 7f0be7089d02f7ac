/* tests/cuda/test_qmm_sweep.c — the randomized differential sweep of issue 13: tsr_quantized_matmul
 * and tsr_gather_qmm on the GPU and on the CPU over 10^4 generated geometries (TSR_SWEEP_CASES),
 * both against the float64 product of x and dequantize(w) within tests/quant/qmm_ref.h's derived
 * bound (quant-spec Part A §4). Each case draws one kernel specialization from a fixed table (so
 * the NVRTC compiles stay bounded: 207, cuda/qmm_sweep.h), then M (1..8 decode, across the
 * 64-row tile beyond), N and K with partial tiles (nvfp4's K = 16 mod 32 included, now and then a
 * K past qmv's x tile), a batch layout (1-D x, batched x over a 2-D w, broadcast batches, a 2-D x
 * over a batched w, gathers with 1..16 experts, lhs and rhs indices of every integer dtype,
 * sorted, unsorted, repeated, strided, enough products for the grid-stride loops), float32/
 * float16/bfloat16 x and scales, a strided x, operands at unaligned offsets, and NaN/Inf in x or
 * a scale. w is quantized on the CPU (tsr_quantize) from groups of various kinds.
 *
 * The library's outputs are poisoned: this test sets TSR_DEBUG_POISON=1, so each CUDA output
 * starts as 0xFF bytes (NaN in every float dtype) and an element a kernel never writes fails its
 * comparison (checked below on a poisoned copy: the comparison flags exactly the NaN elements).
 * The first violation fails the test naming the case, its parameters and how to rerun it alone.
 *
 * With a GPU, copies of this program compile the specializations in parallel into the JIT disk
 * cache first (warm_up below). Knobs: TSR_SWEEP_CASES (default 10000; without a GPU 200, under
 * TSR_SANITIZED 40), TSR_SWEEP_SEED (default 1), TSR_SWEEP_ONLY=i (case i alone),
 * TSR_SWEEP_JOBS (warm-up processes, default one per core up to 16; 1: none). Without a usable
 * GPU the CPU part runs, then one skip line. Not a benchmark; not a test of quantize
 * (test_quant_gpu.c). */
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../src/base/env.c" /* this file's copy of the knob reader: TSR_DEBUG_POISON parses */
#include "cuda/qmm_sweep.h"
#include "quant/qmm_ref.h"

/* ---- the data ------------------------------------------------------------------------------ */

typedef struct {
  void *x; /* row-major in x_shape, x's dtype */
  uint32_t *wq;
  void *scales, *biases; /* the quantized w as the ops receive it (maybe a non-finite scale) */
  int64_t w_matrices, rows, per_row, words, groups;
  tsr_dtype scale_dtype;
  tsr_array *x_array, *wq_array, *scales_array, *biases_array, *lhs_array, *rhs_array;
} sweep_data;

static void fail_case(const sweep_case *c, const char *what, const char *detail) {
  fprintf(stderr, "FAILED %s%s\n  ", what, detail);
  describe(c, stderr);
  fprintf(stderr, "  last error: %s\n", tsr_last_error());
  exit(1);
}

/* A [rows, cols] array stored transposed and viewed back: a strided operand. */
static tsr_array *transposed_view(const void *data, tsr_dtype dtype, int64_t rows, int64_t cols) {
  size_t e = tsr_dtype_size(dtype);
  unsigned char *t = malloc((size_t)(rows * cols) * e + 1);
  CHECK(t != NULL);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++)
      memcpy(t + (size_t)(j * rows + i) * e,
             (const unsigned char *)data + (size_t)(i * cols + j) * e, e);
  int64_t shape[2] = {cols, rows};
  tsr_array *stored = host_array(t, dtype, shape, 2), *view = NULL;
  free(t);
  CHECK_OK(tsr_transpose(&view, stored, NULL, 0, tsr_default_stream(cpu)));
  tsr_array_release(stored);
  return view;
}

/* count elements of `shape` starting `pad` elements (1..3) into a buffer of junk: a contiguous
   view at an offset, which the GPU reads in place (cuda/packed.h) from an address that is not
   16-byte aligned (qmv's vector loads must notice). pad 0: a plain array. */
static tsr_array *offset_array(const void *data, tsr_dtype dtype, const int64_t *shape, int ndim,
                               int64_t pad) {
  if (pad == 0) return host_array(data, dtype, shape, ndim);
  size_t e = tsr_dtype_size(dtype);
  int64_t count = product(shape, ndim), all = count + pad, start = pad;
  unsigned char *storage = malloc((size_t)all * e + 1);
  CHECK(storage != NULL);
  memset(storage, 0xa5, (size_t)pad * e);
  memcpy(storage + (size_t)pad * e, data, (size_t)count * e);
  tsr_array *flat = host_array(storage, dtype, &all, 1), *tail = NULL, *view = NULL;
  free(storage);
  CHECK_OK(tsr_slice(&tail, flat, &start, &all, NULL, 1, tsr_default_stream(cpu)));
  CHECK_OK(tsr_reshape(&view, tail, shape, ndim, tsr_default_stream(cpu)));
  tsr_array_release(flat);
  tsr_array_release(tail);
  return view;
}

static tsr_array *index_array(const sweep_index *s) {
  if (!s->present) return NULL;
  size_t e = tsr_dtype_size(s->dtype);
  unsigned char *v = malloc((size_t)s->count * e + 1);
  CHECK(v != NULL);
  for (int64_t i = 0; i < s->count; i++) {
    int64_t x = s->values[i];
    int32_t i32 = (int32_t)x;
    uint32_t u32 = (uint32_t)x;
    int8_t i8 = (int8_t)x;
    uint8_t u8 = (uint8_t)x;
    const void *from = s->dtype == TSR_INT64    ? (const void *)&x
                       : s->dtype == TSR_INT32  ? (const void *)&i32
                       : s->dtype == TSR_UINT32 ? (const void *)&u32
                       : s->dtype == TSR_INT8   ? (const void *)&i8
                                                : (const void *)&u8;
    memcpy(v + (size_t)i * e, from, e);
  }
  tsr_array *a = s->strided ? transposed_view(v, s->dtype, s->shape[0], s->shape[1])
                            : host_array(v, s->dtype, s->shape, s->ndim);
  free(v);
  return a;
}

/* w's float values, group by group of various kinds (signs, ranges, zeros), quantized on the CPU
   and read back. */
static void quantize_w(rng *r, const sweep_case *c, sweep_data *d) {
  int64_t shape[4], n = d->w_matrices * d->rows * d->per_row;
  memcpy(shape, c->w_batch, sizeof(int64_t) * (size_t)c->w_batch_ndim);
  shape[c->w_batch_ndim] = d->rows;
  shape[c->w_batch_ndim + 1] = d->per_row;
  void *w = malloc((size_t)n * 4 + 4);
  CHECK(w != NULL);
  for (int64_t g = 0; g < n / c->group_size; g++) {
    int kind = (int)between(r, 0, 99);
    for (int64_t i = g * c->group_size; i < (g + 1) * c->group_size; i++) {
      double v = kind < 70   ? uniform(r, -1, 1)
                 : kind < 78 ? uniform(r, 0.5, 2)
                 : kind < 85 ? uniform(r, -2, -0.5)
                 : kind < 90 ? 1 + uniform(r, 0, 1e-3)
                 : kind < 95 ? 0.0
                             : uniform(r, -8, 8);
      storef(w, c->w_dtype, i, (float)v);
    }
  }
  tsr_array *wa = host_array(w, c->w_dtype, shape, c->w_batch_ndim + 2), *q[3] = {NULL};
  free(w);
  CHECK_OK(tsr_quantize(&q[0], &q[1], &q[2], wa, c->group_size, c->bits, c->mode,
                        tsr_default_stream(cpu)));
  void **dst[3] = {(void **)&d->wq, &d->scales, &d->biases};
  for (int p = 0; p < 3; p++) {
    if (!q[p]) continue;
    size_t bytes = (size_t)tsr_array_size(q[p]) * tsr_dtype_size(tsr_array_dtype(q[p]));
    *dst[p] = malloc(bytes + 4);
    CHECK(*dst[p] != NULL);
    CHECK_OK(tsr_array_read(q[p], *dst[p], bytes));
    tsr_array_release(q[p]);
  }
  tsr_array_release(wa);
}

/* NaN or Inf in one x element, or a non-finite scale (affine NaN/Inf, nvfp4 0x7F NaN, E8M0 255
   +Inf) in one group. */
static void nonfinite_inputs(rng *r, const sweep_case *c, sweep_data *d, int64_t x_size) {
  if (c->nonfinite == NAN_X || c->nonfinite == INF_X) {
    float v = c->nonfinite == NAN_X ? NAN : chance(r, 50) ? INFINITY : -INFINITY;
    storef(d->x, c->x_dtype, between(r, 0, x_size - 1), v);
  } else if (c->nonfinite == BAD_SCALE) {
    int64_t at = between(r, 0, d->w_matrices * d->rows * d->groups - 1);
    if (c->mode == TSR_QUANT_AFFINE)
      storef(d->scales, c->w_dtype, at, chance(r, 50) ? NAN : INFINITY);
    else
      ((uint8_t *)d->scales)[at] = c->mode == TSR_QUANT_NVFP4 ? 0x7f : 255;
  }
}

static void make_data(const sweep_case *c, sweep_data *d) {
  rng r = {splitmix64(c->seed ^ splitmix64((uint64_t)c->index) ^ 0x5bd1e995ull)};
  memset(d, 0, sizeof *d);
  d->w_matrices = c->w_batch_ndim ? product(c->w_batch, c->w_batch_ndim) : 1;
  d->rows = c->transpose ? c->N : c->K;
  d->per_row = c->transpose ? c->K : c->N;
  d->words = d->per_row * c->bits / 32;
  d->groups = d->per_row / c->group_size;
  d->scale_dtype = c->mode == TSR_QUANT_AFFINE ? c->w_dtype : TSR_UINT8;
  int64_t x_size = product(c->x_shape, c->x_ndim);
  d->x = malloc((size_t)x_size * 4 + 4);
  CHECK(d->x != NULL);
  for (int64_t i = 0; i < x_size; i++)
    storef(d->x, c->x_dtype, i, (float)uniform(&r, -1, 1));
  quantize_w(&r, c, d);
  nonfinite_inputs(&r, c, d, x_size);
  int64_t pad[4] = {0, 0, 0, 0};
  for (int i = 0; c->offset_views && i < 4; i++)
    pad[i] = between(&r, 1, 3);
  d->x_array = c->x_strided ? transposed_view(d->x, c->x_dtype, c->M, c->K)
                            : offset_array(d->x, c->x_dtype, c->x_shape, c->x_ndim, pad[0]);
  int64_t shape[4];
  int ndim = c->w_batch_ndim + 2;
  memcpy(shape, c->w_batch, sizeof(int64_t) * (size_t)c->w_batch_ndim);
  shape[ndim - 2] = d->rows;
  shape[ndim - 1] = d->words;
  d->wq_array = offset_array(d->wq, TSR_UINT32, shape, ndim, pad[1]);
  shape[ndim - 1] = d->groups;
  d->scales_array = offset_array(d->scales, d->scale_dtype, shape, ndim, pad[2]);
  if (d->biases) d->biases_array = offset_array(d->biases, d->scale_dtype, shape, ndim, pad[3]);
  d->lhs_array = index_array(&c->lhs);
  d->rhs_array = index_array(&c->rhs);
}

static void free_data(sweep_data *d) {
  tsr_array *all[] = {d->x_array,      d->wq_array,  d->scales_array,
                      d->biases_array, d->lhs_array, d->rhs_array};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    tsr_array_release(all[i]);
  free(d->x);
  free(d->wq);
  free(d->scales);
  free(d->biases);
}

/* ---- the float64 product and the bound ----------------------------------------------------- */

/* The worst |output - f64| / bound seen, per backend (GPU, CPU), mode, kernel (qmv, qmm) and
   output dtype (qr_dtype_slot). Near 1 is expected with a float16/bfloat16 output (rounding to it
   is half an ulp, all of the bound when the sum is short) and with affine float16/bfloat16 scales
   (the factored form's distance to x @ dequantize(w), the bound's sum_diff term, is reached when
   one group dominates); float32 outputs with float32 scales show the accumulation alone. */
typedef struct {
  int64_t outputs;
  double worst;
  int64_t worst_case;
} ratio_stat;
static ratio_stat ratios[2][4][2][3];

/* Each dequantized w matrix the products use, three ways (qmm_ref.h's qr_dequantize), built on
   first use. */
typedef struct {
  double **rule, **hat, **terms;
  int64_t count;
} dequant_cache;

static void cache_get(dequant_cache *cache, const qr_weights *w, int64_t m, int64_t K, int64_t N) {
  if (cache->rule[m]) return;
  size_t kn = (size_t)(K * N) + 1;
  cache->rule[m] = malloc(kn * sizeof(double));
  cache->hat[m] = malloc(kn * sizeof(double));
  cache->terms[m] = malloc(kn * sizeof(double));
  CHECK(cache->rule[m] && cache->hat[m] && cache->terms[m]);
  qr_dequantize(w, m, K, N, cache->rule[m], cache->hat[m], cache->terms[m]);
}

static void cache_free(dequant_cache *cache) {
  for (int64_t m = 0; m < cache->count; m++) {
    free(cache->rule[m]);
    free(cache->hat[m]);
    free(cache->terms[m]);
  }
  free(cache->rule);
  free(cache->hat);
  free(cache->terms);
}

/* One output element against its expectation: counts a failure (printing the first few unless
   quiet) and notes the ratio to the bound under stat (NULL: not noted). */
static void check_element(const sweep_case *c, double got, const qr_expect *e, tsr_dtype dtype,
                          const char *name, const int64_t *at, int64_t *failures, ratio_stat *stat,
                          bool quiet) {
  double tol = qr_tolerance(e, c->K, dtype, c->mode);
  if (stat) {
    stat->outputs++;
    double ratio =
        isfinite(got) && isfinite(e->ref_hat) && tol > 0 ? fabs(got - e->ref_hat) / tol : 0.0;
    if (ratio > stat->worst) stat->worst = ratio, stat->worst_case = c->index;
  }
  /* Against the float64 product of x and dequantize(w) (quant-spec Part A §4); affine's bound
     holds against it too (qmm_ref.h). */
  if (qr_close(got, e->ref_hat, tol, c->mode)) return;
  if ((*failures)++ < 4 && !quiet)
    fprintf(stderr, "  %s [%lld][%lld][%lld]: got %.9g, f64 %.9g, bound %.3g\n", name,
            (long long)at[0], (long long)at[1], (long long)at[2], got, e->ref_hat, tol);
}

static const char *const BACKEND_NAMES[2] = {"GPU", "CPU"};

/* Every element of each output (outs[o], from backends[o]: 0 GPU, 1 CPU; the op's layout
   [batch, M, N]) against the float64 product; failures[o] counts each output's violations. */
static void compare(const sweep_case *c, const sweep_data *d, const void *const *outs,
                    const int *backends, int nouts, tsr_dtype dtype, int64_t *failures,
                    bool quiet) {
  qr_weights w = {c->mode,   c->bits, c->group_size,  c->transpose, d->rows,  d->words,
                  d->groups, d->wq,   d->scale_dtype, d->scales,    d->biases};
  int64_t bshape[TSR_MAX_NDIM], w_shape[4];
  int bndim = batch_shape(c, bshape), wndim = c->w_batch_ndim + 2;
  memcpy(w_shape, c->w_batch, sizeof(int64_t) * (size_t)c->w_batch_ndim);
  w_shape[wndim - 2] = d->rows;
  w_shape[wndim - 1] = d->words;
  qr_batching bt = {.batch_ndim = bndim,
                    .batch_shape = bshape,
                    .x_ndim = c->x_ndim,
                    .w_ndim = wndim,
                    .x_shape = c->x_shape,
                    .w_shape = w_shape,
                    .gather = c->gather,
                    .lhs = c->lhs.present ? c->lhs.values : NULL,
                    .rhs = c->rhs.present ? c->rhs.values : NULL,
                    .lhs_ndim = c->lhs.ndim,
                    .rhs_ndim = c->rhs.ndim,
                    .lhs_shape = c->lhs.shape,
                    .rhs_shape = c->rhs.shape};
  const int64_t M = c->M, N = c->N, K = c->K, batches = product(bshape, bndim);
  dequant_cache cache = {calloc((size_t)d->w_matrices, sizeof(double *)),
                         calloc((size_t)d->w_matrices, sizeof(double *)),
                         calloc((size_t)d->w_matrices, sizeof(double *)), d->w_matrices};
  double *xrow = malloc((size_t)(K + 1) * sizeof(double));
  qr_expect *row = malloc((size_t)(N + 1) * sizeof *row);
  CHECK(cache.rule && cache.hat && cache.terms && xrow && row);
  int kernel = specs[c->spec].kernel > 0 ? 0 : 1;
  for (int64_t b = 0; b < batches; b++) {
    int64_t xm, wm;
    qr_matrices(&bt, b, &xm, &wm);
    cache_get(&cache, &w, wm, K, N);
    for (int64_t i = 0; i < M; i++) {
      for (int64_t k = 0; k < K; k++)
        xrow[k] = qr_value(d->x, c->x_dtype, (xm * M + i) * K + k);
      qr_expect_row(xrow, cache.rule[wm], cache.hat[wm], cache.terms[wm], K, N, row);
      for (int o = 0; o < nouts; o++)
        for (int64_t n = 0; n < N; n++) {
          int64_t at[3] = {b, i, n};
          ratio_stat *stat =
              quiet ? NULL : &ratios[backends[o]][c->mode][kernel][qr_dtype_slot(dtype)];
          check_element(c, qr_value(outs[o], dtype, (b * M + i) * N + n), &row[n], dtype,
                        BACKEND_NAMES[backends[o]], at, &failures[o], stat, quiet);
        }
    }
  }
  cache_free(&cache);
  free(xrow);
  free(row);
}

/* ---- running a case ------------------------------------------------------------------------- */

static tsr_array *run_op(const sweep_case *c, const sweep_data *d, tsr_stream *s) {
  tsr_array *out = NULL;
  tsr_status status =
      c->gather
          ? tsr_gather_qmm(&out, d->x_array, d->wq_array, d->scales_array, d->biases_array,
                           d->lhs_array, d->rhs_array, c->transpose, c->group_size, c->bits,
                           c->mode, c->sorted, s)
          : tsr_quantized_matmul(&out, d->x_array, d->wq_array, d->scales_array, d->biases_array,
                                 c->transpose, c->group_size, c->bits, c->mode, s);
  if (status != TSR_OK) fail_case(c, "building the op: ", tsr_status_name(status));
  return out;
}

/* The output's dtype and shape checked, its elements read back (malloc'ed). */
static void *read_output(const sweep_case *c, tsr_array *out, const char *backend) {
  int64_t shape[TSR_MAX_NDIM];
  int ndim = batch_shape(c, shape);
  if (c->x_ndim >= 2) shape[ndim++] = c->M;
  shape[ndim++] = c->N;
  bool ok = tsr_array_dtype(out) == out_dtype(c) && tsr_array_ndim(out) == ndim;
  for (int i = 0; ok && i < ndim; i++)
    ok = tsr_array_dim(out, i) == shape[i];
  if (!ok) fail_case(c, "output dtype or shape on the ", backend);
  size_t bytes = (size_t)tsr_array_size(out) * tsr_dtype_size(out_dtype(c));
  void *data = malloc(bytes + 4);
  CHECK(data != NULL);
  tsr_status status = tsr_array_read(out, data, bytes);
  if (status != TSR_OK) fail_case(c, "evaluating on the ", backend);
  return data;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Time spent, and which specializations ran on the GPU (the first use of each compiles it). */
static struct {
  double gpu_s, first_use_s, cpu_s, oracle_s;
  bool used[MAX_SPECS];
  int used_count;
} timing;

/* One case on the GPU (when gpu_stream) and the CPU, both against the float64 product. */
static void run_case(const sweep_case *c, tsr_stream *gpu_stream) {
  sweep_data d;
  make_data(c, &d);
  const void *outs[2];
  int backends[2], nouts = 0;
  void *gpu_out = NULL;
  if (gpu_stream) {
    double t0 = now_s();
    tsr_array *out = run_op(c, &d, gpu_stream);
    gpu_out = read_output(c, out, "GPU");
    tsr_array_release(out);
    double spent = now_s() - t0;
    timing.gpu_s += spent;
    if (!timing.used[c->spec]) {
      timing.used[c->spec] = true;
      timing.used_count++;
      timing.first_use_s += spent;
    }
    outs[nouts] = gpu_out, backends[nouts++] = 0;
  }
  double t1 = now_s();
  tsr_array *out = run_op(c, &d, tsr_default_stream(cpu));
  void *cpu_out = read_output(c, out, "CPU");
  tsr_array_release(out);
  double t2 = now_s();
  timing.cpu_s += t2 - t1;
  outs[nouts] = cpu_out, backends[nouts++] = 1;
  int64_t failures[2] = {0, 0};
  compare(c, &d, outs, backends, nouts, out_dtype(c), failures, false);
  timing.oracle_s += now_s() - t2;
  for (int o = 0; o < nouts; o++) {
    if (!failures[o]) continue;
    char detail[96];
    snprintf(detail, sizeof detail, "%lld outputs of the %s outside the bound",
             (long long)failures[o], BACKEND_NAMES[backends[o]]);
    fail_case(c, "", detail);
  }
  free(gpu_out);
  free(cpu_out);
  free_data(&d);
}

/* ---- the poison check ------------------------------------------------------------------------ */

/* The comparison catches what TSR_DEBUG_POISON leaves where a kernel writes nothing: on a few
   clean generated cases, a CPU output that passes is copied with its last column (every row of
   every product), then also its first element, overwritten by 0xFF bytes; the comparison must
   flag exactly those elements. (The GPU's outputs are poisoned by the library before each
   kernel: cuda/launch.c's tsri_cuda_poison_output.) */
static void poison_self_test(uint64_t seed) {
  int checked = 0;
  for (int64_t index = 0; checked < 6 && index < 1000; index++) {
    sweep_case c;
    draw_case(index, seed, &c);
    if (c.nonfinite != CLEAN || c.N < 2) continue;
    sweep_data d;
    make_data(&c, &d);
    tsr_array *out = run_op(&c, &d, tsr_default_stream(cpu));
    unsigned char *data = read_output(&c, out, "CPU");
    tsr_array_release(out);
    const size_t element = tsr_dtype_size(out_dtype(&c));
    const int64_t rows = batch_count(&c) * c.M;
    const void *outs[1] = {data};
    const int backend[1] = {1};
    int64_t failures[1] = {0};
    compare(&c, &d, outs, backend, 1, out_dtype(&c), failures, true);
    if (failures[0] != 0) fail_case(&c, "poison check: ", "the CPU's output fails unpoisoned");
    for (int64_t r = 0; r < rows; r++)
      memset(data + (size_t)(r * c.N + c.N - 1) * element, 0xff, element);
    compare(&c, &d, outs, backend, 1, out_dtype(&c), failures, true);
    CHECK_EQ_INT(failures[0], rows);
    memset(data, 0xff, element);
    failures[0] = 0;
    compare(&c, &d, outs, backend, 1, out_dtype(&c), failures, true);
    CHECK_EQ_INT(failures[0], rows + 1);
    free(data);
    free_data(&d);
    checked++;
  }
  CHECK_EQ_INT(checked, 6);
  printf("poison check: on 6 cases every element left as 0xFF bytes fails the comparison\n");
}

/* ---- the sweep ------------------------------------------------------------------------------- */

/* What the cases covered, printed at the end. */
static struct {
  int64_t layouts[6], specials, nonfinite, strided_x, offset_views, index_dtypes[TSR_FLOAT32 + 1];
  int64_t qmv_m[9], qmm_m_over_64, k_tail16;
} seen;

static void note_coverage(const sweep_case *c) {
  seen.layouts[c->layout]++;
  seen.specials += *c->special != '\0';
  seen.nonfinite += c->nonfinite != CLEAN;
  seen.strided_x += c->x_strided;
  seen.offset_views += c->offset_views;
  const sweep_index *sides[2] = {&c->lhs, &c->rhs};
  for (int s = 0; s < 2; s++)
    if (sides[s]->present) seen.index_dtypes[sides[s]->dtype]++;
  if (specs[c->spec].kernel > 0) seen.qmv_m[c->M]++;
  seen.qmm_m_over_64 += specs[c->spec].kernel <= 0 && c->M > 64;
  seen.k_tail16 += c->K % 32 == 16;
}

static void print_summary(int64_t cases, uint64_t seed, double total_s, bool have_gpu) {
  printf(
      "%lld cases (TSR_SWEEP_SEED=%llu) in %.1f s: GPU ops %.1f s (%.1f s of it in the first "
      "use of each specialization: its compile, or its load after the warm-up), CPU ops %.1f s, "
      "float64 products %.1f s\n",
      (long long)cases, (unsigned long long)seed, total_s, timing.gpu_s, timing.first_use_s,
      timing.cpu_s, timing.oracle_s);
  if (have_gpu)
    printf("kernel specializations: %d of the table's %d used\n", timing.used_count, spec_count);
  printf("layouts:");
  for (int l = 0; l < 6; l++)
    printf(" %s %lld%s", LAYOUT_NAMES[l], (long long)seen.layouts[l], l < 5 ? "," : "\n");
  printf("qmv M 1..8:");
  for (int m = 1; m <= 8; m++)
    printf(" %lld", (long long)seen.qmv_m[m]);
  printf(
      "; qmm M > 64: %lld; K = 16 mod 32: %lld; long K or grid-stride: %lld; strided x: %lld; "
      "operands at an offset: %lld; NaN/Inf inputs: %lld\n",
      (long long)seen.qmm_m_over_64, (long long)seen.k_tail16, (long long)seen.specials,
      (long long)seen.strided_x, (long long)seen.offset_views, (long long)seen.nonfinite);
  printf("index arrays: int32 %lld, int64 %lld, uint32 %lld, uint8 %lld, int8 %lld\n",
         (long long)seen.index_dtypes[TSR_INT32], (long long)seen.index_dtypes[TSR_INT64],
         (long long)seen.index_dtypes[TSR_UINT32], (long long)seen.index_dtypes[TSR_UINT8],
         (long long)seen.index_dtypes[TSR_INT8]);
  static const char *const dtype_names[3] = {"float32", "float16", "bfloat16"};
  printf("worst |out - f64| / bound (case) per output dtype:\n");
  for (int b = 0; b < 2; b++)
    for (int m = 0; m < 4; m++)
      for (int k = 0; k < 2; k++) {
        int64_t outputs = 0;
        for (int d = 0; d < 3; d++)
          outputs += ratios[b][m][k][d].outputs;
        if (!outputs) continue;
        printf("  %s %-6s %s %9lld outputs:", BACKEND_NAMES[b], MODE_NAMES[m], k ? "qmm" : "qmv",
               (long long)outputs);
        for (int d = 0; d < 3; d++) {
          const ratio_stat *s = &ratios[b][m][k][d];
          if (s->outputs)
            printf(" %s %.3g (%lld)", dtype_names[d], s->worst, (long long)s->worst_case);
        }
        printf("\n");
      }
}

/* ---- compiling ahead, in parallel ------------------------------------------------------------
 * The library compiles a specialization on first use under one process-wide lock, so 207 NVRTC
 * compiles in one process take minutes. Processes share the JIT disk cache (TSR_CACHE_DIR; an
 * entry is written to a temporary file and renamed), so before the sweep `jobs` copies of this
 * program (spawned afresh, TSR_SWEEP_WARM=j/jobs) each run the first case of every specialization
 * s with s % jobs == j, on the GPU and the CPU with the same checks; the sweep then loads every
 * module from the disk. Only an optimization: a copy that fails is reported and the sweep runs
 * regardless (it meets the same failure itself). */

extern char **environ;

/* This program as the warm-up copy j of jobs: the first case of each of its specializations. */
static void warm_up_share(uint64_t seed, int64_t cases, int job, int jobs, tsr_stream *gpu_stream) {
  bool done[MAX_SPECS] = {false};
  for (int64_t index = 0; index < cases; index++) {
    sweep_case c;
    draw_case(index, seed, &c);
    if (c.spec % jobs != job || done[c.spec]) continue;
    done[c.spec] = true;
    run_case(&c, gpu_stream);
  }
}

/* Spawns the copies and waits for them; returns how many failed. */
static int warm_up(int jobs) {
  pid_t pids[64];
  int started = 0, failed = 0;
  char *argv[] = {(char *)"test_qmm_sweep", NULL};
  fflush(NULL); /* this process's lines first */
  for (int j = 0; j < jobs; j++) {
    char share[32];
    snprintf(share, sizeof share, "%d/%d", j, jobs);
    setenv("TSR_SWEEP_WARM", share, 1);
    if (posix_spawn(&pids[started], "/proc/self/exe", NULL, NULL, argv, environ) == 0)
      started++;
    else
      failed++;
  }
  unsetenv("TSR_SWEEP_WARM");
  for (int j = 0; j < started; j++) {
    int status = 0;
    if (waitpid(pids[j], &status, 0) != pids[j] || !WIFEXITED(status) || WEXITSTATUS(status))
      failed++;
  }
  return failed;
}

/* The copies to spawn: TSR_SWEEP_JOBS, else one per online core up to 16; 1 (none) when there is
   no disk cache to share or the sweep is short. */
static bool sweep_knob(const char *name, uint64_t min, uint64_t max, uint64_t *value);
static int warm_up_jobs(uint64_t cases) {
  uint64_t jobs = 0;
  if (!sweep_knob("TSR_SWEEP_JOBS", 1, 64, &jobs)) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    jobs = cores < 1 ? 1 : cores > 16 ? 16 : (uint64_t)cores;
  }
  if (!tsri_env()->cache_dir[0] || cases < 100) jobs = 1;
  return (int)jobs;
}

/* A knob of this test: digits in [min, max], else the test fails naming it. */
static bool sweep_knob(const char *name, uint64_t min, uint64_t max, uint64_t *value) {
  const char *v = getenv(name);
  if (!v || !*v) return false;
  if (!tsri_env_parse_u64(v, min, max, value))
    CHECK_FAIL_("%s=%s is not an integer in [%llu, %llu]", name, v, (unsigned long long)min,
                (unsigned long long)max);
  return true;
}

int main(void) {
  /* Before the library reads its knobs (once, on first use): every CUDA output starts as NaN. */
  setenv("TSR_DEBUG_POISON", "1", 1);
  CHECK(tsri_env()->debug_poison); /* the library parses it with this same code */
  bool have_gpu = tsr_device_count(TSR_GPU) >= 1;
  uint64_t cases = have_gpu ? 10000 : getenv("TSR_SANITIZED") ? 40 : 200, seed = 1, only = 0;
  sweep_knob("TSR_SWEEP_CASES", 1, 100000000, &cases);
  sweep_knob("TSR_SWEEP_SEED", 0, UINT64_MAX, &seed);
  bool just_one = sweep_knob("TSR_SWEEP_ONLY", 0, INT64_MAX, &only);
  build_specs();
  const char *share = getenv("TSR_SWEEP_WARM");
  int job = 0, jobs = 0;
  if (share && sscanf(share, "%d/%d", &job, &jobs) == 2) { /* a warm-up copy (warm_up) */
    if (have_gpu && jobs > 0 && job >= 0 && job < jobs)
      warm_up_share(seed, (int64_t)cases, job, jobs, tsr_default_stream(gpu));
    tsr_shutdown();
    return 0;
  }
  printf("%d kernel specializations in the table; %s\n", spec_count,
         have_gpu ? "GPU and CPU against float64" : "no GPU: the CPU against float64 only");
  poison_self_test(seed);
  double t0 = now_s();
  jobs = have_gpu && !just_one ? warm_up_jobs(cases) : 1;
  if (jobs > 1) {
    int failed = warm_up(jobs);
    printf("warm-up: %d processes compiled the specializations into %s/kernels in %.1f s%s\n", jobs,
           tsri_env()->cache_dir, now_s() - t0,
           failed ? " (some failed: the sweep runs anyway)" : "");
  }
  tsr_stream *gpu_stream = have_gpu ? tsr_default_stream(gpu) : NULL;
  int64_t first = just_one ? (int64_t)only : 0, end = just_one ? first + 1 : (int64_t)cases;
  for (int64_t index = first; index < end; index++) {
    sweep_case c;
    draw_case(index, seed, &c);
    if (just_one) describe(&c, stdout);
    note_coverage(&c);
    run_case(&c, gpu_stream);
  }
  print_summary(end - first, seed, now_s() - t0, have_gpu);
  printf("ok: every output within the bound\n");
  if (!have_gpu) printf("skip: no usable GPU\n");
  tsr_memory_clear_cache(cpu);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
