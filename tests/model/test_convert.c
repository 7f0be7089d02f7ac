/* tests/model/test_convert.c — tsr_model_convert against mlx-lm: the committed tiny Hugging Face
 * checkpoints (tests/data/glm/NAME/hf) converted by tessera give, tensor for tensor, the bytes of
 * mlx-lm 0.32.2's own conversions committed beside them (affine 4-bit g64 dense, MoE and MoE
 * with group routing; 8-bit g32; mxfp4; 4-bit g32 after a bfloat16 cast), the same config.json
 * and index metadata; the result loads and runs (logits equal to those of mlx-lm's conversion,
 * and within mlx-lm's own distance of transformers' fp32 logits). Then layouts that must give
 * the same tensors: small shards (several files and an index), a sharded bfloat16 source with
 * an MTP layer and tokenizer files, transformers 5's fused experts; and a group size that
 * divides only some widths (those layers alone quantized). */
#include <math.h>

#include "convert_fixture.h"

enum { T = 12, V = 256 };

static int32_t *tokens;

typedef struct {
  const char *model, *variant;
  tsr_quant_mode mode;
  int bits, group_size;
  tsr_dtype cast; /* 0: none asked for */
} mlx_case;

static const mlx_case mlx_cases[] = {
    {"dense", "mlx-q4g64", TSR_QUANT_AFFINE, 0, 0, 0},
    {"moe", "mlx-q4g64", TSR_QUANT_AFFINE, 0, 0, 0},
    {"moe", "mlx-q8g32", TSR_QUANT_AFFINE, 8, 32, 0},
    {"moe", "mlx-mxfp4", TSR_QUANT_MXFP4, 0, 0, 0},
    {"moe", "mlx-q4g32-bf16", TSR_QUANT_AFFINE, 4, 32, TSR_BFLOAT16},
    {"moe_g2", "mlx-q4g64", TSR_QUANT_AFFINE, 0, 0, 0},
};

/* The logits [T, V] of the golden tokens through the checkpoint at `dir`. */
static float *logits_of(const char *dir) {
  return fx_logits(dir, tokens, T, V);
}

static double max_abs_diff(const float *a, const float *b) {
  double worst = 0;
  for (size_t i = 0; i < T * V; i++)
    worst = fmax(worst, fabs((double)a[i] - (double)b[i]));
  return worst;
}

static const char *convert(const char *src, const char *name, const tsr_convert_options *opt) {
  const char *out = cv_out(name);
  CHECK_OK(tsr_model_convert(src, out, opt));
  CHECK(!cv_has_partial(fx_root));
  CHECK_NO_LEAKS();
  return out;
}

/* config.json and the index metadata equal mlx-lm's (as JSON values, key order aside). */
static void check_side_files(const char *ours, const char *mlx) {
  cJSON *a = fx_config_read(ours), *b = fx_config_read(mlx);
  if (!cJSON_Compare(a, b, true)) CHECK_FAIL_("%s/config.json differs from %s's", ours, mlx);
  cJSON_Delete(a);
  cJSON_Delete(b);
  char *ta = fx_read_file(fx_path(ours, "model.safetensors.index.json"), NULL);
  char *tb = fx_read_file(fx_path(mlx, "model.safetensors.index.json"), NULL);
  a = cJSON_Parse(ta);
  b = cJSON_Parse(tb);
  CHECK(a && b);
  if (!cJSON_Compare(a, b, true)) CHECK_FAIL_("%s's index differs from %s's", ours, mlx);
  cJSON_Delete(a);
  cJSON_Delete(b);
  free(ta);
  free(tb);
}

/* mlx-lm's own distance from transformers' fp32 logits for this conversion (manifest.json). */
static double mlx_vs_hf(const char *model, const char *variant) {
  char *text = fx_read_file(GLM_DATA "/manifest.json", NULL);
  cJSON *root = cJSON_Parse(text);
  const cJSON *m = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "models"), model);
  const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(m, "variants"), variant);
  const cJSON *f = cJSON_GetObjectItem(cJSON_GetObjectItem(v, "figures"), "mlx_vs_hf_fp32_max_abs");
  CHECK(cJSON_IsNumber(f));
  double value = f->valuedouble;
  cJSON_Delete(root);
  free(text);
  return value;
}

