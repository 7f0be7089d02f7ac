/* tests/model/test_model_load_errors.c — tsr_model_load on broken checkpoint folders: each case
 * copies a good tiny checkpoint (tests/data/glm) into a folder under /tmp, breaks one thing in
 * config.json, generation_config.json, the safetensors files or tokenizer.json, and checks the
 * exact status, that the message names the file and the key or tensor, that *out stays NULL and
 * that nothing is left on the ledger. The ledger cap runs in child processes (a cap installs once
 * per process). Broken tensors are in test_model_load_tensors.c, loads that must succeed in
 * test_model_load_variants.c. */
#include "model_fixture.h"

/* config.json of a fresh copy of `src` with `key` set to the JSON `value` (NULL removes it). */
static const char *with_key(const char *src, const char *key, const char *value) {
  const char *dir = fx_fresh(src);
  cJSON *parsed = value ? cJSON_Parse(value) : NULL;
  if (value && !parsed) CHECK_FAIL_("bad JSON in the test: %s", value);
  fx_config_set(dir, key, parsed);
  return dir;
}

/* ---- the folder and its JSON files ---------------------------------------------------------- */

static void check_files(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/no-such-folder", fx_root);
  fx_expect_fail("missing folder", path, TSR_ERR_IO, "no-such-folder", "not a folder");
  const char *dir = fx_fresh(FX_MOE_Q4);
  fx_expect_fail("a file, not a folder", fx_path(dir, "config.json"), TSR_ERR_IO, "config.json",
                 "not a folder");

  dir = fx_fresh(FX_MOE_Q4);
  CHECK_EQ_INT(unlink(fx_path(dir, "config.json")), 0);
  fx_expect_fail("no config.json", dir, TSR_ERR_IO, "config.json", "cannot open");

  dir = fx_fresh(FX_MOE_Q4);
  fx_write_text(fx_path(dir, "config.json"), "{\"model_type\": \"glm4_moe\",, }");
  fx_expect_fail("config.json malformed", dir, TSR_ERR_IO, "config.json", "malformed JSON");

  dir = fx_fresh(FX_MOE_Q4);
  fx_write_text(fx_path(dir, "config.json"), "[\"glm4_moe\"]");
  fx_expect_fail("config.json an array", dir, TSR_ERR_IO, "config.json", "not a JSON object");

  dir = fx_fresh(FX_MOE_Q4);
  fx_write_text(fx_path(dir, "config.json"), "");
  fx_expect_fail("config.json empty", dir, TSR_ERR_IO, "config.json", NULL);

  dir = fx_fresh(FX_MOE_Q4);
  fx_write_text(fx_path(dir, "generation_config.json"), "{\"eos_token_id\": [1,");
  fx_expect_fail("generation_config.json malformed", dir, TSR_ERR_IO, "generation_config.json",
                 "malformed JSON");

  dir = fx_fresh(FX_MOE_Q4);
  fx_write_text(fx_path(dir, "generation_config.json"), "{\"eos_token_id\": [1, \"two\"]}");
  fx_expect_fail("generation_config eos not an id", dir, TSR_ERR_IO, "generation_config.json",
                 "eos_token_id");
}

/* ---- config.json keys ----------------------------------------------------------------------- */

static void check_config_keys(void) {
  fx_expect_fail("model_type llama", with_key(FX_MOE_Q4, "model_type", "\"llama\""),
                 TSR_ERR_UNSUPPORTED, "config.json", "\"llama\"");
  fx_expect_fail("model_type missing", with_key(FX_MOE_Q4, "model_type", NULL), TSR_ERR_IO,
                 "config.json", "model_type");
  fx_expect_fail("model_type a number", with_key(FX_DENSE_HF, "model_type", "4"), TSR_ERR_IO,
                 "config.json", "\"model_type\" must be a string");
  fx_expect_fail("hidden_size missing", with_key(FX_MOE_Q4, "hidden_size", NULL), TSR_ERR_IO,
                 "config.json", "\"hidden_size\"");
  fx_expect_fail(
      "hidden_size a string", with_key(FX_DENSE_HF, "hidden_size", "\"64\""), TSR_ERR_IO,
      "config.json",
      "\"hidden_size\" must be an integer in [1, 2147483648] (found a value that is not a number)");
  fx_expect_fail("num_hidden_layers -3", with_key(FX_MOE_Q4, "num_hidden_layers", "-3"), TSR_ERR_IO,
                 "config.json",
                 "\"num_hidden_layers\" must be an integer in [1, 65536] (found -3)");
  fx_expect_fail("intermediate_size 127.5", with_key(FX_DENSE_HF, "intermediate_size", "127.5"),
                 TSR_ERR_IO, "config.json",
                 "\"intermediate_size\" must be an integer in [1, 2147483648] (found 127.5)");
  fx_expect_fail("vocab_size 0", with_key(FX_MOE_Q4, "vocab_size", "0"), TSR_ERR_IO, "config.json",
                 "\"vocab_size\"");
  fx_expect_fail("num_key_value_heads 3 of 4", with_key(FX_MOE_Q4, "num_key_value_heads", "3"),
                 TSR_ERR_IO, "config.json",
                 "num_attention_heads 4 is not a multiple of "
                 "num_key_value_heads 3");
  fx_expect_fail("rms_norm_eps -1", with_key(FX_DENSE_HF, "rms_norm_eps", "-1"), TSR_ERR_IO,
                 "config.json", "rms_norm_eps");
  fx_expect_fail("attention_bias \"yes\"", with_key(FX_DENSE_HF, "attention_bias", "\"yes\""),
                 TSR_ERR_IO, "config.json", "\"attention_bias\"");
  fx_expect_fail("eos_token_id -1", with_key(FX_MOE_Q4, "eos_token_id", "-1"), TSR_ERR_IO,
                 "config.json", "eos_token_id");
  fx_expect_fail("num_experts_per_tok 9 of 8", with_key(FX_MOE_Q4, "num_experts_per_tok", "9"),
                 TSR_ERR_IO, "config.json", "\"num_experts_per_tok\"");
  fx_expect_fail("n_group 3 of 8 experts", with_key(FX_MOE_Q4, "n_group", "3"), TSR_ERR_IO,
                 "config.json", "n_group 3");
}

