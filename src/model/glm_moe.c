/* model/glm_moe.c — GLM-4.5's MoE block (glm-spec §2.5): the sigmoid router with its correction
 * bias and group limit, evaluated on the host (the selection is a few hundred floats per token and
 * its rules are easiest to get exactly right there), then the chosen experts through gathered
 * matmuls and the shared expert added. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/glm_layers.h"

/* The sum of the two largest of v[0..n). */
static float top2_sum(const float *v, int64_t n) {
  float first = -INFINITY, second = -INFINITY;
  for (int64_t i = 0; i < n; i++) {
    if (v[i] > first) {
      second = first;
      first = v[i];
    } else if (v[i] > second) {
      second = v[i];
    }
  }
  return n > 1 ? first + second : first;
}

/* Masks (to -inf) every expert outside the topk_group best groups, a group scored by the sum of
 * its two largest biased scores. transformers 5 masks with -inf (mlx-lm and transformers 4.5x with
 * 0.0; they differ only when a kept score is <= 0). A no-op for n_group 1. */
static void limit_groups(const glm_config *cfg, float *biased, float *group_score) {
  int64_t groups = cfg->n_group, per = cfg->n_routed_experts / groups;
  if (groups <= 1) return;
  for (int64_t gi = 0; gi < groups; gi++)
    group_score[gi] = top2_sum(biased + gi * per, per);
  for (int64_t pick = 0; pick < cfg->topk_group; pick++) { /* kept groups are marked +inf */
    int64_t best = -1;
    for (int64_t gi = 0; gi < groups; gi++)
      if (group_score[gi] != INFINITY && (best < 0 || group_score[gi] > group_score[best]))
        best = gi;
    if (best >= 0) group_score[best] = INFINITY;
  }
  for (int64_t gi = 0; gi < groups; gi++)
    if (group_score[gi] != INFINITY)
      for (int64_t e = 0; e < per; e++)
        biased[gi * per + e] = -INFINITY;
}

