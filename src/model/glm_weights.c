/* model/glm_weights.c — the weight tree of a GLM model (glm-spec §3, §4): embeddings, each
 * decoder layer's attention, norms and MLP or MoE, the final norm and the head. Layers at or past
 * num_hidden_layers (the MTP layer of released checkpoints) are never read. */
#include "model/glm_weights.h"

#include <stdlib.h>
#include <string.h>

#include "model/glm_loader.h"

static tsr_status load_attention(glm_loader *ld, const char *prefix, glm_layer *layer) {
  const glm_config *c = ld->cfg;
  int64_t h = c->hidden_size, q_width = c->num_heads * c->head_dim;
  int64_t kv_width = c->num_kv_heads * c->head_dim;
  char path[512];
  tsr_status st;
  bool bias = c->attention_bias;
  snprintf(path, sizeof path, "%s.self_attn.q_proj", prefix);
  if ((st = loader_linear(ld, path, 0, q_width, h, bias, &layer->q))) return st;
  snprintf(path, sizeof path, "%s.self_attn.k_proj", prefix);
  if ((st = loader_linear(ld, path, 0, kv_width, h, bias, &layer->k))) return st;
  snprintf(path, sizeof path, "%s.self_attn.v_proj", prefix);
  if ((st = loader_linear(ld, path, 0, kv_width, h, bias, &layer->v))) return st;
  snprintf(path, sizeof path, "%s.self_attn.o_proj", prefix);
  if ((st = loader_linear(ld, path, 0, h, q_width, false, &layer->o))) return st;
  if (!c->use_qk_norm) return TSR_OK;
  snprintf(path, sizeof path, "%s.self_attn.q_norm.weight", prefix);
  if ((st = loader_float32(ld, path, &c->head_dim, 1, &layer->q_norm))) return st;
  snprintf(path, sizeof path, "%s.self_attn.k_norm.weight", prefix);
  return loader_float32(ld, path, &c->head_dim, 1, &layer->k_norm);
}

static tsr_status load_norm(glm_loader *ld, const char *prefix, const char *name, tsr_array **out) {
  char path[512];
  snprintf(path, sizeof path, "%s.%s.weight", prefix, name);
  return loader_float32(ld, path, &ld->cfg->hidden_size, 1, out);
}

static tsr_status load_norms(glm_loader *ld, const char *prefix, glm_layer *layer) {
  tsr_status st;
  if ((st = load_norm(ld, prefix, "input_layernorm", &layer->input_norm)) ||
      (st = load_norm(ld, prefix, "post_attention_layernorm", &layer->pre_mlp_norm)))
    return st;
  if (ld->cfg->kind != GLM_DENSE) return TSR_OK;
  if ((st = load_norm(ld, prefix, "post_self_attn_layernorm", &layer->post_self_attn_norm)))
    return st;
  return load_norm(ld, prefix, "post_mlp_layernorm", &layer->post_mlp_norm);
}

/* A gate/up/down MLP of width `width` under `prefix` (the dense MLP or the shared expert). */
static tsr_status load_split_mlp(glm_loader *ld, const char *prefix, int64_t width, glm_mlp *mlp) {
  int64_t h = ld->cfg->hidden_size;
  char path[512];
  tsr_status st;
  snprintf(path, sizeof path, "%s.gate_proj", prefix);
  if ((st = loader_linear(ld, path, 0, width, h, false, &mlp->gate))) return st;
  snprintf(path, sizeof path, "%s.up_proj", prefix);
  if ((st = loader_linear(ld, path, 0, width, h, false, &mlp->up))) return st;
  snprintf(path, sizeof path, "%s.down_proj", prefix);
  return loader_linear(ld, path, 0, h, width, false, &mlp->down);
}

static tsr_status load_dense_mlp(glm_loader *ld, const char *prefix, glm_mlp *mlp) {
  const glm_config *c = ld->cfg;
  char path[512];
  if (c->kind == GLM_MOE) {
    snprintf(path, sizeof path, "%s.mlp", prefix);
    return load_split_mlp(ld, path, c->intermediate_size, mlp);
  }
  mlp->fused = true;
  tsr_status st;
  snprintf(path, sizeof path, "%s.mlp.gate_up_proj", prefix);
  if ((st = loader_linear(ld, path, 0, 2 * c->intermediate_size, c->hidden_size, false,
                          &mlp->gate_up)))
    return st;
  snprintf(path, sizeof path, "%s.mlp.down_proj", prefix);
  return loader_linear(ld, path, 0, c->hidden_size, c->intermediate_size, false, &mlp->down);
}