static void check_against_mlx(const mlx_case *c) {
  char src[512], mlx[512], name[64];
  snprintf(src, sizeof src, GLM_DATA "/%s/hf", c->model);
  snprintf(mlx, sizeof mlx, GLM_DATA "/%s/%s", c->model, c->variant);
  snprintf(name, sizeof name, "%s-%s", c->model, c->variant);
  tsr_convert_options opt = tsr_convert_default_options();
  opt.mode = c->mode;
  opt.bits = c->bits;
  opt.group_size = c->group_size;
  opt.cast = c->cast != 0;
  opt.dtype = c->cast;
  free(tokens);
  tokens = golden_i32(fx_path(GLM_DATA, c->model), "tokens.npy", T);
  const char *out = convert(src, name, &opt);
  size_t n = cv_same_tensors(out, mlx);
  check_side_files(out, mlx);
  float *ours = logits_of(out), *theirs = logits_of(mlx);
  float *hf = golden_f32(fx_path(GLM_DATA, c->model), "logits_full.npy", T * V);
  CHECK(memcmp(ours, theirs, T * V * sizeof *ours) == 0);
  double err = max_abs_diff(ours, hf), bound = 1.05 * mlx_vs_hf(c->model, c->variant) + 1e-3;
  if (err > bound)
    CHECK_FAIL_("%s: logits %g from transformers', mlx-lm's bound %g", name, err, bound);
  printf("  %-22s %3zu tensors = mlx-lm's; logits %.3g from HF fp32 (bound %.3g)\n", name, n, err,
         bound);
  free(ours);
  free(theirs);
  free(hf);
  CHECK_NO_LEAKS();
}

/* Data bytes of one safetensors file (its size less the header). */
static uint64_t data_bytes(const char *path, size_t *tensors) {
  tsr_safetensors *st = NULL;
  CHECK_OK(tsr_safetensors_open(&st, path));
  uint64_t total = 0;
  *tensors = tsr_safetensors_count(st);
  for (size_t i = 0; i < *tensors; i++) {
    tsr_tensor_info info;
    CHECK_OK(tsr_safetensors_info(st, i, &info));
    total += info.nbytes;
  }
  tsr_safetensors_close(st);
  return total;
}

static void check_shards(const char *whole) {
  enum { LIMIT = 64 << 10 };
  tsr_convert_options opt = tsr_convert_default_options();
  opt.shard_bytes = LIMIT;
  const char *out = convert(FX_MOE_HF, "moe-sharded", &opt);
  CHECK(!cv_has_entry(out, "model.safetensors") || cv_has_entry(out, "model.safetensors.index"));
  int shards = 0;
  char file[128];
  for (;; shards++) {
    snprintf(file, sizeof file, "model-%05d-of-", shards + 1);
    if (!cv_has_entry(out, file)) break;
  }
  CHECK(shards >= 3);
  for (int i = 0; i < shards; i++) {
    snprintf(file, sizeof file, "model-%05d-of-%05d.safetensors", i + 1, shards);
    size_t tensors = 0;
    uint64_t bytes = data_bytes(fx_path(out, file), &tensors);
    if (bytes > LIMIT && tensors > 1)
      CHECK_FAIL_("%s holds %llu bytes", file, (unsigned long long)bytes);
  }
  CHECK_EQ_U64(cv_same_tensors(out, whole), 105);
  printf("  %-22s %d shards of at most 64 KiB, same tensors\n", "moe-sharded", shards);
}

/* moe/hf in bfloat16 (the correction bias kept float32) in two shards with an index, with an
 * MTP layer (model.layers.3.*), torch_dtype bfloat16 and tokenizer files. */
