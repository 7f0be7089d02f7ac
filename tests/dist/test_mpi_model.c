/* tests/dist/test_mpi_model.c — the GLM runner split tensor-parallel over the ranks of an mpi
 * group (tsr_model_options.group), on the tiny models of tests/data/glm: dense and MoE, float
 * (Hugging Face and mlx-lm layouts) and 8-bit affine where its groups split. On every rank:
 * tsr_model_logits against the committed float64 answer (where there is one: a checkpoint
 * converted here has none) and against the same model loaded without a group in this process; every
 * rank's logits the same bits; prefill + decode through a session; 16 greedy tokens identical to
 * the single-process ones; and each rank holding only its shard (weight bytes and the ledger's
 * active bytes well under the whole model's). The dense model is also converted here to 8-bit
 * affine with groups of 32, so that a quantized glm4 (its packed fused gate_up split into gate and
 * up rows) splits 2 ways.
 *
 * Tolerance. Tensor parallelism changes only the order of float32 sums: a row-parallel output
 * (o_proj, down_proj, the experts) is N partial sums of K/N products all-summed, instead of one
 * sum of K products, and MPI adds the N partials in its own order. Each order is one float32
 * evaluation of the same sum, with the same error bound (|error| <= gamma_K * sum |x_k w_k|,
 * gamma_K ~ K * 2^-24), so the split forward is as close to the exact (float64) answer as the
 * single-process one is. The committed goldens give that exact answer (transformers in float64,
 * or the float64 forward of mlx-lm's dequantized weights), and tests/model/test_glm_golden.c's
 * bar applies unchanged: 1e-4 on logits of magnitude <= 5 (float32 forwards land within ~4e-6
 * to 7e-6 of it, glm-spec §6). Against the single-process logits the triangle inequality gives
 * 2e-4; the observed differences are printed (~1e-6). A greedy token may legitimately differ only
 * where the single-process top-2 margin is within that 2e-4. */
#include <math.h>

#include "dist_check.h"
#include "model/model_fixture.h"

#define TOL 1e-4
#define TOL_PAIR (2 * TOL)
enum { T = 12, V = 256, PREFILL = 8, GREEDY = 16 };

typedef struct {
  const char *model, *variant;
  int max_ranks;    /* the quantized ones split only 2 ways (tests/dist/test_mpi_model_errors.c) */
  int convert_bits; /* > 0: `variant` is the Hugging Face folder converted here to affine
                       bits/group 32 (no float64 answer: compared with the single process) */
} tp_case;

/* The tiny models have 4 query heads and 2 key/value heads: over 4 ranks each pair of ranks
 * shares (replicates) a key/value head. */
static const tp_case cases[] = {
    {"dense", "mlx-f32", 4, 0}, /* fused gate_up split into its gate and up rows */
    {"dense", "hf", 4, 0},      {"moe", "hf", 4, 0}, /* experts one by one (experts.{e}) */
    {"moe", "mlx-q8g32", 2, 0}, /* 8-bit groups of 32: o_proj 64 -> 32 a rank; the shared expert
                                   (32 wide) does not split and lives on rank 0 */
    {"dense", "hf", 2, 8},      /* quantized glm4: the packed fused gate_up's rows split */
};

static double max_abs_diff(const float *a, const float *b, size_t n) {
  double worst = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)a[i] - (double)b[i]);
    if (!(d <= worst)) worst = d;
  }
  return worst;
}

static double *reference(const char *model_dir, const char *dir, bool hf) {
  if (hf) return golden_f64(model_dir, "logits_f64.npy", T * V);
  return golden_f64(dir, "logits_dq_f64.npy", T * V);
}

static void compare_exact(const char *what, const float *got, const double *want) {
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < T * V; i++) {
    double d = fabs((double)got[i] - want[i]);
    if (!(d <= worst)) worst = d, at = i;
  }
  if (!(worst <= TOL))
    CHECK_FAIL_("%s: logits differ from the float64 answer by %.3g at [%zu, %zu] (%.7g vs %.7g)",
                what, worst, at / V, at % V, (double)got[at], want[at]);
}

