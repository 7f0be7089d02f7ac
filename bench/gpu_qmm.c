/* bench/gpu_qmm.c — quantized matmul on the GPU against the machine's roofs, side by side in one
 * run on GPU 0 (issue 13's benchmark):
 *  - the roofs: the device copy (read + write GB/s) and a read-only stream (cuBLASLt bf16 GEMV,
 *    28672 x 8192), both in kernel time;
 *  - per format (mode/bits/group): tsr_quantized_matmul (transpose, bfloat16 x and scales) at M =
 *    1, 2, 4, 8, 16, 64, 512 over GLM-like shapes: µs, weight GB/s, fraction of each roof, and the
 *    time of cuBLASLt's bf16 product of the same M, N, K (× = cuBLAS time / ours);
 *  - gather_qmm decode as a GLM-4.5 MoE layer runs it (128 experts, top-8, 768 x 2048 and
 *    2048 x 768): GB/s over the weight bytes actually read;
 *  - tsr_quantize of a bfloat16 [28672, 8192] weight and tsr_dequantize of it back to bfloat16:
 *    GB/s of their reads and writes.
 * Weights are rotated over >= 256 MiB of copies (5× the H200's 50 MB L2) so no figure is an L2
 * figure. Kernel time, not host time: each measurement first blocks the stream with a host
 * function (a gate), enqueues every repetition behind it, records CUDA events around them and
 * only then opens the gate, so the GPU runs them back to back whatever the host costs; a gate
 * that has to open itself (the host took > 2 s to enqueue) marks the figure as host-bound.
 * TSR_BENCH_FORMATS ("affine4,mxfp4,..."), TSR_BENCH_M ("1,16") and TSR_BENCH_TABLES
 * ("dense,moe,quantize") narrow a run;
 * TSR_BENCH_X=float32 gives the dense tables float32 x (and output), as the model layer's
 * activations are. Without a usable GPU it says so and exits 0. */
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tessera/tessera.h>

#include "gpu_gate.h"

enum { REPS = 40, MAX_COPIES = 64 };
static const double ROTATION_BYTES = 256.0 * 1024 * 1024;

typedef struct {
  const char *name;
  tsr_quant_mode mode;
  int bits, group_size;
} format;

static const format FORMATS[] = {
    {"affine4", TSR_QUANT_AFFINE, 4, 64}, {"affine8", TSR_QUANT_AFFINE, 8, 64},
    {"affine3", TSR_QUANT_AFFINE, 3, 64}, {"affine5", TSR_QUANT_AFFINE, 5, 64},
    {"affine6", TSR_QUANT_AFFINE, 6, 64}, {"affine2", TSR_QUANT_AFFINE, 2, 64},
    {"mxfp4", TSR_QUANT_MXFP4, 4, 32},    {"nvfp4", TSR_QUANT_NVFP4, 4, 16},
    {"mxfp8", TSR_QUANT_MXFP8, 8, 32},
};
static const int64_t SHAPES[][2] = {{28672, 8192}, {4096, 14336}, {14336, 4096}, {4096, 4096}};
static const int64_t MS[] = {1, 2, 4, 8, 16, 64, 128, 512};

static int fail(const char *what, tsr_status st) {
  fprintf(stderr, "gpu_qmm: %s: %s: %s\n", what, tsr_status_name(st), tsr_last_error());
  return 1;
}

static bool selected(const char *env, const char *name) {
  const char *list = getenv(env);
  if (!list || !*list) return true;
  size_t n = strlen(name);
  for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
    if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) return true;
  return false;
}

static bool m_selected(int64_t m) {
  char name[24];
  snprintf(name, sizeof name, "%lld", (long long)m);
  return selected("TSR_BENCH_M", name);
}

/* ---- kernel time behind a gate ----------------------------------------------------------------
 */

/* Enqueues repetition i on the stream; returns false on failure (already reported). */
typedef bool (*enqueue_fn)(void *ctx, int i);

/* Releases what the warm-up's repetitions hold, so the measured ones find their buffers in
   tessera's cache instead of allocating behind the closed gate. */
typedef void (*reset_fn)(void *ctx);

