/* tests/model/test_convert_recipe.c — tsr_model_convert with a recipe (a `quantization` block with
 * per-module entries): each module is stored as its entry says (8 bits, another group size, or
 * float for `false`) and the rest at the block's global parameters, byte for byte what
 * tsr_quantize gives for the Hugging Face weight; config.json carries the entries, and the
 * runner loads the result with those bits. A recipe proposed by a calibration converts into a
 * checkpoint whose linears load with the proposed bits, a head tied to the embedding included.
 * Bad recipes (missing, not JSON, not an object, bits tsr_quantize refuses, a module the
 * checkpoint lacks) fail with nothing left. */
#include "convert_fixture.h"

static const int32_t prompt[8] = {1, 2, 3, 4, 5, 6, 7, 8};

static const char *write_recipe(const char *name, const char *text) {
  const char *path = cv_out(name);
  fx_write_text(path, text);
  return path;
}

static tsr_status convert_from(const char *hf, const char *recipe, const char *out) {
  tsr_convert_options opt = tsr_convert_default_options();
  opt.recipe = recipe;
  return tsr_model_convert(hf, out, &opt);
}

static tsr_status convert_with(const char *recipe, const char *out) {
  return convert_from(FX_DENSE_HF, recipe, out);
}

/* The bits each linear of checkpoint `dir` loads with, through a calibration (one prompt). */
static void loaded_bits(const char *dir, int *bits, size_t *n) {
  tsr_model *m = NULL;
  tsr_model_calibration *c = NULL;
  CHECK_OK(tsr_model_load(&m, dir, NULL));
  CHECK_OK(tsr_model_calibration_new(&c, m));
  *n = tsr_model_calibration_count(c);
  for (size_t i = 0; i < *n; i++) {
    tsr_calibration_linear lin;
    CHECK_OK(tsr_model_calibration_linear(c, i, &lin));
    bits[i] = lin.bits;
  }
  tsr_model_calibration_free(c);
  tsr_model_free(m);
}

/* Tensor `name` of `dir` holds the same bytes as tsr_quantize of the HF weight gives. */
static void check_quantized_bytes(const char *dir, const char *module, int group, int bits) {
  tsr_safetensors *hf = NULL, *out = NULL;
  CHECK_OK(tsr_safetensors_open(&hf, FX_DENSE_HF));
  CHECK_OK(tsr_safetensors_open(&out, dir));
  tsr_array *w = NULL, *parts[3] = {NULL, NULL, NULL};
  char name[256];
  snprintf(name, sizeof name, "%s.weight", module);
  CHECK_OK(tsr_safetensors_load(&w, hf, name, fx_cpu));
  CHECK_OK(tsr_quantize(&parts[0], &parts[1], &parts[2], w, group, bits, TSR_QUANT_AFFINE, NULL));
  static const char *const suffixes[3] = {"weight", "scales", "biases"};
  for (int i = 0; i < 3; i++) {
    snprintf(name, sizeof name, "%s.%s", module, suffixes[i]);
    tsr_tensor_info info;
    void *stored = cv_tensor_bytes(out, name, &info);
    void *want = malloc(info.nbytes);
    CHECK(want != NULL);
    CHECK_OK(tsr_array_read(parts[i], want, info.nbytes));
    if (memcmp(stored, want, info.nbytes) != 0) CHECK_FAIL_("%s differs", name);
    free(want);
    free(stored);
    tsr_array_release(parts[i]);
  }
  tsr_array_release(w);
  tsr_safetensors_close(out);
  tsr_safetensors_close(hf);
}

static void check_handwritten(void) {
  const char *recipe = write_recipe("hand.json",
                                    "{\"quantization\": {\"group_size\": 64, \"bits\": "
                                    "4, \"mode\": \"affine\", "
                                    "\"model.layers.0.self_attn.q_proj\": {\"bits\": "
                                    "8}, \"model.layers.1.mlp.down_proj\": false, "
                                    "\"lm_head\": {\"bits\": 8, \"group_size\": 32}}}");
  const char *out = cv_out("hand");
  CHECK_OK(convert_with(recipe, out));
  int bits[64];
  size_t n = 0;
  loaded_bits(out, bits, &n);
  CHECK_EQ_U64(n, 19);
  for (size_t i = 0; i < n; i++) {
    int want = i == 0 ? 8 : i == 6 + 5 ? 0 : i == 18 ? 8 : 4; /* q_proj, layer 1 down, lm_head */
    if (bits[i] != want) CHECK_FAIL_("linear %zu loads with %d bits, want %d", i, bits[i], want);
  }
  check_quantized_bytes(out, "model.layers.0.self_attn.q_proj", 64, 8);
  check_quantized_bytes(out, "model.layers.0.self_attn.k_proj", 64, 4);
  check_quantized_bytes(out, "lm_head", 32, 8);
  cJSON *config = fx_config_read(out);
  const cJSON *block = cJSON_GetObjectItem(config, "quantization");
  CHECK(cJSON_IsFalse(cJSON_GetObjectItem(block, "model.layers.1.mlp.down_proj")));
  CHECK_EQ_INT(cJSON_GetObjectItem(cJSON_GetObjectItem(block, "lm_head"), "group_size")->valueint,
               32);
  CHECK(cJSON_Compare(block, cJSON_GetObjectItem(config, "quantization_config"), true));
  cJSON_Delete(config);
  printf("  hand-written recipe: q_proj and lm_head at 8 bits, one down_proj float, the rest 4\n");
}

/* The model in `hf` loaded and calibrated on the test prompt, with its recipe at `budget` bits
 * per weight in *block; the caller frees the calibration, the model and the block. */
