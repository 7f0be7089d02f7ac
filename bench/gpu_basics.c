/* bench/gpu_basics.c — the GPU's basic figures, side by side in one run on GPU 0:
 *  - the roofs: the device copy (cudaMemcpy device to device, read + write GB/s) and a read-only
 *    stream (a cuBLASLt bf16 GEMV, M = 1, weight bytes / time), against which every later ratio
 *    is stated;
 *  - tessera's elementwise add and row softmax (float32) in GB/s of their reads and writes, as a
 *    fraction of the copy roof;
 *  - tessera's matmul against the same product called on cuBLASLt directly (goal >= 0.97);
 *  - the cost of a kernel's first use: JIT compile + load in a fresh cache folder, then the same
 *    first use in a second process that finds it on disk (goal < 5 ms per kernel);
 *  - the host cost of one op of a decode step: chains of CHAIN tiny ops of each kind (add,
 *    rms_norm, rope, a 4-bit quantized matmul at M = 1, decode sdpa, take, slice_update), µs per
 *    op to build, to submit (the inline launches) and in all, against the cheapest enqueue the
 *    runtime has (cudaMemsetAsync of 64 bytes, back to back): the launch roof a decode step of
 *    ~1500 ops is measured against;
 *  - one-block decode ops warm and cold: an rms_norm [1, 4096] (float32 x, bfloat16 weight, as
 *    in a decode step) and an add of [4096], timed on the device between events, each right after
 *    the same op (everything warm) or right after a 256 MiB device copy (its weight's lines out of
 *    L2 and its pages out of the TLB, as after a decode step's weight-streaming products).
 * Timings are wall clock around synchronized work, best of several repeats. Without a usable GPU
 * it says so and exits 0. */
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tessera/tessera.h>

#include "gpu_gate.h"

enum { REPEATS = 7 };

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int fail(const char *what, tsr_status st) {
  fprintf(stderr, "gpu_basics: %s: %s: %s\n", what, tsr_status_name(st), tsr_last_error());
  return 1;
}

#define CUDA_OK(call)                                                         \
  do {                                                                        \
    cudaError_t e_ = (call);                                                  \
    if (e_ != cudaSuccess) {                                                  \
      fprintf(stderr, "gpu_basics: %s: %s\n", #call, cudaGetErrorString(e_)); \
      return -1.0;                                                            \
    }                                                                         \
  } while (0)

#define LT_OK(call)                                                          \
  do {                                                                       \
    cublasStatus_t s_ = (call);                                              \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                       \
      fprintf(stderr, "gpu_basics: %s: cuBLAS status %d\n", #call, (int)s_); \
      return -1.0;                                                           \
    }                                                                        \
  } while (0)

/* ---- roofs ------------------------------------------------------------------------------------
 */

/* Device-to-device copy of `bytes`: read + write GB/s, best of REPEATS. */
static double copy_roof_gbs(size_t bytes) {
  void *a = NULL, *b = NULL;
  CUDA_OK(cudaMalloc(&a, bytes));
  CUDA_OK(cudaMalloc(&b, bytes));
  CUDA_OK(cudaMemset(a, 1, bytes));
  double best = 1e30;
  for (int r = 0; r < REPEATS; r++) {
    CUDA_OK(cudaDeviceSynchronize());
    double t0 = now_s();
    CUDA_OK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
    CUDA_OK(cudaDeviceSynchronize());
    double t = now_s() - t0;
    best = t < best ? t : best;
  }
  cudaFree(a);
  cudaFree(b);
  return 2.0 * (double)bytes / best / 1e9;
}

/* The algorithm's split-K count, reduction scheme and tile id, as "splitK R reduction S tile T". */
static void algo_config(const cublasLtMatmulAlgo_t *algo, char *out, size_t size) {
  int32_t split = 0;
  uint32_t reduction = 0, tile = 0;
  size_t written = 0;
  cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split, sizeof split,
                                       &written);
  cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &reduction,
                                       sizeof reduction, &written);
  cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile,
                                       &written);
  snprintf(out, size, "splitK %d reduction %u tile %u", split, reduction, tile);
}

/* One row-major product C[m, n] = A[m, k] B[k, n] through cuBLASLt (column-major: C^T = B^T A^T)
 * on device buffers of `type`, float32 accumulation; best seconds of REPEATS. With
 * `float32_partials` the heuristic is asked what cuda/matmul.c asks it (split-K partial sums kept
 * in float32: no in-place or output-type reduction); `config` gets the chosen algorithm's shape. */
