/* tools/tessera/calibrate_report.c — `tessera calibrate`'s output: a table per linear layer (or
 * one JSON object), the peak backing against the cap, and the recipe file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "calibrate.h"

/* Bits per weight of the proposal over the linears that have one (4 or 8 bits, group 64). */
static double proposed_bits_per_weight(const tsr_model_calibration *c) {
  double bits = 0, parameters = 0;
  tsr_calibration_linear lin;
  for (size_t i = 0; i < tsr_model_calibration_count(c); i++) {
    if (tsr_model_calibration_linear(c, i, &lin) != TSR_OK || lin.proposed_bits == 0) continue;
    bits += (double)lin.parameters * (lin.proposed_bits + 32.0 / 64);
    parameters += (double)lin.parameters;
  }
  return parameters > 0 ? bits / parameters : 0;
}

/* The name within its layer: "self_attn.q_proj" for "model.layers.0.self_attn.q_proj". */
static const char *short_name(const char *name) {
  if (strncmp(name, "model.layers.", 13) != 0) return name;
  const char *dot = strchr(name + 13, '.');
  return dot ? dot + 1 : name;
}

static void print_row(const tsr_calibration_linear *lin, bool recipe) {
  char in_use[32];
  printf("  %-38s %6lld %6lld %10.4g %10.4g %10.4g %10.4g %10s", short_name(lin->name),
         (long long)lin->in_features, (long long)lin->out_features, lin->absmax, lin->p50, lin->p99,
         lin->p999, cli_format_bytes(lin->peak_in_use_bytes, in_use));
  if (recipe) printf(" %10.4g %10.4g %4d", lin->error_4bit, lin->error_8bit, lin->proposed_bits);
  printf("\n");
}

/* "layer N" (or "head") with the most backing in use at any of its linears' inputs, for the run
 * of linears from `first` that share its layer; returns the index after that run. */
static size_t print_layer_header(const tsr_model_calibration *c, size_t first) {
  tsr_calibration_linear lin;
  if (tsr_model_calibration_linear(c, first, &lin) != TSR_OK) return first + 1;
  int64_t layer = lin.layer;
  uint64_t peak = 0;
  size_t end = first;
  for (; end < tsr_model_calibration_count(c); end++) {
    if (tsr_model_calibration_linear(c, end, &lin) != TSR_OK || lin.layer != layer) break;
    if (lin.peak_in_use_bytes > peak) peak = lin.peak_in_use_bytes;
  }
  char in_use[32], title[32];
  if (layer >= 0)
    snprintf(title, sizeof title, "layer %lld", (long long)layer);
  else
    snprintf(title, sizeof title, "head");
  printf("%-40s backing in use up to %s\n", title, cli_format_bytes(peak, in_use));
  return end;
}

static void print_table(const tsr_model_calibration *c, bool recipe) {
  printf("  %-38s %6s %6s %10s %10s %10s %10s %10s", "linear (|x| at its input)", "in", "out",
         "absmax", "p50", "p99", "p99.9", "in use");
  if (recipe) printf(" %10s %10s %4s", "err 4-bit", "err 8-bit", "bits");
  printf("\n");
  tsr_calibration_linear lin;
  for (size_t i = 0; i < tsr_model_calibration_count(c);) {
    size_t end = print_layer_header(c, i);
    for (; i < end; i++)
      if (tsr_model_calibration_linear(c, i, &lin) == TSR_OK) print_row(&lin, recipe);
  }
}

static void print_text(const calibrate_args *a, const calibrate_result *r) {
  const tsr_model_calibration *c = r->calibration;
  bool recipe = r->recipe != NULL;
  printf("%zu prompts, %llu tokens, %zu linears\n\n", tsr_model_calibration_prompts(c),
         (unsigned long long)tsr_model_calibration_tokens(c), tsr_model_calibration_count(c));
  print_table(c, recipe);
  char peak[32], cap[32];
  printf("\npeak backing %s (%llu bytes) of the cap %s (%llu bytes): %.1f%%\n",
         cli_format_bytes(r->ledger.peak, peak), (unsigned long long)r->ledger.peak,
         cli_format_bytes(r->ledger.cap, cap), (unsigned long long)r->ledger.cap,
         r->ledger.cap ? 100.0 * (double)r->ledger.peak / (double)r->ledger.cap : 0.0);
  if (!recipe) return;
  printf("recipe: %.3f bits per weight (budget %g)%s%s\n", proposed_bits_per_weight(c),
         a->bits_budget, a->recipe_path ? ", written to " : "",
         a->recipe_path ? a->recipe_path : "");
  if (!a->recipe_path) printf("%s\n", r->recipe);
}

