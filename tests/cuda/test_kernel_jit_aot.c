/* tests/cuda/test_kernel_jit_aot.c — on a GPU: for every AOT specialization, the JIT module and
 * the AOT module of the same kernel are loaded in one process (their symbols differ) and both
 * dequantize random quantized rows to exactly what the CPU computes (float32 steps of
 * base/quant_format.h, the CPU reference's arithmetic); JIT-only specializations too; and
 * TSR_KERNELS (ctest runs this once per value) picks the path it names. Without a GPU: "no GPU:
 * skipped", exit 77 (ctest's SKIP_RETURN_CODE). */
#include <cuda_runtime_api.h>
#include <math.h>
#include <unistd.h>

#include "base/quant_format.h"
#include "check.h"
#include "cuda/modules.h"

enum { ROWS = 37, K = 512 }; /* a row count that leaves the last block partial */

#define CHECK_CUDA(expr)                                                                         \
  do {                                                                                           \
    cudaError_t check_err_ = (expr);                                                             \
    if (check_err_ != cudaSuccess) CHECK_FAIL_("%s: %s", #expr, cudaGetErrorString(check_err_)); \
  } while (0)

typedef struct {
  int mode, bits, group_size;
  uint32_t *w_q;   /* ROWS x K * bits / 32 */
  void *scales;    /* float32 (affine) or bytes, ROWS x K / group_size */
  float *biases;   /* affine only */
  float *expected; /* ROWS x K */
} problem;

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint32_t next_random(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 16);
}

static void fill(problem *p) {
  size_t words = (size_t)ROWS * K * (size_t)p->bits / 32, groups = (size_t)ROWS * K / p->group_size;
  p->w_q = malloc(words * 4);
  p->scales = malloc(groups * 4);
  p->biases = malloc(groups * 4);
  p->expected = malloc((size_t)ROWS * K * 4);
  CHECK(p->w_q && p->scales && p->biases && p->expected);
  for (size_t i = 0; i < words; i++)
    p->w_q[i] = next_random() ^ (next_random() << 16);
  for (size_t g = 0; g < groups; g++) {
    if (p->mode == TSRI_QF_AFFINE) {
      ((float *)p->scales)[g] = ((float)(next_random() % 2000) - 1000.0f) / 3777.0f;
      p->biases[g] = ((float)(next_random() % 2000) - 1000.0f) / 911.0f;
    } else { /* e8m0 codes around 2^0, or e4m3 codes below its NaN */
      uint32_t code = p->mode == TSRI_QF_NVFP4 ? next_random() % 0x7e : 110 + next_random() % 30;
      ((uint8_t *)p->scales)[g] = (uint8_t)code;
    }
  }
}

/* The CPU's arithmetic for float32 scales and output (cpu/quant.c, dequantize_row). */
static void reference(problem *p) {
  size_t words_per_row = (size_t)K * p->bits / 32, groups_per_row = (size_t)K / p->group_size;
  for (size_t r = 0; r < ROWS; r++)
    for (size_t i = 0; i < K; i++) {
      size_t g = r * groups_per_row + i / p->group_size;
      uint32_t code = tsri_qf_get_code(p->w_q + r * words_per_row, (int64_t)i, p->bits);
      float v;
      if (p->mode == TSRI_QF_AFFINE) {
        volatile float product = ((float *)p->scales)[g] * (float)code; /* rounded, no FMA */
        v = product + p->biases[g];
      } else {
        uint8_t s = ((uint8_t *)p->scales)[g];
        float scale = p->mode == TSRI_QF_NVFP4 ? tsri_qf_e4m3_decode(s) : tsri_qf_e8m0_decode(s);
        v = (p->bits == 8 ? tsri_qf_e4m3_decode(code) : tsri_qf_fp4_decode(code)) * scale;
      }
      p->expected[r * K + i] = v;
    }
}