/* Mean µs per repetition of `reps` enqueued behind a gate on `stream`; -1 on failure. *host_bound
   is set when the gate had to open itself. */
static double gated_us(cudaStream_t stream, enqueue_fn fn, reset_fn reset, void *ctx, int reps,
                       bool *host_bound) {
  cudaEvent_t e0, e1;
  if (cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess) return -1.0;
  for (int i = 0; i < reps; i++) /* warm-up: first-use compiles, buffers for the cache */
    if (!fn(ctx, i)) return -1.0;
  cudaStreamSynchronize(stream);
  if (reset) {
    reset(ctx);
    struct timespec pause = {0, 20 * 1000 * 1000}; /* tessera's release thread returns them */
    nanosleep(&pause, NULL);
  }
  bool ok = gate_hold(stream) == cudaSuccess && cudaEventRecord(e0, stream) == cudaSuccess;
  for (int i = 0; ok && i < reps; i++)
    ok = fn(ctx, i);
  ok = ok && cudaEventRecord(e1, stream) == cudaSuccess;
  gate_release();
  float ms = 0.0f;
  ok = ok && cudaEventSynchronize(e1) == cudaSuccess && cudaEventElapsedTime(&ms, e0, e1) == 0;
  cudaStreamSynchronize(stream);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  *host_bound = gate_opened_itself();
  return ok ? 1e3 * (double)ms / reps : -1.0;
}

/* ---- roofs: the device copy and cuBLASLt -------------------------------------------------------
 */

typedef struct {
  cudaStream_t stream;
  void *a, *b;
  size_t bytes;
} copy_ctx;

static bool enqueue_copy(void *ctx, int i) {
  copy_ctx *c = ctx;
  (void)i;
  return cudaMemcpyAsync(c->b, c->a, c->bytes, cudaMemcpyDeviceToDevice, c->stream) == cudaSuccess;
}

static double copy_roof_gbs(cudaStream_t stream) {
  copy_ctx c = {.stream = stream, .bytes = (size_t)1 << 30};
  double gbs = -1.0;
  bool host_bound = false;
  if (cudaMalloc(&c.a, c.bytes) == cudaSuccess && cudaMalloc(&c.b, c.bytes) == cudaSuccess &&
      cudaMemset(c.a, 1, c.bytes) == cudaSuccess) {
    double us = gated_us(stream, enqueue_copy, NULL, &c, 10, &host_bound);
    if (us > 0) gbs = 2.0 * (double)c.bytes / us / 1e3;
  }
  cudaFree(c.a);
  cudaFree(c.b);
  return gbs;
}

/* cuBLASLt's bf16 product out[M, N] = x[M, K] · w[N, K]^T (column-major: out^T = op_T(w^T) x^T),
   float32 accumulation, over `copies` rotated weight buffers. */
typedef struct {
  cudaStream_t stream;
  cublasLtHandle_t lt;
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t lw, lx, lo;
  cublasLtMatmulAlgo_t algo;
  void *workspace;
  size_t workspace_bytes;
  void *w[MAX_COPIES], *x, *out;
  int copies;
} lt_ctx;

static bool enqueue_lt(void *ctx, int i) {
  lt_ctx *c = ctx;
  float alpha = 1.0f, beta = 0.0f;
  return cublasLtMatmul(c->lt, c->op, &alpha, c->w[i % c->copies], c->lw, c->x, c->lx, &beta,
                        c->out, c->lo, c->out, c->lo, &c->algo, c->workspace, c->workspace_bytes,
                        c->stream) == CUBLAS_STATUS_SUCCESS;
}

