/* model/calibrate_recipe.c — the mixed-precision recipe of tsr_model_calibration_recipe: each
 * linear's output error at 4 and 8 bits, weighted by the input channels' observed mean squares,
 * and the greedy choice of which linears get 8 bits within a bits-per-weight budget. Affine
 * quantization with group 64 only (convert's default mode and group). A model split over a group
 * is weighed shard by shard, each rank its share, and the shares summed (calibrate_group.c says
 * why they add up to the unsplit model's errors). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "model/calibrate.h"
#include "model/progress.h"

enum { RECIPE_GROUP = CAL_RECIPE_GROUP };

/* Matrix `index` of a linear's weight (an expert of a stacked one), as float32 [out, in]. */
static tsr_status float_matrix(const glm_linear *lin, int64_t experts, int64_t index, tsr_stream *s,
                               tsr_array **out) {
  tsr_array *parts[3] = {lin->weight, lin->scales, lin->biases};
  tsr_array *sliced[3] = {NULL, NULL, NULL};
  tsr_status st = TSR_OK;
  for (int i = 0; i < 3 && st == TSR_OK; i++) {
    if (!parts[i]) continue;
    if (!experts) {
      sliced[i] = tsr_array_retain(parts[i]);
      continue;
    }
    int64_t start[1] = {index}, stop[1] = {index + 1};
    st = tsr_slice(&sliced[i], parts[i], start, stop, NULL, 1, s);
  }
  const glm_quant *q = &lin->quant;
  if (st == TSR_OK && q->quantized)
    st = tsr_dequantize(out, sliced[0], sliced[1], sliced[2], q->group_size, q->bits, q->mode,
                        TSR_FLOAT32, s);
  else if (st == TSR_OK)
    st = tsr_astype(out, sliced[0], TSR_FLOAT32, s);
  for (int i = 0; i < 3; i++)
    tsr_array_release(sliced[i]);
  return st;
}

/* *a = made, the result of an op whose input was *a: the handle is released at once (the lazy op
 * holds what it still needs, and evaluation frees each intermediate once consumed). Call the op
 * first and pass its status after, never as an argument beside `made`, which would be read
 * before the op has written it. */
static tsr_status replace(tsr_array **a, tsr_status st, tsr_array *made) {
  tsr_array_release(*a);
  *a = st == TSR_OK ? made : NULL;
  return st;
}

/* sum_ij m_j (w_ij - q_ij)^2 for q = w quantized to `bits` and back, m [in] the channels' mean
 * squares. Computed on w's device, under its cap, one matrix-sized intermediate alive at a time;
 * the sum accumulates in float64 and is rounded once to float32 (a relative 6e-8). */
static tsr_status weighted_error(tsr_array *w, tsr_array *m, int bits, tsr_stream *s, double *out) {
  tsr_array *codes = NULL, *scales = NULL, *biases = NULL, *x = NULL, *made = NULL;
  tsr_status st =
      tsr_quantize(&codes, &scales, &biases, w, RECIPE_GROUP, bits, TSR_QUANT_AFFINE, s);
  if (st == TSR_OK)
    st = tsr_dequantize(&x, codes, scales, biases, RECIPE_GROUP, bits, TSR_QUANT_AFFINE,
                        TSR_FLOAT32, s);
  tsr_array_release(codes);
  tsr_array_release(scales);
  tsr_array_release(biases);
  if (st == TSR_OK) {
    st = tsr_subtract(&made, w, x, s);
    st = replace(&x, st, made);
  }
  if (st == TSR_OK) {
    st = tsr_multiply(&made, x, x, s);
    st = replace(&x, st, made);
  }
  if (st == TSR_OK) {
    st = tsr_multiply(&made, x, m, s); /* m broadcasts along the rows */
    st = replace(&x, st, made);
  }
  if (st == TSR_OK) {
    st = tsr_sum(&made, x, NULL, 0, false, s);
    st = replace(&x, st, made);
  }
  float total = 0;
  if (st == TSR_OK) st = tsr_array_read(x, &total, sizeof total);
  tsr_array_release(x);
  *out = (double)total;
  return st;
}

/* Adds one matrix's 4- and 8-bit errors (matrix `index` of `weights`, stacked when `experts`) to
   lin's. */