/* ---- rope ----------------------------------------------------------------------------------- */

static void check_rope(void) {
  fx_expect_fail("rope_type yarn",
                 with_key(FX_MOE_Q4, "rope_parameters",
                          "{\"rope_type\": \"yarn\", \"rope_theta\": 10000.0, \"factor\": 4.0}"),
                 TSR_ERR_UNSUPPORTED, "config.json", "\"yarn\"");
  /* the older form: rope_scaling with "type" */
  const char *dir = with_key(FX_DENSE_HF, "rope_parameters", NULL);
  fx_config_set(dir, "rope_scaling", cJSON_Parse("{\"type\": \"linear\", \"factor\": 2.0}"));
  fx_expect_fail("rope_scaling linear", dir, TSR_ERR_UNSUPPORTED, "config.json", "\"linear\"");
  /* 16 * 0.3125 = 5 rotated dims: odd */
  dir = with_key(FX_DENSE_HF, "partial_rotary_factor", "0.3125");
  fx_config_set(dir, "rope_parameters",
                cJSON_Parse("{\"rope_type\": \"default\", \"rope_theta\": 10000.0, "
                            "\"partial_rotary_factor\": 0.3125}"));
  fx_expect_fail("partial_rotary_factor: 5 dims", dir, TSR_ERR_IO, "config.json",
                 "partial_rotary_factor 0.3125");
  /* the rope_parameters value wins over the top-level one */
  dir = fx_fresh(FX_MOE_Q4);
  fx_config_set(dir, "rope_parameters",
                cJSON_Parse("{\"rope_type\": \"default\", \"partial_rotary_factor\": 1e30}"));
  fx_expect_fail("partial_rotary_factor 1e30", dir, TSR_ERR_IO, "config.json",
                 "partial_rotary_factor 1e+30 on head_dim 16 gives 0 rotated dims");
  fx_expect_fail("rope_theta 0", with_key(FX_DENSE_HF, "rope_parameters", "{\"rope_theta\": 0}"),
                 TSR_ERR_IO, "config.json", "rope_theta 0");
}

/* ---- the quantization block ----------------------------------------------------------------- */

static const char *with_quantization(const char *block) {
  const char *dir = with_key(FX_MOE_Q4, "quantization", block);
  fx_config_set(dir, "quantization_config", NULL);
  return dir;
}

static void check_quantization(void) {
  fx_expect_fail("quantization mode int3",
                 with_quantization("{\"group_size\": 64, \"bits\": 4, \"mode\": \"int3\"}"),
                 TSR_ERR_UNSUPPORTED, "config.json", "\"int3\"");
  fx_expect_fail("quantization mode a number", with_quantization("{\"mode\": 7}"),
                 TSR_ERR_UNSUPPORTED, "config.json", "quantization mode");
  fx_expect_fail("quantization a string", with_quantization("\"q4\""), TSR_ERR_IO, "config.json",
                 "\"quantization\" must be an object");
  fx_expect_fail("quantization bits 0", with_quantization("{\"group_size\": 64, \"bits\": 0}"),
                 TSR_ERR_IO, "config.json", "\"bits\"");
  fx_expect_fail("override with bad group_size",
                 with_quantization("{\"group_size\": 64, \"bits\": 4, "
                                   "\"lm_head\": {\"group_size\": -64, \"bits\": 4}}"),
                 TSR_ERR_IO, "config.json", "\"group_size\"");
}

/* ---- shards and tokenizer.json -------------------------------------------------------------- */

