/* model/glm_config.c — config.json for glm4 and glm4_moe (glm-spec §1, §4.4, §5): both the older
 * top-level rope keys and transformers 5's `rope_parameters`, stop tokens from config.json and
 * generation_config.json, and mlx-lm's `quantization` block. */
#include "model/glm_config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/json_util.h"

#define DIM_MAX ((int64_t)1 << 31)

typedef struct {
  const cJSON *root;
  const char *file;
} config_src;

static tsr_status read_kind(const config_src *src, glm_kind *kind) {
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(src->root, "model_type");
  if (!type || cJSON_IsNull(type))
    return tsr_error_set(TSR_ERR_IO, "%s: missing key \"model_type\"", src->file);
  if (!cJSON_IsString(type))
    return tsr_error_set(TSR_ERR_IO, "%s: \"model_type\" must be a string", src->file);
  if (strcmp(type->valuestring, "glm4") == 0)
    *kind = GLM_DENSE;
  else if (strcmp(type->valuestring, "glm4_moe") == 0)
    *kind = GLM_MOE;
  else
    return tsr_error_set(TSR_ERR_UNSUPPORTED,
                         "%s: model_type \"%s\" is not supported (glm4 and glm4_moe are)",
                         src->file, type->valuestring);
  return TSR_OK;
}

static tsr_status read_shape(const config_src *src, glm_config *cfg) {
  const cJSON *r = src->root;
  const char *f = src->file;
  tsr_status st;
  if ((st = json_int(r, "vocab_size", 1, DIM_MAX, f, &cfg->vocab_size)) ||
      (st = json_int(r, "hidden_size", 1, DIM_MAX, f, &cfg->hidden_size)) ||
      (st = json_int(r, "intermediate_size", 1, DIM_MAX, f, &cfg->intermediate_size)) ||
      (st = json_int(r, "num_hidden_layers", 1, 1 << 16, f, &cfg->num_layers)) ||
      (st = json_int(r, "num_attention_heads", 1, 1 << 16, f, &cfg->num_heads)))
    return st;
  if ((st = json_int_or(r, "num_key_value_heads", cfg->num_heads, 1, 1 << 16, f,
                        &cfg->num_kv_heads)))
    return st;
  /* glm4 defaults head_dim to 128; glm4_moe falls back to hidden / heads (glm-spec §1.2). */
  int64_t head_default = cfg->kind == GLM_DENSE ? 128 : cfg->hidden_size / cfg->num_heads;
  if ((st = json_int_or(r, "head_dim", head_default, 1, 1 << 16, f, &cfg->head_dim))) return st;
  if (cfg->num_heads % cfg->num_kv_heads != 0)
    return tsr_error_set(TSR_ERR_IO,
                         "%s: num_attention_heads %lld is not a multiple of num_key_value_heads "
                         "%lld",
                         f, (long long)cfg->num_heads, (long long)cfg->num_kv_heads);
  double eps;
  if ((st = json_float_or(r, "rms_norm_eps", cfg->kind == GLM_DENSE ? 1.5625e-7 : 1e-5, f, &eps)))
    return st;
  if (eps < 0) return tsr_error_set(TSR_ERR_IO, "%s: rms_norm_eps %g is negative", f, eps);
  cfg->rms_norm_eps = (float)eps;
  if ((st = json_bool_or(r, "attention_bias", cfg->kind == GLM_DENSE, f, &cfg->attention_bias)) ||
      (st = json_bool_or(r, "use_qk_norm", false, f, &cfg->use_qk_norm)) ||
      (st = json_bool_or(r, "tie_word_embeddings", false, f, &cfg->tie_word_embeddings)))
    return st;
  if (cfg->kind == GLM_DENSE) cfg->use_qk_norm = false; /* glm4 has no QK-norm */
  return TSR_OK;
}

/* rope_theta and partial_rotary_factor live at the top level (older files) or inside
 * rope_parameters (transformers 5); only the default rope type is a GLM rope. */
static tsr_status read_rope(const config_src *src, glm_config *cfg) {
  const cJSON *params = cJSON_GetObjectItemCaseSensitive(src->root, "rope_parameters");
  const cJSON *scaling = cJSON_GetObjectItemCaseSensitive(src->root, "rope_scaling");
  const cJSON *typed = cJSON_IsObject(params) ? params : cJSON_IsObject(scaling) ? scaling : NULL;
  if (typed) {
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(typed, "rope_type");
    if (!type) type = cJSON_GetObjectItemCaseSensitive(typed, "type");
    if (cJSON_IsString(type) && strcmp(type->valuestring, "default") != 0)
      return tsr_error_set(TSR_ERR_UNSUPPORTED,
                           "%s: rope_type \"%s\" is not supported (default is)", src->file,
                           type->valuestring);
  }
  double theta, factor;
  tsr_status st;
  if ((st = json_float_or(src->root, "rope_theta", 10000.0, src->file, &theta)) ||
      (st = json_float_or(src->root, "partial_rotary_factor", 0.5, src->file, &factor)))
    return st;
  if (cJSON_IsObject(params) &&
      ((st = json_float_or(params, "rope_theta", theta, src->file, &theta)) ||
       (st = json_float_or(params, "partial_rotary_factor", factor, src->file, &factor))))
    return st;
  /* factor is bounded before the conversion: a huge one would overflow int (undefined). */
  int dims = factor > 0 && factor <= 1 ? (int)((double)cfg->head_dim * factor) : 0;
  if (!(theta > 0) || dims < 2 || dims % 2 != 0 || dims > cfg->head_dim)
    return tsr_error_set(TSR_ERR_IO,
                         "%s: rope_theta %g with partial_rotary_factor %g on head_dim %lld gives "
                         "%d rotated dims (need an even count in [2, head_dim] and theta > 0)",
                         src->file, theta, factor, (long long)cfg->head_dim, dims);
  cfg->rope_theta = (float)theta;
  cfg->rope_dims = dims;
  return TSR_OK;
}

