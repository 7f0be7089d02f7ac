/* tests/model/test_calibrate.c — tsr_model_calibration on the tiny checkpoints: the statistics of
 * layer 0's q_proj input against the same input rebuilt here from the checkpoint's tensors (exact
 * absmax, each percentile within its 1/32 bin of the sorted values), its 4- and 8-bit errors
 * against a direct computation, the recipe within every budget, the observer leaving the logits
 * unchanged; and the cap: the need measured in this process (the buffer cache off, so the peak is
 * what must fit), then children that install a cap at the need and one byte below it, each with a
 * thread sampling the ledger throughout, which must never read above the cap: the first
 * calibrates, the second is refused with TSR_ERR_CAP and leaves nothing behind. */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "model_fixture.h"

static const int32_t prompt_a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
static const int32_t prompt_b[4] = {9, 10, 11, 12};

static tsr_model *load(const char *dir) {
  tsr_model *m = NULL;
  CHECK_OK(tsr_model_load(&m, dir, NULL));
  return m;
}

static tsr_status run_prompts(tsr_model_calibration *c) {
  tsr_status st = tsr_model_calibration_run(c, prompt_a, 8);
  return st == TSR_OK ? tsr_model_calibration_run(c, prompt_b, 4) : st;
}

static tsr_calibration_linear linear_named(const tsr_model_calibration *c, const char *name) {
  tsr_calibration_linear lin;
  for (size_t i = 0; i < tsr_model_calibration_count(c); i++) {
    CHECK_OK(tsr_model_calibration_linear(c, i, &lin));
    if (strcmp(lin.name, name) == 0) return lin;
  }
  CHECK_FAIL_("no linear named %s", name);
}

/* ---- the cap ----------------------------------------------------------------------------------
 */

typedef struct {
  atomic_bool stop, started; /* started: a first sample was taken */
  uint64_t samples, worst_in_use, worst_peak, cap;
} sampler;

static void *sample_ledger(void *arg) {
  sampler *s = arg;
  while (!atomic_load(&s->stop)) {
    tsr_backing_snapshot snap;
    if (tsr_calibration_snapshot(fx_cpu, &snap) != TSR_OK) continue;
    uint64_t in_use = snap.active + snap.cached + snap.pending + snap.fixed;
    if (in_use > s->worst_in_use) s->worst_in_use = in_use;
    if (snap.peak > s->worst_peak) s->worst_peak = snap.peak;
    s->cap = snap.cap;
    s->samples++;
    atomic_store(&s->started, true);
  }
  return NULL;
}

/* The peak of loading the MoE model and calibrating both prompts, in this process. */
static uint64_t measure_need(void) {
  tsr_model *m = load(FX_MOE_HF);
  tsr_model_calibration *c = NULL;
  CHECK_OK(tsr_model_calibration_new(&c, m));
  CHECK_OK(run_prompts(c));
  tsr_backing_snapshot snap;
  CHECK_OK(tsr_calibration_snapshot(fx_cpu, &snap));
  tsr_model_calibration_free(c);
  tsr_model_free(m);
  return snap.peak;
}

/* A child: the cap installed first, a sampler running while the model loads and calibrates. */
static void child_capped(const char *cap_text, bool expect_refusal) {
  uint64_t cap = strtoull(cap_text, NULL, 10);
  CHECK_OK(tsr_calibration_install_cap(fx_cpu, cap));
  sampler s = {.samples = 0};
  atomic_init(&s.stop, false);
  atomic_init(&s.started, false);
  pthread_t thread;
  CHECK_EQ_INT(pthread_create(&thread, NULL, sample_ledger, &s), 0);
  while (!atomic_load(&s.started)) /* sampling from before the first byte is backed */
    sched_yield();
  tsr_model *m = load(FX_MOE_HF); /* the weights fit well below the need */
  tsr_model_calibration *c = NULL;
  CHECK_OK(tsr_model_calibration_new(&c, m));
  tsr_status st = run_prompts(c);
  atomic_store(&s.stop, true);
  CHECK_EQ_INT(pthread_join(thread, NULL), 0);
  if (expect_refusal) {
    CHECK_STATUS(st, TSR_ERR_CAP);
    CHECK_MESSAGE("refused by the cap");
  } else {
    CHECK_OK(st);
    CHECK_EQ_U64(tsr_model_calibration_tokens(c), 12);
  }
  if (s.samples == 0 || s.cap != cap) CHECK_FAIL_("%llu samples", (unsigned long long)s.samples);
  if (s.worst_in_use > cap || s.worst_peak > cap)
    CHECK_FAIL_("sampled in use %llu, peak %llu above the cap %llu",
                (unsigned long long)s.worst_in_use, (unsigned long long)s.worst_peak,
                (unsigned long long)cap);
  printf("  cap %llu: %s, %llu samples, highest in use %llu\n", (unsigned long long)cap,
         tsr_status_name(st), (unsigned long long)s.samples, (unsigned long long)s.worst_in_use);
  tsr_model_calibration_free(c);
  tsr_model_free(m);
}

