/* tests/model/test_model_load_tensors.c — tsr_model_load on checkpoints whose tensors are wrong:
 * each case rewrites model.safetensors of a copy of a good tiny checkpoint (the MLX 4-bit MoE,
 * the Hugging Face MoE with per-expert tensors, the Hugging Face dense model) with one tensor
 * dropped, reshaped, retyped or added, or config.json's quantization block disagreeing with the
 * tensors, and checks the exact status, that the message names the tensor (and the file where
 * there is one), *out untouched and nothing left on the ledger. */
#include "model_fixture.h"

static fx_tensors edit;

/* A fresh copy of `src` whose tensors are in `edit`, to be changed and then saved by done(). */
static const char *begin(const char *src) {
  const char *dir = fx_fresh(src);
  fx_tensors_read(&edit, fx_path(src, "model.safetensors"));
  return dir;
}

static const char *done(const char *dir) {
  fx_tensors_save(&edit, fx_path(dir, "model.safetensors"));
  fx_tensors_free(&edit);
  return dir;
}

/* A copy of `src` without the tensor `name`. */
static const char *without(const char *src, const char *name) {
  const char *dir = begin(src);
  fx_tensors_drop(&edit, name);
  return done(dir);
}

static void expect_missing(const char *what, const char *src, const char *name) {
  char needle[256];
  snprintf(needle, sizeof needle, "tensor '%s' is missing", name);
  const char *dir = without(src, name);
  fx_expect_fail(what, dir, TSR_ERR_IO, needle, dir); /* the message names the checkpoint too */
}

/* ---- missing tensors ------------------------------------------------------------------------ */

static void check_missing(void) {
  expect_missing("no embedding (MLX)", FX_MOE_Q4, "model.embed_tokens.weight");
  expect_missing("no embedding (HF)", FX_DENSE_HF, "model.embed_tokens.weight");
  expect_missing("no input_layernorm", FX_MOE_Q4, "model.layers.2.input_layernorm.weight");
  expect_missing("no post_mlp_layernorm (dense)", FX_DENSE_HF,
                 "model.layers.1.post_mlp_layernorm.weight");
  expect_missing("no final norm", FX_DENSE_HF, "model.norm.weight");
  expect_missing("no q_norm", FX_MOE_Q4, "model.layers.1.self_attn.q_norm.weight");
  expect_missing("no q_proj", FX_DENSE_HF, "model.layers.2.self_attn.q_proj.weight");
  expect_missing("no q_proj.bias", FX_DENSE_HF, "model.layers.0.self_attn.q_proj.bias");
  expect_missing("no lm_head (untied)", FX_DENSE_HF, "lm_head.weight");
  expect_missing("no lm_head.weight (MLX)", FX_MOE_Q4, "lm_head.weight");
  expect_missing("no router bias (HF)", FX_MOE_HF,
                 "model.layers.1.mlp.gate.e_score_correction_bias");
  expect_missing("no router bias (MLX)", FX_MOE_Q4,
                 "model.layers.2.mlp.gate.e_score_correction_bias");
  expect_missing("no router", FX_MOE_HF, "model.layers.2.mlp.gate.weight");
  expect_missing("no expert 5 down_proj (HF)", FX_MOE_HF,
                 "model.layers.2.mlp.experts.5.down_proj.weight");
  expect_missing("no switch_mlp down_proj (MLX)", FX_MOE_Q4,
                 "model.layers.2.mlp.switch_mlp.down_proj.weight");
  expect_missing("no shared expert up_proj", FX_MOE_HF,
                 "model.layers.1.mlp.shared_experts.up_proj.weight");
  expect_missing("no k_proj.biases (affine)", FX_MOE_Q4, "model.layers.0.self_attn.k_proj.biases");
}

/* ---- shapes and dtypes ---------------------------------------------------------------------- */