static tsr_status matrix_errors(tsr_model_calibration *c, cal_linear *lin,
                                const glm_linear *weights, int64_t experts, int64_t index,
                                tsr_array *mean_square) {
  tsr_stream *s = tsr_default_stream(c->model->device);
  tsr_array *w = NULL;
  double errors[2] = {0, 0};
  tsr_status st = float_matrix(weights, experts, index, s, &w);
  if (st == TSR_OK) st = weighted_error(w, mean_square, 4, s, &errors[0]);
  if (st == TSR_OK) st = weighted_error(w, mean_square, 8, s, &errors[1]);
  tsr_array_release(w);
  lin->error_4bit += errors[0];
  lin->error_8bit += errors[1];
  return st;
}

/* The channels' mean squares [in] (squares over `rows` rows) as a float32 array on the model's
   device. */
static tsr_status mean_squares(const tsr_model_calibration *c, const cal_linear *lin,
                               const double *squares, uint64_t rows, tsr_array **out) {
  int64_t in = lin->linear->in_features;
  float *host = malloc((size_t)in * sizeof *host);
  if (!host) return tsr_error_set(TSR_ERR_NOMEM, "calibrate: out of memory weighing %s", lin->name);
  for (int64_t j = 0; j < in; j++)
    host[j] = rows ? (float)(squares[j] / (double)rows) : 0.0f;
  tsr_status st = tsr_array_from_data_on(out, host, TSR_FLOAT32, &in, 1, c->model->device);
  free(host);
  return st;
}

static tsr_status name_failure(const cal_linear *lin, tsr_status st) {
  if (st != TSR_OK && !strstr(tsr_last_error(), lin->name))
    st = tsr_error_set(st, "calibrate: weighing %s: %s", lin->name, tsr_last_error());
  return st;
}

/* lin's errors over this rank's matrices (and a split gate_up's up rows) for channel squares
   `squares` over `rows` rows. */
static tsr_status errors_with(tsr_model_calibration *c, cal_linear *lin, const double *squares,
                              uint64_t rows) {
  lin->error_4bit = lin->error_8bit = 0;
  tsr_array *m = NULL;
  tsr_status st = mean_squares(c, lin, squares, rows, &m);
  for (int64_t e = 0; e < lin->matrices && st == TSR_OK; e++)
    st = matrix_errors(c, lin, lin->linear, lin->experts ? lin->matrices : 0, e, m);
  if (st == TSR_OK && lin->partner) st = matrix_errors(c, lin, lin->partner, 0, 0, m);
  tsr_array_release(m);
  return name_failure(lin, st);
}

tsr_status cal_linear_errors(tsr_model_calibration *c, cal_linear *lin) {
  return errors_with(c, lin, lin->channel_squares, lin->rows);
}

/* A split linear whose ranks saw disjoint rows (the routed down_proj): weighed with the channel
   squares and row counts summed over the ranks (every rank takes part in the sum). */
static tsr_status weigh_rows_split(tsr_model_calibration *c, cal_linear *lin) {
  size_t in = (size_t)lin->linear->in_features;
  double *squares = malloc((in + 1) * sizeof *squares);
  if (!squares)
    return tsr_error_set(TSR_ERR_NOMEM, "calibrate: out of memory weighing %s", lin->name);
  memcpy(squares, lin->channel_squares, in * sizeof *squares);
  squares[in] = (double)lin->rows; /* exact: row counts are far below 2^53 */
  tsr_status st = cal_group_sum_doubles(c, squares, squares, in + 1);
  if (st == TSR_OK && lin->contributes) st = errors_with(c, lin, squares, (uint64_t)squares[in]);
  free(squares);
  return st;
}

/* *a = its transpose (2-D). */
static tsr_status transposed(tsr_array **a, tsr_stream *s) {
  static const int swap[2] = {1, 0};
  tsr_array *made = NULL;
  tsr_status st = tsr_transpose(&made, *a, swap, 2, s);
  st = replace(a, st, made);
  if (st == TSR_OK) {
    st = tsr_contiguous(&made, *a, s);
    st = replace(a, st, made);
  }
  return st;
}

/* A row-parallel linear whose ranks' input channels are not whole recipe groups (a small model):
   its shards and channel mean squares gathered whole on every rank (rank order is channel order)
   and weighed there; rank 0's errors count, the others' are zero. */
