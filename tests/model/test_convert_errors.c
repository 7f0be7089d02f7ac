/* tests/model/test_convert_errors.c — tsr_model_convert on bad requests and bad checkpoints:
 * each fails with its status and a message naming the file, tensor or value, and leaves nothing
 * behind (no output folder, no temporary folder, nothing on the ledger). Late failures (a tensor
 * near the end of the name order that is not float, after shards were written; a missing or
 * misshapen tensor that only the final load-back notices) included; an existing output folder
 * is left as it was. */
#include "convert_fixture.h"

/* Converts `src` into fx_root/out with `opt`; the call fails with `want`, the message holds
 * both needles, and nothing is left behind. */
static void expect_fail(const char *what, const char *src, const tsr_convert_options *opt,
                        tsr_status want, const char *needle, const char *needle2) {
  const char *out = cv_out("out");
  tsr_status got = tsr_model_convert(src, out, opt);
  if (got != want)
    CHECK_FAIL_("%s: got %s, want %s", what, tsr_status_name(got), tsr_status_name(want));
  const char *needles[2] = {needle, needle2};
  for (int i = 0; i < 2; i++)
    if (needles[i] && !strstr(tsr_last_error(), needles[i]))
      CHECK_FAIL_("%s: the message should contain \"%s\"", what, needles[i]);
  struct stat info;
  if (stat(out, &info) == 0) CHECK_FAIL_("%s: %s was created", what, out);
  if (cv_has_partial(fx_root)) CHECK_FAIL_("%s: a temporary folder was left", what);
  CHECK_NO_LEAKS();
  fx_cases++;
  printf("  %-40s %s: %s\n", what, tsr_status_name(got), tsr_last_error());
}

/* A fresh copy of the MoE HF checkpoint under fx_root. */
static const char *fresh_moe(void) {
  return fx_fresh(FX_MOE_HF);
}

