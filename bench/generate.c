/* bench/generate.c — decode and prefill speed of a GLM-4-9B-shaped model through the public
 * runner (tsr_model_load, tsr_session_append, tsr_session_logits). Not a test: nothing is
 * compared with an oracle; the weights are random and the tokens mean nothing.
 *
 * The model is glm4 dense at GLM-4-9B-0414's shape (glm-spec §1.1: vocab 151552, hidden 4096,
 * I 13696, 40 layers, 32 heads, 2 kv heads, head_dim 128, q/k/v biases) in mlx-lm's affine
 * 4-bit g64 layout (§4.2–4.4: packed U32 codes, bfloat16 scales and biases, embed_tokens and
 * lm_head quantized, bfloat16 norms and q/k/v biases). Its weights are made by this program from
 * a seed: codes uniform in 0..15, scales positive and random, biases -7.5 x scale, so every
 * weight has mean 0 and a standard deviation of 0.75–1.25 / sqrt(in); norms 1. Nothing is
 * quantized from floats.
 *
 * Made in memory, not on disk: tsr_model_load reads a folder, so the checkpoint (config.json,
 * shards of at most 2 GB and model.safetensors.index.json, ~5.3 GB at full size) is written into
 * a new folder under /dev/shm (tmpfs: RAM; the bench checks its free space first) and removed
 * when the run ends — also on Ctrl-C, a failure or a crash, because the first process only
 * starts the others (the writer, then one per configuration) and then deletes the folder.
 *
 * Each OpenBLAS configuration runs in its own process, started with the environment set before
 * OpenBLAS loads (issue 10's single thread pool): `one` = OPENBLAS_NUM_THREADS=1 (OpenBLAS, which
 * runs attention's products, stays on the calling thread; tessera's pool splits the quantized
 * GEMMs) and `timeout` = OPENBLAS_THREAD_TIMEOUT=4 (OpenBLAS's own threads, which sleep after
 * ~2^4 cycles of spinning instead of 2^28). Each measures, on the same checkpoint:
 *  - load: tsr_model_load of the folder;
 *  - prefill: a 512-token prompt into an empty cache, tok/s and TFLOP/s = 2 x the linear layers'
 *    parameters x tokens (+ lm_head for the last token; attention's own products not counted),
 *    and the prompts that fill the caches to 128 and 2048 (the latter in appends of 512);
 *  - decode at contexts 128 and 2048: steps of one tsr_session_append of a token +
 *    tsr_session_logits, each followed by the roof — one read of the same weight bytes (every
 *    quantized tensor's codes, scales and biases plus one embedding row, counted from the
 *    checkpoint) through the widest vector loads the CPU has (AVX-512 here), split over as many
 *    threads as tessera's pool (TSR_NUM_THREADS, else the online cores), from the same tmpfs
 *    pages the model maps. ratio = decode weight GB/s / roof GB/s, from the medians and from the
 *    best rounds of each.
 * With --device gpu (CUDA builds) the model is loaded onto GPU 0 and the roof is the device's own:
 * one cudaMemcpy device-to-device of as many bytes as a decode step reads, its traffic (read +
 * write) per second — on the H200 bench/gpu_qmm measures a read-only cuBLASLt bf16 GEMV at
 * 0.99-1.02 of that rate, so it stands for reading the weights once. Only the `one`
 * configuration runs there (OpenBLAS computes nothing on the GPU's path).
 * Flags: --small (8 layers), --layers N, --steps N (decode steps per context, default 24),
 * --long N (the second context, 0 to skip it), --config one|timeout|both, --seed N,
 * --device cpu|gpu, --dir DIR (the checkpoint's folder is made there instead of /dev/shm: a
 * machine whose /dev/shm is small; the page cache then stands for tmpfs).
 * --group mpi|nccl under mpirun: the model split tensor-parallel over the ranks (with --device gpu
 * each rank on its own GPU), decode at context 128 with the share of each token's time its
 * collectives take (bench/generate_group.h). */
#include <cblas.h>
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#ifdef TSR_BENCH_CUDA
#include <cuda_runtime.h>
#endif
#include <tessera/model.h>
#include <tessera/safetensors.h>
#include <tessera/tessera.h>

#include "generate_checkpoint.h"
#include "openblas_core.h"

enum { MAX_THREADS = 256, MAX_STEPS = 1024, WARM_STEPS = 2, PROMPT = 512, SHORT_CONTEXT = 128 };