static tsr_status weigh_gathered(tsr_model_calibration *c, cal_linear *lin) {
  tsr_stream *s = tsr_default_stream(c->model->device);
  tsr_array *w = NULL, *m = NULL, *made = NULL;
  double errors[2] = {0, 0};
  tsr_status st = float_matrix(lin->linear, 0, 0, s, &w);
  if (st == TSR_OK) st = transposed(&w, s); /* [in / N, out]: gathered along the inputs */
  if (st == TSR_OK) {
    st = tsr_all_gather(&made, w, c->model->group, s);
    st = replace(&w, st, made);
  }
  if (st == TSR_OK) st = transposed(&w, s);
  if (st == TSR_OK) st = mean_squares(c, lin, lin->channel_squares, lin->rows, &m);
  if (st == TSR_OK) {
    st = tsr_all_gather(&made, m, c->model->group, s);
    st = replace(&m, st, made);
  }
  if (st == TSR_OK) {
    tsr_array *both[2] = {w, m};
    st = tsr_eval(both, 2); /* both collectives now, in the same order on every rank */
  }
  if (st == TSR_OK) st = weighted_error(w, m, 4, s, &errors[0]);
  if (st == TSR_OK) st = weighted_error(w, m, 8, s, &errors[1]);
  tsr_array_release(w);
  tsr_array_release(m);
  bool counted = c->model->shard.rank == 0;
  lin->error_4bit = counted ? errors[0] : 0;
  lin->error_8bit = counted ? errors[1] : 0;
  return name_failure(lin, st);
}

/* One linear's errors: this rank's share of the whole layer's (all of it without a group). A
   rank that does not contribute leaves them at the zero weigh_all starts from. */
static tsr_status weigh(tsr_model_calibration *c, cal_linear *lin) {
  if (c->model->shard.ranks == 1) return cal_linear_errors(c, lin);
  if (lin->rows_split) return weigh_rows_split(c, lin);
  if (lin->gather) return weigh_gathered(c, lin);
  return lin->contributes ? cal_linear_errors(c, lin) : TSR_OK;
}

/* Under a group, every linear's errors summed over the ranks (their shares add up to the whole
   layer's: calibrate_group.c). The sum runs in float64 in rank order on every rank, so every rank
   has the same bits and makes the same choice. Against the unsplit model's: each share is one
   float64 sum rounded once to float32 (weighted_error), so N shares carry N roundings of 2^-24
   relative instead of one, and the split forward's inputs differ by its reordered float32 sums
   (test_mpi_calibrate bounds both); ties between linears' gains within that are the only way
   the split choice can differ from the unsplit one. */
static tsr_status sum_errors(tsr_model_calibration *c) {
  if (c->model->shard.ranks == 1) return TSR_OK;
  double *errors = malloc((2 * c->n + 1) * sizeof *errors);
  if (!errors) return tsr_error_set(TSR_ERR_NOMEM, "calibrate: out of memory for the errors");
  for (size_t i = 0; i < c->n; i++) {
    errors[2 * i] = c->linears[i].error_4bit;
    errors[2 * i + 1] = c->linears[i].error_8bit;
  }
  tsr_status st = cal_group_sum_doubles(c, errors, errors, 2 * c->n);
  for (size_t i = 0; st == TSR_OK && i < c->n; i++) {
    c->linears[i].error_4bit = errors[2 * i];
    c->linears[i].error_8bit = errors[2 * i + 1];
  }
  free(errors);
  return st;
}

/* The whole layer's (every rank's shard together under a group). */
static uint64_t parameters_of(const cal_linear *lin) {
  int64_t matrices = lin->experts ? lin->experts : 1;
  return (uint64_t)(matrices * lin->out_features * lin->in_features);
}

static bool quantizable(const cal_linear *lin) {
  return lin->in_features % RECIPE_GROUP == 0;
}

/* Error removed per extra bit spent by going from 4 to 8 bits. */
static double gain_per_bit(const cal_linear *lin) {
  return (lin->error_4bit - lin->error_8bit) / (4.0 * (double)parameters_of(lin));
}

static int by_gain(const void *a, const void *b) {
  const cal_linear *x = *(const cal_linear *const *)a, *y = *(const cal_linear *const *)b;
  double gx = gain_per_bit(x), gy = gain_per_bit(y);
  if (gx != gy) return gx > gy ? -1 : 1;
  return x < y ? -1 : (x > y); /* ties: forward order */
}

