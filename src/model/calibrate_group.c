/* model/calibrate_group.c — a calibration of a model split over a tensor-parallel group
 * (model/glm_shard.h): every rank observes its own shard's inputs, so the statistics are made
 * whole here. Column-parallel linears (q/k/v, gate/up, lm_head) take the whole input on every
 * rank: their histograms are already complete and equal. The row-parallel ones (o_proj,
 * down_proj) take this rank's slice of the input channels: their histograms are summed over the
 * ranks (disjoint slices of the same rows), and the maxima (|x|, the ledger's peak) taken over
 * them. Dense models only (an MoE rank observes only the experts it holds, padded), and no
 * recipe yet (calibrate_recipe.c refuses a split model). */
#include <stdlib.h>
#include <string.h>

#include "model/calibrate.h"

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* The whole layer's shape from the config, and whether its input is split. */
static void whole_shape(const tsr_model_calibration *c, cal_linear *lin, bool *split_input) {
  const glm_config *cfg = &c->model->cfg;
  int64_t attention = cfg->num_heads * cfg->head_dim, kv = cfg->num_kv_heads * cfg->head_dim;
  int64_t in = cfg->hidden_size, out = cfg->hidden_size;
  *split_input = false;
  if (ends_with(lin->name, ".q_proj")) {
    out = attention;
  } else if (ends_with(lin->name, ".k_proj") || ends_with(lin->name, ".v_proj")) {
    out = kv;
  } else if (ends_with(lin->name, ".o_proj")) {
    in = attention;
    *split_input = true;
  } else if (ends_with(lin->name, ".gate_proj") || ends_with(lin->name, ".up_proj")) {
    out = cfg->intermediate_size;
  } else if (ends_with(lin->name, ".gate_up_proj")) {
    out = 2 * cfg->intermediate_size;
  } else if (ends_with(lin->name, ".down_proj")) {
    in = cfg->intermediate_size;
    *split_input = true;
  } else { /* the head */
    out = cfg->vocab_size;
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
  const glm_weights *w = &c->model->weights;
  for (int64_t i = 0; i < w->n_layers; i++)
    if (w->layers[i].is_moe)
      return tsr_error_set(TSR_ERR_UNSUPPORTED,
                           "calibration_new: the model is split over a group and layer %lld is "
                           "MoE; a split calibration takes dense models only (calibrate the MoE "
                           "model loaded without a group)",
                           (long long)i);
  for (size_t i = 0; i < c->n; i++) {
    cal_linear *lin = &c->linears[i];
    bool split_input = false;
    whole_shape(c, lin, &split_input);
    if (!split_input) continue;
    lin->local = calloc(1, sizeof *lin->local);
    if (!lin->local)
      return tsr_error_set(TSR_ERR_NOMEM, "calibrate: out of memory for %s", lin->name);
  }
  return TSR_OK;
}

/* recv = the sum over the ranks of send (count int64 or float32 values of host memory). */
static tsr_status sum_host(const tsr_model_calibration *c, const void *send, void *recv,
                           size_t count, tsr_dtype dtype) {
  tsr_stream *s = tsr_default_stream((tsr_device){TSR_CPU, 0});
  tsr_status st = tsr_group_all_sum_raw(c->model->group, send, recv, count, dtype, s);
  return st == TSR_OK ? tsr_stream_synchronize(s) : st;
}

/* out[i] = the largest of the ranks' values[i] (n uint64 each). */
static tsr_status max_host(const tsr_model_calibration *c, uint64_t *values, size_t n) {
  int ranks = c->model->shard.ranks;
  int64_t shape[1] = {(int64_t)n};
  tsr_array *mine = NULL, *all = NULL;
  uint64_t *gathered = malloc((size_t)ranks * n * sizeof *gathered);
  if (!gathered) return tsr_error_set(TSR_ERR_NOMEM, "calibrate: out of memory for the maxima");
  tsr_device cpu = {TSR_CPU, 0};
  tsr_status st = tsr_array_from_data_on(&mine, values, TSR_INT64, shape, 1, cpu);
  if (st == TSR_OK) st = tsr_all_gather(&all, mine, c->model->group, tsr_default_stream(cpu));
  if (st == TSR_OK) st = tsr_array_read(all, gathered, (size_t)ranks * n * sizeof *gathered);
  for (int r = 0; st == TSR_OK && r < ranks; r++)
    for (size_t i = 0; i < n; i++)
      if (gathered[(size_t)r * n + i] > values[i]) values[i] = gathered[(size_t)r * n + i];
  tsr_array_release(mine);
  tsr_array_release(all);
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
  tsr_status st = sum_host(c, buffer, buffer, split * width, TSR_INT64);
  for (size_t i = 0, k = 0; st == TSR_OK && i < c->n; i++) {
    cal_histogram *h = &c->linears[i].hist;
    if (!c->linears[i].local) continue;
    memcpy(h->counts, buffer + k * width, sizeof h->counts);
    h->values = (uint64_t)buffer[k++ * width + CAL_BINS];
  }
  free(buffer);
  return st;
}

/* Every linear's |x| maximum (a double's bits: order-preserving for values >= 0) and ledger peak
   over the ranks. */
static tsr_status take_maxima(tsr_model_calibration *c) {
  uint64_t *values = malloc(2 * c->n * sizeof *values);
  if (!values) return tsr_error_set(TSR_ERR_NOMEM, "calibrate: out of memory for the maxima");
  for (size_t i = 0; i < c->n; i++) {
    const cal_linear *lin = &c->linears[i];
    double absmax = lin->local ? lin->local->absmax : lin->hist.absmax;
    memcpy(&values[2 * i], &absmax, sizeof absmax);
    values[2 * i + 1] = lin->peak_in_use;
  }
  tsr_status st = max_host(c, values, 2 * c->n);
  for (size_t i = 0; st == TSR_OK && i < c->n; i++) {
    memcpy(&c->linears[i].hist.absmax, &values[2 * i], sizeof(double));
    c->linears[i].peak_in_use = values[2 * i + 1];
  }
  free(values);
  return st;
}

tsr_status cal_group_combine(tsr_model_calibration *c) {
  if (c->model->shard.ranks == 1) return TSR_OK;
  tsr_status st = sum_histograms(c);
  return st == TSR_OK ? take_maxima(c) : st;
}