static double lt_matmul_s(cublasLtHandle_t lt, cudaDataType_t type, int64_t m, int64_t n, int64_t k,
                          const void *a, const void *b, void *c, void *workspace,
                          size_t workspace_bytes, bool float32_partials, char *config,
                          size_t config_size) {
  cublasLtMatmulDesc_t op = NULL;
  cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
  LT_OK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  LT_OK(cublasLtMatrixLayoutCreate(&lb, type, (uint64_t)n, (uint64_t)k, n));
  LT_OK(cublasLtMatrixLayoutCreate(&la, type, (uint64_t)k, (uint64_t)m, k));
  LT_OK(cublasLtMatrixLayoutCreate(&lc, type, (uint64_t)n, (uint64_t)m, n));
  cublasLtMatmulPreference_t pref = NULL;
  LT_OK(cublasLtMatmulPreferenceCreate(&pref));
  LT_OK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &workspace_bytes, sizeof workspace_bytes));
  if (float32_partials) {
    uint32_t reduction = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    LT_OK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                               &reduction, sizeof reduction));
  }
  cublasLtMatmulHeuristicResult_t heuristic;
  int found = 0;
  LT_OK(cublasLtMatmulAlgoGetHeuristic(lt, op, lb, la, lc, lc, pref, 1, &heuristic, &found));
  if (found == 0) return -1.0;
  if (config) algo_config(&heuristic.algo, config, config_size);
  float alpha = 1.0f, beta = 0.0f;
  double best = 1e30;
  for (int r = 0; r < REPEATS; r++) {
    CUDA_OK(cudaDeviceSynchronize());
    double t0 = now_s();
    LT_OK(cublasLtMatmul(lt, op, &alpha, b, lb, a, la, &beta, c, lc, c, lc, &heuristic.algo,
                         workspace, workspace_bytes, 0));
    CUDA_OK(cudaDeviceSynchronize());
    double t = now_s() - t0;
    best = t < best ? t : best;
  }
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(op);
  return best;
}

typedef struct {
  cublasLtHandle_t lt;
  void *workspace;
  size_t workspace_bytes;
} lt_env;

/* Best seconds of a direct cuBLASLt bf16 product of the given shape (buffers of zeros); see
   lt_matmul_s for the last three. */
static double direct_matmul_s(const lt_env *env, int64_t m, int64_t n, int64_t k,
                              bool float32_partials, char *config, size_t config_size) {
  void *a = NULL, *b = NULL, *c = NULL;
  CUDA_OK(cudaMalloc(&a, (size_t)(m * k * 2)));
  CUDA_OK(cudaMalloc(&b, (size_t)(k * n * 2)));
  CUDA_OK(cudaMalloc(&c, (size_t)(m * n * 2)));
  CUDA_OK(cudaMemset(a, 0, (size_t)(m * k * 2)));
  CUDA_OK(cudaMemset(b, 0, (size_t)(k * n * 2)));
  double s = lt_matmul_s(env->lt, CUDA_R_16BF, m, n, k, a, b, c, env->workspace,
                         env->workspace_bytes, float32_partials, config, config_size);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return s;
}

/* ---- tessera ----------------------------------------------------------------------------------
 */

static tsr_status full_on(tsr_stream *s, const int64_t *shape, int ndim, double value,
                          tsr_dtype dtype, tsr_array **out) {
  tsr_status st = tsr_full(out, shape, ndim, value, dtype, s);
  if (st == TSR_OK) st = tsr_eval(out, 1);
  return st;
}

typedef tsr_status (*op_fn)(tsr_array **out, tsr_array *a, tsr_array *b, tsr_stream *s);

static tsr_status add_op(tsr_array **out, tsr_array *a, tsr_array *b, tsr_stream *s) {
  return tsr_add(out, a, b, s);
}
static tsr_status softmax_op(tsr_array **out, tsr_array *a, tsr_array *b, tsr_stream *s) {
  (void)b;
  return tsr_softmax(out, a, -1, s);
}
static tsr_status matmul_op(tsr_array **out, tsr_array *a, tsr_array *b, tsr_stream *s) {
  return tsr_matmul(out, a, b, s);
}