typedef struct {
  int64_t layers, long_context;
  int steps;
  uint64_t seed;
  const char *config;      /* one, timeout, both */
  bool gpu;                /* --device gpu */
  const char *parent;      /* --dir: where the checkpoint's folder is made (/dev/shm) */
  const char *measure_dir; /* the checkpoint folder, once made */
  const char *group;       /* --group: split over the ranks of an mpirun job (generate_group.h) */
  int result_fd;           /* where a measuring process sends its figures */
} options;

typedef struct {
  double tok_s_median, tok_s_best, weight_gbs, roof_gbs, ratio_median, ratio_best;
} decode_result;

typedef struct { /* what a measuring process hands back */
  double load_s, prefill_tok_s[3], prefill_tflops[3];
  decode_result decode[2];
} run_result;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- the roof: the widest vector read of the same bytes on the pool's thread count ----------- */

typedef struct {
  const unsigned char *data;
  size_t bytes;
} span;

static struct {
  int threads;
  pthread_barrier_t start, done;
  const span *spans;
  size_t n_spans;
  uint64_t sums[MAX_THREADS];
  bool stop;
  pthread_t ids[MAX_THREADS];
} roof;

#if defined(__x86_64__)
__attribute__((target("avx512f"))) static uint64_t read_avx512(const unsigned char *p,
                                                               const unsigned char *end) {
  uint64_t sum = 0;
  for (; p < end && ((uintptr_t)p & 63u) != 0; p++)
    sum += *p;
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (; end - p >= 256; p += 256) {
    a0 = _mm512_add_epi64(a0, _mm512_load_si512((const void *)p));
    a1 = _mm512_add_epi64(a1, _mm512_load_si512((const void *)(p + 64)));
    a2 = _mm512_add_epi64(a2, _mm512_load_si512((const void *)(p + 128)));
    a3 = _mm512_add_epi64(a3, _mm512_load_si512((const void *)(p + 192)));
  }
  for (; end - p >= 64; p += 64)
    a0 = _mm512_add_epi64(a0, _mm512_load_si512((const void *)p));
  for (; p < end; p++)
    sum += *p;
  a0 = _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3));
  return sum + (uint64_t)_mm512_reduce_add_epi64(a0);
}

#endif

static uint64_t read_plain(const unsigned char *p, const unsigned char *end) {
  uint64_t sum = 0;
  for (; p < end; p++)
    sum += *p;
  return sum;
}

static bool wide_loads(void) {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx512f");
#else
  return false;
#endif
}

static uint64_t (*read_range)(const unsigned char *, const unsigned char *) = read_plain;

static void roof_slice(int index) {
  uint64_t sum = 0;
  for (size_t s = 0; s < roof.n_spans; s++) {
    size_t bytes = roof.spans[s].bytes, t = (size_t)roof.threads;
    size_t begin = bytes / 64 * (size_t)index / t * 64,
           end = bytes / 64 * (size_t)(index + 1) / t * 64;
    if (index == roof.threads - 1) end = bytes;
    sum += read_range(roof.spans[s].data + begin, roof.spans[s].data + end);
  }
  roof.sums[index] = sum;
}

static void *roof_main(void *arg) {
  int index = (int)(intptr_t)arg;
  for (;;) {
    pthread_barrier_wait(&roof.start);
    if (roof.stop) return NULL;
    roof_slice(index);
    pthread_barrier_wait(&roof.done);
  }
}

static double roof_read(void) { /* seconds for one read of every span */
  double t0 = now_s();
  pthread_barrier_wait(&roof.start);
  roof_slice(0);
  pthread_barrier_wait(&roof.done);
  double t = now_s() - t0;
  uint64_t total = 0;
  for (int i = 0; i < roof.threads; i++)
    total += roof.sums[i];
  __asm__ volatile("" : : "r"(total) : "memory");
  return t;
}

/* tessera's pool size: TSR_NUM_THREADS when it is an integer in [1, 256], else the cores. */
static int pool_threads(void) {
  const char *v = getenv("TSR_NUM_THREADS");
  char *end = NULL;
  long n = v && *v ? strtol(v, &end, 10) : 0;
  if (!v || !*v || *end || n < 1 || n > MAX_THREADS) n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
}