static const char *bf16_source(void) {
  const char *dir = cv_out("moe-bf16-src");
  CHECK_EQ_INT(mkdir(dir, 0755), 0);
  fx_tensors all, shards[2] = {{.n = 0}, {.n = 0}};
  fx_tensors_read(&all, fx_path(FX_MOE_HF, "model.safetensors"));
  for (size_t i = 0; i < all.n; i++)
    if (!strstr(all.names[i], "e_score_correction_bias"))
      fx_tensors_astype(&all, all.names[i], TSR_BFLOAT16);
  int64_t h = 64;
  fx_tensors_zeros(&all, "model.layers.3.input_layernorm.weight", &h, 1, TSR_BFLOAT16);
  int64_t eh[2] = {64, 128};
  fx_tensors_zeros(&all, "model.layers.3.eh_proj.weight", eh, 2, TSR_BFLOAT16);
  static const char *const files[2] = {"model-00001-of-00002.safetensors",
                                       "model-00002-of-00002.safetensors"};
  cJSON *index = cJSON_CreateObject(), *map = cJSON_AddObjectToObject(index, "weight_map");
  for (size_t i = 0; i < all.n; i++) {
    fx_tensors_put(&shards[i % 2], all.names[i], tsr_array_retain(all.arrays[i]));
    cJSON_AddStringToObject(map, all.names[i], files[i % 2]);
  }
  for (int s = 0; s < 2; s++) {
    fx_tensors_save(&shards[s], fx_path(dir, files[s]));
    fx_tensors_free(&shards[s]);
  }
  fx_tensors_free(&all);
  char *text = cJSON_Print(index);
  fx_write_text(fx_path(dir, "model.safetensors.index.json"), text);
  free(text);
  cJSON_Delete(index);
  fx_copy_file(fx_path(FX_MOE_HF, "config.json"), fx_path(dir, "config.json"));
  fx_copy_file(fx_path(FX_MOE_HF, "generation_config.json"),
               fx_path(dir, "generation_config.json"));
  fx_config_set(dir, "torch_dtype", cJSON_CreateString("bfloat16"));
  fx_copy_file(TSR_TEST_DATA_DIR "/tokenizer/glm_style.json", fx_path(dir, "tokenizer.json"));
  fx_write_text(fx_path(dir, "tokenizer_config.json"), "{\"model_max_length\": 512}\n");
  return dir;
}

static void check_bf16_source(void) {
  const char *src = bf16_source();
  const char *out = convert(src, "moe-from-bf16", NULL);
  /* the same tensors as casting the float32 source to bfloat16 first */
  tsr_convert_options opt = tsr_convert_default_options();
  opt.cast = true;
  opt.dtype = TSR_BFLOAT16;
  const char *ref = convert(FX_MOE_HF, "moe-cast-bf16", &opt);
  CHECK_EQ_U64(cv_same_tensors(out, ref), 105);
  tsr_safetensors *st = NULL;
  tsr_tensor_info info;
  CHECK_OK(tsr_safetensors_open(&st, out));
  CHECK(!tsr_safetensors_has(st, "model.layers.3.input_layernorm.weight"));
  CHECK_OK(tsr_safetensors_find(st, "model.layers.1.mlp.gate.e_score_correction_bias", &info));
  CHECK(info.dtype == TSR_FLOAT32);
  CHECK_OK(tsr_safetensors_find(st, "model.layers.1.mlp.switch_mlp.up_proj.scales", &info));
  CHECK(info.dtype == TSR_BFLOAT16);
  tsr_safetensors_close(st);
  static const char *const copied[] = {"tokenizer.json", "tokenizer_config.json",
                                       "generation_config.json"};
  for (int i = 0; i < 3; i++) {
    size_t na = 0, nb = 0;
    char *a = fx_read_file(fx_path(src, copied[i]), &na),
         *b = fx_read_file(fx_path(out, copied[i]), &nb);
    CHECK(na == nb && memcmp(a, b, na) == 0);
    free(a);
    free(b);
  }
  tsr_model *m = NULL;
  CHECK_OK(tsr_model_load(&m, out, NULL));
  CHECK(tsr_model_has_tokenizer(m));
  tsr_model_free(m);
  CHECK_NO_LEAKS();
  printf("  %-22s 2 bf16 shards + MTP + tokenizer = the cast conversion\n", "moe-from-bf16");
}

/* moe/hf with each MoE layer's experts fused as transformers 5 can save them:
 * experts.gate_up_proj [E, 2 Im, H] (gate rows first) and experts.down_proj [E, H, Im]. */
