/* tools/tessera/demo_model.c — `tessera demo-model -o DIR`: writes config.json, model.safetensors
 * (+ its index) and tokenizer.json of a small GLM-4.5-MoE-shaped model: 4 layers (1 dense, 3 MoE
 * with 16 experts, 4 per token, a shared expert), QK-norm, random weights from a fixed seed,
 * every linear and the embedding quantized to affine 4-bit, group 64, with bfloat16 scales, the
 * router and norms bfloat16: the layout mlx-lm writes for GLM-4.5. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "demo_model.h"

enum {

  DEMO_HIDDEN = 256,
  DEMO_DENSE_WIDTH = 512,
  DEMO_LAYERS = 4,
  DEMO_HEADS = 8,
  DEMO_KV_HEADS = 2,
  DEMO_HEAD_DIM = 32,
  DEMO_EXPERT_WIDTH = 128,
  DEMO_EXPERTS = 16,
  DEMO_PER_TOKEN = 4,
  DEMO_GROUP = 64,
  DEMO_BITS = 4
};

static const char demo_usage[] =
    "usage: tessera demo-model -o DIR\n"
    "\n"
    "Writes a small GLM-4.5-MoE-shaped checkpoint with deterministic random weights in the\n"
    "mlx-community 4-bit layout (config.json, model.safetensors and its index, tokenizer.json)\n"
    "into DIR, which is created. Its text means nothing; everything else about running it is\n"
    "real. `make run` uses it.\n";

tsr_status demo_write_file(const char *path, const char *bytes, size_t n) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f) return tsr_error_set(TSR_ERR_IO, "demo-model: cannot write %s", tmp);
  bool ok = fwrite(bytes, 1, n, f) == n;
  ok = (fclose(f) == 0) && ok;
  if (ok && rename(tmp, path) == 0) return TSR_OK;
  unlink(tmp);
  return tsr_error_set(TSR_ERR_IO, "demo-model: cannot write %s", path);
}

/* The tensors to write, in order. */
typedef struct {
  char *names[512];
  tsr_array *arrays[512];
  size_t n;
  uint64_t seed;
  tsr_status st;
} tensor_list;

static void add(tensor_list *l, const char *name, tsr_array *a) {
  if (l->st != TSR_OK || !a) return;
  if (l->n == 512 || !(l->names[l->n] = strdup(name))) {
    tsr_array_release(a);
    l->st = tsr_error_set(TSR_ERR_NOMEM, "demo-model: too many tensors");
    return;
  }
  l->arrays[l->n++] = a;
}

static tsr_array *random_bf16(tensor_list *l, const int64_t *shape, int ndim, double std) {
  tsr_array *a = NULL;
  if (l->st == TSR_OK)
    l->st = tsr_random_normal(&a, shape, ndim, 0.0, std, TSR_BFLOAT16, l->seed++, NULL);
  return a;
}

static void add_norm(tensor_list *l, const char *name, int64_t width) {
  tsr_array *a = NULL;
  if (l->st == TSR_OK) l->st = tsr_ones(&a, &width, 1, TSR_BFLOAT16, NULL);
  add(l, name, a);
}

/* A quantized linear [experts?, out, in] at module path `path`: weight, scales, biases. */
static void add_linear(tensor_list *l, const char *path, int64_t experts, int64_t out, int64_t in) {
  int64_t shape[3] = {experts, out, in};
  int ndim = experts ? 3 : 2;
  tsr_array *w = random_bf16(l, experts ? shape : shape + 1, ndim, 1.0 / sqrt((double)in));
  tsr_array *wq = NULL, *scales = NULL, *biases = NULL;
  if (l->st == TSR_OK)
    l->st = tsr_quantize(&wq, &scales, &biases, w, DEMO_GROUP, DEMO_BITS, TSR_QUANT_AFFINE, NULL);
  tsr_array_release(w);
  char name[256];
  snprintf(name, sizeof name, "%s.weight", path);
  add(l, name, wq);
  snprintf(name, sizeof name, "%s.scales", path);
  add(l, name, scales);
  snprintf(name, sizeof name, "%s.biases", path);
  add(l, name, biases);
}