static void roof_start(const span *spans, size_t n) {
  roof.threads = pool_threads();
  roof.spans = spans;
  roof.n_spans = n;
#if defined(__x86_64__)
  if (wide_loads()) read_range = read_avx512;
#endif
  pthread_barrier_init(&roof.start, NULL, (unsigned)roof.threads);
  pthread_barrier_init(&roof.done, NULL, (unsigned)roof.threads);
  for (int i = 1; i < roof.threads; i++)
    pthread_create(&roof.ids[i], NULL, roof_main, (void *)(intptr_t)i);
}

static void roof_stop(void) {
  roof.stop = true;
  pthread_barrier_wait(&roof.start);
  for (int i = 1; i < roof.threads; i++)
    pthread_join(roof.ids[i], NULL);
  pthread_barrier_destroy(&roof.start);
  pthread_barrier_destroy(&roof.done);
}

/* The GPU's roof: a device-to-device copy of a decode step's weight bytes (see the top). */
#ifdef TSR_BENCH_CUDA
static struct {
  void *src, *dst;
  size_t bytes;
} gpu_roof;
#endif

static bool gpu_roof_start(double bytes) {
#ifdef TSR_BENCH_CUDA
  gpu_roof.bytes = (size_t)bytes;
  return cudaMalloc(&gpu_roof.src, gpu_roof.bytes) == cudaSuccess &&
         cudaMalloc(&gpu_roof.dst, gpu_roof.bytes) == cudaSuccess &&
         cudaMemset(gpu_roof.src, 1, gpu_roof.bytes) == cudaSuccess;
#else
  (void)bytes;
  return false;
#endif
}

/* Seconds for reading the bytes once: half the copy's time (it reads and writes them). */
static double gpu_roof_read(void) {
#ifdef TSR_BENCH_CUDA
  double t0 = now_s();
  /* cudaMemcpy returns before a device-to-device copy ends: the synchronization is the end. */
  if (cudaMemcpy(gpu_roof.dst, gpu_roof.src, gpu_roof.bytes, cudaMemcpyDeviceToDevice) !=
          cudaSuccess ||
      cudaDeviceSynchronize() != cudaSuccess)
    die("gpu roof: cudaMemcpy", TSR_ERR_DEVICE);
  return 0.5 * (now_s() - t0);
#else
  return 0.0;
#endif
}

static void gpu_roof_stop(void) {
#ifdef TSR_BENCH_CUDA
  cudaFree(gpu_roof.src);
  cudaFree(gpu_roof.dst);
#endif
}

/* ---- measuring one configuration ------------------------------------------------------------- */

typedef struct {
  const options *o;
  tsr_model *model;
  int64_t vocab;
  span *spans;      /* the bytes one decode step reads from the weights */
  tsr_array **held; /* the wrapped checkpoint tensors the spans point into */
  size_t n_spans;
  double weight_bytes; /* per decode step */
  double layer_params, head_params;
  uint64_t token_state;
  float *logits;
} bench;

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Every quantized tensor (codes, scales, biases) whole, and one row of the embedding's: loaded
   from the folder, which wraps the same tmpfs pages the model maps. */
static void collect_spans(bench *b, const char *dir) {
  tsr_safetensors *ckpt = NULL;
  tsr_status st = tsr_safetensors_open(&ckpt, dir);
  if (st != TSR_OK) die("safetensors_open", st);
  size_t count = tsr_safetensors_count(ckpt);
  b->spans = checked_malloc(count * sizeof *b->spans);
  b->held = checked_malloc(count * sizeof *b->held);
  for (size_t i = 0; i < count; i++) {
    tsr_tensor_info info;
    if ((st = tsr_safetensors_info(ckpt, i, &info)) != TSR_OK) die("safetensors_info", st);
    bool codes = info.dtype == TSR_UINT32;
    if (!codes && !ends_with(info.name, ".scales") && !ends_with(info.name, ".biases")) continue;
    tsr_array *a = NULL;
    void *data = NULL;
    if ((st = tsr_safetensors_load(&a, ckpt, info.name, (tsr_device){TSR_CPU, 0})) != TSR_OK ||
        (st = tsr_array_data(a, &data)) != TSR_OK)
      die(info.name, st);
    size_t bytes = (size_t)info.nbytes;
    if (strncmp(info.name, "model.embed_tokens.", 19) == 0) bytes /= (size_t)info.shape[0];
    b->held[b->n_spans] = a;
    b->spans[b->n_spans++] = (span){data, bytes};
    b->weight_bytes += (double)bytes;
    double params = codes ? 2.0 * (double)info.nbytes : 0.0; /* 8 codes per uint32 */
    if (strncmp(info.name, "model.layers.", 13) == 0) b->layer_params += params;
    if (strncmp(info.name, "lm_head.", 8) == 0) b->head_params += params;
  }
  tsr_safetensors_close(ckpt);
}

