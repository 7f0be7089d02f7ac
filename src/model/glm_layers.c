/* model/glm_layers.c — linear layers, the embedding, attention with its KV cache and the dense MLP
 * of GLM-4 and GLM-4.5 (glm-spec §2.1–2.4), built as lazy tessera ops. */
#include <math.h>

#include "model/glm_layers.h"

tsr_array *layer_linear(glm_graph *g, const glm_linear *lin, tsr_array *x) {
  graph_observe(g, lin->weight, x);
  if (!graph_ok(g)) return NULL;
  tsr_array *y = NULL;
  if (lin->quant.quantized) {
    const glm_quant *q = &lin->quant;
    tsr_array *made = NULL;
    tsr_status made_st = tsr_quantized_matmul(&made, x, lin->weight, lin->scales, lin->biases, true,
                                              q->group_size, q->bits, q->mode, g->stream);
    y = graph_keep(g, made_st, made);
  } else {
    y = g_matmul(g, x, g_transpose(g, lin->weight, NULL, 0));
  }
  return lin->bias ? g_add(g, y, lin->bias) : y;
}

tsr_array *layer_embed(glm_graph *g, const glm_linear *embed, tsr_array *ids) {
  if (!embed->quant.quantized) return g_astype(g, g_take(g, embed->weight, ids, 0), TSR_FLOAT32);
  const glm_quant *q = &embed->quant;
  tsr_array *rows = g_take(g, embed->weight, ids, 0);
  tsr_array *scales = g_take(g, embed->scales, ids, 0);
  tsr_array *biases = embed->biases ? g_take(g, embed->biases, ids, 0) : NULL;
  if (!graph_ok(g)) return NULL;
  tsr_array *out = NULL;
  tsr_status made_st = tsr_dequantize(&out, rows, scales, biases, q->group_size, q->bits, q->mode,
                                      TSR_FLOAT32, g->stream);
  return graph_keep(g, made_st, out);
}

/* [T, heads * hd] -> [1, heads, T, hd], the per-head RMSNorm (QK-norm) applied when given. */
static tsr_array *split_heads(glm_graph *g, tsr_array *x, int64_t heads, int64_t head_dim,
                              tsr_array *norm, float eps) {
  int64_t t = tsr_array_dim(x, 0);
  int64_t per_head[3] = {t, heads, head_dim};
  tsr_array *h = g_reshape(g, x, per_head, 3);
  if (norm) h = g_rms_norm(g, h, norm, eps);
  static const int to_heads[3] = {1, 0, 2};
  int64_t batched[4] = {1, heads, t, head_dim};
  return g_reshape(g, g_transpose(g, h, to_heads, 3), batched, 4);
}

/* Writes x [1, kv, T, hd] at `offset` into cache slot `*slot` and returns the filled prefix. */
static tsr_array *cache_append(glm_graph *g, tsr_array **slot, tsr_array *x, int64_t offset) {
  if (!graph_ok(g)) return NULL;
  int64_t kv = tsr_array_dim(x, 1), t = tsr_array_dim(x, 2), hd = tsr_array_dim(x, 3);
  int64_t start[4] = {0, 0, offset, 0}, stop[4] = {1, kv, offset + t, hd};
  tsr_array *updated = NULL;
  tsr_status st = tsr_slice_update(&updated, *slot, x, start, stop, NULL, 4, g->stream);
  if (st != TSR_OK) {
    graph_fail(g, st);
    return NULL;
  }
  /* The cache holds the updated array from now on; releasing the old handle lets the update
   * write into its buffer instead of copying the whole cache. */
  tsr_array_release(*slot);
  *slot = updated;
  int64_t begin[4] = {0, 0, 0, 0}, filled[4] = {1, kv, offset + t, hd};
  return g_slice(g, updated, begin, filled, 4);
}

/* The same for a decode step's one token at the device position cache->position: the whole
 * cache array is returned, attention reading its first cache->filled keys. */