static bool lt_setup(lt_ctx *c, int64_t m, int64_t n, int64_t k) {
  cublasOperation_t transpose = CUBLAS_OP_T;
  if (cublasLtMatmulDescCreate(&c->op, CUBLAS_COMPUTE_32F, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS ||
      cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_TRANSA, &transpose,
                                     sizeof transpose) != CUBLAS_STATUS_SUCCESS ||
      cublasLtMatrixLayoutCreate(&c->lw, CUDA_R_16BF, (uint64_t)k, (uint64_t)n, k) !=
          CUBLAS_STATUS_SUCCESS ||
      cublasLtMatrixLayoutCreate(&c->lx, CUDA_R_16BF, (uint64_t)k, (uint64_t)m, k) !=
          CUBLAS_STATUS_SUCCESS ||
      cublasLtMatrixLayoutCreate(&c->lo, CUDA_R_16BF, (uint64_t)n, (uint64_t)m, n) !=
          CUBLAS_STATUS_SUCCESS)
    return false;
  cublasLtMatmulPreference_t pref = NULL;
  cublasLtMatmulHeuristicResult_t heuristic;
  int found = 0;
  bool ok = cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS &&
            cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                 &c->workspace_bytes, sizeof c->workspace_bytes) ==
                CUBLAS_STATUS_SUCCESS &&
            cublasLtMatmulAlgoGetHeuristic(c->lt, c->op, c->lw, c->lx, c->lo, c->lo, pref, 1,
                                           &heuristic, &found) == CUBLAS_STATUS_SUCCESS &&
            found > 0;
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
  if (ok) c->algo = heuristic.algo;
  return ok;
}

static void lt_teardown(lt_ctx *c) {
  for (int i = 0; i < c->copies; i++)
    cudaFree(c->w[i]);
  cudaFree(c->x);
  cudaFree(c->out);
  if (c->lw) cublasLtMatrixLayoutDestroy(c->lw);
  if (c->lx) cublasLtMatrixLayoutDestroy(c->lx);
  if (c->lo) cublasLtMatrixLayoutDestroy(c->lo);
  if (c->op) cublasLtMatmulDescDestroy(c->op);
}

/* µs of cuBLASLt's bf16 product at M, N, K with rotated weights (zeros: the time does not depend
   on the values); -1 on failure. */
static double lt_us(cudaStream_t stream, cublasLtHandle_t lt, void *workspace, size_t ws_bytes,
                    int64_t m, int64_t n, int64_t k) {
  lt_ctx c = {.stream = stream, .lt = lt, .workspace = workspace, .workspace_bytes = ws_bytes};
  size_t w_bytes = (size_t)(n * k * 2);
  c.copies = (int)(ROTATION_BYTES / (double)w_bytes) + 1;
  c.copies = c.copies < 2 ? 2 : c.copies > MAX_COPIES ? MAX_COPIES : c.copies;
  bool ok = cudaMalloc(&c.x, (size_t)(m * k * 2)) == cudaSuccess &&
            cudaMalloc(&c.out, (size_t)(m * n * 2)) == cudaSuccess &&
            cudaMemset(c.x, 0, (size_t)(m * k * 2)) == cudaSuccess;
  for (int i = 0; ok && i < c.copies; i++)
    ok = cudaMalloc(&c.w[i], w_bytes) == cudaSuccess &&
         cudaMemset(c.w[i], 0, w_bytes) == cudaSuccess;
  if (!ok) c.copies = 0;
  double us = -1.0;
  bool host_bound = false;
  if (ok && lt_setup(&c, m, n, k)) us = gated_us(stream, enqueue_lt, NULL, &c, REPS, &host_bound);
  lt_teardown(&c);
  return host_bound ? -1.0 : us;
}

/* ---- tessera's quantized products --------------------------------------------------------------
 */

typedef struct {
  tsr_array *w_q, *scales, *biases;
} qweight;

typedef struct {
  tsr_stream *s;
  const format *f;
  tsr_array *x, *lhs, *rhs[8];
  qweight w[MAX_COPIES];
  int copies, index_sets;
  tsr_array *held[REPS]; /* outputs stay alive until the measurement ends */
  int held_count;
  bool gather;
  bool failed; /* an output's evaluation failed (seen when the held outputs are released) */
} qmm_ctx;

/* Whether the held outputs evaluated: a launch that fails inside tsr_async_eval fails its array,
   not the call, and its row must say so rather than time nothing. */
static bool held_ok(tsr_array **held, int count, const char *what) {
  tsr_status st = count ? tsr_eval(held, count) : TSR_OK;
  if (st != TSR_OK) fail(what, st);
  return st == TSR_OK;
}

