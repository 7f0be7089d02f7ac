/* model/calibrate.c — tsr_model_calibration: the table of a model's linear layers with their
 * mlx-lm module paths, the observer the forward pass hands each linear's input to (read to the
 * host, added to that linear's histogram and channel squares), and running prompts. The recipe is
 * in calibrate_recipe.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/calibrate.h"

/* An entry for `lin`; `held` false: another rank holds it all (its weight is NULL here), and the
 * entry keeps every rank's table the same (calibrate_group.c combines the tables entry by entry).
 */
static tsr_status add_entry(tsr_model_calibration *c, const glm_linear *lin, int64_t layer,
                            const char *name, bool held) {
  if (!lin->weight && held) return TSR_OK;
  if (c->n == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 16;
    cal_linear *grown = realloc(c->linears, cap * sizeof *grown);
    if (!grown) return tsr_error_set(TSR_ERR_NOMEM, "calibrate: out of memory for the linears");
    c->linears = grown;
    c->cap = cap;
  }
  cal_linear *entry = &c->linears[c->n];
  memset(entry, 0, sizeof *entry);
  snprintf(entry->name, sizeof entry->name, "%s", name);
  entry->linear = lin;
  entry->layer = layer;
  bool stacked = lin->weight && tsr_array_ndim(lin->weight) == 3;
  entry->experts = stacked ? tsr_array_dim(lin->weight, 0) : 0;
  entry->matrices = !lin->weight ? 0 : stacked ? entry->experts : 1;
  entry->contributes = lin->weight != NULL;
  entry->bits = lin->weight && lin->quant.quantized ? lin->quant.bits : 0;
  size_t in = lin->in_features > 0 ? (size_t)lin->in_features : 1;
  entry->channel_squares = calloc(in, sizeof *entry->channel_squares);
  if (!entry->channel_squares)
    return tsr_error_set(TSR_ERR_NOMEM, "calibrate: out of memory for %s", name);
  c->n++;
  return TSR_OK;
}

static tsr_status add_linear(tsr_model_calibration *c, const glm_linear *lin, int64_t layer,
                             const char *name) {
  return add_entry(c, lin, layer, name, true);
}

/* prefix.gate_proj/up_proj/down_proj, or prefix.gate_up_proj and prefix.down_proj; `held` false:
 * the MLP is another rank's (a shared expert held whole by rank 0). */
static tsr_status add_mlp(tsr_model_calibration *c, const glm_mlp *mlp, int64_t layer,
                          const char *prefix, bool held) {
  static const char *const split[3] = {"gate_proj", "up_proj", "down_proj"};
  const glm_linear *parts[3] = {&mlp->gate, &mlp->up, &mlp->down};
  /* glm4's checkpoint module is the fused gate_up; a split model holds it as this rank's gate and
     up rows, which read the same input: the gate stands for the module, the up is not observed. */
  bool fused = mlp->fused || c->model->cfg.kind != GLM_MOE;
  if (mlp->fused) parts[0] = &mlp->gate_up;
  if (fused) parts[1] = NULL;
  char name[160];
  tsr_status st = TSR_OK;
  for (int i = 0; i < 3 && st == TSR_OK; i++) {
    if (!parts[i]) continue;
    snprintf(name, sizeof name, "%s.%s", prefix, fused && i == 0 ? "gate_up_proj" : split[i]);
    st = add_entry(c, parts[i], layer, name, held);
    if (st == TSR_OK && fused && !mlp->fused && i == 0 && mlp->up.weight)
      c->linears[c->n - 1].partner = &mlp->up; /* the recipe weighs the module's up rows too */
  }
  return st;
}