static void random_tokens(bench *b, int32_t *tokens, size_t n) {
  for (size_t i = 0; i < n; i++)
    tokens[i] = (int32_t)(splitmix(&b->token_state) % (uint64_t)b->vocab);
}

/* Appends n tokens as one prompt and prints its row; returns tok/s. */
static double prefill(bench *b, tsr_session *s, size_t n, double *tflops) {
  int32_t *tokens = checked_malloc(n * sizeof *tokens);
  random_tokens(b, tokens, n);
  size_t before = tsr_session_length(s);
  double t0 = now_s();
  tsr_status st = tsr_session_append(s, tokens, n);
  double t = now_s() - t0;
  if (st != TSR_OK) die("session_append (prefill)", st);
  free(tokens);
  *tflops = (2.0 * b->layer_params * (double)n + 2.0 * b->head_params) / t * 1e-12;
  printf("| %s | prefill | %zu → %zu | %zu | %.2f | %.1f | %.3f | – | – | – |\n", b->o->config,
         before, before + n, n, t, (double)n / t, *tflops);
  fflush(stdout);
  return (double)n / t;
}

static double decode_step(bench *b, tsr_session *s) {
  int32_t token;
  random_tokens(b, &token, 1);
  double t0 = now_s();
  tsr_status st = tsr_session_append(s, &token, 1);
  if (st == TSR_OK) st = tsr_session_logits(s, b->logits, (size_t)b->vocab);
  double t = now_s() - t0;
  if (st != TSR_OK) die("decode step", st);
  if (!isfinite(b->logits[b->vocab - 1])) die("decode: logits", TSR_ERR_INVALID);
  return t;
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) { /* sorts v: v[0] is then the best */
  qsort(v, (size_t)n, sizeof *v, compare_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Decode steps, each followed by a roof read (after warm-up steps), and their row. */
static decode_result decode_rounds(bench *b, tsr_session *s) {
  int steps = b->o->steps;
  double step_s[MAX_STEPS], roof_s[MAX_STEPS];
  size_t context = tsr_session_length(s);
  double (*read)(void) = b->o->gpu ? gpu_roof_read : roof_read;
  for (int i = 0; i < WARM_STEPS; i++)
    decode_step(b, s);
  read();
  for (int i = 0; i < steps; i++) {
    step_s[i] = decode_step(b, s);
    roof_s[i] = read();
  }
  double step = median(step_s, steps), roof_time = median(roof_s, steps);
  decode_result r = {1.0 / step,
                     1.0 / step_s[0],
                     b->weight_bytes / step * 1e-9,
                     b->weight_bytes / roof_time * 1e-9,
                     roof_time / step,
                     roof_s[0] / step_s[0]};
  printf(
      "| %s | decode | %zu (+%d) | %d | %.3f | %.2f (best %.2f) | – | %.1f | %.1f | %.2f; "
      "%.2f |\n",
      b->o->config, context, WARM_STEPS + steps, steps, step, r.tok_s_median, r.tok_s_best,
      r.weight_gbs, r.roof_gbs, r.ratio_median, r.ratio_best);
  fflush(stdout);
  return r;
}

static tsr_session *new_session(bench *b, size_t tokens) {
  tsr_session *s = NULL;
  tsr_status st = tsr_session_new(&s, b->model, tokens + WARM_STEPS + (size_t)b->o->steps);
  if (st != TSR_OK) die("session_new", st);
  return s;
}

/* Context 128, then a 512-token prompt from empty, grown to the long context. */
static void measure_contexts(bench *b, run_result *r) {
  tsr_session *s = new_session(b, SHORT_CONTEXT);
  r->prefill_tok_s[0] = prefill(b, s, SHORT_CONTEXT, &r->prefill_tflops[0]);
  r->decode[0] = decode_rounds(b, s);
  tsr_session_free(s);
  size_t longest = b->o->long_context > PROMPT ? (size_t)b->o->long_context : PROMPT;
  s = new_session(b, longest);
  r->prefill_tok_s[1] = prefill(b, s, PROMPT, &r->prefill_tflops[1]);
  /* The rest in appends of at most PROMPT tokens: a forward keeps every layer's intermediates
     until it ends (~12 MB per token at this shape), and one of 1536 tokens ran out of 24 GB. */
  for (size_t at = PROMPT; at < longest; at += PROMPT)
    r->prefill_tok_s[2] =
        prefill(b, s, longest - at < PROMPT ? longest - at : PROMPT, &r->prefill_tflops[2]);
  if (b->o->long_context > 0) r->decode[1] = decode_rounds(b, s);
  tsr_session_free(s);
}

static int measure(const options *o) {
  bench b = {.o = o, .token_state = o->seed ^ 0x70c3e5u};
  run_result r = {0};
  tsr_model_options mo = tsr_model_default_options();
  if (o->gpu) mo.device = (tsr_device){TSR_GPU, 0};
  double t0 = now_s();
  tsr_status st = tsr_model_load(&b.model, o->measure_dir, &mo);
  r.load_s = now_s() - t0;
  if (st != TSR_OK) die("model_load", st);
  printf("| %s | load | – | – | %.2f | – | – | – | – | – |\n", o->config, r.load_s);
  b.vocab = tsr_model_vocab_size(b.model);
  b.logits = checked_malloc((size_t)b.vocab * sizeof *b.logits);
  collect_spans(&b, o->measure_dir);
  if (o->gpu && tsr_device_count(TSR_GPU) < 1) die("--device gpu: no usable GPU", TSR_ERR_DEVICE);
  if (!o->gpu)
    roof_start(b.spans, b.n_spans);
  else if (!gpu_roof_start(b.weight_bytes))
    die("gpu roof: cudaMalloc", TSR_ERR_NOMEM);
  measure_contexts(&b, &r);
  if (o->gpu)
    gpu_roof_stop();
  else
    roof_stop();
  for (size_t i = 0; i < b.n_spans; i++)
    tsr_array_release(b.held[i]);
  free(b.held);
  free(b.spans);
  free(b.logits);
  tsr_model_free(b.model);
  tsr_shutdown();
  return write(o->result_fd, &r, sizeof r) == (ssize_t)sizeof r ? 0 : 1;
}

/* ---- the first process: writes the folder (in a child), runs each configuration, removes it -- */

extern char **environ;

static volatile sig_atomic_t interrupted;
static volatile pid_t running; /* the child running now: its own process group */

static void forward_signal(int sig) {
  interrupted = 1;
  if (running > 0) kill(-running, sig);
}

/* Forks a child in its own process group and waits for it; false unless it exits with 0. */
static bool run_child(char **args, char **env, const options *o, const spec_list *l) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    if (args) {
      execve("/proc/self/exe", args, env);
      _exit(127);
    }
    for (int s = 0; s < l->shards; s++) /* the writer: tessera starts fresh in this child */
      write_shard(o->measure_dir, l, s);
    write_index_and_config(o->measure_dir, l, o->layers);
    _exit(0);
  }
  if (pid < 0) return false;
  setpgid(pid, pid);
  running = pid;
  int status = -1;
  while (waitpid(pid, &status, 0) < 0)
    continue; /* interrupted by a forwarded signal */
  running = 0;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* The environment without OpenBLAS's knobs, plus the one the configuration sets and the widest
   core the CPU runs (bench/openblas_core.h: attention's products and the float32 GEMMs run on
   OpenBLAS, which would otherwise take SSE3 kernels on the dev VM's Xeon). */
static char **config_environment(const char *config) {
  static char core[64];
  size_t n = 0, k = 0;
  while (environ[n])
    n++;
  char **env = checked_malloc((n + 3) * sizeof *env);
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "OPENBLAS_", 9) != 0 && strncmp(environ[i], "GOTO_NUM", 8) != 0 &&
        strncmp(environ[i], "OMP_NUM_THREADS=", 16) != 0)
      env[k++] = environ[i];
  env[k++] = strcmp(config, "one") == 0 ? "OPENBLAS_NUM_THREADS=1" : "OPENBLAS_THREAD_TIMEOUT=4";
  const char *widest = widest_openblas_core();
  if (widest) {
    snprintf(core, sizeof core, "OPENBLAS_CORETYPE=%s", widest);
    env[k++] = core;
  }
  env[k] = NULL;
  return env;
}

