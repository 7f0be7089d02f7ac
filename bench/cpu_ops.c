/* bench/cpu_ops.c — the CPU transformer ops against what bounds them, measured side by side in
 * one run: tsr_matmul (graph build + evaluation + the kernel) against a direct cblas_sgemm on the
 * same data at square sizes, and softmax / rms_norm throughput against a memcpy of the same
 * bytes (read once, written once). Best of several repeats after a warm-up. Goals (issue
 * "Step 2"): matmul ratio (sgemm time / ours) >= 0.97 at large sizes. Not a test: it checks
 * only that the results are finite. `cpu_ops quick` skips 4096. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tessera/tessera.h>

enum { REPEATS = 5 };

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, tsr_status st) {
  fprintf(stderr, "cpu_ops: %s: %s: %s\n", what, tsr_status_name(st), tsr_last_error());
  exit(1);
}

static float *random_floats(size_t n) {
  float *v = malloc(n * sizeof *v);
  if (!v) die("malloc", TSR_ERR_NOMEM);
  uint64_t state = 0x9e3779b97f4a7c15ull ^ n;
  for (size_t i = 0; i < n; i++) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    v[i] = (float)((double)(state >> 40) * 0x1p-24 * 2.0 - 1.0);
  }
  return v;
}

/* One timed unit of work: runs `iterations` times per call. */
typedef struct {
  void (*run)(void *ctx);
  void *ctx;
  int iterations;
} work;

/* Seconds per iteration: one warm-up call, then the best of REPEATS calls. */
static double best_seconds(const work *w) {
  double best = 1e30;
  for (int r = 0; r <= REPEATS; r++) {
    double t0 = now_s();
    for (int i = 0; i < w->iterations; i++)
      w->run(w->ctx);
    double t = (now_s() - t0) / w->iterations;
    if (r > 0 && t < best) best = t; /* r == 0 is the warm-up */
  }
  return best;
}

/* Enough iterations that one call takes ~20 ms, from a single timed run. */
static int iterations_for(void (*run)(void *), void *ctx) {
  double t0 = now_s();
  run(ctx);
  double t = now_s() - t0;
  int n = t > 0.02 ? 1 : (int)(0.02 / (t > 1e-7 ? t : 1e-7));
  return n < 1 ? 1 : n > 100000 ? 100000 : n;
}

static double time_it(void (*run)(void *), void *ctx) {
  work w = {run, ctx, iterations_for(run, ctx)};
  return best_seconds(&w);
}

/* ---- matmul ---------------------------------------------------------------------------------- */

typedef struct {
  int n;
  const float *a, *b;
  float *c;
  tsr_array *ta, *tb;
} matmul_ctx;

static void run_sgemm(void *p) {
  matmul_ctx *m = p;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m->n, m->n, m->n, 1.0f, m->a, m->n, m->b,
              m->n, 0.0f, m->c, m->n);
}

static void run_tessera_op(tsr_status (*op)(tsr_array **, void *), void *ctx, const char *what) {
  tsr_array *out = NULL;
  tsr_status st = op(&out, ctx);
  if (st == TSR_OK) st = tsr_eval(&out, 1);
  tsr_array_release(out);
  if (st != TSR_OK) die(what, st);
}

static tsr_status matmul_op(tsr_array **out, void *p) {
  matmul_ctx *m = p;
  return tsr_matmul(out, m->ta, m->tb, NULL);
}

static void run_tessera_matmul(void *p) {
  run_tessera_op(matmul_op, p, "matmul");
}

static void bench_matmul(int n) {
  size_t count = (size_t)n * (size_t)n;
  int64_t shape[2] = {n, n};
  matmul_ctx m = {
      n, random_floats(count), random_floats(count), calloc(count, sizeof(float)), NULL, NULL};
  if (!m.c) die("calloc", TSR_ERR_NOMEM);
  tsr_status st = tsr_array_from_data(&m.ta, m.a, TSR_FLOAT32, shape, 2);
  if (st == TSR_OK) st = tsr_array_from_data(&m.tb, m.b, TSR_FLOAT32, shape, 2);
  if (st != TSR_OK) die("from_data", st);
  double direct = time_it(run_sgemm, &m), ours = time_it(run_tessera_matmul, &m);
  double gflops = 2.0 * n * (double)n * n / direct * 1e-9;
  printf("| %d | %.4g | %.4g | %.1f | %.3f |\n", n, direct * 1e3, ours * 1e3, gflops,
         direct / ours);
  fflush(stdout);
  if (!isfinite(m.c[count - 1])) die("sgemm result", TSR_ERR_INVALID);
  tsr_array_release(m.ta);
  tsr_array_release(m.tb);
  free((void *)m.a);
  free((void *)m.b);
  free(m.c);
}