/* Every rank holds the same logits: the sums over the ranks of an exact checksum of the bits
 * and of its square equal size * mine and size * mine^2 only when every rank's is mine. */
static void check_same_on_every_rank(tsr_group *g, const float *logits, size_t n) {
  int64_t mine[2] = {0, 0}, sums[2];
  for (size_t i = 0; i < n; i++) {
    uint32_t bits;
    memcpy(&bits, &logits[i], sizeof bits);
    mine[0] += bits % 65521;
    mine[1] += (int64_t)(bits % 65521) * (int64_t)(bits % 65521) % 1000003;
  }
  CHECK_OK(tsr_group_all_sum_raw(g, mine, sums, 2, TSR_INT64, dist_cpu()));
  CHECK_OK(tsr_stream_synchronize(dist_cpu()));
  int64_t ranks = tsr_group_size(g);
  if (sums[0] != ranks * mine[0] || sums[1] != ranks * mine[1])
    CHECK_FAIL_("the ranks' logits differ (checksums %lld, %lld summed to %lld, %lld)",
                (long long)mine[0], (long long)mine[1], (long long)sums[0], (long long)sums[1]);
}

static tsr_model *load(const char *dir, tsr_group *g) {
  tsr_model_options opt = tsr_model_default_options();
  opt.device = (tsr_device){TSR_CPU, 0};
  opt.group = g;
  tsr_model *m = NULL;
  CHECK_OK(tsr_model_load(&m, dir, &opt));
  CHECK_EQ_INT(tsr_model_vocab_size(m), V);
  return m;
}

/* Prefill 8, then one token at a time: each step's logits are the full forward's row. */
static void check_decode(tsr_model *m, const int32_t *tokens, const float *full) {
  tsr_session *s = NULL;
  CHECK_OK(tsr_session_new(&s, m, T));
  CHECK_OK(tsr_session_append(s, tokens, PREFILL));
  float row[V];
  double worst = 0;
  for (int t = PREFILL - 1; t < T; t++) {
    if (t >= PREFILL) CHECK_OK(tsr_session_append(s, &tokens[t], 1));
    CHECK_OK(tsr_session_logits(s, row, V));
    double d = max_abs_diff(row, &full[t * V], V);
    if (d > worst) worst = d;
  }
  if (!(worst <= TOL_PAIR)) CHECK_FAIL_("decode steps differ from the full forward by %.3g", worst);
  tsr_session_free(s);
}

/* GREEDY tokens after the prompt, with the top-2 margin of the logits each was chosen from. */
static void greedy(tsr_model *m, const int32_t *tokens, int32_t *out, double *margins) {
  tsr_session *s = NULL;
  CHECK_OK(tsr_session_new(&s, m, T + GREEDY));
  CHECK_OK(tsr_session_append(s, tokens, T));
  tsr_sampling p = {.temperature = 0, .top_p = 1};
  float row[V];
  for (int i = 0; i < GREEDY; i++) {
    CHECK_OK(tsr_session_logits(s, row, V));
    margins[i] = top2_margin(row, V);
    CHECK_OK(tsr_session_sample(s, &p, &out[i]));
    CHECK_OK(tsr_session_append(s, &out[i], 1));
  }
  tsr_session_free(s);
}

static int check_greedy(tsr_model *split, tsr_model *single, const int32_t *tokens) {
  int32_t got[GREEDY], want[GREEDY];
  double margins[GREEDY], unused[GREEDY];
  greedy(single, tokens, want, margins);
  greedy(split, tokens, got, unused);
  int same = 0;
  for (; same < GREEDY && got[same] == want[same]; same++) {
  }
  if (same < GREEDY && margins[same] > TOL_PAIR)
    CHECK_FAIL_("greedy step %d chose %d, single-process %d (its top-2 margin %.3g)", same,
                got[same], want[same], margins[same]);
  return same;
}

