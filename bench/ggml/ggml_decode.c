/* bench/ggml/ggml_decode.c — ggml's CPU decode (M = 1) per weight byte, for issue 11's
 * side-by-side with bench/qmm_cpu: the same GLM shapes (N x K 4096 x 4096, 13696 x 4096,
 * 4096 x 13696, 4096 x 14336), the same rotation of weights (>= TSR_BENCH_ROTATION_MIB, default
 * 1536, copies of one random matrix), TSR_NUM_THREADS threads (else the online cores), and
 * bench/read_roof.h's read of ggml's own weight buffer on as many threads — qmm_cpu's roof — in
 * interleaved rounds (best of 10 each). Weights go to ggml's CPU_REPACK buffer (llama.cpp's default
 * on x86: q4_0 becomes q4_0_8x8) unless PLAIN=1; in ggml d99724f2 the repack buffer accepts q8_0,
 * mxfp4 and nvfp4 and then aborts in tensor_set, so those need PLAIN=1. Usage: ggml_decode
 * q4_0|q8_0|mxfp4|nvfp4.
 *
 * ggml is not part of tessera: build it outside the tree (`fetch` github:ggml-org/ggml; cmake
 * -DGGML_NATIVE=ON) and configure tessera with -DTSR_GGML_DIR=<its source tree> (headers in
 * include/, libraries in build/src/); nothing of ggml is committed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"
#include "../read_roof.h"

#define ROUNDS 10

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- ggml ----------------------------------------------------------------------------------- */

static enum ggml_type type_named(const char *name) {
  if (strcmp(name, "q8_0") == 0) return GGML_TYPE_Q8_0;
  if (strcmp(name, "mxfp4") == 0) return GGML_TYPE_MXFP4;
  if (strcmp(name, "nvfp4") == 0) return GGML_TYPE_NVFP4;
  return GGML_TYPE_Q4_0;
}

/* The CPU device's extra buffer types (CPU_REPACK first), NULL-terminated, or NULL. */
static ggml_backend_buffer_type_t *extra_types(ggml_backend_t cpu) {
  ggml_backend_dev_t dev = ggml_backend_get_device(cpu);
  ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
  ggml_backend_dev_get_extra_bufts_t get =
      (ggml_backend_dev_get_extra_bufts_t)ggml_backend_reg_get_proc_address(
          reg, "ggml_backend_dev_get_extra_bufts");
  return get ? get(dev) : NULL;
}

/* The weights' buffer: the first extra type that takes them (unless PLAIN), else plain CPU. */
static ggml_backend_buffer_t weight_buffer(struct ggml_context *ctx,
                                           ggml_backend_buffer_type_t *extra, const char **name) {
  ggml_backend_buffer_t b = NULL;
  for (int i = 0; extra && extra[i] && !b && !getenv("PLAIN"); i++) {
    b = ggml_backend_alloc_ctx_tensors_from_buft(ctx, extra[i]);
    if (b) *name = ggml_backend_buft_name(extra[i]);
  }
  if (!b) {
    b = ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type());
    *name = "CPU";
  }
  ggml_backend_buffer_set_usage(b, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
  return b;
}

/* One shape: `copies` weight matrices [N, K] of one random matrix quantized to `type`, each
   against its own x [1, K]; one graph of all the products, timed against the read roof. */