static int compare_ids(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

void moe_route_token(const glm_config *cfg, const float *scores, const float *bias, float *scratch,
                     int32_t *experts, float *weights) {
  int64_t n = cfg->n_routed_experts, k = cfg->experts_per_token;
  float *biased = scratch;
  for (int64_t e = 0; e < n; e++)
    biased[e] = scores[e] + bias[e]; /* for selection only */
  float *taken = scratch + n; /* first the group scores (n_group <= n), then the taken flags */
  limit_groups(cfg, biased, taken);
  for (int64_t e = 0; e < n; e++)
    taken[e] = 0;
  for (int64_t pick = 0; pick < k; pick++) { /* the k largest, ties to the lower id */
    int64_t best = -1;
    for (int64_t e = 0; e < n; e++)
      if (taken[e] == 0 && (best < 0 || biased[e] > biased[best])) best = e;
    experts[pick] = (int32_t)best;
    taken[best] = 1;
  }
  qsort(experts, (size_t)k, sizeof *experts, compare_ids);
  float total = 0; /* float32 throughout, as transformers computes it */
  for (int64_t i = 0; i < k; i++)
    total += scores[experts[i]];
  for (int64_t i = 0; i < k; i++) {
    float w = scores[experts[i]]; /* the weights come from the unbiased scores */
    if (cfg->norm_topk_prob) w = w / (total + 1e-20f);
    weights[i] = w * cfg->routed_scaling_factor;
  }
}

/* Routes every token of x [T, H] on the host: experts [T, k] and weights [T, k]. */
static tsr_status route(glm_graph *g, tsr_model *m, const glm_moe *moe, int64_t index, tsr_array *x,
                        int32_t *experts, float *weights) {
  const glm_config *cfg = &m->cfg;
  int64_t t = tsr_array_dim(x, 0), n = cfg->n_routed_experts, k = cfg->experts_per_token;
  tsr_array *scores = g_sigmoid(g, g_matmul(g, x, g_transpose(g, moe->router, NULL, 0)));
  if (!graph_ok(g)) return g->status;
  size_t count = (size_t)(t * n);
  float *host = malloc((count + (size_t)(3 * n)) * sizeof *host);
  if (!host) return tsr_error_set(TSR_ERR_NOMEM, "moe: out of memory for %zu router scores", count);
  float *bias = host + count, *scratch = bias + n;
  tsr_status st = tsr_array_read(scores, host, count * sizeof *host);
  if (st == TSR_OK) st = tsr_array_read(moe->correction_bias, bias, (size_t)n * sizeof *bias);
  for (int64_t i = 0; st == TSR_OK && i < t; i++)
    moe_route_token(cfg, host + i * n, bias, scratch, experts + i * k, weights + i * k);
  free(host);
  if (st == TSR_OK && m->routing_hook)
    m->routing_hook(m->routing_ctx, index, (size_t)t, k, experts);
  return st;
}

/* One stacked expert projection for every (token, choice): x [T, 1 or k, 1, in] -> [T, k, 1, out]
 * (the caller hands its input to the observer). */
static tsr_array *experts_linear(glm_graph *g, const glm_linear *lin, tsr_array *x, tsr_array *ids,
                                 int64_t t, int64_t k) {
  if (!graph_ok(g)) return NULL;
  if (lin->quant.quantized) {
    const glm_quant *q = &lin->quant;
    tsr_array *out = NULL;
    tsr_status made_st = tsr_gather_qmm(&out, x, lin->weight, lin->scales, lin->biases, NULL, ids,
                                        true, q->group_size, q->bits, q->mode, false, g->stream);
    return graph_keep(g, made_st, out);
  }
  /* Float experts: gather the chosen matrices and multiply them batched. */
  int64_t in = lin->in_features, flat_ids[1] = {t * k};
  int64_t rows[3] = {t * k, 1, in}, full[4] = {t, k, 1, in}, back[4] = {t, k, 1, lin->out_features};
  tsr_array *chosen = g_take(g, lin->weight, g_reshape(g, ids, flat_ids, 1), 0);
  tsr_array *xs = NULL;
  if (graph_ok(g)) {
    tsr_status made_st = tsr_broadcast_to(&xs, x, full, 4, g->stream);
    xs = graph_keep(g, made_st, xs);
  }
  static const int swap_last[3] = {0, 2, 1};
  tsr_array *y = g_matmul(g, g_reshape(g, xs, rows, 3), g_transpose(g, chosen, swap_last, 3));
  return g_reshape(g, y, back, 4);
}

/* The choices of every token that fall on this rank's experts, [T, width] with ids counted from
 * its first expert, padded with (0, weight 0) where a token chose fewer of them; width is the most
 * any token chose (k without tensor parallelism; 0 when no token chose one of them). */
typedef struct {
  int32_t *ids;
  float *weights;
  int64_t width;
  int32_t *real; /* the flat positions (i * width + j) of real choices, not padding, ascending */
  int64_t reals;
} local_choices;

static tsr_status keep_local(const glm_shard *sh, int64_t t, int64_t k, const int32_t *experts,
                             const float *weights, local_choices *out) {
  int64_t first = sh->first_expert, width = 0;
  for (int64_t i = 0; i < t; i++) {
    int64_t count = 0;
    for (int64_t j = 0; j < k; j++)
      count += experts[i * k + j] >= first && experts[i * k + j] < first + sh->experts;
    if (count > width) width = count;
  }
  out->width = width;
  out->ids = calloc((size_t)(t * width + 1), sizeof(int32_t) + sizeof(float));
  if (!out->ids) return tsr_error_set(TSR_ERR_NOMEM, "moe: out of memory for the local experts");
  out->weights = (float *)(out->ids + t * width + 1);
  out->real = malloc((size_t)(t * width + 1) * sizeof *out->real);
  if (!out->real) return tsr_error_set(TSR_ERR_NOMEM, "moe: out of memory for the local experts");
  out->reals = 0;
  for (int64_t i = 0; i < t; i++)
    for (int64_t j = 0, kept = 0; j < k; j++) {
      int64_t local = experts[i * k + j] - first;
      if (local < 0 || local >= sh->experts) continue;
      out->ids[i * width + kept] = (int32_t)local;
      out->real[out->reals++] = (int32_t)(i * width + kept);
      out->weights[i * width + kept++] = weights[i * k + j];
    }
  return TSR_OK;
}

/* Routes every token and keeps this rank's choices. */
static tsr_status route_local(glm_graph *g, tsr_model *m, const glm_moe *moe, int64_t index,
                              tsr_array *x, local_choices *out) {
  int64_t t = tsr_array_dim(x, 0), k = m->cfg.experts_per_token;
  int32_t *experts = malloc((size_t)(t * k) * (sizeof(int32_t) + sizeof(float)));
  if (!experts)
    return tsr_error_set(TSR_ERR_NOMEM, "moe: out of memory routing %lld tokens", (long long)t);
  float *weights = (float *)(experts + t * k);
  tsr_status st = route(g, m, moe, index, x, experts, weights);
  if (st == TSR_OK) st = keep_local(&m->shard, t, k, experts, weights, out);
  free(experts);
  return st;
}

/* Hands the observer down_proj's input h [T, width, 1, Im] of the real choices only: the padding
 * rows (a token that chose fewer of this rank's experts than the widest) are expert 0 run on a
 * token that did not choose it, so a calibration would count values the model never computes. */
static void observe_down(glm_graph *g, const glm_linear *down, tsr_array *h,
                         const local_choices *c) {
  if (!graph_ok(g) || !g->observe) return;
  int64_t t = tsr_array_dim(h, 0), in = down->in_features;
  if (c->reals == t * c->width) {
    graph_observe(g, down->weight, h);
    return;
  }
  int64_t flat[2] = {t * c->width, in}, reals[1] = {c->reals};
  tsr_array *rows = g_from_data(g, c->real, TSR_INT32, reals, 1, tsr_array_device(h));
  graph_observe(g, down->weight, g_take(g, g_reshape(g, h, flat, 2), rows, 0));
}

/* sum over the chosen experts of weight * expert(x), for x [T, H] and `width` choices a token.
 * Every rank hands the observer the gate and up input (every token's x) even when none of its
 * experts was chosen, so split over a group each rank has seen what the whole model sees. */
static tsr_array *routed_experts(glm_graph *g, tsr_model *m, const glm_moe *moe, tsr_array *x,
                                 const local_choices *c) {
  int64_t t = tsr_array_dim(x, 0), h = m->cfg.hidden_size, k = c->width;
  int64_t out_shape[2] = {t, h};
  int64_t pairs[2] = {t, k}, weight_shape[4] = {t, k, 1, 1}, x_shape[4] = {t, 1, 1, h};
  tsr_array *x4 = g_reshape(g, x, x_shape, 4);
  graph_observe(g, moe->gate.weight, x4);
  graph_observe(g, moe->up.weight, x4);
  if (k == 0) return g_zeros(g, out_shape, 2); /* none of this rank's experts was chosen */
  tsr_array *ids = g_from_data(g, c->ids, TSR_INT32, pairs, 2, m->device);
  tsr_array *w = g_from_data(g, c->weights, TSR_FLOAT32, weight_shape, 4, m->device);
  tsr_array *gate = experts_linear(g, &moe->gate, x4, ids, t, k);
  tsr_array *up = experts_linear(g, &moe->up, x4, ids, t, k);
  tsr_array *act = g_mul(g, g_silu(g, gate), up);
  observe_down(g, &moe->down, act, c);
  tsr_array *down = experts_linear(g, &moe->down, act, ids, t, k);
  return g_reshape(g, g_sum(g, g_mul(g, down, w), 1), out_shape, 2);
}

tsr_array *layer_moe(glm_graph *g, tsr_model *m, const glm_moe *moe, int64_t index, tsr_array *x) {
  if (!graph_ok(g)) return NULL;
  local_choices choices = {NULL, NULL, 0, NULL, 0};
  tsr_status st = route_local(g, m, moe, index, x, &choices);
  if (st != TSR_OK) {
    free(choices.ids);
    free(choices.real);
    graph_fail(g, st);
    return NULL;
  }
  tsr_array *routed = routed_experts(g, m, moe, x, &choices);
  free(choices.ids);
  free(choices.real);
  return moe->has_shared ? g_add(g, routed, layer_mlp(g, &moe->shared, x)) : routed;
}
