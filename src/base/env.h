/* base/env.h — the environment knobs, read once per process (the first call reads them). */
#ifndef TSR_BASE_ENV_H
#define TSR_BASE_ENV_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
  int log_level;           /* TSR_LOG: error|warn|info|debug (default warn) */
  char default_device[32]; /* TSR_DEFAULT_DEVICE: cpu|gpu|gpu:N, "" when unset */
  bool has_cache_limit;    /* TSR_CACHE_LIMIT set (bytes) */
  uint64_t cache_limit;    /* its value */
} tsri_env_knobs;

const tsri_env_knobs *tsri_env(void);

#endif