static void release_held(qmm_ctx *c) {
  if (!held_ok(c->held, c->held_count, c->gather ? "gather_qmm" : "quantized_matmul"))
    c->failed = true;
  for (int i = 0; i < c->held_count; i++)
    tsr_array_release(c->held[i]);
  c->held_count = 0;
}

static void reset_qmm(void *ctx) {
  release_held(ctx);
}

static bool enqueue_qmm(void *ctx, int i) {
  qmm_ctx *c = ctx;
  const qweight *w = &c->w[i % c->copies];
  tsr_array *out = NULL;
  tsr_status st = c->gather ? tsr_gather_qmm(&out, c->x, w->w_q, w->scales, w->biases, NULL,
                                             c->rhs[i % c->index_sets], true, c->f->group_size,
                                             c->f->bits, c->f->mode, false, c->s)
                            : tsr_quantized_matmul(&out, c->x, w->w_q, w->scales, w->biases, true,
                                                   c->f->group_size, c->f->bits, c->f->mode, c->s);
  if (st == TSR_OK) st = tsr_async_eval(&out, 1);
  if (st != TSR_OK) {
    tsr_array_release(out);
    fail(c->gather ? "gather_qmm" : "quantized_matmul", st);
    return false;
  }
  c->held[c->held_count++] = out;
  return true;
}

/* Bytes of one packed weight matrix [rows, k] of format f, scales and biases included. */
static double weight_bytes(const format *f, int64_t rows, int64_t k) {
  double groups = (double)rows * (double)(k / f->group_size);
  double scale_bytes = f->mode == TSR_QUANT_AFFINE ? 2.0 * 2.0 : 1.0;
  return (double)rows * (double)k * f->bits / 8.0 + groups * scale_bytes;
}

/* w [experts, n, k] (experts 0: [n, k]) quantized `copies` times from one random bf16 weight. */
static tsr_status make_weights(qmm_ctx *c, int64_t experts, int64_t n, int64_t k) {
  int64_t shape[3] = {experts, n, k};
  int ndim = experts ? 3 : 2;
  tsr_array *w = NULL;
  tsr_status st =
      tsr_random_normal(&w, experts ? shape : shape + 1, ndim, 0.0, 0.02, TSR_BFLOAT16, 42, c->s);
  for (int i = 0; st == TSR_OK && i < c->copies; i++) {
    qweight *q = &c->w[i];
    st = tsr_quantize(&q->w_q, &q->scales, c->f->mode == TSR_QUANT_AFFINE ? &q->biases : NULL, w,
                      c->f->group_size, c->f->bits, c->f->mode, c->s);
    if (st == TSR_OK) st = tsr_eval(&q->w_q, 1);
    if (st == TSR_OK) st = tsr_eval(&q->scales, 1);
    if (st == TSR_OK && q->biases) st = tsr_eval(&q->biases, 1);
  }
  tsr_array_release(w);
  return st;
}

static void free_weights(qmm_ctx *c) {
  release_held(c);
  for (int i = 0; i < c->copies; i++) {
    tsr_array_release(c->w[i].w_q);
    tsr_array_release(c->w[i].scales);
    tsr_array_release(c->w[i].biases);
  }
  memset(c->w, 0, sizeof c->w);
  for (int i = 0; i < 8; i++)
    tsr_array_release(c->rhs[i]);
  memset(c->rhs, 0, sizeof c->rhs);
  tsr_array_release(c->x);
  c->x = NULL;
}

static int copies_for(double bytes) {
  int copies = (int)(ROTATION_BYTES / bytes) + 1;
  return copies < 2 ? 2 : copies > MAX_COPIES ? MAX_COPIES : copies;
}

enum { LT_MEMO = 64 };

typedef struct {
  int64_t m, n, k;
  double us;
} lt_time;

typedef struct {
  cudaStream_t stream;
  cublasLtHandle_t lt;
  void *workspace;
  size_t workspace_bytes;
  double copy_roof, read_roof;
  /* cuBLASLt's time per (M, N, K), measured once in the run and shown beside every format's row
     at that shape (each format measured it again before: a third of the run's device time). */
  lt_time lt_memo[LT_MEMO];
  int lt_memo_count;
} roofs;

