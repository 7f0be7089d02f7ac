/* tests/dist/test_mpi_model_errors.c — models that cannot be split over the ranks of the group:
 * every rank's tsr_model_load returns TSR_ERR_INVALID with a message naming the key or tensor
 * and the values, sets nothing, and leaves nothing on the ledger. Query heads, key/value heads
 * (neither dividing the other), the dense MLP width and the experts are checked
 * from config.json before any weight is read (each rank edits its own copy of a tiny checkpoint);
 * a quantized row-parallel layer whose per-rank inputs are not whole quantization groups (the
 * committed 4-bit, group-64 MoE: o_proj's 64 inputs give 32 or 16 a rank) fails naming the
 * tensor. And a model that splits still loads and calibrates after all of that, in the same
 * group. */
#include "dist_check.h"
#include "model/model_fixture.h"

static tsr_group *group;

static void expect_refused(const char *what, const char *dir, const char *needle,
                           const char *needle2) {
  tsr_model_options opt = tsr_model_default_options();
  opt.device = fx_cpu;
  opt.group = group;
  tsr_model *m = NULL;
  tsr_status got = tsr_model_load(&m, dir, &opt);
  if (got != TSR_ERR_INVALID)
    CHECK_FAIL_("%s: got %s, want TSR_ERR_INVALID (%s)", what, tsr_status_name(got),
                tsr_last_error());
  CHECK(m == NULL);
  if (!strstr(tsr_last_error(), needle) || (needle2 && !strstr(tsr_last_error(), needle2)))
    CHECK_FAIL_("%s: the message \"%s\" should name \"%s\" and \"%s\"", what, tsr_last_error(),
                needle, needle2 ? needle2 : "");
  CHECK_NO_LEAKS();
  if (tsr_group_rank(group) == 0) printf("  %-28s %s\n", what, tsr_last_error());
}

/* A fresh copy of `src` with config.json's integer keys set (names[i] = values[i]). */
static const char *edited(const char *src, const char *const *names, const int64_t *values, int n) {
  const char *dir = fx_fresh(src);
  fx_cases++;
  for (int i = 0; i < n; i++)
    fx_config_set(dir, names[i], cJSON_CreateNumber((double)values[i]));
  return dir;
}

static void config_refusals(void) {
  int64_t ranks = tsr_group_size(group);
  char text[64];
  const char *heads_keys[2] = {"num_attention_heads", "num_key_value_heads"};
  int64_t odd_heads[2] = {ranks + 1, 1};
  snprintf(text, sizeof text, "num_attention_heads %lld", (long long)(ranks + 1));
  expect_refused("query heads", edited(FX_DENSE_HF, heads_keys, odd_heads, 2), text, "ranks");
  int64_t odd_kv[2] = {3 * ranks, 3}; /* 3 kv heads: neither divides nor is divided by 2 or 4 */
  expect_refused("key/value heads", edited(FX_DENSE_HF, heads_keys, odd_kv, 2),
                 "num_key_value_heads 3", "one must divide the other");
  const char *width_key[1] = {"intermediate_size"};
  int64_t odd_width[1] = {2 * ranks + 1};
  snprintf(text, sizeof text, "intermediate_size %lld", (long long)odd_width[0]);
  expect_refused("dense MLP width", edited(FX_DENSE_HF, width_key, odd_width, 1), text, NULL);
  const char *experts_key[1] = {"n_routed_experts"};
  int64_t odd_experts[1] = {2 * ranks + 1};
  snprintf(text, sizeof text, "n_routed_experts %lld", (long long)odd_experts[0]);
  expect_refused("experts", edited(FX_MOE_HF, experts_key, odd_experts, 1), text, NULL);
}

/* A model that splits still loads, runs and calibrates after all of that, in the same group
 * (test_mpi_calibrate compares a split calibration with a whole one). */
static void splits_after_refusals(void) {
  tsr_model_options opt = tsr_model_default_options();
  opt.device = fx_cpu;
  opt.group = group;
  tsr_model *m = NULL;
  CHECK_OK(tsr_model_load(&m, FX_DENSE_HF, &opt));
  int32_t tokens[3] = {5, 6, 7};
  float logits[3 * 256];
  CHECK_OK(tsr_model_logits(m, tokens, 3, logits, 3 * 256));
  tsr_model_calibration *c = NULL;
  CHECK_OK(tsr_model_calibration_new(&c, m));
  CHECK_OK(tsr_model_calibration_run(c, tokens, 3));
  tsr_model_calibration_free(c);
  tsr_model_free(m);
}

int main(void) {
  group = dist_group("mpi");
  char tag[32];
  snprintf(tag, sizeof tag, "tp-errors-r%d", tsr_group_rank(group));
  fx_make_root(tag, fx_root);
  config_refusals();
  expect_refused("4-bit group-64 o_proj", FX_MOE_Q4, "model.layers.0.self_attn.o_proj",
                 "group_size 64");
  splits_after_refusals();
  fx_remove_tree(fx_root);
  tsr_group_free(group);
  tsr_memory_clear_cache(fx_cpu);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