static tsr_status load_moe(glm_loader *ld, const char *prefix, glm_moe *moe) {
  const glm_config *c = ld->cfg;
  char path[640], block[512];
  int64_t router_shape[2] = {c->n_routed_experts, c->hidden_size};
  tsr_status st;
  snprintf(block, sizeof block, "%s.mlp", prefix);
  snprintf(path, sizeof path, "%s.gate.weight", block);
  if ((st = loader_float32(ld, path, router_shape, 2, &moe->router))) return st;
  snprintf(path, sizeof path, "%s.gate.e_score_correction_bias", block);
  if ((st = loader_float32(ld, path, &c->n_routed_experts, 1, &moe->correction_bias))) return st;
  if ((st = loader_experts(ld, block, moe))) return st;
  moe->has_shared = c->n_shared_experts > 0;
  if (!moe->has_shared) return TSR_OK;
  snprintf(path, sizeof path, "%s.shared_experts", block);
  return load_split_mlp(ld, path, c->moe_intermediate_size * c->n_shared_experts, &moe->shared);
}

static tsr_status load_layer(glm_loader *ld, int64_t index, glm_layer *layer) {
  char prefix[64];
  snprintf(prefix, sizeof prefix, "model.layers.%lld", (long long)index);
  tsr_status st;
  if ((st = load_norms(ld, prefix, layer)) || (st = load_attention(ld, prefix, layer))) return st;
  layer->is_moe = glm_config_layer_is_moe(ld->cfg, index);
  if (layer->is_moe) return load_moe(ld, prefix, &layer->moe);
  return load_dense_mlp(ld, prefix, &layer->mlp);
}

/* lm_head, or the embedding when the config ties them and the checkpoint has no lm_head. */
static tsr_status load_head(glm_loader *ld, glm_weights *w) {
  const glm_config *c = ld->cfg;
  bool has_head = tsr_safetensors_has(ld->ckpt, "lm_head.weight");
  if (!has_head && c->tie_word_embeddings) {
    w->lm_head = w->embed;
    tsr_array_retain(w->lm_head.weight);
    tsr_array_retain(w->lm_head.scales);
    tsr_array_retain(w->lm_head.biases);
    return TSR_OK;
  }
  return loader_linear(ld, "lm_head", 0, c->vocab_size, c->hidden_size, false, &w->lm_head);
}

static tsr_status load_all(glm_loader *ld, glm_weights *w) {
  const glm_config *c = ld->cfg;
  tsr_status st;
  if ((st = loader_linear(ld, "model.embed_tokens", 0, c->vocab_size, c->hidden_size, false,
                          &w->embed)))
    return st;
  uint64_t embed_bytes = ld->done_bytes;
  w->layers = calloc((size_t)c->num_layers, sizeof *w->layers);
  if (!w->layers) return tsr_error_set(TSR_ERR_NOMEM, "load: out of memory for the layers");
  w->n_layers = c->num_layers;
  for (int64_t i = 0; i < c->num_layers; i++)
    if ((st = load_layer(ld, i, &w->layers[i]))) return st;
  if ((st = loader_float32(ld, "model.norm.weight", &c->hidden_size, 1, &w->final_norm))) return st;
  uint64_t before_head = ld->done_bytes;
  if ((st = load_head(ld, w))) return st;
  /* A tied head streams the embedding table each step; an untied one reads one row of it. */
  bool tied = ld->done_bytes == before_head;
  w->streamed_bytes = ld->done_bytes - (tied ? 0 : embed_bytes);
  return TSR_OK;
}

tsr_status glm_weights_load(glm_weights *w, const glm_config *cfg, tsr_safetensors *ckpt,
                            tsr_device device, bool progress) {
  memset(w, 0, sizeof *w);
  glm_loader ld = {.cfg = cfg, .ckpt = ckpt, .device = device, .w = w, .progress = progress};
  loader_progress_begin(&ld);
  tsr_status st = load_all(&ld, w);
  loader_progress_end(&ld);
  w->bytes = ld.done_bytes;
  if (st != TSR_OK) glm_weights_free(w);
  return st;
}

static void mlp_free(glm_mlp *mlp) {
  linear_free(&mlp->gate_up);
  linear_free(&mlp->gate);
  linear_free(&mlp->up);
  linear_free(&mlp->down);
}

static void layer_free(glm_layer *layer) {
  tsr_array *norms[6] = {layer->input_norm,   layer->post_self_attn_norm,
                         layer->pre_mlp_norm, layer->post_mlp_norm,
                         layer->q_norm,       layer->k_norm};
  for (int i = 0; i < 6; i++)
    tsr_array_release(norms[i]);
  linear_free(&layer->q);
  linear_free(&layer->k);
  linear_free(&layer->v);
  linear_free(&layer->o);
  mlp_free(&layer->mlp);
  tsr_array_release(layer->moe.router);
  tsr_array_release(layer->moe.correction_bias);
  linear_free(&layer->moe.gate);
  linear_free(&layer->moe.up);
  linear_free(&layer->moe.down);
  mlp_free(&layer->moe.shared);
}

void glm_weights_free(glm_weights *w) {
  for (int64_t i = 0; w->layers && i < w->n_layers; i++)
    layer_free(&w->layers[i]);
  free(w->layers);
  linear_free(&w->embed);
  linear_free(&w->lm_head);
  tsr_array_release(w->final_norm);
  memset(w, 0, sizeof *w);
}