/* Best seconds of building and evaluating fn(a, b) on s. */
static double tessera_op_s(op_fn fn, tsr_array *a, tsr_array *b, tsr_stream *s) {
  double best = 1e30;
  for (int r = 0; r < REPEATS; r++) {
    tsr_array *out = NULL;
    double t0 = now_s();
    tsr_status st = fn(&out, a, b, s);
    if (st == TSR_OK) st = tsr_eval(&out, 1);
    double t = now_s() - t0;
    tsr_array_release(out);
    if (st != TSR_OK) {
      fail("op", st);
      return -1.0;
    }
    best = t < best ? t : best;
  }
  return best;
}

static void ratio_line(const char *what, double gbs, double roof) {
  if (gbs < 0)
    printf("%-44s failed\n", what);
  else
    printf("%-44s %8.0f GB/s   %.2f of the copy roof\n", what, gbs, gbs / roof);
}

static int elementwise_rows(tsr_stream *s, double roof) {
  const int64_t n = (int64_t)1 << 28; /* 1 GiB of float32 per operand */
  int64_t flat[1] = {n}, rows[2] = {n / 4096, 4096};
  tsr_array *a = NULL, *b = NULL, *x = NULL;
  tsr_status st = full_on(s, flat, 1, 1.0, TSR_FLOAT32, &a);
  if (st == TSR_OK) st = full_on(s, flat, 1, 2.0, TSR_FLOAT32, &b);
  if (st == TSR_OK) st = full_on(s, rows, 2, 0.5, TSR_FLOAT32, &x);
  if (st != TSR_OK) return fail("inputs", st);
  double add_s = tessera_op_s(add_op, a, b, s);
  double softmax_s = tessera_op_s(softmax_op, x, NULL, s);
  ratio_line("tessera add f32, 2^28 elements", add_s > 0 ? 12.0 * (double)n / add_s / 1e9 : -1,
             roof);
  ratio_line("tessera softmax f32 [65536, 4096] rows",
             softmax_s > 0 ? 8.0 * (double)n / softmax_s / 1e9 : -1, roof);
  tsr_array_release(a);
  tsr_array_release(b);
  tsr_array_release(x);
  return 0;
}

static int matmul_rows(tsr_stream *s, const lt_env *env) {
  const int64_t shapes[][3] = {{8192, 8192, 8192}, {512, 8192, 8192}, {1, 28672, 8192}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    int64_t m = shapes[i][0], n = shapes[i][1], k = shapes[i][2];
    int64_t sa[2] = {m, k}, sb[2] = {k, n};
    tsr_array *a = NULL, *b = NULL;
    tsr_status st = full_on(s, sa, 2, 0.0, TSR_BFLOAT16, &a);
    if (st == TSR_OK) st = full_on(s, sb, 2, 0.0, TSR_BFLOAT16, &b);
    if (st != TSR_OK) return fail("matmul inputs", st);
    double ours = tessera_op_s(matmul_op, a, b, s);
    char config[64] = "", config_f32[64] = "";
    double direct = direct_matmul_s(env, m, n, k, false, config, sizeof config);
    double direct_f32 = direct_matmul_s(env, m, n, k, true, config_f32, sizeof config_f32);
    tsr_array_release(a);
    tsr_array_release(b);
    double flops = 2.0 * (double)m * (double)n * (double)k;
    if (ours < 0 || direct < 0) {
      printf("matmul bf16 %lld x %lld x %lld: failed\n", (long long)m, (long long)n, (long long)k);
      continue;
    }
    printf(
        "matmul bf16 M=%-5lld N=%-5lld K=%-5lld tessera %7.1f TFLOP/s  cuBLASLt %7.1f  "
        "ratio %.3f\n",
        (long long)m, (long long)n, (long long)k, flops / ours / 1e12, flops / direct / 1e12,
        direct / ours);
    /* What separates the two: the algorithm (tessera keeps split-K partials in float32) or the
       host path around the same algorithm. */
    printf("    cuBLASLt: %s; with tessera's preferences: %7.1f TFLOP/s (%s), ratio %.3f\n", config,
           direct_f32 > 0 ? flops / direct_f32 / 1e12 : -1.0, config_f32,
           direct_f32 > 0 ? direct_f32 / ours : -1.0);
  }
  return 0;
}

