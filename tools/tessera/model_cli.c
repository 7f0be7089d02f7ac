/* tools/tessera/model_cli.c — flag parsing and model loading shared by the model subcommands. */
#include "model_cli.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* The device a rank's split model goes on: see cli_load_model_in. */
static int place_for_group(const char *command, tsr_group *group, tsr_device *device) {
  tsr_device home = tsr_group_device(group), fallback = tsr_default_device();
  if (!group || home.type != TSR_GPU) return CLI_EXIT_OK;
  if (device->type == home.type && device->index == home.index) return CLI_EXIT_OK;
  if (device->type == fallback.type && device->index == fallback.index) {
    *device = home;
    return CLI_EXIT_OK;
  }
  char mine[32], group_gpu[32];
  return cli_usage_error(
      command, "rank %d's nccl group runs on %s: --device %s cannot hold its model",
      tsr_group_rank(group), cli_device_name(home, group_gpu), cli_device_name(*device, mine));
}

int cli_load_model_in(const char *command, const char *dir, tsr_device *device, uint64_t cap,
                      tsr_group *group, tsr_model **out) {
  int code = place_for_group(command, group, device);
  if (code != CLI_EXIT_OK) return code;
  tsr_model_options opt = tsr_model_default_options();
  opt.device = *device;
  opt.backing_cap = cap;
  opt.group = group;
  opt.progress = tsr_group_rank(group) <= 0; /* rank 0 (or no group) draws the bar */
  tsr_status st = tsr_model_load(out, dir, &opt);
  if (st != TSR_OK) return cli_report_failure(command, "loading the model", st);
  return CLI_EXIT_OK;
}

bool cli_parse_group(const char *text) {
  return strcmp(text, "mpi") == 0 || strcmp(text, "nccl") == 0;
}

/* The stderr a silenced rank had, kept for the one line that reports its failure. */
static int saved_stderr = -1;

/* Points stdout and stderr at /dev/null (stdout flushed first), keeping stderr in saved_stderr. */
static void silence(void) {
  fflush(stdout);
  fflush(stderr);
  int null = open("/dev/null", O_WRONLY);
  if (null < 0) return;
  saved_stderr = dup(STDERR_FILENO);
  dup2(null, STDOUT_FILENO);
  dup2(null, STDERR_FILENO);
  close(null);
}

int cli_group_join(const char *command, const char *backend, tsr_group **out) {
  *out = NULL;
  if (!backend) return CLI_EXIT_OK;
  tsr_status st = tsr_group_init(out, backend);
  if (st != TSR_OK) return cli_report_failure(command, "joining the group", st);
  if (tsr_group_rank(*out) != 0) silence();
  return CLI_EXIT_OK;
}

int cli_group_leave(const char *command, tsr_group *g, int code) {
  if (!g) return code;
  int rank = tsr_group_rank(g), ranks = tsr_group_size(g);
  if (code != CLI_EXIT_OK && saved_stderr >= 0)
    dprintf(saved_stderr, "tessera %s: rank %d of %d failed (exit %d): %s\n", command, rank, ranks,
            code, tsr_last_error());
  tsr_group_free(g);
  tsr_shutdown();
  return code;
}