/* lt_us at (m, n, k), measured on first use. */
static double lt_us_once(roofs *r, int64_t m, int64_t n, int64_t k) {
  for (int i = 0; i < r->lt_memo_count; i++)
    if (r->lt_memo[i].m == m && r->lt_memo[i].n == n && r->lt_memo[i].k == k)
      return r->lt_memo[i].us;
  double us = lt_us(r->stream, r->lt, r->workspace, r->workspace_bytes, m, n, k);
  if (r->lt_memo_count < LT_MEMO) r->lt_memo[r->lt_memo_count++] = (lt_time){m, n, k, us};
  return us;
}

static void print_row(const roofs *r, int64_t m, int64_t n, int64_t k, double us, double bytes,
                      double cublas_us, bool host_bound) {
  if (us < 0) {
    printf("  M=%-4lld N=%-6lld K=%-6lld failed\n", (long long)m, (long long)n, (long long)k);
    return;
  }
  double gbs = bytes / us / 1e3;
  printf("  M=%-4lld N=%-6lld K=%-6lld %9.2f µs %7.0f GB/s  %.2f copy  %.2f read", (long long)m,
         (long long)n, (long long)k, us, gbs, gbs / r->copy_roof, gbs / r->read_roof);
  if (cublas_us > 0) printf("  cuBLAS bf16 %9.2f µs  x%.2f", cublas_us, cublas_us / us);
  if (m > 1) printf("  %.1f TFLOP/s", 2.0 * (double)m * (double)n * (double)k / us / 1e6);
  printf("%s\n", host_bound ? "  (host-bound: gate opened itself)" : "");
}

/* The dense tables' x dtype: bfloat16 unless TSR_BENCH_X=float32. */
static tsr_dtype x_dtype(void) {
  const char *x = getenv("TSR_BENCH_X");
  return x && strcmp(x, "float32") == 0 ? TSR_FLOAT32 : TSR_BFLOAT16;
}

static int dense_table(roofs *r, tsr_stream *s, const format *f) {
  tsr_dtype xt = x_dtype();
  printf("\n%s (group %d), transpose, %s x, bfloat16 scales:\n", f->name, f->group_size,
         tsr_dtype_name(xt));
  for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++) {
    int64_t n = SHAPES[i][0], k = SHAPES[i][1];
    qmm_ctx c = {.s = s, .f = f};
    double bytes = weight_bytes(f, n, k);
    c.copies = copies_for(bytes);
    tsr_status st = make_weights(&c, 0, n, k);
    if (st != TSR_OK) return fail("weights", st);
    for (size_t j = 0; j < sizeof MS / sizeof MS[0]; j++) {
      int64_t m = MS[j];
      if (!m_selected(m)) continue;
      int64_t xs[2] = {m, k};
      st = tsr_random_normal(&c.x, xs, 2, 0.0, 1.0, xt, 7, s);
      if (st == TSR_OK) st = tsr_eval(&c.x, 1);
      if (st != TSR_OK) return fail("x", st);
      bool host_bound = false;
      double us = gated_us(r->stream, enqueue_qmm, reset_qmm, &c, REPS, &host_bound);
      release_held(&c);
      if (c.failed) us = -1.0;
      c.failed = false;
      double cublas = lt_us_once(r, m, n, k);
      print_row(r, m, n, k, us, bytes, cublas, host_bound);
      tsr_array_release(c.x);
      c.x = NULL;
    }
    free_weights(&c);
  }
  return 0;
}

/* A GLM-4.5 MoE decode step's gather: x [1, K], 8 distinct experts of 128 per product (a fresh
   random set each repetition), unsorted. */
