/* model/glm_forward.c — one forward pass of GLM-4 (sandwich norms) or GLM-4.5 (pre-norm, MoE)
 * over new tokens, the KV cache it appends to, and the head (glm-spec §2.3, §2.4, §2.6). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/glm_layers.h"

tsr_status glm_cache_new(glm_cache *cache, const tsr_model *m, int64_t capacity) {
  const glm_config *c = &m->cfg;
  memset(cache, 0, sizeof *cache);
  cache->layers = c->num_layers;
  cache->capacity = capacity;
  cache->keys = calloc((size_t)(2 * c->num_layers), sizeof *cache->keys);
  if (!cache->keys) return tsr_error_set(TSR_ERR_NOMEM, "session: out of memory for the cache");
  cache->values = cache->keys + c->num_layers;
  int64_t shape[4] = {1, m->shard.kv_heads, capacity, c->head_dim}; /* this rank's heads */
  tsr_stream *stream = tsr_default_stream(m->device);
  tsr_status st = TSR_OK;
  for (int64_t i = 0; i < 2 * c->num_layers && st == TSR_OK; i++) {
    st = tsr_zeros(&cache->keys[i], shape, 4, TSR_FLOAT32, stream);
    if (st == TSR_OK) st = tsr_eval(&cache->keys[i], 1); /* on the ledger from the start */
  }
  if (st != TSR_OK) glm_cache_free(cache);
  return st;
}

void glm_cache_free(glm_cache *cache) {
  for (int64_t i = 0; cache->keys && i < 2 * cache->layers; i++)
    tsr_array_release(cache->keys[i]);
  free(cache->keys);
  memset(cache, 0, sizeof *cache);
}

/* A row-parallel layer's partial output summed over the ranks (itself without a group). */
static tsr_array *sum_over_ranks(glm_graph *g, const tsr_model *m, tsr_array *partial) {
  return m->group ? g_all_sum(g, partial, m->group) : partial;
}

static tsr_array *decoder_layer(glm_graph *g, tsr_model *m, glm_cache *cache, int64_t index,
                                tsr_array *x) {
  const glm_config *c = &m->cfg;
  const glm_layer *layer = &m->weights.layers[index];
  float eps = c->rms_norm_eps;
  tsr_array *a =
      layer_attention(g, m, layer, cache, index, g_rms_norm(g, x, layer->input_norm, eps));
  a = sum_over_ranks(g, m, a);
  if (layer->post_self_attn_norm) a = g_rms_norm(g, a, layer->post_self_attn_norm, eps);
  x = g_add(g, x, a);
  tsr_array *normed = g_rms_norm(g, x, layer->pre_mlp_norm, eps);
  tsr_array *f = layer->is_moe ? layer_moe(g, m, &layer->moe, index, normed)
                               : layer_mlp(g, &layer->mlp, normed);
  f = sum_over_ranks(g, m, f);
  if (layer->post_mlp_norm) f = g_rms_norm(g, f, layer->post_mlp_norm, eps);
  return g_add(g, x, f);
}

tsr_status glm_check_tokens(const tsr_model *m, const int32_t *tokens, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (tokens[i] < 0 || tokens[i] >= m->cfg.vocab_size)
      return tsr_error_set(TSR_ERR_INVALID,
                           "forward: token %d at position %zu is outside [0, %lld)", tokens[i], i,
                           (long long)m->cfg.vocab_size);
  return TSR_OK;
}

/* Logits [T, vocab] from every rank's vocabulary rows [T, vocab / ranks]: gathered [ranks * T,
 * vocab / ranks] in rank order, then each token's pieces side by side. A replicated lm_head
 * already gave all of them. */