/* The read roof: a bf16 GEMV, M = 1, N = 28672, K = 8192 (weights 470 MB, far beyond L2). */
static void read_roof_row(const lt_env *env) {
  double s = direct_matmul_s(env, 1, 28672, 8192, false, NULL, 0);
  double bytes = 28672.0 * 8192.0 * 2.0;
  if (s > 0)
    printf("%-44s %8.0f GB/s   (weight bytes / time)\n", "read roof: cuBLASLt bf16 GEMV 28672x8192",
           bytes / s / 1e9);
}

/* First use of a kernel not yet loaded in this process: a small multiply (float16), timed. */
static double first_use_ms(tsr_stream *s) {
  int64_t shape[1] = {1024};
  tsr_array *a = NULL, *y = NULL;
  tsr_status st = full_on(s, shape, 1, 3.0, TSR_FLOAT16, &a);
  if (st != TSR_OK) return -1.0;
  double t0 = now_s();
  st = tsr_multiply(&y, a, a, s);
  if (st == TSR_OK) st = tsr_eval(&y, 1);
  double t = now_s() - t0;
  tsr_array_release(a);
  tsr_array_release(y);
  return st == TSR_OK ? t * 1e3 : -1.0;
}

/* Runs this program again as the "second process" of the JIT figure, with the same cache. */
static double second_process_ms(const char *self) {
  char command[1024];
  snprintf(command, sizeof command, "'%s' --first-use", self);
  FILE *p = popen(command, "r");
  if (!p) return -1.0;
  double ms = -1.0;
  if (fscanf(p, "%lf", &ms) != 1) ms = -1.0;
  pclose(p);
  return ms;
}

/* main set TSR_CACHE_DIR to a fresh folder before the first tessera call (the library reads its
   environment once), so the first use here compiles and the child finds it on disk. */
static void jit_rows(tsr_stream *s, const char *self) {
  double first = first_use_ms(s);
  double second = second_process_ms(self);
  printf("kernel first use, fresh cache (JIT compile + load): %8.2f ms\n", first);
  printf("kernel first use, second process (disk cache):      %8.2f ms   goal < 5 ms\n", second);
}

/* ---- the host cost of an op ------------------------------------------------------------------
 */

enum { CHAIN = 1000, HOST_REPEATS = 5 };

/* One op of a chain: next = f(prev), with the fixed operands in ctx. */
typedef struct {
  tsr_array *weight, *w_q, *scales, *biases, *ids, *k, *v, *row;
} chain_ctx;
typedef tsr_status (*chain_fn)(tsr_array **out, tsr_array *prev, const chain_ctx *c, int i,
                               tsr_stream *s);

static tsr_status chain_add(tsr_array **out, tsr_array *prev, const chain_ctx *c, int i,
                            tsr_stream *s) {
  (void)i;
  return tsr_add(out, prev, c->weight, s);
}
static tsr_status chain_rms_norm(tsr_array **out, tsr_array *prev, const chain_ctx *c, int i,
                                 tsr_stream *s) {
  (void)i;
  return tsr_rms_norm(out, prev, c->weight, 1e-5f, s);
}
static tsr_status chain_rope(tsr_array **out, tsr_array *prev, const chain_ctx *c, int i,
                             tsr_stream *s) {
  (void)c;
  return tsr_rope(out, prev, 64, false, 10000.0f, i, s);
}
static tsr_status chain_qmv(tsr_array **out, tsr_array *prev, const chain_ctx *c, int i,
                            tsr_stream *s) {
  (void)i;
  return tsr_quantized_matmul(out, prev, c->w_q, c->scales, c->biases, true, 64, 4,
                              TSR_QUANT_AFFINE, s);
}
static tsr_status chain_sdpa(tsr_array **out, tsr_array *prev, const chain_ctx *c, int i,
                             tsr_stream *s) {
  (void)i;
  return tsr_sdpa(out, prev, c->k, c->v, 0.125f, false, s);
}
static tsr_status chain_take(tsr_array **out, tsr_array *prev, const chain_ctx *c, int i,
                             tsr_stream *s) {
  (void)i; /* prev's two rows swapped; the ids come from host data (no bounds read back) */
  return tsr_take(out, prev, c->ids, 0, s);
}
static tsr_status chain_slice_update(tsr_array **out, tsr_array *prev, const chain_ctx *c, int i,
                                     tsr_stream *s) {
  int64_t start[2] = {i % 256, 0}, stop[2] = {i % 256 + 1, 128};
  return tsr_slice_update(out, prev, c->row, start, stop, NULL, 2, s);
}