/* Runs `--measure` for one configuration: the user's arguments, then the internal ones. */
static bool run_config(const char *dir, int argc, char **argv, const char *config, run_result *r) {
  int fds[2];
  if (pipe(fds) != 0) die("pipe", TSR_ERR_IO);
  char fd_text[16];
  snprintf(fd_text, sizeof fd_text, "%d", fds[1]);
  char **args = checked_malloc((size_t)(argc + 7) * sizeof *args);
  memcpy(args, argv, (size_t)argc * sizeof *args);
  const char *internal[7] = {"--measure", dir, "--config", config, "--result-fd", fd_text, NULL};
  memcpy(args + argc, internal, sizeof internal);
  char **env = config_environment(config);
  bool ok = run_child(args, env, NULL, NULL);
  close(fds[1]);
  ok = ok && read(fds[0], r, sizeof *r) == (ssize_t)sizeof *r;
  close(fds[0]);
  free(env);
  free(args);
  if (!ok) fprintf(stderr, "generate: the `%s` run failed\n", config);
  return ok;
}

/* The GPU a --device gpu run measures, and what its roof is. */
static void print_gpu(const options *o) {
  (void)o;
#ifdef TSR_BENCH_CUDA
  /* Not die(): this is the first process, which must go on to remove the checkpoint's folder;
     without a GPU the measuring child fails and says so. */
  struct cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    printf("GPU 0: none usable (%s)\n\n", "cudaGetDeviceProperties failed");
    return;
  }
  printf(
      "GPU 0: %s (sm_%d%d); model and KV cache on the GPU; roof: cudaMemcpy device to device "
      "of a decode step's weight bytes, (read + write) / s\n\n",
      prop.name, prop.major, prop.minor);
