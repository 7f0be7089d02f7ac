/* model/glm_config.h — a GLM checkpoint's config.json (and generation_config.json) as the runner
 * needs it: the model shape of glm-spec §1 in both the older and the transformers-5 key forms,
 * the stop tokens, and the `quantization` block with its per-module overrides (§4.4). Nothing
 * here touches weights. */
#ifndef TSR_MODEL_GLM_CONFIG_H
#define TSR_MODEL_GLM_CONFIG_H

#include <tessera/tessera.h>

typedef enum { GLM_DENSE = 0, GLM_MOE = 1 } glm_kind;

/* How one module is stored: float, or quantized with these parameters. */
typedef struct {
  bool quantized;
  tsr_quant_mode mode;
  int bits;
  int group_size;
} glm_quant;

/* A `quantization` entry keyed by a module path: `false` (kept float) or its own parameters. */
typedef struct {
  char *path;
  glm_quant quant;
} glm_quant_override;

#define GLM_MAX_STOP_TOKENS 16

typedef struct {
  glm_kind kind;
  int64_t vocab_size, hidden_size, intermediate_size;
  int64_t num_layers, num_heads, num_kv_heads, head_dim;
  int rope_dims; /* int(head_dim * partial_rotary_factor): the rotated prefix of each head */
  float rope_theta;
  float rms_norm_eps;
  bool attention_bias, use_qk_norm, tie_word_embeddings;
  /* GLM_MOE only */
  int64_t moe_intermediate_size, n_routed_experts, experts_per_token, n_shared_experts;
  int64_t first_k_dense_replace, n_group, topk_group;
  bool norm_topk_prob;
  float routed_scaling_factor;
  /* end tokens: config.json's eos_token_id and generation_config.json's, merged */
  int32_t stop_tokens[GLM_MAX_STOP_TOKENS];
  int n_stop_tokens;
  /* the quantization block: global parameters (quantized = false when there is no block) */
  bool has_quantization;
  glm_quant global_quant;
  glm_quant_override *overrides;
  size_t n_overrides;
} glm_config;

/* Reads DIR/config.json (and DIR/generation_config.json when present). TSR_ERR_IO names the file
 * and key for anything missing or malformed; TSR_ERR_UNSUPPORTED for another model_type. */
tsr_status glm_config_load(glm_config *cfg, const char *dir);
void glm_config_free(glm_config *cfg);

/* The quantization that applies to module `path` (glm-spec §4.4): its override when the block
 * names it, else the global parameters when `has_scales` (the checkpoint holds path.scales), else
 * float. */
glm_quant glm_config_quant_for(const glm_config *cfg, const char *path, bool has_scales);

/* Reads the `quantization` block (or `quantization_config` when only that exists) of a parsed
 * config.json into cfg; no block leaves every module float. Used by glm_config_load. */
typedef struct cJSON cJSON;
tsr_status glm_config_parse_quantization(glm_config *cfg, const cJSON *root, const char *file);

/* Whether layer i has the MoE block (GLM_MOE and i >= first_k_dense_replace). */
bool glm_config_layer_is_moe(const glm_config *cfg, int64_t layer);

#endif