static void check_cap(uint64_t need) {
  char text[32];
  snprintf(text, sizeof text, "%llu", (unsigned long long)need);
  test_rerun("capped", text, NULL, NULL);
  snprintf(text, sizeof text, "%llu", (unsigned long long)(need - 1));
  test_rerun("refused", text, NULL, NULL);
  printf("  need %llu bytes: a cap at it calibrates, one byte below is refused\n",
         (unsigned long long)need);
}

/* ---- statistics against the input rebuilt here ------------------------------------------------
 */

/* Layer 0's normed input for prompt_a, the model's own ops on the checkpoint's tensors, on the
 * host [8, 64]. */
static void layer0_input(float *host) {
  tsr_safetensors *ckpt = NULL;
  CHECK_OK(tsr_safetensors_open(&ckpt, FX_DENSE_HF));
  tsr_array *embed = NULL, *norm = NULL, *ids = NULL, *rows = NULL, *x = NULL;
  CHECK_OK(tsr_safetensors_load(&embed, ckpt, "model.embed_tokens.weight", fx_cpu));
  CHECK_OK(tsr_safetensors_load(&norm, ckpt, "model.layers.0.input_layernorm.weight", fx_cpu));
  CHECK_OK(tsr_array_from_data(&ids, prompt_a, TSR_INT32, (int64_t[]){8}, 1));
  CHECK_OK(tsr_take(&rows, embed, ids, 0, NULL));
  CHECK_OK(tsr_rms_norm(&x, rows, norm, 1e-5f, NULL));
  CHECK_OK(tsr_array_read(x, host, 8 * 64 * sizeof *host));
  tsr_array *all[5] = {x, rows, ids, norm, embed};
  for (int i = 0; i < 5; i++)
    tsr_array_release(all[i]);
  tsr_safetensors_close(ckpt);
}