static void add_float(tensor_list *l, const char *name, const int64_t *shape, int ndim, double std,
                      tsr_dtype dtype) {
  tsr_array *a = random_bf16(l, shape, ndim, std), *c = NULL;
  if (l->st == TSR_OK && dtype != TSR_BFLOAT16) l->st = tsr_astype(&c, a, dtype, NULL);
  if (c) tsr_array_release(a);
  add(l, name, c ? c : a);
}

static void add_attention(tensor_list *l, const char *prefix) {
  char path[128];
  int64_t q_width = DEMO_HEADS * DEMO_HEAD_DIM, kv_width = DEMO_KV_HEADS * DEMO_HEAD_DIM;
  static const char *const names[3] = {"q_proj", "k_proj", "v_proj"};
  for (int i = 0; i < 3; i++) {
    int64_t width = i == 0 ? q_width : kv_width;
    snprintf(path, sizeof path, "%s.self_attn.%s", prefix, names[i]);
    add_linear(l, path, 0, width, DEMO_HIDDEN);
    snprintf(path, sizeof path, "%s.self_attn.%s.bias", prefix, names[i]);
    add_float(l, path, &width, 1, 0.02, TSR_BFLOAT16);
  }
  snprintf(path, sizeof path, "%s.self_attn.o_proj", prefix);
  add_linear(l, path, 0, DEMO_HIDDEN, q_width);
  snprintf(path, sizeof path, "%s.self_attn.q_norm.weight", prefix);
  add_norm(l, path, DEMO_HEAD_DIM);
  snprintf(path, sizeof path, "%s.self_attn.k_norm.weight", prefix);
  add_norm(l, path, DEMO_HEAD_DIM);
}

/* gate/up/down of width `width` under `prefix`, stacked over `experts` when > 0. */
static void add_mlp(tensor_list *l, const char *prefix, int64_t experts, int64_t width) {
  char path[160];
  snprintf(path, sizeof path, "%s.gate_proj", prefix);
  add_linear(l, path, experts, width, DEMO_HIDDEN);
  snprintf(path, sizeof path, "%s.up_proj", prefix);
  add_linear(l, path, experts, width, DEMO_HIDDEN);
  snprintf(path, sizeof path, "%s.down_proj", prefix);
  add_linear(l, path, experts, DEMO_HIDDEN, width);
}

static void add_layer(tensor_list *l, int index) {
  char prefix[64], path[160];
  snprintf(prefix, sizeof prefix, "model.layers.%d", index);
  snprintf(path, sizeof path, "%s.input_layernorm.weight", prefix);
  add_norm(l, path, DEMO_HIDDEN);
  snprintf(path, sizeof path, "%s.post_attention_layernorm.weight", prefix);
  add_norm(l, path, DEMO_HIDDEN);
  add_attention(l, prefix);
  if (index == 0) {
    snprintf(path, sizeof path, "%s.mlp", prefix);
    add_mlp(l, path, 0, DEMO_DENSE_WIDTH);
    return;
  }
  int64_t router[2] = {DEMO_EXPERTS, DEMO_HIDDEN}, experts = DEMO_EXPERTS;
  snprintf(path, sizeof path, "%s.mlp.gate.weight", prefix);
  add_float(l, path, router, 2, 1.0 / 16, TSR_BFLOAT16);
  snprintf(path, sizeof path, "%s.mlp.gate.e_score_correction_bias", prefix);
  add_float(l, path, &experts, 1, 0.05, TSR_FLOAT32);
  snprintf(path, sizeof path, "%s.mlp.switch_mlp", prefix);
  add_mlp(l, path, DEMO_EXPERTS, DEMO_EXPERT_WIDTH);
  snprintf(path, sizeof path, "%s.mlp.shared_experts", prefix);
  add_mlp(l, path, 0, DEMO_EXPERT_WIDTH);
}