static void check_shapes(void) {
  const char *dir = begin(FX_DENSE_HF);
  fx_tensors_zeros(&edit, "model.layers.1.self_attn.k_proj.weight", (int64_t[]){16, 64}, 2,
                   TSR_FLOAT32);
  fx_expect_fail("k_proj [16, 64]", done(dir), TSR_ERR_IO,
                 "model.safetensors: tensor 'model.layers.1.self_attn.k_proj.weight' has shape "
                 "[16, 64]",
                 "[32, 64]");
  dir = begin(FX_DENSE_HF);
  fx_tensors_zeros(&edit, "model.norm.weight", (int64_t[]){1, 64}, 2, TSR_FLOAT32);
  fx_expect_fail("final norm [1, 64]", done(dir), TSR_ERR_IO, "'model.norm.weight' has shape",
                 "model.safetensors");
  dir = begin(FX_DENSE_HF);
  fx_tensors_zeros(&edit, "model.layers.0.mlp.gate_up_proj.weight", (int64_t[]){128, 64}, 2,
                   TSR_FLOAT32);
  fx_expect_fail("gate_up_proj not 2 x intermediate", done(dir), TSR_ERR_IO,
                 "'model.layers.0.mlp.gate_up_proj.weight' has shape [128, 64]", "[256, 64]");
  dir = begin(FX_MOE_HF);
  fx_tensors_zeros(&edit, "model.layers.1.mlp.experts.3.gate_proj.weight", (int64_t[]){32, 63}, 2,
                   TSR_FLOAT32);
  fx_expect_fail("expert 3 gate_proj [32, 63]", done(dir), TSR_ERR_IO,
                 "'model.layers.1.mlp.experts.3.gate_proj.weight' has shape [32, 63]",
                 "model.safetensors");
  dir = begin(FX_MOE_HF);
  fx_tensors_zeros(&edit, "model.layers.2.mlp.gate.e_score_correction_bias", (int64_t[]){7}, 1,
                   TSR_FLOAT32);
  fx_expect_fail("router bias [7]", done(dir), TSR_ERR_IO,
                 "'model.layers.2.mlp.gate.e_score_correction_bias' has shape [7]", "[8]");
}

static void check_dtypes(void) {
  const char *dir = begin(FX_DENSE_HF);
  fx_tensors_astype(&edit, "model.layers.0.input_layernorm.weight", TSR_INT32);
  fx_expect_fail("int32 norm", done(dir), TSR_ERR_IO, "'model.layers.0.input_layernorm.weight'",
                 "int32");
  dir = begin(FX_DENSE_HF);
  fx_tensors_astype(&edit, "model.layers.1.self_attn.v_proj.bias", TSR_INT8);
  fx_expect_fail("int8 bias", done(dir), TSR_ERR_IO, "'model.layers.1.self_attn.v_proj.bias'",
                 "int8");
  dir = begin(FX_DENSE_HF);
  fx_tensors_zeros(&edit, "model.layers.0.self_attn.o_proj.weight", (int64_t[]){64, 64}, 2,
                   TSR_UINT32);
  fx_expect_fail("uint32 weight, no .scales", done(dir), TSR_ERR_IO,
                 "'model.layers.0.self_attn.o_proj.weight' is uint32", NULL);
  dir = begin(FX_DENSE_HF);
  fx_tensors_astype(&edit, "lm_head.weight", TSR_INT32);
  fx_expect_fail("int32 lm_head", done(dir), TSR_ERR_IO, "'lm_head.weight' is int32", NULL);
  dir = begin(FX_MOE_HF);
  fx_tensors_astype(&edit, "model.layers.2.mlp.experts.6.up_proj.weight", TSR_INT32);
  fx_expect_fail("int32 expert (HF)", done(dir), TSR_ERR_IO,
                 "'model.layers.2.mlp.experts.6.up_proj.weight'", "int32");
  dir = begin(FX_MOE_HF);
  fx_tensors_astype(&edit, "model.layers.2.mlp.experts.1.down_proj.weight", TSR_FLOAT16);
  fx_expect_fail("one float16 expert among float32 (HF)", done(dir), TSR_ERR_IO,
                 "'model.layers.2.mlp.experts.1.down_proj.weight'", "float16");
  dir = begin(FX_MOE_Q4);
  fx_tensors_astype(&edit, "model.layers.1.mlp.switch_mlp.down_proj.weight", TSR_INT32);
  fx_expect_fail("int32 float expert (MLX)", done(dir), TSR_ERR_IO,
                 "'model.layers.1.mlp.switch_mlp.down_proj.weight'", "int32");
}

/* ---- quantized tensors ---------------------------------------------------------------------- */

