/* tools/tessera/model_cli.c — flag parsing and model loading shared by the model subcommands. */
#include "model_cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

bool cli_parse_count(const char *text, uint64_t max, uint64_t *out) {
  if (!text || text[0] < '0' || text[0] > '9') return false;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0' || v > max) return false;
  *out = v;
  return true;
}

bool cli_parse_float(const char *text, float *out) {
  if (!text || !*text) return false;
  char *end = NULL;
  errno = 0;
  float v = strtof(text, &end);
  if (errno != 0 || *end != '\0' || !isfinite(v)) return false;
  *out = v;
  return true;
}

bool cli_parse_tokens(const char *text, int32_t **tokens, size_t *n) {
  size_t count = 1;
  for (const char *p = text; *p; p++)
    count += *p == ',';
  int32_t *ids = malloc(count * sizeof *ids);
  if (!ids) return false;
  const char *p = text;
  for (size_t i = 0; i < count; i++) {
    if (*p < '0' || *p > '9') goto bad;
    char *end = NULL;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (errno != 0 || v > INT32_MAX || (*end != ',' && *end != '\0')) goto bad;
    ids[i] = (int32_t)v;
    p = *end == ',' ? end + 1 : end;
  }
  if (*p != '\0') goto bad;
  *tokens = ids;
  *n = count;
  return true;
bad:
  free(ids);
  return false;
}

bool cli_parse_bytes(const char *text, uint64_t *out) {
  if (!text || text[0] < '0' || text[0] > '9') return false;
  char *end = NULL;
  errno = 0;
  double v = strtod(text, &end);
  if (errno != 0 || !isfinite(v) || v <= 0) return false;
  static const char units[] = "KMGT";
  double scale = 1;
  if (*end) {
    const char *u = strchr(units, *end);
    if (!u) return false;
    for (const char *q = units; q <= u; q++)
      scale *= 1024;
    end++;
    if (*end == 'i') end++;
    if (*end == 'B') end++;
  }
  if (*end != '\0' || v * scale >= 18446744073709551615.0) return false;
  *out = (uint64_t)(v * scale);
  return *out > 0;
}

double cli_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int cli_load_model(const char *command, const char *dir, tsr_device device, uint64_t cap,
                   tsr_model **out) {
  tsr_model_options opt = tsr_model_default_options();
  opt.device = device;
  opt.backing_cap = cap;
  opt.progress = true;
  tsr_status st = tsr_model_load(out, dir, &opt);
  if (st != TSR_OK) return cli_report_failure(command, "loading the model", st);
  return CLI_EXIT_OK;
}
