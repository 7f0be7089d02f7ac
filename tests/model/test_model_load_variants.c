/* tests/model/test_model_load_variants.c — checkpoint folders that differ from the committed tiny
 * ones in layout but not in meaning, each of which must load and give bit-identical logits to the
 * original: config.json in the older key form (top-level rope_theta, no rope_parameters), extra
 * tensors of a multi-token-prediction layer past num_hidden_layers, two shards with an index that
 * puts a module's .weight and .scales in different files, tied embeddings without lm_head (the
 * float and the quantized embedding), the quantization block under quantization_config only, no
 * generation_config.json, and a tokenizer.json beside the weights. */
#include "model_fixture.h"

enum { T = 12, V = 256 };

static int32_t *tokens;

/* The logits [T, V] of the golden tokens through the checkpoint at `dir`. */
static float *logits_of(const char *dir) {
  return fx_logits(dir, tokens, T, V);
}

/* The two checkpoints give the same logits bit for bit (`same`), or differ somewhere. */
static void compare(const char *what, const char *dir_a, const char *dir_b, bool same) {
  float *a = logits_of(dir_a), *b = logits_of(dir_b);
  size_t first = T * V;
  for (size_t i = 0; i < T * V && first == T * V; i++)
    if (memcmp(&a[i], &b[i], sizeof a[i]) != 0) first = i;
  if (same && first != T * V)
    CHECK_FAIL_("%s: logits differ at [%zu, %zu]: %.9g vs %.9g", what, first / V, first % V,
                (double)a[first], (double)b[first]);
  if (!same && first == T * V) CHECK_FAIL_("%s: logits should differ but are identical", what);
  printf("  %-50s %s\n", what, same ? "bit-identical" : "differ, as they should");
  free(a);
  free(b);
  CHECK_NO_LEAKS();
}

static void check_config_v4(void) {
  const char *dir = fx_fresh(FX_DENSE_HF);
  fx_copy_file(fx_path(FX_DENSE_HF, "config.v4.json"), fx_path(dir, "config.json"));
  compare("config.json in the transformers 4 form", FX_DENSE_HF, dir, true);
  fx_cases++;
}

/* Tensors of layer num_hidden_layers (GLM-4.5's MTP layer), of shapes and dtypes that would fail
 * anywhere else: never read. */
static void check_mtp_layer(void) {
  const char *dir = fx_fresh(FX_MOE_Q4);
  fx_tensors t;
  fx_tensors_read(&t, fx_path(FX_MOE_Q4, "model.safetensors"));
  fx_tensors_zeros(&t, "model.layers.3.eh_proj.weight", (int64_t[]){64, 128}, 2, TSR_FLOAT32);
  fx_tensors_zeros(&t, "model.layers.3.enorm.weight", (int64_t[]){64}, 1, TSR_INT32);
  fx_tensors_zeros(&t, "model.layers.3.self_attn.q_proj.weight", (int64_t[]){3, 5}, 2, TSR_UINT32);
  fx_tensors_zeros(&t, "model.layers.3.mlp.switch_mlp.gate_proj.scales", (int64_t[]){2}, 1,
                   TSR_INT8);
  fx_tensors_save(&t, fx_path(dir, "model.safetensors"));
  fx_tensors_free(&t);
  compare("MTP layer tensors (model.layers.3.*) ignored", FX_MOE_Q4, dir, true);
  fx_cases++;
}

/* Writes dir/model.safetensors.index.json for the names in `shards[0..1]`. */
static void write_index(const char *dir, const fx_tensors *shards, const char *const *files) {
  cJSON *root = cJSON_CreateObject(), *map = cJSON_CreateObject();
  cJSON *meta = cJSON_AddObjectToObject(root, "metadata");
  cJSON_AddNumberToObject(meta, "total_size", 260288);
  for (int s = 0; s < 2; s++)
    for (size_t i = 0; i < shards[s].n; i++)
      cJSON_AddStringToObject(map, shards[s].names[i], files[s]);
  cJSON_AddItemToObject(root, "weight_map", map);
  char *text = cJSON_Print(root);
  fx_write_text(fx_path(dir, "model.safetensors.index.json"), text);
  free(text);
  cJSON_Delete(root);
}