static tsr_status add_layer(tsr_model_calibration *c, const glm_layer *layer, int64_t index) {
  static const char *const attention[4] = {"q_proj", "k_proj", "v_proj", "o_proj"};
  const glm_linear *projections[4] = {&layer->q, &layer->k, &layer->v, &layer->o};
  char name[160], prefix[96];
  tsr_status st = TSR_OK;
  for (int i = 0; i < 4 && st == TSR_OK; i++) {
    snprintf(name, sizeof name, "model.layers.%lld.self_attn.%s", (long long)index, attention[i]);
    st = add_linear(c, projections[i], index, name);
  }
  if (st != TSR_OK) return st;
  snprintf(prefix, sizeof prefix, "model.layers.%lld.mlp", (long long)index);
  if (!layer->is_moe) return add_mlp(c, &layer->mlp, index, prefix, true);
  const glm_linear *stacked[3] = {&layer->moe.gate, &layer->moe.up, &layer->moe.down};
  static const char *const names[3] = {"gate_proj", "up_proj", "down_proj"};
  for (int i = 0; i < 3 && st == TSR_OK; i++) {
    snprintf(name, sizeof name, "%s.switch_mlp.%s", prefix, names[i]);
    st = add_linear(c, stacked[i], index, name);
  }
  if (st != TSR_OK || c->model->cfg.n_shared_experts <= 0) return st;
  snprintf(name, sizeof name, "%s.shared_experts", prefix);
  return add_mlp(c, &layer->moe.shared, index, name, layer->moe.has_shared);
}

/* Every linear the forward runs, in its order; a head tied to the embedding is named as the
 * embedding (the module mlx-lm quantizes for it). */
static tsr_status build_table(tsr_model_calibration *c) {
  const glm_weights *w = &c->model->weights;
  tsr_status st = TSR_OK;
  for (int64_t i = 0; i < w->n_layers && st == TSR_OK; i++)
    st = add_layer(c, &w->layers[i], i);
  bool tied = w->lm_head.weight == w->embed.weight;
  if (st == TSR_OK) st = add_linear(c, &w->lm_head, -1, tied ? "model.embed_tokens" : "lm_head");
  return st;
}

static cal_linear *find_linear(tsr_model_calibration *c, const tsr_array *weight) {
  for (size_t i = 0; i < c->n; i++)
    if (weight && c->linears[i].linear->weight == weight) return &c->linears[i];
  return NULL;
}

/* The observed input on the host, float32, in c->scratch. */
static tsr_status read_input(tsr_model_calibration *c, tsr_array *x, size_t count) {
  if (count > c->scratch_len) {
    float *grown = realloc(c->scratch, count * sizeof *grown);
    if (!grown)
      return tsr_error_set(TSR_ERR_NOMEM, "calibrate: out of memory for %zu input values", count);
    c->scratch = grown;
    c->scratch_len = count;
  }
  if (tsr_array_dtype(x) == TSR_FLOAT32) return tsr_array_read(x, c->scratch, count * 4);
  tsr_array *as_float = NULL;
  tsr_status st = tsr_astype(&as_float, x, TSR_FLOAT32, tsr_default_stream(c->model->device));
  if (st == TSR_OK) st = tsr_array_read(as_float, c->scratch, count * 4);
  tsr_array_release(as_float);
  return st;
}

static tsr_status observe(void *ctx, const tsr_array *weight, tsr_array *x) {
  tsr_model_calibration *c = ctx;
  cal_linear *lin = find_linear(c, weight);
  if (!lin) return TSR_OK; /* not a linear of this model's table (cannot happen) */
  int64_t in = lin->linear->in_features;
  size_t count = (size_t)tsr_array_size(x);
  if (in <= 0 || count % (size_t)in != 0)
    return tsr_error_set(TSR_ERR_STATE, "calibrate: %s got %zu input values, not rows of %lld",
                         lin->name, count, (long long)in);
  tsr_status st = read_input(c, x, count);
  if (st != TSR_OK) return st;
  cal_histogram_add(lin->local ? lin->local : &lin->hist, c->scratch, count);
  size_t rows = count / (size_t)in;
  for (size_t r = 0; r < rows; r++)
    for (int64_t j = 0; j < in; j++) {
      double v = c->scratch[r * (size_t)in + (size_t)j];
      lin->channel_squares[j] += v * v;
    }
  lin->rows += rows;
  tsr_backing_snapshot snap;
  if (tsr_calibration_snapshot(c->model->device, &snap) == TSR_OK) {
    uint64_t in_use = snap.active + snap.cached + snap.pending + snap.fixed;
    if (in_use > lin->peak_in_use) lin->peak_in_use = in_use;
  }
  return TSR_OK;
}