static void check_options(void) {
  static const struct {
    const char *what;
    tsr_quant_mode mode;
    int bits, group_size;
    const char *needle;
  } bad[] = {
      {"affine bits 7", TSR_QUANT_AFFINE, 7, 0, "bits 7"},
      {"affine group 48", TSR_QUANT_AFFINE, 0, 48, "group_size 48"},
      {"mxfp4 group 64", TSR_QUANT_MXFP4, 0, 64, "group_size 64"},
      {"nvfp4 bits 8", TSR_QUANT_NVFP4, 8, 0, "bits 8"},
      {"mode 9", (tsr_quant_mode)9, 0, 0, "mode 9"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tsr_convert_options opt = tsr_convert_default_options();
    opt.mode = bad[i].mode;
    opt.bits = bad[i].bits;
    opt.group_size = bad[i].group_size;
    expect_fail(bad[i].what, FX_MOE_HF, &opt, TSR_ERR_INVALID, bad[i].needle, NULL);
  }
  tsr_convert_options opt = tsr_convert_default_options();
  opt.cast = true;
  opt.dtype = TSR_INT32;
  expect_fail("dtype int32", FX_MOE_HF, &opt, TSR_ERR_INVALID, "dtype", NULL);
  CHECK_STATUS(tsr_model_convert(NULL, "x", NULL), TSR_ERR_INVALID);
}

static void check_configs(void) {
  const char *dir = fresh_moe();
  CHECK_EQ_INT(unlink(fx_path(dir, "config.json")), 0);
  expect_fail("no config.json", dir, NULL, TSR_ERR_IO, "config.json", NULL);
  dir = fresh_moe();
  fx_config_set(dir, "model_type", cJSON_CreateString("llama"));
  expect_fail("model_type llama", dir, NULL, TSR_ERR_UNSUPPORTED, "\"llama\"", NULL);
  expect_fail("already quantized (mlx-lm's q4g64)", GLM_DATA "/moe/mlx-q4g64", NULL, TSR_ERR_IO,
              "already quantized", NULL);
  dir = fresh_moe();
  CHECK_EQ_INT(truncate(fx_path(dir, "model.safetensors"), 100000), 0);
  expect_fail("truncated model.safetensors", dir, NULL, TSR_ERR_IO, "model.safetensors", NULL);
}

/* Rewrites dir/model.safetensors through `edit`. */
static void edit_tensors(const char *dir, void (*edit)(fx_tensors *t)) {
  fx_tensors t;
  fx_tensors_read(&t, fx_path(dir, "model.safetensors"));
  edit(&t);
  fx_tensors_save(&t, fx_path(dir, "model.safetensors"));
  fx_tensors_free(&t);
}

static void norm_int32(fx_tensors *t) {
  fx_tensors_astype(t, "model.norm.weight", TSR_INT32);
}
static void unknown_tensor(fx_tensors *t) {
  int64_t n = 4;
  fx_tensors_zeros(t, "model.layers.0.mlp.extra.weight", &n, 1, TSR_FLOAT32);
}
static void expert_past_end(fx_tensors *t) {
  int64_t shape[2] = {32, 64};
  fx_tensors_zeros(t, "model.layers.1.mlp.experts.8.gate_proj.weight", shape, 2, TSR_FLOAT32);
}
static void drop_o_proj(fx_tensors *t) {
  fx_tensors_drop(t, "model.layers.2.self_attn.o_proj.weight");
}
static void short_q_proj(fx_tensors *t) {
  int64_t shape[2] = {32, 64};
  fx_tensors_zeros(t, "model.layers.1.self_attn.q_proj.weight", shape, 2, TSR_FLOAT32);
}
static void odd_expert(fx_tensors *t) {
  fx_tensors_astype(t, "model.layers.2.mlp.experts.5.up_proj.weight", TSR_FLOAT16);
}

static void check_tensors(void) {
  /* model.norm.weight comes after every layer in name order: shards were written already */
  tsr_convert_options small = tsr_convert_default_options();
  small.shard_bytes = 16 << 10;
  const char *dir = fresh_moe();
  edit_tensors(dir, norm_int32);
  expect_fail("a late int32 tensor (after shards)", dir, &small, TSR_ERR_IO, "'model.norm.weight'",
              "model.safetensors");
  static const struct {
    const char *what;
    void (*edit)(fx_tensors *t);
    const char *needle, *needle2;
  } bad[] = {
      {"a tensor of no GLM module", unknown_tensor, "'model.layers.0.mlp.extra.weight'",
       "not part of a GLM model"},
      {"expert 8 of 8", expert_past_end, "experts.8.gate_proj", "n_routed_experts 8"},
      {"o_proj missing (found on load-back)", drop_o_proj, "model.layers.2.self_attn.o_proj",
       "does not load"},
      {"q_proj [32, 64] (found on load-back)", short_q_proj, "model.layers.1.self_attn.q_proj",
       "does not load"},
      {"one expert float16", odd_expert, "experts.5.up_proj", "differs from expert 0"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    dir = fresh_moe();
    edit_tensors(dir, bad[i].edit);
    expect_fail(bad[i].what, dir, &small, TSR_ERR_IO, bad[i].needle, bad[i].needle2);
  }
}

/* An existing output folder is refused and left as it was; a missing parent is an I/O error. */
static void check_output(void) {
  const char *out = cv_out("out");
  CHECK_EQ_INT(mkdir(out, 0755), 0);
  fx_write_text(fx_path(out, "keep.txt"), "mine");
  CHECK_STATUS(tsr_model_convert(FX_MOE_HF, out, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("already exists");
  char *kept = fx_read_file(fx_path(out, "keep.txt"), NULL);
  CHECK(strcmp(kept, "mine") == 0);
  free(kept);
  CHECK(!cv_has_partial(fx_root));
  fx_remove_tree(out);
  CHECK_STATUS(tsr_model_convert(FX_MOE_HF, cv_out("missing/out"), NULL), TSR_ERR_IO);
  CHECK_MESSAGE("missing/out");
  CHECK_NO_LEAKS();
  fx_cases += 2;
}

int main(void) {
  fx_make_root("convert-errors", fx_root);
  check_options();
  check_configs();
  check_tensors();
  check_output();
  fx_remove_tree(fx_root);
  tsr_memory_clear_cache(fx_cpu);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  printf("test_convert_errors: %d cases\n", fx_cases);
  return 0;
}