static tsr_model_calibration *calibrated(const char *hf, double budget, tsr_model **m,
                                         char **block) {
  tsr_model_calibration *c = NULL;
  CHECK_OK(tsr_model_load(m, hf, NULL));
  CHECK_OK(tsr_model_calibration_new(&c, *m));
  CHECK_OK(tsr_model_calibration_run(c, prompt, 8));
  CHECK_OK(tsr_model_calibration_recipe(c, budget, block));
  return c;
}

/* A calibration's proposal at 6 bits per weight, converted: every linear loads as proposed (the
 * MoE's stacked experts included; its 32-wide inputs stay float). */
static void check_proposed(const char *hf, const char *tag) {
  tsr_model *m = NULL;
  char *block = NULL;
  tsr_model_calibration *c = calibrated(hf, 6.0, &m, &block);
  int proposed[64], bits[64];
  size_t n = tsr_model_calibration_count(c), loaded = 0;
  for (size_t i = 0; i < n; i++) {
    tsr_calibration_linear lin;
    CHECK_OK(tsr_model_calibration_linear(c, i, &lin));
    proposed[i] = lin.proposed_bits;
  }
  tsr_model_calibration_free(c);
  tsr_model_free(m);
  char name[64];
  snprintf(name, sizeof name, "%s.json", tag);
  const char *recipe = write_recipe(name, block); /* the bare block, unwrapped */
  free(block);
  const char *out = cv_out(tag);
  CHECK_OK(convert_from(hf, recipe, out));
  loaded_bits(out, bits, &loaded);
  CHECK_EQ_U64(loaded, n);
  int eights = 0, fours = 0;
  for (size_t i = 0; i < n; i++) {
    if (bits[i] != proposed[i])
      CHECK_FAIL_("linear %zu: %d bits, proposed %d", i, bits[i], proposed[i]);
    eights += bits[i] == 8;
    fours += bits[i] == 4;
  }
  CHECK(eights > 0 && fours > 0);
  printf(
      "  %s: calibrated recipe at 6 bits per weight, %d of %zu linears load at 8 bits, %d at 4\n",
      tag, eights, n, fours);
}

/* A head tied to the embedding is calibrated as model.embed_tokens (the module mlx-lm quantizes
 * for it); a recipe that promotes it converts the embedding at 8 bits, and the head loads so. */
static void check_tied(void) {
  char hf[512];
  fx_copy_checkpoint(FX_DENSE_HF, fx_root, "tied-hf", hf);
  fx_tensors t;
  fx_tensors_read(&t, fx_path(hf, "model.safetensors"));
  fx_tensors_drop(&t, "lm_head.weight");
  fx_tensors_save(&t, fx_path(hf, "model.safetensors"));
  fx_tensors_free(&t);
  fx_config_set(hf, "tie_word_embeddings", cJSON_CreateTrue());
  tsr_model *m = NULL;
  char *block = NULL;
  tsr_model_calibration *c = calibrated(hf, 8.5, &m, &block);
  tsr_calibration_linear head;
  CHECK_OK(tsr_model_calibration_linear(c, tsr_model_calibration_count(c) - 1, &head));
  CHECK(strcmp(head.name, "model.embed_tokens") == 0 && head.layer == -1);
  CHECK(strstr(block, "\"model.embed_tokens\"") != NULL);
  tsr_model_calibration_free(c);
  tsr_model_free(m);
  const char *recipe = write_recipe("tied.json", block);
  free(block);
  const char *out = cv_out("tied");
  CHECK_OK(convert_from(hf, recipe, out));
  int bits[64];
  size_t n = 0;
  loaded_bits(out, bits, &n);
  CHECK_EQ_INT(bits[n - 1], 8);
  printf("  tied head: calibrated and promoted as model.embed_tokens, loads at 8 bits\n");
}

static void expect_refused(const char *what, const char *recipe, tsr_status want,
                           const char *needle) {
  const char *out = cv_out("refused");
  tsr_status got = convert_with(recipe, out);
  if (got != want)
    CHECK_FAIL_("%s: got %s, want %s", what, tsr_status_name(got), tsr_status_name(want));
  CHECK_MESSAGE(needle);
  CHECK(!cv_has_entry(fx_root, "refused"));
  CHECK(!cv_has_partial(fx_root));
  printf("  %-28s %s: %s\n", what, tsr_status_name(got), tsr_last_error());
}

static void check_refusals(void) {
  expect_refused("missing recipe", cv_out("no-such.json"), TSR_ERR_IO, "no-such.json");
  expect_refused("not JSON", write_recipe("bad.json", "{\"bits\": "), TSR_ERR_IO, "bad.json");
  expect_refused("not an object", write_recipe("array.json", "[4, 8]"), TSR_ERR_IO,
                 "not a JSON object");
  expect_refused("bits 9", write_recipe("nine.json", "{\"bits\": 4, \"lm_head\": {\"bits\": 9}}"),
                 TSR_ERR_INVALID, "nine.json");
  expect_refused("unknown module",
                 write_recipe("typo.json",
                              "{\"bits\": 4, \"model.layers.0.self_attn.qproj\": "
                              "{\"bits\": 8}}"),
                 TSR_ERR_INVALID, "model.layers.0.self_attn.qproj");
}

int main(void) {
  fx_make_root("convert-recipe", fx_root);
  check_handwritten();
  check_proposed(FX_DENSE_HF, "dense");
  check_proposed(FX_MOE_HF, "moe");
  check_tied();
  check_refusals();
  fx_remove_tree(fx_root);
  tsr_memory_clear_cache(fx_cpu);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  printf("test_convert_recipe: ok\n");
  return 0;
}
