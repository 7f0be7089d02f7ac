/* bench/generate_checkpoint.h — the synthetic checkpoint bench/generate measures (its opening
 * comment describes it): GLM-4-9B's shape in mlx-lm's affine 4-bit g64 layout, weights made from
 * a seed, written as shards of at most SHARD_BYTES with an index and config.json. Shared by the
 * single-process runs and the tensor-parallel one (bench/generate_group.h). */
#ifndef TSR_BENCH_GENERATE_CHECKPOINT_H
#define TSR_BENCH_GENERATE_CHECKPOINT_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tessera/safetensors.h>
#include <tessera/tessera.h>

#define SHARD_BYTES 2000000000.0

static void die(const char *what, tsr_status st) {
  fprintf(stderr, "generate: %s: %s: %s\n", what, tsr_status_name(st), tsr_last_error());
  exit(1);
}

static void *checked_malloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p) die("malloc", TSR_ERR_NOMEM);
  return p;
}

static uint64_t splitmix(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double uniform(uint64_t *state) { /* [0, 1) */
  return (double)(splitmix(state) >> 11) * 0x1p-53;
}

static uint64_t name_hash(const char *s, uint64_t seed) { /* FNV-1a, mixed with the seed */
  uint64_t h = 0xcbf29ce484222325ull ^ seed;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return h;
}

/* ---- the checkpoint ------------------------------------------------------------------------- */

typedef enum { FILL_CODES, FILL_SCALES, FILL_BIASES, FILL_ONES, FILL_SMALL } fill_kind;

typedef struct {
  char name[96];
  fill_kind kind;
  int ndim;
  int64_t shape[2];
  int64_t in;    /* inputs of the linear layer: sets the scales */
  uint64_t seed; /* scales and biases of one layer share it: biases are -7.5 x the scales */
  int shard;
} tensor_spec;

typedef struct {
  tensor_spec *items;
  size_t n, cap;
  int shards;
} spec_list;

static uint64_t spec_bytes(const tensor_spec *t) {
  int64_t count = t->shape[0] * (t->ndim == 2 ? t->shape[1] : 1);
  return (uint64_t)count * (t->kind == FILL_CODES ? 4u : 2u);
}

static double checkpoint_bytes(const spec_list *l) {
  double bytes = 0.0;
  for (size_t i = 0; i < l->n; i++)
    bytes += (double)spec_bytes(&l->items[i]);
  return bytes;
}

static void add_spec(spec_list *l, const char *name, const char *suffix, fill_kind kind,
                     int64_t rows, int64_t cols, int64_t in, uint64_t seed) {
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 256;
    l->items = realloc(l->items, l->cap * sizeof *l->items);
    if (!l->items) die("realloc", TSR_ERR_NOMEM);
  }
  tensor_spec *t = &l->items[l->n++];
  *t = (tensor_spec){
      .kind = kind, .ndim = cols ? 2 : 1, .shape = {rows, cols}, .in = in, .seed = seed};
  snprintf(t->name, sizeof t->name, "%s%s", name, suffix);
}

/* A quantized linear layer (or embedding) at `path`: codes, scales, biases, and its bias. */
static void add_linear(spec_list *l, const char *path, int64_t out, int64_t in, bool bias,
                       uint64_t seed) {
  uint64_t s = name_hash(path, seed);
  add_spec(l, path, ".weight", FILL_CODES, out, in / 8, in, s);
  add_spec(l, path, ".scales", FILL_SCALES, out, in / 64, in, s);
  add_spec(l, path, ".biases", FILL_BIASES, out, in / 64, in, s);
  if (bias) add_spec(l, path, ".bias", FILL_SMALL, out, 0, in, name_hash("bias", s));
}

static spec_list glm_specs(int64_t layers, uint64_t seed) {
  const int64_t vocab = 151552, hidden = 4096, inter = 13696, q = 32 * 128, kv = 2 * 128;
  spec_list l = {0};
  add_linear(&l, "model.embed_tokens", vocab, hidden, false, seed);
  static const char *norms[4] = {"input_layernorm", "post_self_attn_layernorm",
                                 "post_attention_layernorm", "post_mlp_layernorm"};
  for (int64_t i = 0; i < layers; i++) {
    char p[64], path[128];
    snprintf(p, sizeof p, "model.layers.%lld.", (long long)i);
    for (int n = 0; n < 4; n++) {
      snprintf(path, sizeof path, "%s%s", p, norms[n]);
      add_spec(&l, path, ".weight", FILL_ONES, hidden, 0, hidden, 0);
    }
    const char *names[6] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                            "self_attn.o_proj", "mlp.gate_up_proj", "mlp.down_proj"};
    const int64_t outs[6] = {q, kv, kv, hidden, 2 * inter, hidden};
    const int64_t ins[6] = {hidden, hidden, hidden, q, hidden, inter};
    for (int k = 0; k < 6; k++) {
      snprintf(path, sizeof path, "%s%s", p, names[k]);
      add_linear(&l, path, outs[k], ins[k], k < 3, seed);
    }
  }
  add_spec(&l, "model.norm", ".weight", FILL_ONES, hidden, 0, hidden, 0);
  add_linear(&l, "lm_head", vocab, hidden, false, seed);
  double in_shard = 0.0; /* shards in order, each at most SHARD_BYTES (mlx-lm cuts at 5 GB) */
  for (size_t i = 0; i < l.n; i++) {
    double b = (double)spec_bytes(&l.items[i]);
    if (in_shard > 0.0 && in_shard + b > SHARD_BYTES) l.shards++, in_shard = 0.0;
    in_shard += b;
    l.items[i].shard = l.shards;
  }
  l.shards++;
  return l;
}

