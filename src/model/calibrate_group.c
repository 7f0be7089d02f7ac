/* model/calibrate_group.c — a calibration of a model split over a tensor-parallel group
 * (model/glm_shard.h): every rank observes its own shard's inputs, so the statistics are made
 * whole here, and the recipe's weighing is planned so that the ranks' errors add up to the whole
 * model's.
 *
 * Histograms. Column-parallel linears (q/k/v, gate/up, lm_head) and the routed experts' gate/up
 * (every rank routes every token and observes every token's input, glm_moe.c) take the whole
 * input on every rank: their histograms are already complete and equal. The others hold a
 * disjoint part of the input values on each rank, summed over the ranks: o_proj's and a split
 * down_proj's input channels, the routed down_proj's rows (each (token, chosen expert) pair is
 * observed on the one rank that holds the expert; the padding pairs are not observed at all), and
 * a shared expert held whole by rank 0 (the others add nothing). The maxima (|x|, the ledger's
 * peak) are taken over the ranks.
 *
 * Weighing (calibrate_recipe.c). A linear's error is a sum over its output rows and experts of
 * per-row terms whose quantization groups run along the input axis, so disjoint rows (column-
 * parallel shards) and disjoint experts add up: every rank weighs its own part and the parts are
 * summed. A replica (key/value heads shared by a run of ranks, a replicated lm_head) counts once,
 * on the first rank that holds it. The routed down_proj's channel squares are summed over the
 * ranks before weighing (its rows were split). A row-parallel linear (input channels split) adds
 * up too when each rank's channels are whole groups of CAL_RECIPE_GROUP; otherwise (small models)
 * its shards are gathered and weighed whole, counted on rank 0. */
#include <stdlib.h>
#include <string.h>

#include "model/calibrate.h"

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* A row-parallel linear of `in` whole inputs: local histograms, and gathered for weighing when a
   rank's channels are not whole recipe groups. */
static void split_channels(const tsr_model_calibration *c, cal_linear *lin, int64_t in,
                           bool *local) {
  *local = true;
  lin->gather = (in / c->model->shard.ranks) % CAL_RECIPE_GROUP != 0;
}

/* An MoE block's routed experts (switch_mlp) and shared expert. */
static void moe_shape(const tsr_model_calibration *c, cal_linear *lin, bool *local) {
  const glm_config *cfg = &c->model->cfg;
  int64_t h = cfg->hidden_size, im = cfg->moe_intermediate_size;
  bool down = ends_with(lin->name, ".down_proj");
  if (strstr(lin->name, ".switch_mlp.")) {
    lin->experts = cfg->n_routed_experts;
    lin->in_features = down ? im : h;
    lin->out_features = down ? h : im;
    *local = down; /* down: this rank's experts' rows; gate/up: every token on every rank */
    lin->rows_split = down;
    return;
  }
  int64_t width = im * cfg->n_shared_experts;
  lin->in_features = down ? width : h;
  lin->out_features = down ? h : width;
  const glm_linear *mine = lin->linear;
  bool split = mine->weight && (down ? mine->in_features : mine->out_features) != width;
  if (split && down) {
    split_channels(c, lin, width, local);
  } else if (!split) { /* held whole by rank 0: the others add nothing */
    *local = true;
  }
}

/* The whole layer's shape from the config, whether its input values are split over the ranks
 * (local histograms summed), and how the recipe weighs it. */