static tsr_status read_moe(const config_src *src, glm_config *cfg) {
  const cJSON *r = src->root;
  const char *f = src->file;
  tsr_status st;
  int64_t experts_default = 128;
  if ((st = json_int_or(r, "num_local_experts", experts_default, 1, 1 << 20, f, &experts_default)))
    return st;
  double scale;
  if ((st = json_int_or(r, "moe_intermediate_size", 1408, 1, DIM_MAX, f,
                        &cfg->moe_intermediate_size)) ||
      (st = json_int_or(r, "n_routed_experts", experts_default, 1, 1 << 20, f,
                        &cfg->n_routed_experts)) ||
      (st = json_int_or(r, "num_experts_per_tok", 8, 1, cfg->n_routed_experts, f,
                        &cfg->experts_per_token)) ||
      (st = json_int_or(r, "n_shared_experts", 1, 0, 1 << 10, f, &cfg->n_shared_experts)) ||
      (st = json_int_or(r, "first_k_dense_replace", 1, 0, cfg->num_layers, f,
                        &cfg->first_k_dense_replace)) ||
      (st = json_int_or(r, "n_group", 1, 1, cfg->n_routed_experts, f, &cfg->n_group)) ||
      (st = json_int_or(r, "topk_group", 1, 1, cfg->n_group, f, &cfg->topk_group)) ||
      (st = json_bool_or(r, "norm_topk_prob", true, f, &cfg->norm_topk_prob)) ||
      (st = json_float_or(r, "routed_scaling_factor", 1.0, f, &scale)))
    return st;
  cfg->routed_scaling_factor = (float)scale;
  int64_t per_group = cfg->n_routed_experts / cfg->n_group;
  if (cfg->n_routed_experts % cfg->n_group != 0 || (cfg->n_group > 1 && per_group < 2) ||
      cfg->experts_per_token > cfg->topk_group * per_group)
    return tsr_error_set(TSR_ERR_IO,
                         "%s: %lld experts in n_group %lld (topk_group %lld) cannot route "
                         "num_experts_per_tok %lld",
                         f, (long long)cfg->n_routed_experts, (long long)cfg->n_group,
                         (long long)cfg->topk_group, (long long)cfg->experts_per_token);
  return TSR_OK;
}

/* eos_token_id: one integer or a list; ids already present are not added twice. */
static tsr_status add_stop_tokens(glm_config *cfg, const cJSON *root, const char *file) {
  const cJSON *eos = root ? cJSON_GetObjectItemCaseSensitive(root, "eos_token_id") : NULL;
  if (!eos || cJSON_IsNull(eos)) return TSR_OK;
  const cJSON *item = cJSON_IsArray(eos) ? eos->child : eos;
  for (; item; item = cJSON_IsArray(eos) ? item->next : NULL) {
    double v = cJSON_IsNumber(item) ? item->valuedouble : -1;
    if (v < 0 || v > INT32_MAX || v != (double)(int32_t)v)
      return tsr_error_set(TSR_ERR_IO, "%s: eos_token_id holds a value that is not a token id",
                           file);
    bool seen = false;
    for (int i = 0; i < cfg->n_stop_tokens; i++)
      seen |= cfg->stop_tokens[i] == (int32_t)v;
    if (!seen && cfg->n_stop_tokens < GLM_MAX_STOP_TOKENS)
      cfg->stop_tokens[cfg->n_stop_tokens++] = (int32_t)v;
  }
  return TSR_OK;
}

static tsr_status read_generation_config(glm_config *cfg, const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/generation_config.json", dir);
  cJSON *root = NULL;
  tsr_status st = json_read_file(&root, path, true);
  if (st == TSR_OK && root) st = add_stop_tokens(cfg, root, path);
  cJSON_Delete(root);
  return st;
}

tsr_status glm_config_load(glm_config *cfg, const char *dir) {
  memset(cfg, 0, sizeof *cfg);
  char path[4096];
  if (snprintf(path, sizeof path, "%s/config.json", dir) >= (int)sizeof path)
    return tsr_error_set(TSR_ERR_INVALID, "load: folder path too long: %s", dir);
  cJSON *root = NULL;
  tsr_status st = json_read_file(&root, path, false);
  if (st != TSR_OK) return st;
  config_src src = {root, path};
  if (!cJSON_IsObject(root)) {
    st = tsr_error_set(TSR_ERR_IO, "%s: not a JSON object", path);
    goto done;
  }
  if ((st = read_kind(&src, &cfg->kind)) || (st = read_shape(&src, cfg)) ||
      (st = read_rope(&src, cfg)))
    goto done;
  if (cfg->kind == GLM_MOE && (st = read_moe(&src, cfg))) goto done;
  if ((st = add_stop_tokens(cfg, root, path)) || (st = read_generation_config(cfg, dir)) ||
      (st = glm_config_parse_quantization(cfg, root, path)))
    goto done;
done:
  cJSON_Delete(root);
  if (st != TSR_OK) glm_config_free(cfg);
  return st;
}

void glm_config_free(glm_config *cfg) {
  for (size_t i = 0; i < cfg->n_overrides; i++)
    free(cfg->overrides[i].path);
  free(cfg->overrides);
  cfg->overrides = NULL;
  cfg->n_overrides = 0;
}

bool glm_config_layer_is_moe(const glm_config *cfg, int64_t layer) {
  return cfg->kind == GLM_MOE && layer >= cfg->first_k_dense_replace;
}