static void shape_row(ggml_backend_t cpu, ggml_backend_buffer_type_t *extra, enum ggml_type type,
                      int64_t n, int64_t k, double rotation_mib) {
  size_t w_bytes = ggml_row_size(type, k) * (size_t)n;
  int copies = (int)(rotation_mib * 1048576.0 / (double)w_bytes) + 1;
  size_t meta = ggml_tensor_overhead() * (size_t)(copies * 3 + 8);
  struct ggml_context *cw = ggml_init((struct ggml_init_params){meta, NULL, true});
  struct ggml_context *cx = ggml_init((struct ggml_init_params){meta, NULL, true});
  struct ggml_context *cg = ggml_init((struct ggml_init_params){
      meta + ggml_graph_overhead_custom((size_t)copies * 4, false), NULL, true});
  struct ggml_tensor **w = calloc((size_t)copies, sizeof *w),
                     **x = calloc((size_t)copies, sizeof *x);
  for (int c = 0; c < copies; c++) {
    w[c] = ggml_new_tensor_2d(cw, type, k, n);
    x[c] = ggml_new_tensor_2d(cx, GGML_TYPE_F32, k, 1);
  }
  const char *buffer_name = "";
  ggml_backend_buffer_t wb = weight_buffer(cw, extra, &buffer_name);
  ggml_backend_buffer_t xb =
      ggml_backend_alloc_ctx_tensors_from_buft(cx, ggml_backend_cpu_buffer_type());
  float *f = malloc(sizeof(float) * (size_t)(n * k));
  void *q = malloc(w_bytes);
  for (int64_t i = 0; i < n * k; i++)
    f[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  ggml_quantize_chunk(type, f, q, 0, n, k, NULL);
  for (int c = 0; c < copies; c++) {
    ggml_backend_tensor_set(w[c], q, 0, w_bytes);
    ggml_backend_tensor_set(x[c], f, 0, (size_t)k * sizeof(float));
  }
  struct ggml_cgraph *g = ggml_new_graph_custom(cg, (size_t)copies * 4, false);
  for (int c = 0; c < copies; c++)
    ggml_build_forward_expand(g, ggml_mul_mat(cg, w[c], x[c]));
  ggml_gallocr_t ga = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
  ggml_gallocr_alloc_graph(ga, g);
  size_t read_bytes = ggml_backend_buffer_get_size(wb) / 8 * 8;
  read_target roof = {{ggml_backend_buffer_get_base(wb)}, {read_bytes / 8}};
  ggml_backend_graph_compute(cpu, g); /* first use out of the timing */
  double best_op = 1e30, best_read = 1e30;
  for (int r = 0; r < ROUNDS; r++) {
    double t0 = now_s();
    ggml_backend_graph_compute(cpu, g);
    double t = now_s() - t0;
    t0 = now_s();
    plain_read(&roof, true);
    double tr = now_s() - t0;
    best_op = t < best_op ? t : best_op;
    best_read = tr < best_read ? tr : best_read;
  }
  double op_gbs = (double)w_bytes * copies / best_op / 1e9;
  double roof_gbs = (double)read_bytes / best_read / 1e9;
  printf("| ggml %s | %lld x %lld | 1 | %s, %d copies | %.1f | %.1f | %.2f |\n",
         ggml_type_name(type), (long long)n, (long long)k, buffer_name, copies, op_gbs, roof_gbs,
         op_gbs / roof_gbs);
  ggml_gallocr_free(ga);
  ggml_backend_buffer_free(wb);
  ggml_backend_buffer_free(xb);
  ggml_free(cg);
  ggml_free(cw);
  ggml_free(cx);
  free(f);
  free(q);
  free(w);
  free(x);
}

int main(int argc, char **argv) {
  enum ggml_type type = type_named(argc > 1 ? argv[1] : "q4_0");
  const char *rot = getenv("TSR_BENCH_ROTATION_MIB");
  double rotation_mib = rot ? atof(rot) : 1536.0;
  static const int64_t shapes[][2] = {{4096, 4096}, {13696, 4096}, {4096, 13696}, {4096, 14336}};
  readers_start(); /* the roof's threads, as many as ggml's */
  ggml_backend_t cpu = ggml_backend_cpu_init();
  ggml_backend_cpu_set_n_threads(cpu, readers.threads);
  ggml_backend_buffer_type_t *extra = extra_types(cpu);
  printf("## ggml_decode: ggml %s, M = 1, %d threads, weights rotated over %.0f MiB\n",
         ggml_type_name(type), readers.threads, rotation_mib);
  const char *loads = "";
  wide_sum(&loads);
  printf(
      "| format | N x K | M | weight buffer | weight GB/s | roof GB/s (%s read) | roof ratio |\n",
      loads);
  printf("| --- | --- | --- | --- | --- | --- | --- |\n");
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    shape_row(cpu, extra, type, shapes[i][0], shapes[i][1], rotation_mib);
  ggml_backend_free(cpu);
  readers_stop();
  return 0;
}