#endif
}

static void print_header(const options *o, const spec_list *l, double write_s) {
  char line[256], cpu[128] = "unknown";
  FILE *f = fopen("/proc/cpuinfo", "r");
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "model name", 10) == 0 && strchr(line, ':')) {
      snprintf(cpu, sizeof cpu, "%s", strchr(line, ':') + 2);
      cpu[strcspn(cpu, "\n")] = '\0';
      break;
    }
  if (f) fclose(f);
  double load[1] = {-1.0};
  getloadavg(load, 1);
  const char *core = widest_openblas_core(); /* what config_environment names */
  if (o->gpu) print_gpu(o);
  printf(
      "## generate: GLM-4-9B-shaped glm4, %lld layers, affine 4-bit g64 (random, seed %llu)\n\n"
      "CPU: %s, %ld online cores; tessera threads (TSR_NUM_THREADS, else the cores): %d; roof: "
      "%s loads on as many threads; %s, configurations' core %s; checkpoint %.2f GB in %d "
      "shards in %s, "
      "written in %.1f s; load average %.2f\n\n",
      (long long)o->layers, (unsigned long long)o->seed, cpu, sysconf(_SC_NPROCESSORS_ONLN),
      pool_threads(), wide_loads() ? "AVX-512" : "plain (no AVX-512: not a roof)",
      openblas_get_config(), core ? core : openblas_get_corename(), checkpoint_bytes(l) * 1e-9,
      l->shards, o->parent, write_s, load[0]);
  printf(
      "| OpenBLAS | what | context | tokens | s (decode: median step) | tok/s | TFLOP/s | "
      "weight GB/s | roof GB/s | ratio (median; best) |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
}

/* The two configurations side by side: above 1, the thread timeout won. */
static void print_comparison(const options *o, const run_result *r) {
  double load[1] = {-1.0};
  getloadavg(load, 1);
  printf(
      "\ntimeout / one: prefill %d tok/s %.3f, last append to %lld %.3f; decode at %d "
      "tok/s %.3f, at %lld %.3f. Load average at the end: %.2f\n",
      PROMPT, r[1].prefill_tok_s[1] / r[0].prefill_tok_s[1], (long long)o->long_context,
      r[1].prefill_tok_s[2] / r[0].prefill_tok_s[2], SHORT_CONTEXT,
      r[1].decode[0].tok_s_median / r[0].decode[0].tok_s_median, (long long)o->long_context,
      r[1].decode[1].tok_s_median / r[0].decode[1].tok_s_median, load[0]);
}

static void remove_folder(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
      unlinkat(dirfd(d), e->d_name, 0);
  if (d) closedir(d);
  if (rmdir(dir) != 0) fprintf(stderr, "generate: could not remove %s\n", dir);
}

/* Writes the checkpoint and measures each configuration, each in a child, so that this process
   removes the folder however they end; signals that reach it are passed on to the child. */