/* This rank's weights are a shard: fewer bytes than the whole model, on the ledger too. */
static void check_shard_bytes(tsr_model *split, tsr_model *single, uint64_t split_active) {
  uint64_t part = tsr_model_weight_bytes(split), whole = tsr_model_weight_bytes(single);
  if (!(part < whole))
    CHECK_FAIL_("shard holds %llu of %llu weight bytes", (unsigned long long)part,
                (unsigned long long)whole);
  if (!(split_active <= part + part / 8 + 65536))
    CHECK_FAIL_("loading the shard put %llu bytes on the ledger for %llu weight bytes",
                (unsigned long long)split_active, (unsigned long long)part);
}

/* The case's checkpoint folder: committed, or converted here into `root` (each rank its own). */
static void case_folder(const tp_case *c, const char *root, char *dir) {
  snprintf(dir, 512, "%s/%s/%s", GLM_DATA, c->model, c->variant);
  if (c->convert_bits == 0) return;
  char out[512];
  snprintf(out, sizeof out, "%s/%s-q%dg32", root, c->model, c->convert_bits);
  tsr_convert_options opt = tsr_convert_default_options();
  opt.bits = c->convert_bits;
  opt.group_size = 32;
  CHECK_OK(tsr_model_convert(dir, out, &opt));
  snprintf(dir, 512, "%s", out);
}

static void run_case(tsr_group *g, const tp_case *c, const char *root) {
  char model_dir[512], dir[512];
  snprintf(model_dir, sizeof model_dir, "%s/%s", GLM_DATA, c->model);
  case_folder(c, root, dir);
  int32_t *tokens = golden_i32(model_dir, "tokens.npy", T);
  tsr_device cpu = {TSR_CPU, 0};
  uint64_t before = tsr_memory_active(cpu);
  tsr_model *split = load(dir, g);
  uint64_t split_active = tsr_memory_active(cpu) - before;
  tsr_model *single = load(dir, NULL);
  float *got = malloc(2 * T * V * sizeof *got), *alone = got + T * V;
  CHECK_OK(tsr_model_logits(split, tokens, T, got, T * V));
  CHECK_OK(tsr_model_logits(single, tokens, T, alone, T * V));
  if (c->convert_bits == 0) {
    double *want = reference(model_dir, dir, strcmp(c->variant, "hf") == 0);
    compare_exact(c->variant, got, want);
    free(want);
  }
  double pair = max_abs_diff(got, alone, T * V);
  if (!(pair <= TOL_PAIR)) CHECK_FAIL_("split vs single-process logits differ by %.3g", pair);
  check_same_on_every_rank(g, got, T * V);
  check_decode(split, tokens, got);
  int same = check_greedy(split, single, tokens);
  check_shard_bytes(split, single, split_active);
  if (tsr_group_rank(g) == 0)
    printf(
        "  %s/%-10s%s %d ranks: |split - single| %.2e, weights %llu of %llu bytes, greedy "
        "%d/%d equal\n",
        c->model, c->variant, c->convert_bits ? " (q8g32)" : "", tsr_group_size(g), pair,
        (unsigned long long)tsr_model_weight_bytes(split),
        (unsigned long long)tsr_model_weight_bytes(single), same, GREEDY);
  tsr_model_free(single);
  tsr_model_free(split);
  free(got);
  free(tokens);
}

int main(void) {
  tsr_group *g = dist_group("mpi");
  char tag[32], root[256];
  snprintf(tag, sizeof tag, "tp-model-r%d", tsr_group_rank(g));
  fx_make_root(tag, root);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    if (tsr_group_size(g) <= cases[i].max_ranks) run_case(g, &cases[i], root);
  fx_remove_tree(root);
  tsr_group_free(g);
  tsr_memory_clear_cache((tsr_device){TSR_CPU, 0});
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