static void whole_shape(const tsr_model_calibration *c, cal_linear *lin, bool *local) {
  const glm_config *cfg = &c->model->cfg;
  const glm_shard *sh = &c->model->shard;
  int64_t attention = cfg->num_heads * cfg->head_dim, kv = cfg->num_kv_heads * cfg->head_dim;
  int64_t in = cfg->hidden_size, out = cfg->hidden_size;
  *local = false;
  if (strstr(lin->name, ".switch_mlp.") || strstr(lin->name, ".shared_experts.")) {
    moe_shape(c, lin, local);
    return;
  }
  if (ends_with(lin->name, ".q_proj")) {
    out = attention;
  } else if (ends_with(lin->name, ".k_proj") || ends_with(lin->name, ".v_proj")) {
    out = kv;
    if (cfg->num_kv_heads % sh->ranks != 0) /* replicated: ranks / kv_heads ranks share a head */
      lin->contributes = sh->rank % (sh->ranks / cfg->num_kv_heads) == 0;
  } else if (ends_with(lin->name, ".o_proj")) {
    in = attention;
    split_channels(c, lin, in, local);
  } else if (ends_with(lin->name, ".gate_proj") || ends_with(lin->name, ".up_proj")) {
    out = cfg->intermediate_size;
  } else if (ends_with(lin->name, ".gate_up_proj")) {
    out = 2 * cfg->intermediate_size;
  } else if (ends_with(lin->name, ".down_proj")) {
    in = cfg->intermediate_size;
    split_channels(c, lin, in, local);
  } else { /* the head */
    out = cfg->vocab_size;
    if (!sh->vocab_split) lin->contributes = sh->rank == 0; /* replicated */
  }
  lin->in_features = in;
  lin->out_features = out;
}

tsr_status cal_group_prepare(tsr_model_calibration *c) {
  for (size_t i = 0; i < c->n; i++) { /* without a group: this rank's shapes are the whole */
    c->linears[i].in_features = c->linears[i].linear->in_features;
    c->linears[i].out_features = c->linears[i].linear->out_features;
  }
  if (c->model->shard.ranks == 1) return TSR_OK;
  for (size_t i = 0; i < c->n; i++) {
    cal_linear *lin = &c->linears[i];
    bool local = false;
    whole_shape(c, lin, &local);
    if (!local) continue;
    lin->local = calloc(1, sizeof *lin->local);
    if (!lin->local)
      return tsr_error_set(TSR_ERR_NOMEM, "calibrate: out of memory for %s", lin->name);
  }
  return TSR_OK;
}

/* The combine's collectives run where the model's collectives do, on the model's device: an nccl
   group sums on this rank's GPU (an mpi group takes any device). */
static tsr_stream *group_stream(const tsr_model_calibration *c) {
  return tsr_default_stream(c->model->device);
}

/* values[i] = the sum over the ranks of values[i] (count int64, host memory). Every rank has the
   same count (the same split linears), so a count of 0 skips the collective on every rank. */
static tsr_status sum_host(const tsr_model_calibration *c, int64_t *values, size_t count) {
  if (count == 0) return TSR_OK;
  int64_t shape[1] = {(int64_t)count};
  tsr_array *mine = NULL, *sum = NULL;
  tsr_status st = tsr_array_from_data_on(&mine, values, TSR_INT64, shape, 1, c->model->device);
  if (st == TSR_OK) st = tsr_all_sum(&sum, mine, c->model->group, group_stream(c));
  if (st == TSR_OK) st = tsr_array_read(sum, values, count * sizeof *values);
  tsr_array_release(mine);
  tsr_array_release(sum);
  return st;
}

/* gathered[r * n + i] = rank r's mine[i] (n 64-bit words each, moved as int64: gathered, not
   summed, so a double's bits arrive unrounded). gathered holds ranks * n words. */
static tsr_status gather_words(const tsr_model_calibration *c, const void *mine, size_t n,
                               void *gathered) {
  int64_t shape[1] = {(int64_t)n};
  tsr_array *words = NULL, *all = NULL;
  tsr_status st = tsr_array_from_data_on(&words, mine, TSR_INT64, shape, 1, c->model->device);
  if (st == TSR_OK) st = tsr_all_gather(&all, words, c->model->group, group_stream(c));
  if (st == TSR_OK)
    st = tsr_array_read(all, gathered, (size_t)c->model->shard.ranks * n * sizeof(int64_t));
  tsr_array_release(words);
  tsr_array_release(all);
  return st;
}