static cJSON *linear_json(const tsr_calibration_linear *lin, bool recipe) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", lin->name);
  cJSON_AddNumberToObject(o, "layer", (double)lin->layer);
  cJSON_AddNumberToObject(o, "in_features", (double)lin->in_features);
  cJSON_AddNumberToObject(o, "out_features", (double)lin->out_features);
  cJSON_AddNumberToObject(o, "experts", (double)lin->experts);
  cJSON_AddNumberToObject(o, "parameters", (double)lin->parameters);
  cJSON_AddNumberToObject(o, "bits", lin->bits);
  cJSON_AddNumberToObject(o, "values", (double)lin->values);
  cJSON_AddNumberToObject(o, "absmax", lin->absmax);
  cJSON_AddNumberToObject(o, "p50", lin->p50);
  cJSON_AddNumberToObject(o, "p99", lin->p99);
  cJSON_AddNumberToObject(o, "p99_9", lin->p999);
  cJSON_AddNumberToObject(o, "peak_in_use_bytes", (double)lin->peak_in_use_bytes);
  if (recipe) {
    cJSON_AddNumberToObject(o, "error_4bit", lin->error_4bit);
    cJSON_AddNumberToObject(o, "error_8bit", lin->error_8bit);
    cJSON_AddNumberToObject(o, "proposed_bits", lin->proposed_bits);
  }
  return o;
}

static void print_json(const calibrate_args *a, const calibrate_result *r) {
  const tsr_model_calibration *c = r->calibration;
  cJSON *root = cJSON_CreateObject();
  cJSON_AddNumberToObject(root, "prompts", (double)tsr_model_calibration_prompts(c));
  cJSON_AddNumberToObject(root, "tokens", (double)tsr_model_calibration_tokens(c));
  cJSON_AddNumberToObject(root, "cap_bytes", (double)r->ledger.cap);
  cJSON_AddNumberToObject(root, "peak_backing_bytes", (double)r->ledger.peak);
  cJSON_AddNumberToObject(root, "seconds", r->seconds);
  cJSON *linears = cJSON_AddArrayToObject(root, "linears");
  tsr_calibration_linear lin;
  for (size_t i = 0; i < tsr_model_calibration_count(c); i++)
    if (tsr_model_calibration_linear(c, i, &lin) == TSR_OK)
      cJSON_AddItemToArray(linears, linear_json(&lin, r->recipe != NULL));
  if (r->recipe) {
    cJSON_AddNumberToObject(root, "bits_budget", a->bits_budget);
    cJSON_AddNumberToObject(root, "bits_per_weight", proposed_bits_per_weight(c));
    cJSON_AddItemToObject(root, "quantization", cJSON_Parse(r->recipe));
  }
  cli_print_json(root);
}

void calibrate_print(const calibrate_args *a, const calibrate_result *r) {
  if (a->json)
    print_json(a, r);
  else
    print_text(a, r);
  fprintf(stderr, "tessera calibrate: done in %.2f s\n", r->seconds);
}

tsr_status calibrate_write_recipe(const calibrate_args *a, const calibrate_result *r) {
  size_t len = strlen(a->recipe_path) + 32;
  char *tmp = malloc(len);
  if (!tmp) return tsr_error_set(TSR_ERR_NOMEM, "out of memory");
  snprintf(tmp, len, "%s.partial-XXXXXX", a->recipe_path);
  int fd = mkstemp(tmp);
  mode_t mask = umask(0); /* mkstemp's 0600 would outlive the rename: a plain file's mode */
  umask(mask);
  if (fd >= 0) fchmod(fd, 0666 & ~mask);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  size_t n = strlen(r->recipe);
  bool ok = f && fwrite(r->recipe, 1, n, f) == n && fputc('\n', f) != EOF;
  if (f)
    ok = fclose(f) == 0 && ok;
  else if (fd >= 0)
    close(fd);
  if (ok) ok = rename(tmp, a->recipe_path) == 0;
  if (!ok && fd >= 0) unlink(tmp);
  free(tmp);
  return ok ? TSR_OK : tsr_error_set(TSR_ERR_IO, "cannot write %s", a->recipe_path);
}
