/* model/convert_config.c — the files of a converted checkpoint besides its tensors: config.json
 * as mlx-lm's save_config writes it (glm-spec §4.4: the source config with generation_config's
 * eos_token_id merged in as mlx-lm's load_config does, the `quantization` block and its copy
 * `quantization_config`, keys sorted), generation_config.json and the tokenizer files copied. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/convert.h"
#include "model/json_util.h"

static const char *const dtype_names[3] = {"float16", "bfloat16", "float32"};
static const tsr_dtype dtype_values[3] = {TSR_FLOAT16, TSR_BFLOAT16, TSR_FLOAT32};

tsr_status conv_auto_dtype(const char *hf_dir, int *dtype) {
  char path[4200];
  snprintf(path, sizeof path, "%s/config.json", hf_dir);
  cJSON *root = NULL;
  tsr_status st = json_read_file(&root, path, false);
  if (st != TSR_OK) return st;
  /* mlx-lm reads torch_dtype only (transformers 5's "dtype" key is not looked at). */
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, "torch_dtype");
  *dtype = -1;
  for (int i = 0; i < 3 && cJSON_IsString(item); i++)
    if (strcmp(item->valuestring, dtype_names[i]) == 0) *dtype = (int)dtype_values[i];
  cJSON_Delete(root);
  return TSR_OK;
}

static const char *mode_name(tsr_quant_mode mode) {
  switch (mode) {
    case TSR_QUANT_MXFP4:
      return "mxfp4";
    case TSR_QUANT_MXFP8:
      return "mxfp8";
    case TSR_QUANT_NVFP4:
      return "nvfp4";
    default:
      return "affine";
  }
}

static cJSON *quant_params(const glm_quant *q) {
  cJSON *block = cJSON_CreateObject();
  cJSON_AddNumberToObject(block, "group_size", q->group_size);
  cJSON_AddNumberToObject(block, "bits", q->bits);
  cJSON_AddStringToObject(block, "mode", mode_name(q->mode));
  return block;
}

/* The global parameters, then one entry per module the recipe sets: its parameters, or false. */
static cJSON *quant_block(const glm_quant *q, const glm_config *recipe) {
  cJSON *block = quant_params(q);
  for (size_t i = 0; i < recipe->n_overrides; i++) {
    const glm_quant_override *o = &recipe->overrides[i];
    cJSON_AddItemToObject(block, o->path,
                          o->quant.quantized ? quant_params(&o->quant) : cJSON_CreateFalse());
  }
  return block;
}

/* Replaces (or adds) `key` of root by `value` (taken). */
static void put(cJSON *root, const char *key, cJSON *value) {
  cJSON_DeleteItemFromObjectCaseSensitive(root, key);
  cJSON_AddItemToObject(root, key, value);
}

/* mlx-lm's load_config: a truthy eos_token_id of generation_config.json replaces config's. */
static tsr_status merge_generation_config(cJSON *root, const char *hf_dir) {
  char path[4200];
  snprintf(path, sizeof path, "%s/generation_config.json", hf_dir);
  cJSON *gen = NULL;
  tsr_status st = json_read_file(&gen, path, true);
  const cJSON *eos = gen ? cJSON_GetObjectItemCaseSensitive(gen, "eos_token_id") : NULL;
  bool truthy = eos && !cJSON_IsNull(eos) && !cJSON_IsFalse(eos) &&
                !(cJSON_IsNumber(eos) && eos->valuedouble == 0) &&
                !(cJSON_IsArray(eos) && cJSON_GetArraySize(eos) == 0);
  if (st == TSR_OK && truthy) put(root, "eos_token_id", cJSON_Duplicate(eos, true));
  cJSON_Delete(gen);
  return st;
}

/* mlx-lm 0.32.2's glm4 and glm4_moe need a top-level rope_theta (and glm4_moe a rope_scaling
 * key), which transformers 5 writes only inside rope_parameters (glm-spec §4.6). */
static void add_rope_keys(cJSON *root) {
  const cJSON *params = cJSON_GetObjectItemCaseSensitive(root, "rope_parameters");
  static const char *const keys[2] = {"rope_theta", "partial_rotary_factor"};
  for (int i = 0; i < 2 && cJSON_IsObject(params); i++) {
    const cJSON *value = cJSON_GetObjectItemCaseSensitive(params, keys[i]);
    if (value && !cJSON_GetObjectItemCaseSensitive(root, keys[i]))
      cJSON_AddItemToObject(root, keys[i], cJSON_Duplicate(value, true));
  }
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "model_type");
  if (cJSON_IsString(type) && strcmp(type->valuestring, "glm4_moe") == 0 &&
      !cJSON_GetObjectItemCaseSensitive(root, "rope_scaling"))
    cJSON_AddNullToObject(root, "rope_scaling");
}