/* Every .scales in the first shard, every .weight and .biases in the second. */
static void check_two_shards(void) {
  const char *dir = fx_fresh(FX_MOE_Q4);
  CHECK_EQ_INT(unlink(fx_path(dir, "model.safetensors")), 0);
  fx_tensors all, shards[2] = {{.n = 0}, {.n = 0}};
  fx_tensors_read(&all, fx_path(FX_MOE_Q4, "model.safetensors"));
  for (size_t i = 0; i < all.n; i++) {
    const char *dot = strrchr(all.names[i], '.');
    fx_tensors *to = &shards[strcmp(dot, ".scales") == 0 ? 0 : 1];
    fx_tensors_put(to, all.names[i], tsr_array_retain(all.arrays[i]));
  }
  CHECK(shards[0].n > 10 && shards[1].n > 10);
  static const char *const files[2] = {"model-00001-of-00002.safetensors",
                                       "model-00002-of-00002.safetensors"};
  for (int s = 0; s < 2; s++)
    fx_tensors_save(&shards[s], fx_path(dir, files[s]));
  write_index(dir, shards, files);
  fx_tensors_free(&shards[0]);
  fx_tensors_free(&shards[1]);
  fx_tensors_free(&all);
  compare("two shards, .weight and .scales apart", FX_MOE_Q4, dir, true);
  fx_cases++;
}

/* `src` with the tensors of `head` (lm_head.weight, or its .weight/.scales/.biases) either
 * dropped and tie_word_embeddings true (tied), or replaced by the embedding's (untied). */
static void tie_copy(const char *src, const char *dir, bool tied, const char *const *parts,
                     int n_parts) {
  fx_tensors t;
  fx_tensors_read(&t, fx_path(src, "model.safetensors"));
  for (int i = 0; i < n_parts; i++) {
    char head[64], embed[64];
    snprintf(head, sizeof head, "lm_head.%s", parts[i]);
    snprintf(embed, sizeof embed, "model.embed_tokens.%s", parts[i]);
    if (tied)
      fx_tensors_drop(&t, head);
    else
      fx_tensors_put(&t, head, tsr_array_retain(fx_tensors_get(&t, embed)));
  }
  fx_tensors_save(&t, fx_path(dir, "model.safetensors"));
  fx_tensors_free(&t);
  if (tied) fx_config_set(dir, "tie_word_embeddings", cJSON_CreateTrue());
}

static void check_tied(const char *what, const char *src, const char *const *parts, int n_parts) {
  char untied[512];
  snprintf(untied, sizeof untied, "%s", fx_fresh(src));
  tie_copy(src, untied, false, parts, n_parts);
  fx_cases++;
  const char *tied = fx_fresh(src);
  tie_copy(src, tied, true, parts, n_parts);
  fx_cases++;
  compare(what, tied, untied, true);
  compare("  ...and the original lm_head differs", tied, src, false);
}

static void check_quantization_config_only(void) {
  const char *dir = fx_fresh(FX_MOE_Q4);
  fx_config_set(dir, "quantization", NULL);
  cJSON *config = fx_config_read(dir);
  CHECK(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(config, "quantization_config")));
  cJSON_Delete(config);
  compare("quantization_config without quantization", FX_MOE_Q4, dir, true);
  fx_cases++;
}

static void check_no_generation_config(void) {
  const char *dir = fx_fresh(FX_MOE_Q4);
  CHECK_EQ_INT(unlink(fx_path(dir, "generation_config.json")), 0);
  compare("no generation_config.json", FX_MOE_Q4, dir, true);
  fx_cases++;
}

static void check_tokenizer(void) {
  const char *dir = fx_fresh(FX_MOE_Q4);
  fx_copy_file(TSR_TEST_DATA_DIR "/tokenizer/glm_style.json", fx_path(dir, "tokenizer.json"));
  tsr_model *m = NULL;
  CHECK_OK(tsr_model_load(&m, dir, NULL));
  CHECK(tsr_model_has_tokenizer(m));
  int32_t *ids = NULL;
  size_t n = 0;
  CHECK_OK(tsr_model_encode(m, "[gMASK]<sop>hello", &ids, &n));
  CHECK(n >= 3);
  char *text = NULL;
  CHECK_OK(tsr_model_decode(m, ids, n, &text));
  CHECK(strcmp(text, "[gMASK]<sop>hello") == 0);
  free(text);
  free(ids);
  tsr_model_free(m);
  CHECK_NO_LEAKS();
  compare("tokenizer.json beside the weights", FX_MOE_Q4, dir, true);
  fx_cases++;
}

int main(void) {
  tokens = golden_i32(GLM_DATA "/dense", "tokens.npy", T);
  fx_make_root("model-load-variants", fx_root);
  check_config_v4();
  check_mtp_layer();
  check_two_shards();
  static const char *const float_head[] = {"weight"}, *const packed_head[] = {"weight", "scales",
                                                                              "biases"};
  check_tied("tied float embedding, no lm_head", FX_DENSE_HF, float_head, 1);
  check_tied("tied 4-bit embedding, no lm_head.*", FX_MOE_Q4, packed_head, 3);
  check_quantization_config_only();
  check_no_generation_config();
  check_tokenizer();
  fx_remove_tree(fx_root);
  free(tokens);
  printf("test_model_load_variants: %d checkpoints\n", fx_cases);
  tsr_memory_clear_cache(fx_cpu);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