static void run_kernel(cudaKernel_t kernel, const problem *p, float *out) {
  size_t words = (size_t)ROWS * K * p->bits / 32, groups = (size_t)ROWS * K / p->group_size;
  size_t scale_bytes = groups * (p->mode == TSRI_QF_AFFINE ? 4 : 1);
  void *d_w = NULL, *d_s = NULL, *d_b = NULL, *d_out = NULL;
  CHECK_CUDA(cudaMalloc(&d_w, words * 4));
  CHECK_CUDA(cudaMalloc(&d_s, scale_bytes));
  CHECK_CUDA(cudaMalloc(&d_b, groups * 4));
  CHECK_CUDA(cudaMalloc(&d_out, (size_t)ROWS * K * 4));
  CHECK_CUDA(cudaMemcpy(d_w, p->w_q, words * 4, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(d_s, p->scales, scale_bytes, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(d_b, p->biases, groups * 4, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(d_out, 0xff, (size_t)ROWS * K * 4)); /* NaN: an unwritten element shows */
  int64_t rows = ROWS, k = K;
  const float *biases = p->mode == TSRI_QF_AFFINE ? d_b : NULL;
  void *args[] = {&d_w, &d_s, (void *)&biases, &d_out, &rows, &k};
  /* 7 blocks of 256 for 18944 elements: the grid-stride loop covers the rest. */
  dim3 grid = {7, 1, 1}, block = {256, 1, 1};
  /* A cudaKernel_t is launched by casting it to the function pointer the runtime takes. */
  CHECK_CUDA(cudaLaunchKernel((const void *)kernel, grid, block, args, 0, 0));
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(out, d_out, (size_t)ROWS * K * 4, cudaMemcpyDeviceToHost));
  cudaFree(d_w);
  cudaFree(d_s);
  cudaFree(d_b);
  cudaFree(d_out);
}

/* Bit for bit: NaN codes (e4m3 0x7f) compare as NaN on both sides. */
static void compare(const char *what, const problem *p, const float *got) {
  for (size_t i = 0; i < (size_t)ROWS * K; i++) {
    float want = p->expected[i];
    uint32_t a, b;
    memcpy(&a, &got[i], 4);
    memcpy(&b, &want, 4);
    if (a != b && !(isnan(got[i]) && isnan(want)))
      CHECK_FAIL_("%s mode %d bits %d group %d: element %zu (row %zu) = %a, CPU %a", what, p->mode,
                  p->bits, p->group_size, i, i / K, (double)got[i], (double)want);
  }
}

static void free_problem(problem *p) {
  free(p->w_q);
  free(p->scales);
  free(p->biases);
  free(p->expected);
}

static void make_options(const problem *p, char *options, size_t size) {
  snprintf(options, size, "-DTSR_QF_MODE=%d -DTSR_QF_BITS=%d -DTSR_QF_GROUP_SIZE=%d", p->mode,
           p->bits, p->group_size);
}

/* Both modules of one specialization, loaded side by side, give the CPU's values. */
static void test_both_paths(problem *p) {
  char options[128];
  make_options(p, options, sizeof options);
  CHECK(tsri_cuda_aot_find("dequantize", options) != NULL);
  fill(p);
  reference(p);
  cudaKernel_t jit, aot;
  bool used_aot = true;
  CHECK_OK(
      tsri_cuda_kernel_get_via("dequantize", options, 0, TSRI_ENV_KERNELS_JIT, &jit, &used_aot));
  CHECK(!used_aot);
  CHECK_OK(
      tsri_cuda_kernel_get_via("dequantize", options, 0, TSRI_ENV_KERNELS_AOT, &aot, &used_aot));
  CHECK(used_aot && jit != aot);
  float *out = malloc((size_t)ROWS * K * 4);
  CHECK(out != NULL);
  run_kernel(jit, p, out);
  compare("JIT", p, out);
  run_kernel(aot, p, out);
  compare("AOT", p, out);
  run_kernel(jit, p, out); /* again after the AOT module ran: both stay usable */
  compare("JIT again", p, out);
  free(out);
  free_problem(p);
}

/* A specialization no AOT module covers: JIT under auto and jit, refused under aot. */
static bool test_jit_only(problem *p) {
  char options[128];
  make_options(p, options, sizeof options);
  if (tsri_cuda_aot_find("dequantize", options)) { /* a suite-wide AOT set (TSR_AOT_EXTRA) */
    printf("%s has an AOT module in this build: its JIT-only case skipped\n", options);
    return false;
  }
  cudaKernel_t kernel;
  CHECK_STATUS(
      tsri_cuda_kernel_get_via("dequantize", options, 0, TSRI_ENV_KERNELS_AOT, &kernel, NULL),
      TSR_ERR_UNSUPPORTED);
  bool used_aot = true;
  CHECK_OK(tsri_cuda_kernel_get_via("dequantize", options, 0, TSRI_ENV_KERNELS_AUTO, &kernel,
                                    &used_aot));
  CHECK(!used_aot);
  fill(p);
  reference(p);
  float *out = malloc((size_t)ROWS * K * 4);
  CHECK(out != NULL);
  run_kernel(kernel, p, out);
  compare("JIT only", p, out);
  free(out);
  free_problem(p);
  return true;
}

/* tsri_cuda_kernel_get follows TSR_KERNELS, and the kernel it gives computes the same. */
static void test_env_path(void) {
  problem p = {TSRI_QF_AFFINE, 4, 64, NULL, NULL, NULL, NULL};
  char options[128];
  make_options(&p, options, sizeof options);
  tsri_env_kernels path = tsri_env()->kernels;
  cudaKernel_t kernel, via;
  bool used_aot;
  CHECK_OK(tsri_cuda_kernel_get("dequantize", options, 0, &kernel));
  CHECK_OK(tsri_cuda_kernel_get_via("dequantize", options, 0, path, &via, &used_aot));
  CHECK(kernel == via);
  CHECK(used_aot == (path != TSRI_ENV_KERNELS_JIT));
  fill(&p);
  reference(&p);
  float *out = malloc((size_t)ROWS * K * 4);
  CHECK(out != NULL);
  run_kernel(kernel, &p, out);
  compare(path == TSRI_ENV_KERNELS_JIT ? "TSR_KERNELS=jit" : "TSR_KERNELS=aot/auto", &p, out);
  free(out);
  free_problem(&p);
  printf("TSR_KERNELS path: %s\n", used_aot ? "AOT" : "JIT");
}

/* TSR_KERNEL_RECORD (set by main when the caller did not): each JIT specialization the process
   loaded appears once, as "kernel|options"; `jit_only` says whether the JIT-only cases ran
   (a suite-wide AOT set skips them), whose specializations must then be there. */
static void check_record(const char *path, bool jit_only) {
  FILE *f = fopen(path, "r");
  CHECK(f != NULL);
  char lines[32][160];
  int n = 0, affine3 = 0, nvfp4 = 0;
  while (n < 32 && fgets(lines[n], sizeof lines[n], f)) {
    CHECK(strncmp(lines[n], "dequantize|-DTSR_QF_MODE=", 25) == 0);
    for (int i = 0; i < n; i++)
      if (strcmp(lines[i], lines[n]) == 0) CHECK_FAIL_("recorded twice: %s", lines[n]);
    affine3 += strcmp(lines[n],
                      "dequantize|-DTSR_QF_MODE=0 -DTSR_QF_BITS=3 -DTSR_QF_GROUP_SIZE=32\n") == 0;
    nvfp4 += strcmp(lines[n],
                    "dequantize|-DTSR_QF_MODE=3 -DTSR_QF_BITS=4 -DTSR_QF_GROUP_SIZE=16\n") == 0;
    n++;
  }
  fclose(f);
  remove(path);
  if (n == 0 || (jit_only && (affine3 != 1 || nvfp4 != 1)))
    CHECK_FAIL_("TSR_KERNEL_RECORD: %d lines, affine 3-bit %d times, nvfp4 %d times", n, affine3,
                nvfp4);
}

int main(void) {
  char record[64] = "";
  if (!getenv("TSR_KERNEL_RECORD")) { /* read once, at the first use: set before any */
    snprintf(record, sizeof record, "/tmp/tsr-kernel-record.%d", (int)getpid());
    remove(record);
    setenv("TSR_KERNEL_RECORD", record, 1);
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    printf("test_kernel_jit_aot: no GPU: skipped\n");
    return 77;
  }
  size_t dequantize_modules = 0;
  for (size_t i = 0; i < tsri_kernel_aot_table_count; i++) {
    /* The dequantize modules; the table also holds other kernels' (elementwise, ...), which the
       backend's own tests run. */
    if (strcmp(tsri_kernel_aot_table[i].kernel, "dequantize") != 0) continue;
    dequantize_modules++;
    problem p = {0};
    char options[128];
    CHECK(sscanf(tsri_kernel_aot_table[i].options,
                 "-DTSR_QF_MODE=%d -DTSR_QF_BITS=%d -DTSR_QF_GROUP_SIZE=%d", &p.mode, &p.bits,
                 &p.group_size) == 3);
    make_options(&p, options, sizeof options);
    /* Only this test's float32 form (a suite-wide set also holds other output dtypes) */
    if (strcmp(options, tsri_kernel_aot_table[i].options) != 0) continue;
    test_both_paths(&p);
  }
  problem jit_only[] = {{TSRI_QF_AFFINE, 3, 32, NULL, NULL, NULL, NULL},
                        {TSRI_QF_AFFINE, 6, 128, NULL, NULL, NULL, NULL},
                        {TSRI_QF_MXFP8, 8, 32, NULL, NULL, NULL, NULL},
                        {TSRI_QF_NVFP4, 4, 16, NULL, NULL, NULL, NULL}};
  bool jit_only_ran = true;
  for (size_t i = 0; i < sizeof jit_only / sizeof *jit_only; i++)
    jit_only_ran &= test_jit_only(&jit_only[i]);
  test_env_path();
  tsri_cuda_modules_release();
  if (*record) check_record(record, jit_only_ran);
  CHECK(dequantize_modules > 0);
  printf(
      "test_kernel_jit_aot: ok (%zu dequantize AOT specializations of %zu, JIT and AOT side "
      "by side)\n",
      dequantize_modules, tsri_kernel_aot_table_count);
  return 0;
}