static int moe_table(const roofs *r, tsr_stream *s, const format *f) {
  const int64_t experts = 128, top = 8, shapes[2][2] = {{768, 2048}, {2048, 768}};
  printf("\n%s MoE decode (gather_qmm, %lld experts, top-%lld):\n", f->name, (long long)experts,
         (long long)top);
  for (int i = 0; i < 2; i++) {
    int64_t n = shapes[i][0], k = shapes[i][1];
    qmm_ctx c = {.s = s, .f = f, .gather = true, .index_sets = 8};
    c.copies = copies_for(weight_bytes(f, experts * n, k));
    tsr_status st = make_weights(&c, experts, n, k);
    int64_t xs[2] = {1, k}, is[1] = {top};
    if (st == TSR_OK) st = tsr_random_normal(&c.x, xs, 2, 0.0, 1.0, TSR_BFLOAT16, 7, s);
    for (int set = 0; st == TSR_OK && set < c.index_sets; set++) {
      int32_t chosen[8];
      for (int e = 0; e < top; e++) { /* distinct, unsorted */
        bool again;
        do {
          chosen[e] = (int32_t)(((uint64_t)rand() * experts) / ((uint64_t)RAND_MAX + 1));
          again = false;
          for (int p = 0; p < e; p++)
            again = again || chosen[p] == chosen[e];
        } while (again);
      }
      st = tsr_array_from_data_on(&c.rhs[set], chosen, TSR_INT32, is, 1, (tsr_device){TSR_GPU, 0});
    }
    if (st != TSR_OK) return fail("MoE inputs", st);
    bool host_bound = false;
    double us = gated_us(r->stream, enqueue_qmm, reset_qmm, &c, REPS, &host_bound);
    release_held(&c);
    if (c.failed) us = -1.0;
    print_row(r, 1, n, k, us, (double)top * weight_bytes(f, n, k), -1.0, host_bound);
    free_weights(&c);
  }
  return 0;
}

/* tsr_quantize of a bf16 [28672, 8192]: reads 2 bytes per weight, writes codes and scales; and
   tsr_dequantize of its result (w_q, scales, biases) back to bf16, the reverse traffic. */
typedef struct {
  tsr_stream *s;
  const format *f;
  tsr_array *w, *held[3 * REPS];
  int held_count;
  tsr_array *w_q, *scales, *biases; /* one quantization of w, for the dequantize rows */
  bool failed;                      /* as qmm_ctx's */
} quantize_ctx;

static void reset_quantize(void *ctx) {
  quantize_ctx *c = ctx;
  if (!held_ok(c->held, c->held_count, "quantize / dequantize")) c->failed = true;
  for (int i = 0; i < c->held_count; i++)
    tsr_array_release(c->held[i]);
  c->held_count = 0;
}

static bool enqueue_quantize(void *ctx, int i) {
  quantize_ctx *c = ctx;
  (void)i;
  tsr_array *q = NULL, *sc = NULL, *b = NULL;
  tsr_status st = tsr_quantize(&q, &sc, c->f->mode == TSR_QUANT_AFFINE ? &b : NULL, c->w,
                               c->f->group_size, c->f->bits, c->f->mode, c->s);
  tsr_array *all[3] = {q, sc, b};
  if (st == TSR_OK) st = tsr_async_eval(all, b ? 3 : 2);
  if (st != TSR_OK) {
    fail("quantize", st);
    return false;
  }
  for (int j = 0; j < (b ? 3 : 2); j++) /* no biases outside affine */
    c->held[c->held_count++] = all[j];
  return true;
}

static bool enqueue_dequantize(void *ctx, int i) {
  quantize_ctx *c = ctx;
  (void)i;
  tsr_array *w = NULL;
  tsr_status st = tsr_dequantize(&w, c->w_q, c->scales, c->biases, c->f->group_size, c->f->bits,
                                 c->f->mode, TSR_BFLOAT16, c->s);
  if (st == TSR_OK) st = tsr_async_eval(&w, 1);
  if (st != TSR_OK) {
    fail("dequantize", st);
    return false;
  }
  c->held[c->held_count++] = w;
  return true;
}