static tsr_status write_weights(const char *dir, int64_t vocab) {
  tensor_list l = {.n = 0, .seed = 20261203, .st = TSR_OK};
  add_linear(&l, "model.embed_tokens", 0, vocab, DEMO_HIDDEN);
  for (int i = 0; i < DEMO_LAYERS; i++)
    add_layer(&l, i);
  add_norm(&l, "model.norm.weight", DEMO_HIDDEN);
  add_linear(&l, "lm_head", 0, vocab, DEMO_HIDDEN);
  char path[4096];
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  static const char *const meta_key[1] = {"format"}, *const meta_value[1] = {"mlx"};
  if (l.st == TSR_OK)
    l.st = tsr_safetensors_save(path, (const char *const *)l.names, l.arrays, l.n, meta_key,
                                meta_value, 1);
  cJSON *index = cJSON_CreateObject(), *map = cJSON_CreateObject();
  for (size_t i = 0; i < l.n; i++) {
    cJSON_AddStringToObject(map, l.names[i], "model.safetensors");
    free(l.names[i]);
    tsr_array_release(l.arrays[i]);
  }
  cJSON_AddItemToObject(cJSON_AddObjectToObject(index, "metadata"), "total_size",
                        cJSON_CreateNumber(0));
  cJSON_AddItemToObject(index, "weight_map", map);
  char *text = cJSON_Print(index);
  cJSON_Delete(index);
  snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
  if (l.st == TSR_OK)
    l.st = text ? demo_write_file(path, text, strlen(text))
                : tsr_error_set(TSR_ERR_NOMEM, "demo-model: out of memory");
  cJSON_free(text);
  return l.st;
}

static tsr_status write_config(const char *dir, const demo_token_ids *ids) {
  char text[2048], path[4096];
  int n = snprintf(
      text, sizeof text,
      "{\n  \"architectures\": [\"Glm4MoeForCausalLM\"],\n  \"model_type\": \"glm4_moe\",\n"
      "  \"vocab_size\": %d,\n  \"hidden_size\": %d,\n  \"intermediate_size\": %d,\n"
      "  \"num_hidden_layers\": %d,\n  \"num_attention_heads\": %d,\n"
      "  \"num_key_value_heads\": %d,\n  \"head_dim\": %d,\n  \"partial_rotary_factor\": 0.5,\n"
      "  \"rope_theta\": 1000000.0,\n  \"rms_norm_eps\": 1e-05,\n  \"attention_bias\": true,\n"
      "  \"use_qk_norm\": true,\n  \"tie_word_embeddings\": false,\n"
      "  \"moe_intermediate_size\": %d,\n  \"n_routed_experts\": %d,\n"
      "  \"num_experts_per_tok\": %d,\n  \"n_shared_experts\": 1,\n"
      "  \"first_k_dense_replace\": 1,\n  \"n_group\": 1,\n  \"topk_group\": 1,\n"
      "  \"norm_topk_prob\": true,\n  \"routed_scaling_factor\": 2.5,\n"
      "  \"pad_token_id\": %d,\n  \"eos_token_id\": [%d, %d, %d],\n"
      "  \"quantization\": {\"group_size\": %d, \"bits\": %d, \"mode\": \"affine\"},\n"
      "  \"quantization_config\": {\"group_size\": %d, \"bits\": %d, \"mode\": \"affine\"}\n}\n",
      ids->vocab, DEMO_HIDDEN, DEMO_DENSE_WIDTH, DEMO_LAYERS, DEMO_HEADS, DEMO_KV_HEADS,
      DEMO_HEAD_DIM, DEMO_EXPERT_WIDTH, DEMO_EXPERTS, DEMO_PER_TOKEN, ids->end_of_text,
      ids->end_of_text, ids->user, ids->observation, DEMO_GROUP, DEMO_BITS, DEMO_GROUP, DEMO_BITS);
  snprintf(path, sizeof path, "%s/config.json", dir);
  return demo_write_file(path, text, (size_t)n);
}

int cli_demo_model(int argc, char **argv) {
  const char *dir = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0) {
      fputs(demo_usage, stdout);
      return CLI_EXIT_OK;
    }
    if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
      dir = argv[++i];
    else
      return cli_usage_error("demo-model", "unknown option '%s'", argv[i]);
  }
  if (!dir) return cli_usage_error("demo-model", "-o DIR is required");
  if (mkdir(dir, 0777) != 0 && errno != EEXIST)
    return cli_report_failure("demo-model", dir,
                              tsr_error_set(TSR_ERR_IO, "cannot create %s", dir));
  demo_token_ids ids;
  tsr_status st = demo_write_tokenizer(dir, &ids);
  if (st == TSR_OK) st = write_weights(dir, ids.vocab);
  if (st == TSR_OK) st = write_config(dir, &ids); /* last: its presence marks a whole model */
  if (st != TSR_OK) return cli_report_failure("demo-model", "writing the model", st);
  fprintf(stderr, "tessera demo-model: wrote %s\n", dir);
  return CLI_EXIT_OK;
}