/* ---- softmax / rms_norm against memcpy --------------------------------------------------------
 */

typedef struct {
  size_t bytes;
  const void *src;
  void *dst;
  tsr_array *x, *weight;
} stream_ctx;

static void run_memcpy(void *p) {
  stream_ctx *s = p;
  memcpy(s->dst, s->src, s->bytes);
  __asm__ volatile("" : : "r"(s->dst) : "memory");
}

static tsr_status softmax_op(tsr_array **out, void *p) {
  return tsr_softmax(out, ((stream_ctx *)p)->x, -1, NULL);
}

static tsr_status rms_norm_op(tsr_array **out, void *p) {
  stream_ctx *s = p;
  return tsr_rms_norm(out, s->x, s->weight, 1e-5f, NULL);
}

static void run_softmax(void *p) {
  run_tessera_op(softmax_op, p, "softmax");
}
static void run_rms_norm(void *p) {
  run_tessera_op(rms_norm_op, p, "rms_norm");
}

/* GB/s of one op reading rows x cols float32 and writing as many, next to memcpy's. */
static void bench_stream(const char *name, void (*run)(void *), int64_t rows, int64_t cols) {
  size_t count = (size_t)(rows * cols), bytes = count * sizeof(float);
  int64_t shape[2] = {rows, cols}, wshape[1] = {cols};
  float *x = random_floats(count), *w = random_floats((size_t)cols);
  stream_ctx s = {bytes, x, malloc(bytes), NULL, NULL};
  if (!s.dst) die("malloc", TSR_ERR_NOMEM);
  memset(s.dst, 1, bytes);
  tsr_status st = tsr_array_from_data(&s.x, x, TSR_FLOAT32, shape, 2);
  if (st == TSR_OK) st = tsr_array_from_data(&s.weight, w, TSR_FLOAT32, wshape, 1);
  if (st != TSR_OK) die("from_data", st);
  double copy = time_it(run_memcpy, &s), ours = time_it(run, &s);
  double moved = 2.0 * (double)bytes * 1e-9; /* read + write */
  printf("| %s | [%lld, %lld] | %.1f | %.2f | %.2f | %.2f |\n", name, (long long)rows,
         (long long)cols, (double)bytes / 1048576.0, moved / ours, moved / copy, copy / ours);
  fflush(stdout);
  tsr_array_release(s.x);
  tsr_array_release(s.weight);
  free(x);
  free(w);
  free(s.dst);
}

int main(int argc, char **argv) {
  int quick = argc > 1 && strcmp(argv[1], "quick") == 0;
  printf("## matmul: tsr_matmul (build + eval) vs cblas_sgemm, float32 n x n @ n x n\n\n");
  printf("| n | sgemm ms | tsr_matmul ms | sgemm GFLOP/s | ratio (sgemm / ours) |\n");
  printf("| --- | --- | --- | --- | --- |\n");
  int sizes[] = {1, 16, 64, 256, 1024, 2048, 4096};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    if (quick && sizes[i] > 2048) continue;
    bench_matmul(sizes[i]);
  }
  printf("\n## softmax (last axis) and rms_norm (weight [cols]) vs memcpy of the same bytes\n\n");
  printf("| op | shape | MiB | ours GB/s | memcpy GB/s | ratio (memcpy time / ours) |\n");
  printf("| --- | --- | --- | --- | --- | --- |\n");
  bench_stream("softmax", run_softmax, 4096, 4096);
  bench_stream("softmax", run_softmax, 8, 151552);
  bench_stream("softmax", run_softmax, 64, 256);
  bench_stream("rms_norm", run_rms_norm, 4096, 4096);
  bench_stream("rms_norm", run_rms_norm, 64, 4096);
  tsr_shutdown();
  return 0;
}