static void dequantize_row(const roofs *r, quantize_ctx *c, double weight_bytes) {
  tsr_status st =
      tsr_quantize(&c->w_q, &c->scales, c->f->mode == TSR_QUANT_AFFINE ? &c->biases : NULL, c->w,
                   c->f->group_size, c->f->bits, c->f->mode, c->s);
  if (st != TSR_OK) {
    fail("dequantize input", st);
    return;
  }
  bool host_bound = false;
  double us = gated_us(r->stream, enqueue_dequantize, reset_quantize, c, REPS, &host_bound);
  reset_quantize(c);
  if (c->failed) us = -1.0;
  double bytes = 28672.0 * 8192.0 * 2.0 + weight_bytes;
  if (us > 0)
    printf("  dequantize to bf16 [28672, 8192]: %9.2f µs %7.0f GB/s  %.2f of the copy roof%s\n", us,
           bytes / us / 1e3, bytes / us / 1e3 / r->copy_roof, host_bound ? "  (host-bound)" : "");
  else
    printf("  dequantize to bf16 [28672, 8192]: failed\n");
  tsr_array_release(c->w_q);
  tsr_array_release(c->scales);
  tsr_array_release(c->biases);
}

static int quantize_row(const roofs *r, tsr_stream *s, const format *f) {
  const int64_t shape[2] = {28672, 8192};
  quantize_ctx c = {.s = s, .f = f};
  tsr_status st = tsr_random_normal(&c.w, shape, 2, 0.0, 0.02, TSR_BFLOAT16, 3, s);
  if (st == TSR_OK) st = tsr_eval(&c.w, 1);
  if (st != TSR_OK) return fail("quantize input", st);
  bool host_bound = false;
  double us = gated_us(r->stream, enqueue_quantize, reset_quantize, &c, REPS, &host_bound);
  reset_quantize(&c);
  if (c.failed) us = -1.0;
  double bytes = (double)(shape[0] * shape[1]) * 2.0 + weight_bytes(f, shape[0], shape[1]);
  if (us > 0)
    printf("  quantize bf16 [28672, 8192]: %9.2f µs %7.0f GB/s  %.2f of the copy roof%s\n", us,
           bytes / us / 1e3, bytes / us / 1e3 / r->copy_roof, host_bound ? "  (host-bound)" : "");
  else
    printf("  quantize bf16 [28672, 8192]: failed\n");
  c.failed = false; /* the dequantize row's own */
  dequantize_row(r, &c, weight_bytes(f, shape[0], shape[1]));
  tsr_array_release(c.w);
  return 0;
}

int main(void) {
  if (tsr_device_count(TSR_GPU) < 1) {
    printf("gpu_qmm: no usable GPU; nothing measured\n");
    return 0;
  }
  tsr_stream *s = NULL;
  tsr_status st = tsr_stream_new(&s, (tsr_device){TSR_GPU, 0});
  if (st != TSR_OK) return fail("stream_new", st);
  roofs r = {.stream = (cudaStream_t)tsr_stream_native(s), .workspace_bytes = (size_t)32 << 20};
  if (cublasLtCreate(&r.lt) != CUBLAS_STATUS_SUCCESS ||
      cudaMalloc(&r.workspace, r.workspace_bytes) != cudaSuccess) {
    fprintf(stderr, "gpu_qmm: cuBLASLt setup failed\n");
    return 1;
  }
  r.copy_roof = copy_roof_gbs(r.stream);
  double gemv_us = lt_us(r.stream, r.lt, r.workspace, r.workspace_bytes, 1, 28672, 8192);
  r.read_roof = 28672.0 * 8192.0 * 2.0 / gemv_us / 1e3;
  printf("copy roof: cudaMemcpy D2D 1 GiB (read + write)   %7.0f GB/s\n", r.copy_roof);
  printf("read roof: cuBLASLt bf16 GEMV 28672 x 8192       %7.0f GB/s  (%.1f µs, %.2f of copy)\n",
         r.read_roof, gemv_us, r.read_roof / r.copy_roof);
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < sizeof FORMATS / sizeof FORMATS[0]; i++) {
    const format *f = &FORMATS[i];
    if (!selected("TSR_BENCH_FORMATS", f->name)) continue;
    if (selected("TSR_BENCH_TABLES", "dense")) rc = dense_table(&r, s, f);
    if (rc == 0 && selected("TSR_BENCH_TABLES", "moe")) rc = moe_table(&r, s, f);
    if (rc == 0 && selected("TSR_BENCH_TABLES", "quantize")) rc = quantize_row(&r, s, f);
  }
  cudaFree(r.workspace);
  cublasLtDestroy(r.lt);
  tsr_stream_free(s);
  return rc;
}