/* out[i] = the largest of the ranks' values[i] (n uint64 each). */
static tsr_status max_host(const tsr_model_calibration *c, uint64_t *values, size_t n) {
  int ranks = c->model->shard.ranks;
  uint64_t *gathered = malloc((size_t)ranks * n * sizeof *gathered);
  if (!gathered) return tsr_error_set(TSR_ERR_NOMEM, "calibrate: out of memory for the maxima");
  tsr_status st = gather_words(c, values, n, gathered);
  for (int r = 0; st == TSR_OK && r < ranks; r++)
    for (size_t i = 0; i < n; i++)
      if (gathered[(size_t)r * n + i] > values[i]) values[i] = gathered[(size_t)r * n + i];
  free(gathered);
  return st;
}

tsr_status cal_group_sum_doubles(const tsr_model_calibration *c, const double *mine, double *sum,
                                 size_t n) {
  if (c->model->shard.ranks == 1) {
    if (sum != mine) memcpy(sum, mine, n * sizeof *sum);
    return TSR_OK;
  }
  int ranks = c->model->shard.ranks;
  double *gathered = malloc(((size_t)ranks * n + 1) * sizeof *gathered);
  if (!gathered) return tsr_error_set(TSR_ERR_NOMEM, "calibrate: out of memory for a sum");
  tsr_status st = gather_words(c, mine, n, gathered);
  for (size_t i = 0; st == TSR_OK && i < n; i++) { /* in rank order: the same bits everywhere */
    double total = 0;
    for (int r = 0; r < ranks; r++)
      total += gathered[(size_t)r * n + i];
    sum[i] = total;
  }
  free(gathered);
  return st;
}

/* The split inputs' histograms (counts and value counts) summed into hist. */
static tsr_status sum_histograms(tsr_model_calibration *c) {
  size_t split = 0, width = CAL_BINS + 1;
  for (size_t i = 0; i < c->n; i++)
    split += c->linears[i].local != NULL;
  int64_t *buffer = calloc(split * width, sizeof *buffer);
  if (!buffer) return tsr_error_set(TSR_ERR_NOMEM, "calibrate: out of memory for the histograms");
  for (size_t i = 0, k = 0; i < c->n; i++) {
    const cal_histogram *h = c->linears[i].local;
    if (!h) continue;
    memcpy(buffer + k * width, h->counts, sizeof h->counts);
    buffer[k++ * width + CAL_BINS] = (int64_t)h->values;
  }
  tsr_status st = sum_host(c, buffer, split * width);
  for (size_t i = 0, k = 0; st == TSR_OK && i < c->n; i++) {
    cal_histogram *h = &c->linears[i].hist;
    if (!c->linears[i].local) continue;
    memcpy(h->counts, buffer + k * width, sizeof h->counts);
    h->values = (uint64_t)buffer[k++ * width + CAL_BINS];
  }
  free(buffer);
  return st;
}

/* Every linear's |x| maximum (a double's bits: order-preserving for values >= 0), ledger peak and
   loaded bits (a rank-0 shared expert's elsewhere) over the ranks. */
static tsr_status take_maxima(tsr_model_calibration *c) {
  uint64_t *values = malloc(3 * c->n * sizeof *values);
  if (!values) return tsr_error_set(TSR_ERR_NOMEM, "calibrate: out of memory for the maxima");
  for (size_t i = 0; i < c->n; i++) {
    const cal_linear *lin = &c->linears[i];
    double absmax = lin->local ? lin->local->absmax : lin->hist.absmax;
    memcpy(&values[3 * i], &absmax, sizeof absmax);
    values[3 * i + 1] = lin->peak_in_use;
    values[3 * i + 2] = (uint64_t)lin->bits;
  }
  tsr_status st = max_host(c, values, 3 * c->n);
  for (size_t i = 0; st == TSR_OK && i < c->n; i++) {
    memcpy(&c->linears[i].hist.absmax, &values[3 * i], sizeof(double));
    c->linears[i].peak_in_use = values[3 * i + 1];
    c->linears[i].bits = (int)values[3 * i + 2];
  }
  free(values);
  return st;
}

tsr_status cal_group_combine(tsr_model_calibration *c) {
  if (c->model->shard.ranks == 1) return TSR_OK;
  tsr_status st = sum_histograms(c);
  return st == TSR_OK ? take_maxima(c) : st;
}
