/* model/convert_recipe.c — a mixed-precision recipe for tsr_model_convert: a JSON file holding a
 * `quantization` block (as `tessera calibrate --recipe` writes it), read with the loader's own
 * parser of that block (glm-spec §4.4), so what convert writes is exactly what the loader reads.
 * Each module the recipe names gets its own parameters; an entry no module matches is refused,
 * so a typo cannot silently leave a module at the global bits. */
#include <stdlib.h>
#include <string.h>

#include "model/convert.h"
#include "model/json_util.h"

/* `quantization` of the file's object when it has one, else the object itself; the block is
 * moved into a new root the loader's parser takes. */
static tsr_status wrap_block(cJSON **root, const char *path) {
  if (!cJSON_IsObject(*root))
    return tsr_error_set(TSR_ERR_IO, "convert: recipe %s is not a JSON object", path);
  if (cJSON_GetObjectItemCaseSensitive(*root, "quantization")) return TSR_OK;
  cJSON *wrapper = cJSON_CreateObject();
  if (!wrapper) return tsr_error_set(TSR_ERR_NOMEM, "convert: out of memory reading %s", path);
  cJSON_AddItemToObject(wrapper, "quantization", *root);
  *root = wrapper;
  return TSR_OK;
}

static tsr_status check_entries(const converter *c, const char *path) {
  tsr_status st = conv_check_quant(&c->quant);
  for (size_t i = 0; i < c->recipe.n_overrides && st == TSR_OK; i++)
    if (c->recipe.overrides[i].quant.quantized)
      st = conv_check_quant(&c->recipe.overrides[i].quant);
  if (st != TSR_OK) st = tsr_error_set(TSR_ERR_INVALID, "%s (recipe %s)", tsr_last_error(), path);
  return st;
}

tsr_status conv_recipe_load(converter *c, const char *path) {
  cJSON *root = NULL;
  tsr_status st = json_read_file(&root, path, false);
  if (st == TSR_OK) st = wrap_block(&root, path);
  if (st == TSR_OK) st = glm_config_parse_quantization(&c->recipe, root, path);
  cJSON_Delete(root);
  if (st == TSR_OK && !c->recipe.has_quantization)
    st = tsr_error_set(TSR_ERR_IO, "convert: recipe %s has no quantization block", path);
  if (st == TSR_OK) {
    c->quant = c->recipe.global_quant;
    st = check_entries(c, path);
  }
  if (st == TSR_OK && c->recipe.n_overrides > 0) {
    c->recipe_used = calloc(c->recipe.n_overrides, sizeof *c->recipe_used);
    if (!c->recipe_used) st = tsr_error_set(TSR_ERR_NOMEM, "convert: out of memory for %s", path);
  }
  return st;
}

glm_quant conv_quant_for(converter *c, const char *path) {
  for (size_t i = 0; i < c->recipe.n_overrides; i++)
    if (strcmp(c->recipe.overrides[i].path, path) == 0) {
      c->recipe_used[i] = true;
      return c->recipe.overrides[i].quant;
    }
  return c->quant;
}

tsr_status conv_recipe_check_used(const converter *c, const char *recipe_path) {
  for (size_t i = 0; i < c->recipe.n_overrides; i++)
    if (!c->recipe_used[i])
      return tsr_error_set(TSR_ERR_INVALID,
                           "convert: recipe %s names module '%s', which %s does not have",
                           recipe_path, c->recipe.overrides[i].path, c->hf_dir);
  return TSR_OK;
}

void conv_recipe_free(converter *c) {
  glm_config_free(&c->recipe);
  free(c->recipe_used);
  c->recipe_used = NULL;
}