static void check_shards(void) {
  const char *dir = fx_fresh(FX_MOE_Q4);
  fx_copy_file(fx_path(FX_MOE_Q4, "model.safetensors.index.json"),
               fx_path(dir, "model.safetensors.index.json"));
  CHECK_EQ_INT(rename(fx_path(dir, "model.safetensors"), fx_path(dir, "renamed.safetensors")), 0);
  fx_expect_fail("shard named by the index missing", dir, TSR_ERR_IO, "model.safetensors", NULL);

  dir = fx_fresh(FX_MOE_Q4);
  size_t n = 0;
  char *bytes = fx_read_file(fx_path(FX_MOE_Q4, "model.safetensors"), &n);
  fx_write_bytes(fx_path(dir, "model.safetensors"), bytes, n / 2);
  free(bytes);
  fx_expect_fail("shard truncated to half", dir, TSR_ERR_IO, "model.safetensors", NULL);

  dir = fx_fresh(FX_MOE_Q4);
  CHECK_EQ_INT(unlink(fx_path(dir, "model.safetensors")), 0);
  fx_expect_fail("no safetensors at all", dir, TSR_ERR_IO, dir, NULL);
}

static void check_tokenizer(void) {
  const char *dir = fx_fresh(FX_MOE_Q4);
  fx_write_text(fx_path(dir, "tokenizer.json"), "{\"model\": {\"type\": \"BPE\", ");
  fx_expect_fail("tokenizer.json malformed", dir, TSR_ERR_IO, "tokenizer.json", NULL);

  dir = fx_fresh(FX_MOE_Q4);
  char *text = fx_read_file(TSR_TEST_DATA_DIR "/tokenizer/glm_style.json", NULL);
  cJSON *tok = cJSON_Parse(text);
  free(text);
  CHECK(tok != NULL);
  cJSON *model = cJSON_GetObjectItemCaseSensitive(tok, "model");
  cJSON_ReplaceItemInObjectCaseSensitive(model, "type", cJSON_CreateString("WordPiece"));
  text = cJSON_PrintUnformatted(tok);
  fx_write_text(fx_path(dir, "tokenizer.json"), text);
  free(text);
  cJSON_Delete(tok);
  fx_expect_fail("tokenizer of type WordPiece", dir, TSR_ERR_UNSUPPORTED, "tokenizer.json",
                 "WordPiece");
}

/* ---- the ledger cap (children: a cap installs once per process) ----------------------------- */

static void child_cap(const char *dir) {
  tsr_model_options opt = tsr_model_default_options();
  opt.backing_cap = 1024;
  tsr_model *m = NULL;
  CHECK_STATUS(tsr_model_load(&m, dir, &opt), TSR_ERR_CAP);
  CHECK(m == NULL);
  CHECK_MESSAGE("refused by the cap");
  CHECK_MESSAGE("model.safetensors");
  CHECK_NO_LEAKS();
  /* the cap stays installed: another cap is refused, and a load without one still hits it */
  opt.backing_cap = 1 << 30;
  CHECK_STATUS(tsr_model_load(&m, dir, &opt), TSR_ERR_STATE);
  CHECK(m == NULL);
  CHECK_NO_LEAKS();
  CHECK_STATUS(tsr_model_load(&m, dir, NULL), TSR_ERR_CAP);
  CHECK_NO_LEAKS();
}

static void child_late_cap(const char *dir) {
  tsr_array *a = NULL; /* the CPU's first backing attempt */
  CHECK_OK(tsr_array_from_data(&a, (float[]){1.0f}, TSR_FLOAT32, (int64_t[]){1}, 1));
  tsr_array_release(a);
  tsr_model_options opt = tsr_model_default_options();
  opt.backing_cap = 1 << 30;
  tsr_model *m = NULL;
  CHECK_STATUS(tsr_model_load(&m, dir, &opt), TSR_ERR_STATE);
  CHECK(m == NULL);
  CHECK_NO_LEAKS();
  CHECK_OK(tsr_model_load(&m, dir, NULL)); /* without a cap it loads */
  tsr_model_free(m);
}

static void check_caps(void) {
  test_rerun("cap", FX_MOE_Q4, NULL, NULL);
  test_rerun("late-cap", FX_MOE_Q4, NULL, NULL);
  printf("  %-44s TSR_ERR_CAP, then TSR_ERR_STATE (children)\n", "backing_cap 1K");
}

int main(int argc, char **argv) {
  if (argc == 3) {
    if (strcmp(argv[1], "cap") == 0)
      child_cap(argv[2]);
    else if (strcmp(argv[1], "late-cap") == 0)
      child_late_cap(argv[2]);
    else
      CHECK_FAIL_("unknown child mode '%s'", argv[1]);
  } else {
    fx_make_root("model-load-errors", fx_root);
    check_files();
    check_config_keys();
    check_rope();
    check_quantization();
    check_shards();
    check_tokenizer();
    check_caps();
    fx_remove_tree(fx_root);
    printf("test_model_load_errors: %d cases\n", fx_cases);
  }
  tsr_memory_clear_cache(fx_cpu);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
