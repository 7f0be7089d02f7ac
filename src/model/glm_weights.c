/* model/glm_weights.c — the weight tree of a GLM model (glm-spec §3, §4): embeddings, each
 * decoder layer's attention, norms and MLP or MoE, the final norm and the head. Layers at or past
 * num_hidden_layers (the MTP layer of released checkpoints) are never read. */
#include "model/glm_weights.h"

#include <stdlib.h>
#include <string.h>

#include "model/glm_loader.h"

/* The rows (outputs) of this rank's `heads` heads starting at `first`, `head_dim` each. */
static glm_part head_rows(int64_t first, int64_t heads, int64_t head_dim) {
  return (glm_part){PART_OUTPUTS, first * head_dim, heads * head_dim};
}

static tsr_status load_attention(glm_loader *ld, const char *prefix, glm_layer *layer) {
  const glm_config *c = ld->cfg;
  const glm_shard *sh = ld->shard;
  int64_t h = c->hidden_size, hd = c->head_dim, q_width = c->num_heads * hd;
  int64_t kv_width = c->num_kv_heads * hd;
  glm_part q_rows = head_rows(sh->first_head, sh->heads, hd);
  glm_part kv_rows = head_rows(sh->first_kv_head, sh->kv_heads, hd);
  glm_part o_inputs = {PART_INPUTS, q_rows.start, q_rows.count};
  char path[512];
  tsr_status st;
  bool bias = c->attention_bias;
  snprintf(path, sizeof path, "%s.self_attn.q_proj", prefix);
  if ((st = loader_linear_part(ld, path, 0, q_width, h, bias, q_rows, &layer->q))) return st;
  snprintf(path, sizeof path, "%s.self_attn.k_proj", prefix);
  if ((st = loader_linear_part(ld, path, 0, kv_width, h, bias, kv_rows, &layer->k))) return st;
  snprintf(path, sizeof path, "%s.self_attn.v_proj", prefix);
  if ((st = loader_linear_part(ld, path, 0, kv_width, h, bias, kv_rows, &layer->v))) return st;
  snprintf(path, sizeof path, "%s.self_attn.o_proj", prefix);
  if ((st = loader_linear_part(ld, path, 0, h, q_width, false, o_inputs, &layer->o))) return st;
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

/* This rank's share of an MLP `width` wide: a 1/ranks column range, or all of it. */
static glm_part mlp_columns(const glm_shard *sh, int64_t width, bool split) {
  if (!split || sh->ranks == 1) return (glm_part){PART_WHOLE, 0, 0};
  int64_t count = width / sh->ranks;
  return (glm_part){PART_OUTPUTS, sh->rank * count, count};
}

/* A gate/up/down MLP of width `width` under `prefix` (the dense MLP or the shared expert): gate
 * and up column-parallel and down row-parallel when `split`, else whole. */
static tsr_status load_split_mlp(glm_loader *ld, const char *prefix, int64_t width, bool split,
                                 glm_mlp *mlp) {
  int64_t h = ld->cfg->hidden_size;
  glm_part columns = mlp_columns(ld->shard, width, split);
  glm_part inputs = {columns.kind == PART_WHOLE ? PART_WHOLE : PART_INPUTS, columns.start,
                     columns.count};
  char path[512];
  tsr_status st;
  snprintf(path, sizeof path, "%s.gate_proj", prefix);
  if ((st = loader_linear_part(ld, path, 0, width, h, false, columns, &mlp->gate))) return st;
  snprintf(path, sizeof path, "%s.up_proj", prefix);
  if ((st = loader_linear_part(ld, path, 0, width, h, false, columns, &mlp->up))) return st;
  snprintf(path, sizeof path, "%s.down_proj", prefix);
  return loader_linear_part(ld, path, 0, h, width, false, inputs, &mlp->down);
}

/* glm4's fused gate_up [2I, H] split over the ranks: this rank's gate rows and its up rows (I
 * further on) become two linears, each one contiguous range of the file. */
static tsr_status load_gate_up_shard(glm_loader *ld, const char *path, glm_mlp *mlp) {
  const glm_config *c = ld->cfg;
  glm_part gate = mlp_columns(ld->shard, c->intermediate_size, true);
  glm_part up = {PART_OUTPUTS, c->intermediate_size + gate.start, gate.count};
  tsr_status st = loader_linear_part(ld, path, 0, 2 * c->intermediate_size, c->hidden_size, false,
                                     gate, &mlp->gate);
  if (st != TSR_OK) return st;
  return loader_linear_part(ld, path, 0, 2 * c->intermediate_size, c->hidden_size, false, up,
                            &mlp->up);
}

static tsr_status load_dense_mlp(glm_loader *ld, const char *prefix, glm_mlp *mlp) {
  const glm_config *c = ld->cfg;
  char path[512];
  if (c->kind == GLM_MOE) {
    snprintf(path, sizeof path, "%s.mlp", prefix);
    return load_split_mlp(ld, path, c->intermediate_size, true, mlp);
  }
  bool split = ld->shard->ranks > 1;
  glm_part columns = mlp_columns(ld->shard, c->intermediate_size, true);
  glm_part inputs = {split ? PART_INPUTS : PART_WHOLE, columns.start, columns.count};
  tsr_status st;
  snprintf(path, sizeof path, "%s.mlp.gate_up_proj", prefix);
  mlp->fused = !split;
  if (split)
    st = load_gate_up_shard(ld, path, mlp);
  else
    st = loader_linear(ld, path, 0, 2 * c->intermediate_size, c->hidden_size, false, &mlp->gate_up);
  if (st != TSR_OK) return st;
  snprintf(path, sizeof path, "%s.mlp.down_proj", prefix);
  return loader_linear_part(ld, path, 0, c->hidden_size, c->intermediate_size, false, inputs,
                            &mlp->down);
}

/* The shared expert: sharded like a dense MLP when its down_proj splits at its quantization
 * groups, else held whole by rank 0 alone (it adds the output to its part of the sum). Sharded,
 * it costs no collective of its own: it joins the routed experts' all-sum. */
static tsr_status load_shared_expert(glm_loader *ld, const char *block, glm_moe *moe) {
  const glm_config *c = ld->cfg;
  int64_t width = c->moe_intermediate_size * c->n_shared_experts;
  char path[640], down[700];
  snprintf(path, sizeof path, "%s.shared_experts", block);
  snprintf(down, sizeof down, "%s.down_proj", path);
  glm_quant q = loader_quant_of(ld, down);
  bool split = glm_shard_columns_split(ld->shard, width, &q);
  moe->has_shared = split || ld->shard->rank == 0;
  if (!moe->has_shared) return TSR_OK;
  return load_split_mlp(ld, path, width, split, &moe->shared);
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
  if (c->n_shared_experts <= 0) return TSR_OK;
  return load_shared_expert(ld, block, moe);
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
  if (!has_head && c->tie_word_embeddings && !ld->shard->vocab_split) {
    w->lm_head = w->embed;
    tsr_array_retain(w->lm_head.weight);
    tsr_array_retain(w->lm_head.scales);
    tsr_array_retain(w->lm_head.biases);
    return TSR_OK;
  }
  /* Vocabulary-sharded: this rank's rows; the forward pass gathers the logits. */
  const glm_shard *sh = ld->shard;
  glm_part rows = {sh->vocab_split ? PART_OUTPUTS : PART_WHOLE, sh->first_vocab, sh->vocab_rows};
  const char *path = !has_head && c->tie_word_embeddings ? "model.embed_tokens" : "lm_head";
  return loader_linear_part(ld, path, 0, c->vocab_size, c->hidden_size, false, rows, &w->lm_head);
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

tsr_status glm_weights_load(glm_weights *w, const glm_config *cfg, const glm_shard *shard,
                            tsr_safetensors *ckpt, tsr_device device, bool progress) {
  memset(w, 0, sizeof *w);
  glm_shard whole;
  if (!shard) {
    glm_shard_plan(&whole, cfg, 0, 1); /* one rank: nothing can fail to split */
    shard = &whole;
  }
  glm_loader ld = {
      .cfg = cfg, .shard = shard, .ckpt = ckpt, .device = device, .w = w, .progress = progress};
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