/* Everything at 4 bits, then the best gains per bit promoted to 8 while the budget holds. */
static tsr_status choose_bits(tsr_model_calibration *c, double bits_per_weight) {
  cal_linear **order = malloc((c->n + 1) * sizeof *order);
  if (!order) return tsr_error_set(TSR_ERR_NOMEM, "calibrate: out of memory for the recipe");
  size_t n = 0;
  double parameters = 0;
  for (size_t i = 0; i < c->n; i++) {
    cal_linear *lin = &c->linears[i];
    lin->proposed_bits = quantizable(lin) ? 4 : 0;
    if (!quantizable(lin)) continue;
    order[n++] = lin;
    parameters += (double)parameters_of(lin);
  }
  qsort(order, n, sizeof *order, by_gain);
  double per_group = 32.0 / RECIPE_GROUP; /* a 16-bit scale and a 16-bit bias per group */
  double spent = parameters * (4 + per_group), budget = parameters * bits_per_weight;
  for (size_t i = 0; i < n; i++) {
    double extra = 4.0 * (double)parameters_of(order[i]);
    if (spent + extra > budget) continue;
    spent += extra;
    order[i]->proposed_bits = 8;
  }
  free(order);
  return TSR_OK;
}

static cJSON *params_block(int bits) {
  cJSON *block = cJSON_CreateObject();
  if (!block) return NULL;
  cJSON_AddNumberToObject(block, "group_size", RECIPE_GROUP);
  cJSON_AddNumberToObject(block, "bits", bits);
  cJSON_AddStringToObject(block, "mode", "affine");
  return block;
}

static tsr_status render_block(const tsr_model_calibration *c, char **json) {
  cJSON *root = params_block(4);
  for (size_t i = 0; root && i < c->n; i++)
    if (c->linears[i].proposed_bits == 8)
      cJSON_AddItemToObject(root, c->linears[i].name, params_block(8));
  char *text = root ? cJSON_Print(root) : NULL;
  cJSON_Delete(root);
  if (!text) return tsr_error_set(TSR_ERR_NOMEM, "calibrate: out of memory writing the recipe");
  *json = strdup(text); /* the caller frees with free(), not cJSON_free */
  cJSON_free(text);
  return *json ? TSR_OK : tsr_error_set(TSR_ERR_NOMEM, "calibrate: out of memory for the recipe");
}

/* Every quantizable linear weighed at 4 and 8 bits, under a progress bar (when the model was
   loaded with one) over the float32 bytes of the matrices weighed: minutes on a full-size model. */
static tsr_status weigh_all(tsr_model_calibration *c) {
  uint64_t total = 0, refusals = tsr_group_refusals(c->model->group);
  for (size_t i = 0; i < c->n; i++)
    if (quantizable(&c->linears[i])) total += 4 * parameters_of(&c->linears[i]);
  progress_bar bar;
  progress_begin(&bar, "weighing", c->model->progress, total);
  tsr_status st = TSR_OK;
  for (size_t i = 0; i < c->n && st == TSR_OK; i++) {
    c->linears[i].error_4bit = c->linears[i].error_8bit = 0;
    if (!quantizable(&c->linears[i])) continue;
    st = weigh(c, &c->linears[i]);
    progress_tick(&bar, 4 * parameters_of(&c->linears[i]));
  }
  progress_end(&bar);
  if (st == TSR_OK) st = sum_errors(c); /* its sum may fail on this rank before it seals */
  return glm_tell_group(c->model, st, refusals);
}

tsr_status tsr_model_calibration_recipe(tsr_model_calibration *c, double bits_per_weight,
                                        char **json) {
  if (!c || !json) return tsr_error_set(TSR_ERR_INVALID, "calibration_recipe: NULL argument");
  if (!(bits_per_weight >= TSR_RECIPE_MIN_BITS_PER_WEIGHT &&
        bits_per_weight <= TSR_RECIPE_MAX_BITS_PER_WEIGHT))
    return tsr_error_set(TSR_ERR_INVALID,
                         "calibration_recipe: a budget of %g bits per weight is outside [%g, %g] "
                         "(every linear at 4 bits, at 8 bits; group 64)",
                         bits_per_weight, TSR_RECIPE_MIN_BITS_PER_WEIGHT,
                         TSR_RECIPE_MAX_BITS_PER_WEIGHT);
  if (c->prompts == 0)
    return tsr_error_set(TSR_ERR_INVALID, "calibration_recipe: no prompt has run yet");
  tsr_status st = weigh_all(c);
  if (st == TSR_OK) st = choose_bits(c, bits_per_weight);
  if (st == TSR_OK) st = render_block(c, json);
  return st;
}
