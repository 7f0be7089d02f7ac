/* model/calibrate_recipe.c — the mixed-precision recipe of tsr_model_calibration_recipe: each
 * linear's output error at 4 and 8 bits, weighted by the input channels' observed mean squares,
 * and the greedy choice of which linears get 8 bits within a bits-per-weight budget. Affine
 * quantization with group 64 only (convert's default mode and group). */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "model/calibrate.h"

enum { RECIPE_GROUP = 64 };

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

/* w quantized to `bits` and back, read to the host. */
static tsr_status round_trip(tsr_array *w, int bits, tsr_stream *s, float *host, size_t count) {
  tsr_array *codes = NULL, *scales = NULL, *biases = NULL, *back = NULL;
  tsr_status st =
      tsr_quantize(&codes, &scales, &biases, w, RECIPE_GROUP, bits, TSR_QUANT_AFFINE, s);
  if (st == TSR_OK)
    st = tsr_dequantize(&back, codes, scales, biases, RECIPE_GROUP, bits, TSR_QUANT_AFFINE,
                        TSR_FLOAT32, s);
  if (st == TSR_OK) st = tsr_array_read(back, host, count * sizeof *host);
  tsr_array_release(back);
  tsr_array_release(biases);
  tsr_array_release(scales);
  tsr_array_release(codes);
  return st;
}

/* sum_ij mean_square_j (w_ij - q_ij)^2 over one [rows, in] matrix. */
static double weighted_error(const float *w, const float *q, const double *mean_square, size_t rows,
                             size_t in) {
  double total = 0;
  for (size_t r = 0; r < rows; r++)
    for (size_t j = 0; j < in; j++) {
      double d = (double)w[r * in + j] - (double)q[r * in + j];
      total += mean_square[j] * d * d;
    }
  return total;
}

/* Adds one matrix's 4- and 8-bit errors to lin's; host holds 3 x out x in floats. */
static tsr_status matrix_errors(tsr_model_calibration *c, cal_linear *lin, int64_t index,
                                const double *mean_square, float *host) {
  const glm_linear *weights = lin->linear;
  size_t rows = (size_t)weights->out_features, in = (size_t)weights->in_features;
  size_t count = rows * in;
  tsr_stream *s = tsr_default_stream(c->model->device);
  tsr_array *w = NULL;
  tsr_status st = float_matrix(weights, lin->experts, index, s, &w);
  if (st == TSR_OK) st = tsr_array_read(w, host, count * sizeof *host);
  if (st == TSR_OK) st = round_trip(w, 4, s, host + count, count);
  if (st == TSR_OK) st = round_trip(w, 8, s, host + 2 * count, count);
  tsr_array_release(w);
  if (st != TSR_OK) return st;
  lin->error_4bit += weighted_error(host, host + count, mean_square, rows, in);
  lin->error_8bit += weighted_error(host, host + 2 * count, mean_square, rows, in);
  return TSR_OK;
}

tsr_status cal_linear_errors(tsr_model_calibration *c, cal_linear *lin) {
  const glm_linear *weights = lin->linear;
  size_t rows = (size_t)weights->out_features, in = (size_t)weights->in_features;
  lin->error_4bit = lin->error_8bit = 0;
  float *host = malloc(3 * rows * in * sizeof *host);
  double *mean_square = malloc(in * sizeof *mean_square);
  tsr_status st = TSR_OK;
  if (!host || !mean_square)
    st = tsr_error_set(TSR_ERR_NOMEM, "calibrate: out of memory for the weights of %s", lin->name);
  for (size_t j = 0; st == TSR_OK && j < in; j++)
    mean_square[j] = lin->rows ? lin->channel_squares[j] / (double)lin->rows : 0;
  int64_t matrices = lin->experts ? lin->experts : 1;
  for (int64_t e = 0; e < matrices && st == TSR_OK; e++)
    st = matrix_errors(c, lin, e, mean_square, host);
  free(mean_square);
  free(host);
  if (st != TSR_OK && !strstr(tsr_last_error(), lin->name))
    st = tsr_error_set(st, "calibrate: weighing %s: %s", lin->name, tsr_last_error());
  return st;
}

static uint64_t parameters_of(const cal_linear *lin) {
  int64_t matrices = lin->experts ? lin->experts : 1;
  return (uint64_t)(matrices * lin->linear->out_features * lin->linear->in_features);
}

static bool quantizable(const cal_linear *lin) {
  return lin->linear->in_features % RECIPE_GROUP == 0;
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
  tsr_status st = TSR_OK;
  for (size_t i = 0; i < c->n && st == TSR_OK; i++)
    if (quantizable(&c->linears[i])) st = cal_linear_errors(c, &c->linears[i]);
  if (st == TSR_OK) st = choose_bits(c, bits_per_weight);
  if (st == TSR_OK) st = render_block(c, json);
  return st;
}