static void fill_tensor(const tensor_spec *t, void *buffer) {
  uint64_t state = t->kind == FILL_CODES ? name_hash("codes", t->seed) : t->seed;
  size_t count = (size_t)(spec_bytes(t) / (t->kind == FILL_CODES ? 4u : 2u));
  if (t->kind == FILL_CODES) { /* every 4-bit code equally likely */
    uint64_t *words = buffer;
    for (size_t i = 0; i < count / 2; i++)
      words[i] = splitmix(&state);
    return;
  }
  uint16_t *out = buffer;
  /* uniform codes have mean 7.5 and deviation sqrt(255 / 12) = 4.61 */
  double sigma = 1.0 / sqrt((double)t->in) / 4.61;
  for (size_t i = 0; i < count; i++) {
    double u = uniform(&state);
    uint16_t scale = tsr_f32_to_bf16((float)(sigma * (0.75 + 0.5 * u)));
    if (t->kind == FILL_SCALES) out[i] = scale;
    if (t->kind == FILL_BIASES) out[i] = tsr_f32_to_bf16(-7.5f * tsr_bf16_to_f32(scale));
    if (t->kind == FILL_ONES) out[i] = tsr_f32_to_bf16(1.0f);
    if (t->kind == FILL_SMALL) out[i] = tsr_f32_to_bf16((float)(0.04 * u - 0.02));
  }
}

static void shard_name(char *buf, size_t size, int shard, int shards) {
  snprintf(buf, size, "model-%05d-of-%05d.safetensors", shard + 1, shards);
}

static void write_shard(const char *dir, const spec_list *l, int shard) {
  size_t first = 0, n = 0;
  while (l->items[first].shard != shard)
    first++;
  while (first + n < l->n && l->items[first + n].shard == shard)
    n++;
  tsr_array **arrays = checked_malloc(n * sizeof *arrays);
  const char **names = checked_malloc(n * sizeof *names);
  for (size_t i = 0; i < n; i++) {
    const tensor_spec *t = &l->items[first + i];
    void *buffer = checked_malloc((size_t)spec_bytes(t));
    fill_tensor(t, buffer);
    tsr_dtype dtype = t->kind == FILL_CODES ? TSR_UINT32 : TSR_BFLOAT16;
    tsr_status st = tsr_array_from_external(&arrays[i], buffer, dtype, t->shape, t->ndim,
                                            (tsr_device){TSR_CPU, 0}, free, buffer);
    if (st != TSR_OK) die(t->name, st);
    names[i] = t->name;
  }
  char path[4096], file[64];
  shard_name(file, sizeof file, shard, l->shards);
  snprintf(path, sizeof path, "%s/%s", dir, file);
  const char *key = "format", *value = "mlx";
  tsr_status st = tsr_safetensors_save(path, names, arrays, n, &key, &value, 1);
  if (st != TSR_OK) die("safetensors_save", st);
  for (size_t i = 0; i < n; i++)
    tsr_array_release(arrays[i]);
  free(arrays);
  free(names);
}

static FILE *open_in(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f) die(path, TSR_ERR_IO);
  return f;
}

static void write_index_and_config(const char *dir, const spec_list *l, int64_t layers) {
  uint64_t total = 0;
  for (size_t i = 0; i < l->n; i++)
    total += spec_bytes(&l->items[i]);
  FILE *f = open_in(dir, "model.safetensors.index.json");
  fprintf(f, "{\"metadata\": {\"total_size\": %llu}, \"weight_map\": {", (unsigned long long)total);
  for (size_t i = 0; i < l->n; i++) {
    char file[64];
    shard_name(file, sizeof file, l->items[i].shard, l->shards);
    fprintf(f, "%s\"%s\": \"%s\"", i ? ", " : "", l->items[i].name, file);
  }
  fprintf(f, "}}\n");
  if (fclose(f) != 0) die("index.json", TSR_ERR_IO);
  const char *quant = "{\"group_size\": 64, \"bits\": 4, \"mode\": \"affine\"}";
  f = open_in(dir, "config.json");
  fprintf(f,
          "{\"architectures\": [\"Glm4ForCausalLM\"], \"model_type\": \"glm4\", \"vocab_size\": "
          "151552, \"hidden_size\": 4096, \"intermediate_size\": 13696, \"num_hidden_layers\": "
          "%lld, \"num_attention_heads\": 32, \"num_key_value_heads\": 2, \"head_dim\": 128, "
          "\"partial_rotary_factor\": 0.5, \"rope_theta\": 10000.0, \"rms_norm_eps\": 1e-05, "
          "\"attention_bias\": true, \"tie_word_embeddings\": false, \"eos_token_id\": [151329, "
          "151336, 151338], \"quantization\": %s, \"quantization_config\": %s}\n",
          (long long)layers, quant, quant);
  if (fclose(f) != 0) die("config.json", TSR_ERR_IO);
}

#endif