tsr_status tsr_model_calibration_new(tsr_model_calibration **out, tsr_model *m) {
  if (!out || !m) return tsr_error_set(TSR_ERR_INVALID, "calibration_new: NULL argument");
  if (m->linear_observer)
    return tsr_error_set(TSR_ERR_STATE, "calibration_new: the model already has a calibration");
  tsr_model_calibration *c = calloc(1, sizeof *c);
  if (!c) return tsr_error_set(TSR_ERR_NOMEM, "calibration_new: out of memory");
  c->model = m;
  tsr_status st = build_table(c);
  if (st == TSR_OK) st = cal_group_prepare(c); /* a split model's whole shapes */
  if (st != TSR_OK) {
    tsr_model_calibration_free(c);
    return st;
  }
  m->linear_observer = observe;
  m->observer_ctx = c;
  *out = c;
  return TSR_OK;
}

void tsr_model_calibration_free(tsr_model_calibration *c) {
  if (!c) return;
  if (c->model->observer_ctx == c) {
    c->model->linear_observer = NULL;
    c->model->observer_ctx = NULL;
  }
  for (size_t i = 0; i < c->n; i++) {
    free(c->linears[i].channel_squares);
    free(c->linears[i].local);
  }
  free(c->linears);
  free(c->scratch);
  free(c);
}

tsr_status tsr_model_calibration_run(tsr_model_calibration *c, const int32_t *tokens, size_t n) {
  if (!c || !tokens || n == 0)
    return tsr_error_set(TSR_ERR_INVALID, "calibration_run: NULL argument or no tokens");
  tsr_model *m = c->model;
  uint64_t refusals = tsr_group_refusals(m->group);
  glm_cache cache;
  tsr_status st = glm_cache_new(&cache, m, (int64_t)n);
  if (st == TSR_OK) { /* every row, no logits: lm_head's input is observed for all tokens */
    st = glm_forward(m, &cache, tokens, n, true, NULL);
    glm_cache_free(&cache);
  }
  if (st == TSR_OK) st = cal_group_combine(c); /* a split model's ranks made whole */
  st = glm_tell_group(m, st, refusals); /* e.g. the cache, or the combine, failed here alone */
  if (st == TSR_OK) {
    c->prompts++;
    c->tokens += n;
  }
  return st;
}

size_t tsr_model_calibration_prompts(const tsr_model_calibration *c) {
  return c ? c->prompts : 0;
}

uint64_t tsr_model_calibration_tokens(const tsr_model_calibration *c) {
  return c ? c->tokens : 0;
}

size_t tsr_model_calibration_count(const tsr_model_calibration *c) {
  return c ? c->n : 0;
}

tsr_status tsr_model_calibration_linear(const tsr_model_calibration *c, size_t i,
                                        tsr_calibration_linear *out) {
  if (!c || !out || i >= c->n)
    return tsr_error_set(TSR_ERR_INVALID, "calibration_linear: no linear %zu (of %zu)", i,
                         c ? c->n : 0);
  const cal_linear *lin = &c->linears[i];
  int64_t matrices = lin->experts ? lin->experts : 1;
  *out = (tsr_calibration_linear){
      .name = lin->name,
      .layer = lin->layer,
      .in_features = lin->in_features,
      .out_features = lin->out_features,
      .experts = lin->experts,
      .parameters = (uint64_t)(matrices * lin->out_features * lin->in_features),
      .bits = lin->bits,
      .values = lin->hist.values,
      .absmax = lin->hist.absmax,
      .p50 = cal_histogram_percentile(&lin->hist, 0.5),
      .p99 = cal_histogram_percentile(&lin->hist, 0.99),
      .p999 = cal_histogram_percentile(&lin->hist, 0.999),
      .peak_in_use_bytes = lin->peak_in_use,
      .error_4bit = lin->error_4bit,
      .error_8bit = lin->error_8bit,
      .proposed_bits = lin->proposed_bits,
  };
  return TSR_OK;
}