static tsr_array *gather_vocabulary(glm_graph *g, const tsr_model *m, tsr_array *mine) {
  if (!m->shard.vocab_split || !graph_ok(g)) return mine;
  int64_t ranks = m->shard.ranks, t = tsr_array_dim(mine, 0), rows = m->shard.vocab_rows;
  int64_t by_rank[3] = {ranks, t, rows}, full[2] = {t, ranks * rows};
  static const int token_first[3] = {1, 0, 2};
  tsr_array *all = g_reshape(g, g_all_gather(g, mine, m->group), by_rank, 3);
  return g_reshape(g, g_transpose(g, all, token_first, 3), full, 2);
}

tsr_array *glm_head(glm_graph *g, tsr_model *m, tsr_array *x) {
  return gather_vocabulary(g, m, layer_linear(g, &m->weights.lm_head, x));
}

tsr_array *glm_decoder_stack(glm_graph *g, tsr_model *m, glm_cache *cache, tsr_array *x,
                             bool all_positions) {
  int64_t t = tsr_array_dim(x, 0);
  for (int64_t i = 0; i < m->cfg.num_layers; i++)
    x = graph_collect(g, decoder_layer(g, m, cache, i, x)); /* a layer's intermediates go */
  if (!all_positions) {
    int64_t start[1] = {t - 1}, stop[1] = {t};
    x = g_slice(g, x, start, stop, 1);
  }
  return g_rms_norm(g, x, m->weights.final_norm, m->cfg.rms_norm_eps);
}

/* The head over x (rows x hidden), gathered across the ranks' vocabulary shards, into logits. */
static void read_logits(glm_graph *g, tsr_model *m, tsr_array *x, size_t rows, float *logits) {
  tsr_array *out = glm_head(g, m, x);
  if (!graph_ok(g)) return;
  tsr_status st = tsr_array_read(out, logits, rows * (size_t)m->cfg.vocab_size * sizeof(float));
  if (st != TSR_OK) graph_fail(g, st);
}

tsr_status glm_tell_group(tsr_model *m, tsr_status failure, uint64_t refusals_before) {
  if (failure == TSR_OK || !m->group || m->shard.ranks == 1 || failure == TSR_ERR_DIST ||
      tsr_group_refusals(m->group) != refusals_before)
    return failure;
  char message[1024]; /* tessera's messages are shorter */
  snprintf(message, sizeof message, "%s", tsr_last_error());
  (void)tsr_group_all_sum_raw(m->group, NULL, NULL, 1, TSR_FLOAT32, tsr_default_stream(m->device));
  return tsr_error_set(failure, "%s", message);
}

/* The forward itself; glm_forward tells the group when it fails. */
static tsr_status forward(tsr_model *m, glm_cache *cache, const int32_t *tokens, size_t n,
                          bool all_positions, float *logits) {
  tsr_status st = glm_check_tokens(m, tokens, n);
  if (st != TSR_OK) return st;
  if (n == 0 || (int64_t)n > cache->capacity - cache->length)
    return tsr_error_set(TSR_ERR_INVALID,
                         "forward: %zu new tokens after %lld do not fit a cache of %lld", n,
                         (long long)cache->length, (long long)cache->capacity);
  glm_graph g;
  graph_begin(&g, tsr_default_stream(m->device));
  g.observe = m->linear_observer;
  g.observe_ctx = m->observer_ctx;
  int64_t t = (int64_t)n;
  tsr_array *x =
      layer_embed(&g, &m->weights.embed, g_from_data(&g, tokens, TSR_INT32, &t, 1, m->device));
  x = glm_decoder_stack(&g, m, cache, x, all_positions);
  if (logits)
    read_logits(&g, m, x, all_positions ? n : 1, logits);
  else /* a calibration's pass: the head's input is all it needs, not rows x vocab logits */
    graph_observe(&g, m->weights.lm_head.weight, x);
  st = graph_end(&g);
  if (st == TSR_OK) cache->length += t;
  return st;
}

tsr_status glm_forward(tsr_model *m, glm_cache *cache, const int32_t *tokens, size_t n,
                       bool all_positions, float *logits) {
  uint64_t refusals = tsr_group_refusals(m->group);
  return glm_tell_group(m, forward(m, cache, tokens, n, all_positions, logits), refusals);
}