static void fuse_layer(fx_tensors *t, int layer) {
  enum { E = 8 };
  tsr_array *gate_up[E], *down[E], *fused = NULL;
  char name[128];
  for (int e = 0; e < E; e++) {
    tsr_array *pair[2], *cat = NULL;
    static const char *const projs[3] = {"gate_proj", "up_proj", "down_proj"};
    for (int p = 0; p < 3; p++) {
      snprintf(name, sizeof name, "model.layers.%d.mlp.experts.%d.%s.weight", layer, e, projs[p]);
      tsr_array *a = tsr_array_retain(fx_tensors_get(t, name));
      fx_tensors_drop(t, name);
      if (p < 2) {
        pair[p] = a;
        continue;
      }
      CHECK_OK(tsr_expand_dims(&down[e], a, 0, NULL));
      tsr_array_release(a);
    }
    CHECK_OK(tsr_concatenate(&cat, pair, 2, 0, NULL));
    CHECK_OK(tsr_expand_dims(&gate_up[e], cat, 0, NULL));
    tsr_array_release(cat);
    tsr_array_release(pair[0]);
    tsr_array_release(pair[1]);
  }
  CHECK_OK(tsr_concatenate(&fused, gate_up, E, 0, NULL));
  snprintf(name, sizeof name, "model.layers.%d.mlp.experts.gate_up_proj", layer);
  fx_tensors_put(t, name, fused);
  CHECK_OK(tsr_concatenate(&fused, down, E, 0, NULL));
  snprintf(name, sizeof name, "model.layers.%d.mlp.experts.down_proj", layer);
  fx_tensors_put(t, name, fused);
  for (int e = 0; e < E; e++) {
    tsr_array_release(gate_up[e]);
    tsr_array_release(down[e]);
  }
}

static void check_fused_experts(const char *per_expert) {
  const char *dir = cv_out("moe-fused-src");
  CHECK_EQ_INT(mkdir(dir, 0755), 0);
  fx_copy_file(fx_path(FX_MOE_HF, "config.json"), fx_path(dir, "config.json"));
  fx_tensors t;
  fx_tensors_read(&t, fx_path(FX_MOE_HF, "model.safetensors"));
  fuse_layer(&t, 1);
  fuse_layer(&t, 2);
  fx_tensors_save(&t, fx_path(dir, "model.safetensors"));
  fx_tensors_free(&t);
  tsr_convert_options zero = {0}; /* all zero is the default */
  const char *out = convert(dir, "moe-from-fused", &zero);
  CHECK_EQ_U64(cv_same_tensors(out, per_expert), 105);
  printf("  %-22s transformers 5 fused experts = per-expert conversion\n", "moe-from-fused");
}

/* Group 128 divides only the dense MLP's input width (intermediate_size 128), not hidden_size
 * (64): only the three down_proj are quantized, the rest stays float, as mlx-lm does; the config
 * has the block all the same, and the checkpoint loads. */
static void check_partly_quantized(void) {
  tsr_convert_options opt = tsr_convert_default_options();
  opt.group_size = 128;
  const char *out = convert(FX_DENSE_HF, "dense-g128", &opt);
  cJSON *cfg = fx_config_read(out);
  CHECK(cJSON_IsObject(cJSON_GetObjectItem(cfg, "quantization")));
  cJSON_Delete(cfg);
  tsr_safetensors *st = NULL;
  CHECK_OK(tsr_safetensors_open(&st, out));
  int packed = 0;
  for (size_t i = 0; i < tsr_safetensors_count(st); i++) {
    tsr_tensor_info info;
    CHECK_OK(tsr_safetensors_info(st, i, &info));
    bool down = strstr(info.name, "mlp.down_proj.") != NULL;
    if (info.dtype == TSR_UINT32) packed++;
    if (!down && info.dtype != TSR_FLOAT32)
      CHECK_FAIL_("%s is %s", info.name, tsr_dtype_name(info.dtype));
  }
  CHECK_EQ_INT(packed, 3);
  tsr_safetensors_close(st);
  float *a = logits_of(out);
  free(a);
  CHECK_NO_LEAKS();
  printf("  %-22s group 128: only the 3 down_proj (width 128) quantized\n", "dense-g128");
}

int main(void) {
  tokens = golden_i32(GLM_DATA "/dense", "tokens.npy", T);
  fx_make_root("convert", fx_root);
  for (size_t i = 0; i < sizeof mlx_cases / sizeof mlx_cases[0]; i++)
    check_against_mlx(&mlx_cases[i]);
  const char *whole = GLM_DATA "/moe/mlx-q4g64";
  check_shards(whole);
  check_bf16_source();
  check_fused_experts(whole);
  check_partly_quantized();
  fx_remove_tree(fx_root);
  free(tokens);
  tsr_memory_clear_cache(fx_cpu);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  printf("test_convert: ok\n");
  return 0;
}