static void check_quantized_tensors(void) {
  const char *dir = begin(FX_MOE_Q4);
  fx_tensors_drop(&edit, "model.layers.0.self_attn.q_proj.scales");
  fx_tensors_drop(&edit, "model.layers.0.self_attn.q_proj.biases");
  fx_expect_fail("uint32 q_proj without .scales", done(dir), TSR_ERR_IO,
                 "'model.layers.0.self_attn.q_proj.weight' is uint32", "scales");
  dir = begin(FX_MOE_Q4);
  fx_tensors_astype(&edit, "model.layers.0.self_attn.v_proj.scales", TSR_INT32);
  fx_expect_fail("int32 scales", done(dir), TSR_ERR_IO, "'model.layers.0.self_attn.v_proj.scales'",
                 "int32");
  dir = begin(FX_MOE_Q4);
  fx_tensors_astype(&edit, "model.layers.2.self_attn.o_proj.biases", TSR_FLOAT16);
  fx_expect_fail("float16 biases, float32 scales", done(dir), TSR_ERR_IO,
                 "'model.layers.2.self_attn.o_proj.biases'", "float16");
  dir = begin(FX_MOE_Q4);
  fx_tensors_astype(&edit, "model.embed_tokens.weight", TSR_INT32);
  fx_expect_fail("int32 packed embedding", done(dir), TSR_ERR_IO, "'model.embed_tokens.weight'",
                 "int32");
  dir = begin(FX_MOE_Q4);
  fx_tensors_zeros(&edit, "model.layers.1.mlp.switch_mlp.up_proj.scales", (int64_t[]){8, 32, 2}, 3,
                   TSR_FLOAT32);
  fx_expect_fail("expert scales [8, 32, 2] at group 64", done(dir), TSR_ERR_IO,
                 "'model.layers.1.mlp.switch_mlp.up_proj.scales' has shape [8, 32, 2]",
                 "[8, 32, 1]");
  dir = begin(FX_DENSE_HF);
  fx_tensors_zeros(&edit, "model.layers.0.self_attn.q_proj.scales", (int64_t[]){64, 1}, 2,
                   TSR_FLOAT32);
  fx_expect_fail(".scales without a quantization block", done(dir), TSR_ERR_IO,
                 "'model.layers.0.self_attn.q_proj.scales'", "no quantization block");
}

/* The MLX checkpoint with its quantization block replaced by `block`. */
static const char *with_block(const char *block) {
  const char *dir = fx_fresh(FX_MOE_Q4);
  cJSON *parsed = cJSON_Parse(block);
  CHECK(parsed != NULL);
  fx_config_set(dir, "quantization", parsed);
  fx_config_set(dir, "quantization_config", NULL);
  return dir;
}

static void check_quantization_rules(void) {
  fx_expect_fail("no quantization block", with_block("null"), TSR_ERR_IO,
                 "'model.embed_tokens.scales'", "no quantization block");
  fx_expect_fail("bits 8 on 4-bit tensors", with_block("{\"group_size\": 64, \"bits\": 8}"),
                 TSR_ERR_IO, "'model.embed_tokens.weight' has shape [256, 8]", "[256, 16]");
  fx_expect_fail(
      "override group 32 on group-64 scales",
      with_block("{\"group_size\": 64, \"bits\": 4, \"model.layers.0.self_attn.o_proj\": "
                 "{\"group_size\": 32, \"bits\": 4}}"),
      TSR_ERR_IO, "'model.layers.0.self_attn.o_proj.scales' has shape [64, 1]", "[64, 2]");
  fx_expect_fail("override group 96 divides no input",
                 with_block("{\"group_size\": 64, \"bits\": 4, \"model.layers.0.mlp.down_proj\": "
                            "{\"group_size\": 96, \"bits\": 4}}"),
                 TSR_ERR_IO, "model.layers.0.mlp.down_proj", "group_size 96");
  fx_expect_fail("override mxfp4 on affine tensors",
                 with_block("{\"group_size\": 64, \"bits\": 4, \"lm_head\": "
                            "{\"group_size\": 64, \"bits\": 4, \"mode\": \"mxfp4\"}}"),
                 TSR_ERR_IO, "'lm_head.scales'", "uint8");
  fx_expect_fail("override false where .scales exist",
                 with_block("{\"group_size\": 64, \"bits\": 4, \"model.layers.0.mlp.up_proj\": "
                            "false}"),
                 TSR_ERR_IO, "'model.layers.0.mlp.up_proj.scales'", "false");
  fx_expect_fail("override quantizes a float module",
                 with_block("{\"group_size\": 64, \"bits\": 4, "
                            "\"model.layers.1.mlp.shared_experts.down_proj\": "
                            "{\"group_size\": 32, \"bits\": 4}}"),
                 TSR_ERR_IO, "'model.layers.1.mlp.shared_experts.down_proj.weight' is float32",
                 "uint32 (packed) was expected");
}

int main(void) {
  fx_make_root("model-load-tensors", fx_root);
  check_missing();
  check_shapes();
  check_dtypes();
  check_quantized_tensors();
  check_quantization_rules();
  fx_remove_tree(fx_root);
  printf("test_model_load_tensors: %d cases\n", fx_cases);
  tsr_memory_clear_cache(fx_cpu);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