typedef struct {
  const char *name;
  chain_fn fn;
  int64_t shape[4]; /* the chain's array */
  int ndim;
} chain_kind;

/* µs per op to build, to submit, and in all (the best of HOST_REPEATS chains). */
static int chain_us(const chain_kind *kind, const chain_ctx *c, tsr_stream *s, double us[3]) {
  us[0] = us[1] = us[2] = 1e30;
  for (int r = 0; r < HOST_REPEATS; r++) {
    tsr_array *x = NULL;
    tsr_status st = full_on(s, kind->shape, kind->ndim, 0.5, TSR_FLOAT32, &x);
    double t0 = now_s();
    for (int i = 0; st == TSR_OK && i < CHAIN; i++) {
      tsr_array *next = NULL;
      st = kind->fn(&next, x, c, i, s);
      tsr_array_release(x);
      x = next;
    }
    double t1 = now_s();
    if (st == TSR_OK) st = tsr_async_eval(&x, 1);
    double t2 = now_s();
    if (st == TSR_OK) st = tsr_eval(&x, 1);
    double t3 = now_s();
    tsr_array_release(x);
    if (st != TSR_OK) return fail(kind->name, st);
    double per[3] = {(t1 - t0) / CHAIN * 1e6, (t2 - t1) / CHAIN * 1e6, (t3 - t0) / CHAIN * 1e6};
    for (int k = 0; k < 3; k++)
      us[k] = per[k] < us[k] ? per[k] : us[k];
  }
  return 0;
}

/* µs per cudaMemsetAsync of 64 bytes, CHAIN of them back to back then one synchronize: what the
   runtime itself takes to enqueue one device operation. */