static int run_all(options *o, int argc, char **argv) {
  spec_list l = glm_specs(o->layers, o->seed);
  struct statvfs fs;
  double room = statvfs(o->parent, &fs) == 0 ? (double)fs.f_bavail * (double)fs.f_frsize : 0.0;
  if (room < checkpoint_bytes(&l) * 1.05 + 1e8) {
    fprintf(stderr, "generate: %s has %.2f GB free; the checkpoint needs %.2f GB\n", o->parent,
            room * 1e-9, checkpoint_bytes(&l) * 1e-9);
    return 1;
  }
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/tessera-bench-generate-XXXXXX", o->parent);
  if (!mkdtemp(dir)) die("mkdtemp in the --dir folder", TSR_ERR_IO);
  struct sigaction sa = {.sa_handler = forward_signal};
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  o->measure_dir = dir; /* where the writer child writes */
  double t0 = now_s();
  bool ok = run_child(NULL, NULL, o, &l);
  if (ok) print_header(o, &l, now_s() - t0);
  const char *all[2] = {"one", "timeout"};
  run_result results[2];
  int n = 0;
  for (int i = 0; i < 2 && ok && !interrupted; i++)
    if ((o->gpu && i == 0) ||
        (!o->gpu && (strcmp(o->config, "both") == 0 || strcmp(o->config, all[i]) == 0)))
      ok = run_config(dir, argc, argv, all[i], &results[n++]);
  if (ok && !interrupted && n == 2) print_comparison(o, results);
  remove_folder(dir);
  free(l.items);
  return ok && !interrupted ? 0 : 1;
}

/* The tensor-parallel run (--group) uses the measuring pieces above. */
#include "generate_group.h"

static bool parse_options(options *o, int argc, char **argv) {
  *o = (options){.layers = 40,
                 .long_context = 2048,
                 .steps = 24,
                 .seed = 1,
                 .config = "both",
                 .parent = "/dev/shm"};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--small") == 0) {
      o->layers = 8;
      continue;
    }
    if (!v) return false;
    i++;
    if (strcmp(a, "--layers") == 0)
      o->layers = strtoll(v, NULL, 10);
    else if (strcmp(a, "--steps") == 0)
      o->steps = (int)strtol(v, NULL, 10);
    else if (strcmp(a, "--long") == 0)
      o->long_context = strtoll(v, NULL, 10);
    else if (strcmp(a, "--seed") == 0)
      o->seed = strtoull(v, NULL, 10);
    else if (strcmp(a, "--config") == 0)
      o->config = v;
    else if (strcmp(a, "--dir") == 0)
      o->parent = v;
    else if (strcmp(a, "--device") == 0 && (strcmp(v, "cpu") == 0 || strcmp(v, "gpu") == 0))
      o->gpu = strcmp(v, "gpu") == 0;
    else if (strcmp(a, "--group") == 0)
      o->group = v;
    else if (strcmp(a, "--measure") == 0)
      o->measure_dir = v;
    else if (strcmp(a, "--result-fd") == 0)
      o->result_fd = (int)strtol(v, NULL, 10);
    else
      return false;
  }
  bool known = strcmp(o->config, "one") == 0 || strcmp(o->config, "timeout") == 0 ||
               strcmp(o->config, "both") == 0;
#ifndef TSR_BENCH_CUDA
  if (o->gpu) {
    fprintf(stderr, "generate: --device gpu needs a CUDA build of tessera\n");
    return false;
  }
#endif
  bool group_known = !o->group || strcmp(o->group, "mpi") == 0 || strcmp(o->group, "nccl") == 0;
  return known && group_known && o->layers >= 1 && o->layers <= 1000 && o->steps >= 1 &&
         o->steps <= MAX_STEPS && o->long_context >= 0 && o->long_context <= 131072;
}

int main(int argc, char **argv) {
  options o;
  if (!parse_options(&o, argc, argv)) {
    fprintf(stderr,
            "usage: generate [--small | --layers N] [--steps N] [--long N] "
            "[--config one|timeout|both] [--seed N] [--device cpu|gpu] [--dir DIR]\n"
            "       mpirun -np N generate --group mpi|nccl [--small | --layers N] [--steps N] "
            "[--seed N] [--device cpu|gpu] [--dir DIR]\n");
    return 2;
  }
  if (o.group) return run_group(&o);
  return o.measure_dir ? measure(&o) : run_all(&o, argc, argv);
}