static tsr_array *cache_append_dynamic(glm_graph *g, tsr_array **slot, tsr_array *x,
                                       tsr_array *position) {
  if (!graph_ok(g)) return NULL;
  tsr_array *updated = NULL;
  tsr_status st = tsr_slice_update_dynamic(&updated, *slot, x, position, 2, g->stream);
  if (st != TSR_OK) {
    graph_fail(g, st);
    return NULL;
  }
  tsr_array_release(*slot); /* as above: the update writes into the cache's buffer */
  *slot = updated;
  return updated;
}

/* q and k rotated, k and v appended to the cache, attention over the filled cache: at the host
   position cache->length, or at the device one of a decode step (cache->position). */
static tsr_array *attend(glm_graph *g, const glm_config *c, glm_cache *cache, int64_t index,
                         tsr_array *q, tsr_array *k, tsr_array *v) {
  bool interleaved = c->kind == GLM_DENSE; /* glm4 rotates (2i, 2i+1); glm4_moe half-split */
  float scale = (float)(1.0 / sqrt((double)c->head_dim)); /* the full head_dim, not rope_dims */
  if (cache->position) {
    q = g_rope_dynamic(g, q, c->rope_dims, interleaved, c->rope_theta, cache->position);
    k = g_rope_dynamic(g, k, c->rope_dims, interleaved, c->rope_theta, cache->position);
    tsr_array *keys = cache_append_dynamic(g, &cache->keys[index], k, cache->position);
    tsr_array *values = cache_append_dynamic(g, &cache->values[index], v, cache->position);
    return g_sdpa_dynamic(g, q, keys, values, scale, cache->filled);
  }
  int64_t pos = cache->length;
  q = g_rope(g, q, c->rope_dims, interleaved, c->rope_theta, pos);
  k = g_rope(g, k, c->rope_dims, interleaved, c->rope_theta, pos);
  tsr_array *keys = cache_append(g, &cache->keys[index], k, pos);
  tsr_array *values = cache_append(g, &cache->values[index], v, pos);
  return g_sdpa(g, q, keys, values, scale);
}

tsr_array *layer_attention(glm_graph *g, const tsr_model *m, const glm_layer *layer,
                           glm_cache *cache, int64_t index, tsr_array *x) {
  const glm_config *c = &m->cfg;
  float eps = c->rms_norm_eps;
  int64_t heads = m->shard.heads, kv_heads = m->shard.kv_heads; /* this rank's */
  tsr_array *q =
      split_heads(g, layer_linear(g, &layer->q, x), heads, c->head_dim, layer->q_norm, eps);
  tsr_array *k =
      split_heads(g, layer_linear(g, &layer->k, x), kv_heads, c->head_dim, layer->k_norm, eps);
  tsr_array *v = split_heads(g, layer_linear(g, &layer->v, x), kv_heads, c->head_dim, NULL, eps);
  tsr_array *o = attend(g, c, cache, index, q, k, v);
  static const int to_tokens[4] = {0, 2, 1, 3};
  int64_t flat[2] = {tsr_array_dim(x, 0), heads * c->head_dim};
  o = g_reshape(g, g_transpose(g, o, to_tokens, 4), flat, 2);
  return layer_linear(g, &layer->o, o);
}

/* Columns [begin, end) of x [T, F]. */
static tsr_array *columns(glm_graph *g, tsr_array *x, int64_t begin, int64_t end) {
  int64_t start[2] = {0, begin}, stop[2] = {tsr_array_dim(x, 0), end};
  return g_slice(g, x, start, stop, 2);
}

tsr_array *layer_mlp(glm_graph *g, const glm_mlp *mlp, tsr_array *x) {
  tsr_array *gate, *up;
  if (mlp->fused) {
    tsr_array *both = layer_linear(g, &mlp->gate_up, x);
    int64_t width = mlp->gate_up.out_features / 2; /* gate rows first, then up (chunk(2)) */
    gate = columns(g, both, 0, width);
    up = columns(g, both, width, 2 * width);
  } else {
    gate = layer_linear(g, &mlp->gate, x);
    up = layer_linear(g, &mlp->up, x);
  }
  return layer_linear(g, &mlp->down, g_mul(g, g_silu(g, gate), up));
}