static int by_key(const void *a, const void *b) {
  return strcmp((*(cJSON *const *)a)->string, (*(cJSON *const *)b)->string);
}

/* Re-links the members of an object in key order (save_config's dict(sorted(...))). */
static tsr_status sort_keys(cJSON *root) {
  int n = cJSON_GetArraySize(root);
  cJSON **items = calloc((size_t)n + 1, sizeof *items);
  if (!items) return tsr_error_set(TSR_ERR_NOMEM, "convert: out of memory sorting config.json");
  int i = 0;
  for (cJSON *item = root->child; item; item = item->next)
    items[i++] = item;
  qsort(items, (size_t)n, sizeof *items, by_key);
  for (i = 0; i < n; i++) {
    items[i]->prev = i ? items[i - 1] : items[n - 1];
    items[i]->next = i + 1 < n ? items[i + 1] : NULL;
  }
  root->child = n ? items[0] : NULL;
  free(items);
  return TSR_OK;
}

static tsr_status write_json(const char *path, const cJSON *root) {
  char *text = cJSON_Print(root);
  if (!text) return tsr_error_set(TSR_ERR_NOMEM, "convert: out of memory writing %s", path);
  FILE *f = fopen(path, "wb");
  size_t n = strlen(text);
  bool ok = f && fwrite(text, 1, n, f) == n && fputc('\n', f) != EOF;
  if (f) ok = fclose(f) == 0 && ok;
  cJSON_free(text);
  return ok ? TSR_OK : tsr_error_set(TSR_ERR_IO, "convert: cannot write %s", path);
}

tsr_status conv_write_config(const char *hf_dir, const char *tmp, const glm_quant *quant,
                             const glm_config *recipe) {
  char path[4200];
  snprintf(path, sizeof path, "%s/config.json", hf_dir);
  cJSON *root = NULL;
  tsr_status st = json_read_file(&root, path, false);
  if (st != TSR_OK) return st;
  static const char *const blocks[2] = {"quantization", "quantization_config"};
  for (int i = 0; i < 2 && st == TSR_OK; i++) {
    const cJSON *block = cJSON_GetObjectItemCaseSensitive(root, blocks[i]);
    if (block && !cJSON_IsNull(block))
      st = tsr_error_set(TSR_ERR_IO,
                         "convert: %s has a \"%s\" block: the checkpoint is already quantized "
                         "(convert takes float checkpoints)",
                         path, blocks[i]);
  }
  if (st == TSR_OK) st = merge_generation_config(root, hf_dir);
  if (st == TSR_OK) {
    cJSON_DeleteItemFromObjectCaseSensitive(root, "_name_or_path");
    add_rope_keys(root);
    put(root, "quantization", quant_block(quant, recipe));
    put(root, "quantization_config", quant_block(quant, recipe));
    st = sort_keys(root);
  }
  snprintf(path, sizeof path, "%s/config.json", tmp);
  if (st == TSR_OK) st = write_json(path, root);
  cJSON_Delete(root);
  return st;
}

static tsr_status copy_file(const char *from, const char *to) {
  FILE *in = fopen(from, "rb");
  if (!in) return TSR_OK; /* not there: nothing to copy */
  FILE *out = fopen(to, "wb");
  bool ok = out != NULL;
  char buf[65536];
  for (size_t n; ok && (n = fread(buf, 1, sizeof buf, in)) > 0;)
    ok = fwrite(buf, 1, n, out) == n;
  ok = ok && !ferror(in);
  fclose(in);
  if (out) ok = fclose(out) == 0 && ok;
  return ok ? TSR_OK : tsr_error_set(TSR_ERR_IO, "convert: cannot copy %s to %s", from, to);
}

tsr_status conv_copy_files(const char *hf_dir, const char *tmp) {
  static const char *const files[] = {"generation_config.json",
                                      "tokenizer.json",
                                      "tokenizer_config.json",
                                      "special_tokens_map.json",
                                      "added_tokens.json",
                                      "chat_template.jinja",
                                      "chat_template.json",
                                      "tokenizer.model",
                                      "vocab.json",
                                      "merges.txt"};
  char from[4200], to[4200];
  tsr_status st = TSR_OK;
  for (size_t i = 0; i < sizeof files / sizeof files[0] && st == TSR_OK; i++) {
    snprintf(from, sizeof from, "%s/%s", hf_dir, files[i]);
    snprintf(to, sizeof to, "%s/%s", tmp, files[i]);
    st = copy_file(from, to);
  }
  return st;
}

void conv_remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  char path[4200];
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    unlink(path);
  }
  closedir(d);
  rmdir(dir);
}
