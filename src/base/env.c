/* base/env.c — environment knobs, parsed once under pthread_once; bad values are warned about
 * and ignored, never fatal. */
#include "base/env.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static tsri_env_knobs knobs;
static pthread_once_t knobs_once = PTHREAD_ONCE_INIT;

static int parse_log_level(const char *v) {
  static const char *const names[] = {"error", "warn", "info", "debug"};
  for (int i = 0; i < 4; i++)
    if (strcasecmp(v, names[i]) == 0) return i;
  fprintf(stderr, "tessera: warn: TSR_LOG=%s is not one of error|warn|info|debug; using warn\n", v);
  return 1;
}

static void read_knobs(void) {
  const char *v = getenv("TSR_LOG");
  knobs.log_level = (v && *v) ? parse_log_level(v) : 1;
  v = getenv("TSR_DEFAULT_DEVICE");
  if (v) snprintf(knobs.default_device, sizeof knobs.default_device, "%s", v);
  v = getenv("TSR_CACHE_LIMIT");
  if (v && *v) {
    char *end = NULL;
    errno = 0;
    unsigned long long bytes = strtoull(v, &end, 10);
    if (errno == 0 && end && *end == '\0' && v[0] != '-') {
      knobs.has_cache_limit = true;
      knobs.cache_limit = bytes;
    } else {
      fprintf(stderr, "tessera: warn: TSR_CACHE_LIMIT=%s is not a byte count; ignored\n", v);
    }
  }
}

const tsri_env_knobs *tsri_env(void) {
  pthread_once(&knobs_once, read_knobs);
  return &knobs;
}
