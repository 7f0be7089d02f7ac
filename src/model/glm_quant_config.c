/* model/glm_quant_config.c — mlx-lm's `quantization` block (glm-spec §4.4, §4.6): global
 * group_size/bits/mode (a null group_size or a missing mode means the mode's default), and
 * per-module overrides keyed by the module path, `false` meaning "left float". */
#include <stdlib.h>
#include <string.h>

#include "model/glm_config.h"
#include "model/json_util.h"

/* The defaults of each mode: group size and bits (MLX's). */
static glm_quant mode_defaults(tsr_quant_mode mode) {
  glm_quant q = {true, mode, 4, 64};
  if (mode == TSR_QUANT_MXFP4) q.group_size = 32;
  if (mode == TSR_QUANT_MXFP8) q.group_size = 32, q.bits = 8;
  if (mode == TSR_QUANT_NVFP4) q.group_size = 16;
  return q;
}

static tsr_status parse_mode(const cJSON *obj, const char *file, tsr_quant_mode *mode) {
  static const struct {
    const char *name;
    tsr_quant_mode mode;
  } modes[] = {{"affine", TSR_QUANT_AFFINE},
               {"mxfp4", TSR_QUANT_MXFP4},
               {"mxfp8", TSR_QUANT_MXFP8},
               {"nvfp4", TSR_QUANT_NVFP4}};
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, "mode");
  *mode = TSR_QUANT_AFFINE;
  if (!item || cJSON_IsNull(item)) return TSR_OK;
  for (size_t i = 0; cJSON_IsString(item) && i < sizeof modes / sizeof modes[0]; i++)
    if (strcmp(item->valuestring, modes[i].name) == 0) {
      *mode = modes[i].mode;
      return TSR_OK;
    }
  return tsr_error_set(TSR_ERR_UNSUPPORTED,
                       "%s: quantization mode %s%s%s is not supported (affine, mxfp4, mxfp8, "
                       "nvfp4 are)",
                       file, cJSON_IsString(item) ? "\"" : "",
                       cJSON_IsString(item) ? item->valuestring : "(not a string)",
                       cJSON_IsString(item) ? "\"" : "");
}

/* One parameter object: mode, then group_size and bits, each defaulting to the mode's. */
static tsr_status parse_params(const cJSON *obj, const char *file, glm_quant *out) {
  tsr_quant_mode mode;
  tsr_status st = parse_mode(obj, file, &mode);
  if (st != TSR_OK) return st;
  glm_quant q = mode_defaults(mode);
  int64_t group, bits;
  if ((st = json_int_or(obj, "group_size", q.group_size, 1, 1 << 20, file, &group)) ||
      (st = json_int_or(obj, "bits", q.bits, 1, 32, file, &bits)))
    return st;
  q.group_size = (int)group;
  q.bits = (int)bits;
  *out = q;
  return TSR_OK;
}

static bool is_param_key(const char *key) {
  return strcmp(key, "group_size") == 0 || strcmp(key, "bits") == 0 || strcmp(key, "mode") == 0;
}

static tsr_status add_override(glm_config *cfg, const cJSON *item, const char *file) {
  glm_quant q = {false, TSR_QUANT_AFFINE, 0, 0};
  if (cJSON_IsObject(item)) { /* else `false` (the caller passes nothing else): left float */
    tsr_status st = parse_params(item, file, &q);
    if (st != TSR_OK) return st;
  }
  glm_quant_override *grown =
      realloc(cfg->overrides, (cfg->n_overrides + 1) * sizeof *cfg->overrides);
  if (!grown) return tsr_error_set(TSR_ERR_NOMEM, "%s: out of memory reading overrides", file);
  cfg->overrides = grown;
  char *path = strdup(item->string);
  if (!path) return tsr_error_set(TSR_ERR_NOMEM, "%s: out of memory reading overrides", file);
  cfg->overrides[cfg->n_overrides++] = (glm_quant_override){path, q};
  return TSR_OK;
}

tsr_status glm_config_parse_quantization(glm_config *cfg, const cJSON *root, const char *file) {
  const cJSON *block = cJSON_GetObjectItemCaseSensitive(root, "quantization");
  if (!block || cJSON_IsNull(block))
    block = cJSON_GetObjectItemCaseSensitive(root, "quantization_config");
  if (!block || cJSON_IsNull(block)) return TSR_OK;
  if (!cJSON_IsObject(block))
    return tsr_error_set(TSR_ERR_IO, "%s: \"quantization\" must be an object", file);
  tsr_status st = parse_params(block, file, &cfg->global_quant);
  if (st != TSR_OK) return st;
  cfg->has_quantization = true;
  for (const cJSON *item = block->child; item; item = item->next) {
    if (is_param_key(item->string)) continue;
    /* Other scalar keys (quant_method, ...) carry no module path. */
    if (!cJSON_IsObject(item) && !cJSON_IsFalse(item)) continue;
    if ((st = add_override(cfg, item, file)) != TSR_OK) return st;
  }
  return TSR_OK;
}

glm_quant glm_config_quant_for(const glm_config *cfg, const char *path, bool has_scales) {
  for (size_t i = 0; i < cfg->n_overrides; i++)
    if (strcmp(cfg->overrides[i].path, path) == 0) return cfg->overrides[i].quant;
  if (has_scales && cfg->has_quantization) return cfg->global_quant;
  return (glm_quant){false, TSR_QUANT_AFFINE, 0, 0};
}