static int by_value(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* The histogram's percentile is the upper edge of the bin holding the order statistic. */
static void check_percentile(const char *what, double got, const float *sorted, size_t n, double q,
                             double absmax) {
  double exact = sorted[(size_t)ceil(q * (double)n) - 1];
  double high = fmin(exact * (1 + 1.0 / 32), absmax);
  if (!(got >= exact && got <= high))
    CHECK_FAIL_("%s: %.9g outside [%.9g, %.9g]", what, got, exact, high);
}

static void check_statistics(void) {
  float x[8 * 64], magnitudes[8 * 64];
  layer0_input(x);
  double absmax = 0;
  for (size_t i = 0; i < 8 * 64; i++) {
    magnitudes[i] = fabsf(x[i]);
    absmax = fmax(absmax, (double)magnitudes[i]);
  }
  qsort(magnitudes, 8 * 64, sizeof *magnitudes, by_value);
  tsr_model *m = load(FX_DENSE_HF);
  tsr_model_calibration *c = NULL;
  CHECK_OK(tsr_model_calibration_new(&c, m));
  CHECK_OK(tsr_model_calibration_run(c, prompt_a, 8));
  CHECK_EQ_U64(tsr_model_calibration_count(c), 3 * 6 + 1); /* q k v o gate_up down, lm_head */
  tsr_calibration_linear q = linear_named(c, "model.layers.0.self_attn.q_proj");
  CHECK_EQ_U64(q.values, 8 * 64);
  CHECK_EQ_INT(q.layer, 0);
  CHECK_EQ_INT(q.bits, 0);
  CHECK_EQ_U64(q.parameters, 64 * 64);
  if (q.absmax != absmax) CHECK_FAIL_("absmax %.9g, want %.9g", q.absmax, absmax);
  check_percentile("p50", q.p50, magnitudes, 8 * 64, 0.5, absmax);
  check_percentile("p99", q.p99, magnitudes, 8 * 64, 0.99, absmax);
  check_percentile("p99.9", q.p999, magnitudes, 8 * 64, 0.999, absmax);
  tsr_calibration_linear head = linear_named(c, "lm_head");
  CHECK_EQ_INT(head.layer, -1);
  CHECK_EQ_U64(head.values, 8 * 64); /* every position reaches the head */
  CHECK(linear_named(c, "model.layers.2.mlp.gate_up_proj").out_features == 256);
  tsr_model_calibration_free(c);
  tsr_model_free(m);
  printf("  layer 0 q_proj: absmax %.6g exact, p50 %.6g, p99 %.6g, p99.9 %.6g within a bin\n",
         absmax, q.p50, q.p99, q.p999);
}

/* ---- the recipe -------------------------------------------------------------------------------
 */

/* sum_ij m_j (w_ij - q_ij)^2 for q_proj of layer 0 quantized to `bits` and back. */
static double direct_error(const float *x, int bits) {
  double mean_square[64] = {0};
  for (size_t r = 0; r < 8; r++)
    for (size_t j = 0; j < 64; j++)
      mean_square[j] += (double)x[r * 64 + j] * (double)x[r * 64 + j] / 8;
  tsr_safetensors *ckpt = NULL;
  CHECK_OK(tsr_safetensors_open(&ckpt, FX_DENSE_HF));
  tsr_array *w = NULL, *codes = NULL, *scales = NULL, *biases = NULL, *back = NULL;
  CHECK_OK(tsr_safetensors_load(&w, ckpt, "model.layers.0.self_attn.q_proj.weight", fx_cpu));
  CHECK_OK(tsr_quantize(&codes, &scales, &biases, w, 64, bits, TSR_QUANT_AFFINE, NULL));
  CHECK_OK(
      tsr_dequantize(&back, codes, scales, biases, 64, bits, TSR_QUANT_AFFINE, TSR_FLOAT32, NULL));
  static float wh[64 * 64], qh[64 * 64];
  CHECK_OK(tsr_array_read(w, wh, sizeof wh));
  CHECK_OK(tsr_array_read(back, qh, sizeof qh));
  double total = 0;
  for (size_t i = 0; i < 64 * 64; i++) {
    double d = (double)wh[i] - (double)qh[i];
    total += mean_square[i % 64] * d * d;
  }
  tsr_array *all[5] = {back, biases, scales, codes, w};
  for (int i = 0; i < 5; i++)
    tsr_array_release(all[i]);
  tsr_safetensors_close(ckpt);
  return total;
}

/* The block's 8-bit entries, checking the global parameters. */
static int eight_bit_entries(const char *json) {
  cJSON *block = cJSON_Parse(json);
  CHECK(block != NULL);
  CHECK_EQ_INT(cJSON_GetObjectItem(block, "bits")->valueint, 4);
  CHECK_EQ_INT(cJSON_GetObjectItem(block, "group_size")->valueint, 64);
  CHECK(strcmp(cJSON_GetObjectItem(block, "mode")->valuestring, "affine") == 0);
  int n = 0;
  for (cJSON *item = block->child; item; item = item->next)
    if (cJSON_IsObject(item)) {
      CHECK_EQ_INT(cJSON_GetObjectItem(item, "bits")->valueint, 8);
      n++;
    }
  cJSON_Delete(block);
  return n;
}

/* Proposes at `budget`; checks the bits per weight stay within it; returns the 8-bit count. */
static int propose(tsr_model_calibration *c, double budget) {
  char *json = NULL;
  CHECK_OK(tsr_model_calibration_recipe(c, budget, &json));
  double bits = 0, parameters = 0;
  int eights = 0;
  tsr_calibration_linear lin;
  for (size_t i = 0; i < tsr_model_calibration_count(c); i++) {
    CHECK_OK(tsr_model_calibration_linear(c, i, &lin));
    CHECK(lin.proposed_bits == 4 || lin.proposed_bits == 8); /* all quantizable here */
    if (!(lin.error_4bit > lin.error_8bit && lin.error_8bit > 0))
      CHECK_FAIL_("%s: errors %g (4-bit), %g (8-bit)", lin.name, lin.error_4bit, lin.error_8bit);
    bits += (double)lin.parameters * (lin.proposed_bits + 0.5);
    parameters += (double)lin.parameters;
    eights += lin.proposed_bits == 8;
  }
  if (bits / parameters > budget)
    CHECK_FAIL_("%.4f bits per weight > %g", bits / parameters, budget);
  CHECK_EQ_INT(eight_bit_entries(json), eights);
  free(json);
  return eights;
}

static void check_recipe(void) {
  tsr_model *m = load(FX_DENSE_HF);
  tsr_model_calibration *c = NULL;
  char *json = NULL;
  CHECK_OK(tsr_model_calibration_new(&c, m));
  CHECK_STATUS(tsr_model_calibration_recipe(c, 5, &json), TSR_ERR_INVALID);
  CHECK_MESSAGE("no prompt");
  CHECK_OK(tsr_model_calibration_run(c, prompt_a, 8));
  static const double bad[4] = {4.49, 8.51, -1, NAN};
  for (int i = 0; i < 4; i++) {
    CHECK_STATUS(tsr_model_calibration_recipe(c, bad[i], &json), TSR_ERR_INVALID);
    CHECK_MESSAGE("outside [4.5, 8.5]");
  }
  CHECK(json == NULL);
  size_t n = tsr_model_calibration_count(c);
  CHECK_EQ_INT(propose(c, 4.5), 0);
  CHECK_EQ_INT(propose(c, 8.5), (int)n);
  int middle = propose(c, 6.0);
  CHECK(middle > 0 && middle < (int)n);
  float x[8 * 64];
  layer0_input(x);
  tsr_calibration_linear q = linear_named(c, "model.layers.0.self_attn.q_proj");
  double want[2] = {direct_error(x, 4), direct_error(x, 8)}, got[2] = {q.error_4bit, q.error_8bit};
  for (int i = 0; i < 2; i++)
    if (fabs(got[i] - want[i]) > 1e-6 * want[i]) /* column sums are rounded to float32 */
      CHECK_FAIL_("q_proj %d-bit error %.12g, want %.12g", 4 << i, got[i], want[i]);
  tsr_model_calibration_free(c);
  tsr_model_free(m);
  printf("  recipe: 0, %d and %zu of %zu linears at 8 bits for 4.5, 6 and 8.5 bits per weight\n",
         middle, n, n);
}

/* ---- the API's other contracts ----------------------------------------------------------------
 */

static void check_contracts(void) {
  tsr_model *m = load(FX_MOE_HF);
  int64_t vocab = tsr_model_vocab_size(m);
  float *plain = malloc((size_t)(8 * vocab) * sizeof *plain);
  float *observed = malloc((size_t)(8 * vocab) * sizeof *observed);
  CHECK(plain && observed);
  CHECK_OK(tsr_model_logits(m, prompt_a, 8, plain, (size_t)(8 * vocab)));
  tsr_model_calibration *c = NULL, *second = NULL;
  CHECK_STATUS(tsr_model_calibration_new(NULL, m), TSR_ERR_INVALID);
  CHECK_OK(tsr_model_calibration_new(&c, m));
  CHECK_STATUS(tsr_model_calibration_new(&second, m), TSR_ERR_STATE);
  CHECK_OK(tsr_model_logits(m, prompt_a, 8, observed, (size_t)(8 * vocab)));
  CHECK(memcmp(plain, observed, (size_t)(8 * vocab) * sizeof *plain) == 0);
  CHECK_STATUS(tsr_model_calibration_run(c, NULL, 3), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_model_calibration_run(c, prompt_a, 0), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_model_calibration_run(c, (const int32_t[]){3, 256}, 2), TSR_ERR_INVALID);
  CHECK_MESSAGE("token 256");
  tsr_calibration_linear lin;
  size_t n = tsr_model_calibration_count(c);
  CHECK_EQ_U64(n, 4 + 3 + 2 * (4 + 3 + 3) + 1); /* dense layer 0, MoE layers 1-2, lm_head */
  CHECK_STATUS(tsr_model_calibration_linear(c, n, &lin), TSR_ERR_INVALID);
  CHECK_OK(tsr_model_calibration_linear(c, 0, &lin));
  CHECK_EQ_U64(lin.values, 8 * 64); /* the logits call above was observed too */
  lin = linear_named(c, "model.layers.1.mlp.switch_mlp.down_proj");
  CHECK(lin.experts > 0 && lin.values > 0 && lin.absmax >= lin.p999 && lin.p999 >= lin.p99 &&
        lin.p99 >= lin.p50 && lin.p50 > 0);
  tsr_model_calibration_free(c);
  CHECK_OK(tsr_model_calibration_new(&second, m)); /* freed: the model takes a new one */
  tsr_model_calibration_free(second);
  tsr_model_calibration_free(NULL);
  free(observed);
  free(plain);
  tsr_model_free(m);
  printf("  observer leaves the logits bit for bit; one calibration per model\n");
}

int main(int argc, char **argv) {
  if (argc == 3) {
    child_capped(argv[2], strcmp(argv[1], "refused") == 0);
  } else {
    /* Before anything touches the ledger: the need is the peak with no cached bytes in it (a cap
       evicts cached buffers before it refuses, so with a cache the uncapped peak overstates it);
       the children inherit the setting. */
    setenv("TSR_CACHE_LIMIT", "0", 1);
    uint64_t need = measure_need();
    check_cap(need);
    check_statistics();
    check_recipe();
    check_contracts();
  }
  tsr_memory_clear_cache(fx_cpu);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