static double enqueue_roof_us(tsr_stream *s) {
  cudaStream_t stream = (cudaStream_t)tsr_stream_native(s);
  void *p = NULL;
  CUDA_OK(cudaMalloc(&p, 64));
  double best = 1e30;
  for (int r = 0; r < HOST_REPEATS; r++) {
    double t0 = now_s();
    for (int i = 0; i < CHAIN; i++)
      CUDA_OK(cudaMemsetAsync(p, i & 0xff, 64, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    double t = (now_s() - t0) / CHAIN * 1e6;
    best = t < best ? t : best;
  }
  cudaFree(p);
  return best;
}

static tsr_status chain_operands(tsr_stream *s, chain_ctx *c) {
  int64_t vec[1] = {4096}, wshape[2] = {4096, 4096}, kv[4] = {1, 8, 256, 128};
  int64_t row[2] = {1, 128}, two[1] = {2};
  int32_t ids[2] = {1, 0};
  tsr_array *w = NULL;
  tsr_status st = full_on(s, vec, 1, 1.0, TSR_FLOAT32, &c->weight);
  if (st == TSR_OK) st = tsr_random_normal(&w, wshape, 2, 0.0, 1.0, TSR_BFLOAT16, 3, s);
  if (st == TSR_OK)
    st = tsr_quantize(&c->w_q, &c->scales, &c->biases, w, 64, 4, TSR_QUANT_AFFINE, s);
  if (st == TSR_OK)
    st = tsr_array_from_data_on(&c->ids, ids, TSR_INT32, two, 1, tsr_stream_device(s));
  if (st == TSR_OK) st = full_on(s, kv, 4, 0.1, TSR_FLOAT32, &c->k);
  if (st == TSR_OK) st = full_on(s, kv, 4, 0.2, TSR_FLOAT32, &c->v);
  if (st == TSR_OK) st = full_on(s, row, 2, 1.0, TSR_FLOAT32, &c->row);
  if (st == TSR_OK) {
    tsr_array *all[3] = {c->w_q, c->scales, c->biases};
    st = tsr_eval(all, 3);
  }
  tsr_array_release(w);
  return st;
}

static int host_cost_rows(tsr_stream *s) {
  chain_ctx c = {0};
  tsr_status st = chain_operands(s, &c);
  if (st != TSR_OK) return fail("chain operands", st);
  const chain_kind kinds[] = {
      {"add f32 [4096]", chain_add, {4096}, 1},
      {"rms_norm f32 [1, 4096]", chain_rms_norm, {1, 4096}, 2},
      {"rope f32 [1, 32, 1, 128] (64 dims)", chain_rope, {1, 32, 1, 128}, 4},
      {"quantized_matmul 4-bit M=1 4096x4096", chain_qmv, {1, 4096}, 2},
      {"sdpa decode [1, 32, 1, 128] over 256 keys", chain_sdpa, {1, 32, 1, 128}, 4},
      {"take 2 rows of [2, 4096] (ids from data)", chain_take, {2, 4096}, 2},
      {"slice_update a row of [256, 128]", chain_slice_update, {256, 128}, 2},
  };
  double roof = enqueue_roof_us(s);
  printf(
      "\nhost cost per op, chains of %d (µs; the runtime's own enqueue, cudaMemsetAsync of 64 B: "
      "%.2f µs)\n",
      CHAIN, roof);
  printf("%-46s %8s %8s %8s %10s\n", "op", "build", "submit", "all", "all/enqueue");
  int rc = 0;
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    double us[3];
    if (chain_us(&kinds[i], &c, s, us) != 0) {
      rc = 1;
      continue;
    }
    printf("%-46s %8.2f %8.2f %8.2f %10.1f\n", kinds[i].name, us[0], us[1], us[2],
           roof > 0 ? us[2] / roof : 0.0);
  }
  tsr_array *all[] = {c.weight, c.w_q, c.scales, c.biases, c.ids, c.k, c.v, c.row};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    tsr_array_release(all[i]);
  return rc;
}

/* ---- one-block ops warm and cold ----------------------------------------------------------- */

enum { COLD_REPS = 40, COLD_EVICT_BYTES = 256 << 20 };

/* Median device µs of `op` (x -> out on s) over COLD_REPS, each bracketed by events and preceded
   by a 256 MiB device copy when `cold`. Everything is enqueued behind a host gate first, so the
   events time the kernel, not its launch. -1 on failure. */
static double bracketed_us(tsr_status (*op)(tsr_array **, tsr_array *, tsr_array *, tsr_stream *),
                           tsr_array *x, tsr_array *w, tsr_stream *s, void *evict, bool cold) {
  cudaStream_t stream = (cudaStream_t)tsr_stream_native(s);
  cudaEvent_t ev[2 * COLD_REPS];
  tsr_array *out[COLD_REPS] = {0};
  for (int i = 0; i < 2 * COLD_REPS; i++)
    CUDA_OK(cudaEventCreate(&ev[i]));
  tsr_array *warm = NULL; /* first use: the JIT compile and the output's buffer */
  if (op(&warm, x, w, s) != TSR_OK || tsr_eval(&warm, 1) != TSR_OK) return -1.0;
  tsr_array_release(warm);
  CUDA_OK(gate_hold(stream));
  bool ok = true;
  for (int r = 0; ok && r < COLD_REPS; r++) {
    if (cold) {
      char *half = (char *)evict + COLD_EVICT_BYTES / 2;
      ok = cudaMemcpyAsync(half, evict, COLD_EVICT_BYTES / 2, cudaMemcpyDeviceToDevice, stream) ==
           cudaSuccess;
    }
    ok = ok && cudaEventRecord(ev[2 * r], stream) == cudaSuccess;
    ok = ok && op(&out[r], x, w, s) == TSR_OK && tsr_async_eval(&out[r], 1) == TSR_OK;
    ok = ok && cudaEventRecord(ev[2 * r + 1], stream) == cudaSuccess;
  }
  gate_release();
  ok = ok && cudaStreamSynchronize(stream) == cudaSuccess;
  float us[COLD_REPS];
  for (int r = 0; ok && r < COLD_REPS; r++) {
    float ms = 0;
    ok = cudaEventElapsedTime(&ms, ev[2 * r], ev[2 * r + 1]) == cudaSuccess;
    us[r] = 1e3f * ms;
  }
  for (int r = 0; r < COLD_REPS; r++)
    tsr_array_release(out[r]);
  for (int i = 0; i < 2 * COLD_REPS; i++)
    cudaEventDestroy(ev[i]);
  if (!ok) return -1.0;
  if (gate_opened_itself())
    printf("  (the gate opened itself: the enqueues waited for the stream)\n");
  for (int i = 1; i < COLD_REPS; i++) /* insertion sort: the median */
    for (int j = i; j > 0 && us[j] < us[j - 1]; j--) {
      float t = us[j];
      us[j] = us[j - 1];
      us[j - 1] = t;
    }
  return us[COLD_REPS / 2];
}

static tsr_status rms_norm_op(tsr_array **out, tsr_array *x, tsr_array *w, tsr_stream *s) {
  return tsr_rms_norm(out, x, w, 1e-5f, s);
}

static int cold_warm_rows(tsr_stream *s) {
  int64_t row[2] = {1, 4096}, vec[1] = {4096};
  tsr_array *x = NULL, *w = NULL, *v = NULL, *w32 = NULL;
  tsr_status st = full_on(s, row, 2, 0.5, TSR_FLOAT32, &x);
  if (st == TSR_OK) st = full_on(s, vec, 1, 1.0, TSR_BFLOAT16, &w);
  if (st == TSR_OK) st = full_on(s, vec, 1, 0.5, TSR_FLOAT32, &v);
  if (st == TSR_OK) st = full_on(s, vec, 1, 1.0, TSR_FLOAT32, &w32);
  void *evict = NULL;
  if (st != TSR_OK) return fail("cold/warm operands", st);
  if (cudaMalloc(&evict, COLD_EVICT_BYTES) != cudaSuccess) {
    fprintf(stderr, "gpu_basics: cudaMalloc of %d MiB failed\n", COLD_EVICT_BYTES >> 20);
    return 1;
  }
  printf(
      "\none-block decode ops, device µs between events (median of %d): after the same op, "
      "after a %d MiB device copy\n",
      COLD_REPS, COLD_EVICT_BYTES >> 20);
  const struct {
    const char *name;
    tsr_status (*op)(tsr_array **, tsr_array *, tsr_array *, tsr_stream *);
    tsr_array *x, *w;
  } rows[2] = {{"rms_norm [1, 4096] f32, bf16 weight", rms_norm_op, x, w},
               {"add [4096] f32", add_op, v, w32}};
  int rc = 0;
  for (int i = 0; i < 2; i++) {
    double warm = bracketed_us(rows[i].op, rows[i].x, rows[i].w, s, evict, false);
    double cold = bracketed_us(rows[i].op, rows[i].x, rows[i].w, s, evict, true);
    if (warm < 0 || cold < 0) rc = 1;
    printf("%-44s %8.2f warm %8.2f cold\n", rows[i].name, warm, cold);
  }
  cudaFree(evict);
  tsr_array *all[4] = {x, w, v, w32};
  for (int i = 0; i < 4; i++)
    tsr_array_release(all[i]);
  return rc;
}

int main(int argc, char **argv) {
  tsr_device gpu = {TSR_GPU, 0};
  bool child = argc > 1 && strcmp(argv[1], "--first-use") == 0;
  char folder[] = "/tmp/tessera-jit-bench-XXXXXX";
  if (!child) { /* before any tessera call; the child inherits both */
    if (!mkdtemp(folder)) return 1;
    setenv("TSR_CACHE_DIR", folder, 1);
    setenv("TSR_KERNELS", "jit", 1);
  }
  if (tsr_device_count(TSR_GPU) < 1) {
    printf("gpu_basics: no usable GPU; nothing measured\n");
    return 0;
  }
  tsr_stream *s = NULL;
  tsr_status st = tsr_stream_new(&s, gpu);
  if (st != TSR_OK) return fail("stream_new", st);
  if (child) {
    printf("%.3f\n", first_use_ms(s));
    return 0;
  }
  lt_env env = {.workspace_bytes = (size_t)32 << 20};
  if (cublasLtCreate(&env.lt) != CUBLAS_STATUS_SUCCESS ||
      cudaMalloc(&env.workspace, env.workspace_bytes) != cudaSuccess) {
    fprintf(stderr, "gpu_basics: cuBLASLt setup failed\n");
    return 1;
  }
  double roof = copy_roof_gbs((size_t)1 << 30);
  printf("%-44s %8.0f GB/s   (read + write)\n", "copy roof: cudaMemcpy D2D 1 GiB", roof);
  read_roof_row(&env);
  jit_rows(s, argv[0]);
  int rc = elementwise_rows(s, roof);
  rc |= matmul_rows(s, &env);
  rc |= host_cost_rows(s);
  rc |= cold_warm_rows(s);
  cudaFree(env.workspace);
  cublasLtDestroy(env.lt);
  tsr_stream_free(s);
  char command[1100];
  snprintf(command, sizeof command, "rm -rf '%s'", folder);
  if (system(command) != 0) rc = 1;
  return rc;
}
