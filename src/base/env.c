/* base/env.c — the environment knobs, parsed once under pthread_once, and the checked integer
 * parser they all go through. A bad value is warned about on stderr (naming the knob, the value
 * and what is used instead) and ignored, never fatal, never silently reinterpreted. This file is
 * the only place in the library that calls getenv. Only libc here (base/log reads these knobs). */
#include "env.h" /* beside this file: tests/base/test_env_parse.c compiles this file in */

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static tsri_env_knobs knobs;
static pthread_once_t knobs_once = PTHREAD_ONCE_INIT;

bool tsri_env_parse_u64(const char *text, uint64_t min, uint64_t max, uint64_t *out) {
  if (!text || !*text) return false;
  uint64_t value = 0;
  for (const char *p = text; *p; p++) {
    if (*p < '0' || *p > '9') return false;
    unsigned digit = (unsigned)(*p - '0');
    if (value > (UINT64_MAX - digit) / 10) return false; /* the type overflows */
    value = value * 10 + digit;
  }
  if (value < min || value > max) return false;
  *out = value;
  return true;
}

bool tsri_env_parse_i64(const char *text, int64_t min, int64_t max, int64_t *out) {
  if (!text) return false;
  bool negative = text[0] == '-';
  uint64_t magnitude = 0;
  /* INT64_MIN's magnitude is one more than INT64_MAX's. */
  uint64_t limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  if (!tsri_env_parse_u64(text + (negative ? 1 : 0), 0, limit, &magnitude)) return false;
  int64_t value =
      negative ? (magnitude == limit ? INT64_MIN : -(int64_t)magnitude) : (int64_t)magnitude;
  if (value < min || value > max) return false;
  *out = value;
  return true;
}

static void warn(const char *name, const char *value, const char *expected, const char *instead) {
  fprintf(stderr, "tessera: warn: %s=%s is not %s; %s\n", name, value, expected, instead);
}

static int parse_log_level(const char *v) {
  static const char *const names[] = {"error", "warn", "info", "debug"};
  for (int i = 0; i < 4; i++)
    if (strcasecmp(v, names[i]) == 0) return i;
  warn("TSR_LOG", v, "one of error|warn|info|debug", "using warn");
  return 1;
}

static void read_default_device(const char *v) {
  snprintf(knobs.default_device, sizeof knobs.default_device, "%s", v);
  uint64_t index = 0;
  if (strcmp(v, "cpu") == 0) {
    knobs.device_kind = TSRI_ENV_DEVICE_CPU;
  } else if (strcmp(v, "gpu") == 0) {
    knobs.device_kind = TSRI_ENV_DEVICE_GPU;
  } else if (strncmp(v, "gpu:", 4) == 0 && tsri_env_parse_u64(v + 4, 0, INT_MAX, &index)) {
    knobs.device_kind = TSRI_ENV_DEVICE_GPU;
    knobs.device_index = (int)index;
  } else {
    warn("TSR_DEFAULT_DEVICE", v, "cpu, gpu or gpu:N (N in [0, 2147483647])", "ignored");
  }
}

static void read_isa(const char *v) {
  static const char *const names[] = {"scalar", "avx2", "avx512"};
  snprintf(knobs.cpu_isa_text, sizeof knobs.cpu_isa_text, "%s", v);
  for (int i = 0; i < 3; i++)
    if (strcmp(v, names[i]) == 0) knobs.cpu_isa = (tsri_env_isa)i;
  if (knobs.cpu_isa == TSRI_ENV_ISA_UNSET)
    warn("TSR_CPU_ISA", v, "one of avx512|avx2|scalar", "using the widest this CPU has");
}

static void read_kernels(const char *v) {
  static const char *const names[] = {"auto", "jit", "aot"};
  for (int i = 0; i < 3; i++)
    if (strcmp(v, names[i]) == 0) {
      knobs.kernels = (tsri_env_kernels)i;
      return;
    }
  warn("TSR_KERNELS", v, "one of jit|aot|auto", "using auto");
}

/* The first usable of TSR_CACHE_DIR, $XDG_CACHE_HOME/tessera, $HOME/.cache/tessera. */
static void read_cache_dir(void) {
  const char *dir = getenv("TSR_CACHE_DIR");
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  int n = 0;
  if (dir && *dir)
    n = snprintf(knobs.cache_dir, sizeof knobs.cache_dir, "%s", dir);
  else if (xdg && xdg[0] == '/')
    n = snprintf(knobs.cache_dir, sizeof knobs.cache_dir, "%s/tessera", xdg);
  else if (home && home[0] == '/')
    n = snprintf(knobs.cache_dir, sizeof knobs.cache_dir, "%s/.cache/tessera", home);
  if (n < 0 || (size_t)n >= sizeof knobs.cache_dir) {
    warn("TSR_CACHE_DIR", knobs.cache_dir, "a path shorter than 1024 bytes",
         "kernels are not cached on disk");
    knobs.cache_dir[0] = '\0';
  }
}

/* TSR_QMV_MMA: "off" or "R,W,B,X" (env.h). */
static void read_qmv_mma(const char *v) {
  static const uint64_t lowest[4] = {1, 4, 1, 0}, highest[4] = {2, 16, 4, 1};
  uint64_t f[4];
  char text[32], *field = text;
  if (strcmp(v, "off") == 0) {
    knobs.qmv_mma = -1;
    return;
  }
  bool ok = strlen(v) < sizeof text;
  snprintf(text, sizeof text, "%s", v);
  for (int i = 0; ok && i < 4; i++) {
    char *comma = strchr(field, ',');
    if ((comma != NULL) != (i < 3)) ok = false;
    if (comma) *comma = '\0';
    ok = ok && tsri_env_parse_u64(field, lowest[i], highest[i], &f[i]);
    field = comma ? comma + 1 : field;
  }
  if (ok && (f[1] == 4 || f[1] == 8 || f[1] == 16)) {
    knobs.qmv_mma = 1;
    knobs.qmv_mma_rows = (int)f[0];
    knobs.qmv_mma_warps = (int)f[1];
    knobs.qmv_mma_blocks = (int)f[2];
    knobs.qmv_mma_staged = (int)f[3];
    return;
  }
  warn("TSR_QMV_MMA", v, "off or R,W,B,X (R 1|2, W 4|8|16, B 1..4, X 0|1)",
       "using the library's choice");
}

/* A 0/1 knob: true for "1"; "0", unset or empty false; anything else warned about and false. */
static bool read_switch(const char *name, const char *when_bad) {
  const char *v = getenv(name);
  uint64_t on = 0;
  if (!v || !*v) return false;
  if (tsri_env_parse_u64(v, 0, 1, &on)) return on == 1;
  warn(name, v, "0 or 1", when_bad);
  return false;
}

static void read_knobs(void) {
  const char *v = getenv("TSR_LOG");
  knobs.log_level = (v && *v) ? parse_log_level(v) : 1;
  v = getenv("TSR_DEFAULT_DEVICE");
  if (v && *v) read_default_device(v);
  v = getenv("TSR_CACHE_LIMIT");
  if (v && *v) {
    knobs.has_cache_limit = tsri_env_parse_u64(v, 0, UINT64_MAX, &knobs.cache_limit);
    if (!knobs.has_cache_limit)
      warn("TSR_CACHE_LIMIT", v, "a byte count (digits only, below 2^64)", "ignored");
  }
  v = getenv("TSR_NUM_THREADS");
  if (v && *v) {
    uint64_t threads = 0;
    if (tsri_env_parse_u64(v, 1, TSRI_ENV_MAX_THREADS, &threads))
      knobs.num_threads = (int)threads;
    else {
      char expected[48];
      snprintf(expected, sizeof expected, "an integer in [1, %d]", TSRI_ENV_MAX_THREADS);
      warn("TSR_NUM_THREADS", v, expected, "using one thread per online core");
    }
  }
  knobs.cpu_isa = TSRI_ENV_ISA_UNSET;
  v = getenv("TSR_CPU_ISA");
  if (v && *v) read_isa(v);
  v = getenv("TSR_KERNELS");
  if (v && *v) read_kernels(v);
  knobs.debug_poison = read_switch("TSR_DEBUG_POISON", "ignored (no poisoning)");
  knobs.profile = read_switch("TSR_PROFILE", "ignored (no profile)");
  knobs.cuda_graphs = read_switch("TSR_CUDA_GRAPHS", "ignored (no graphs)");
  v = getenv("TSR_QMV_MMA");
  if (v && *v) read_qmv_mma(v);
  read_cache_dir();
  v = getenv("TSR_KERNEL_RECORD");
  if (v && *v &&
      snprintf(knobs.kernel_record, sizeof knobs.kernel_record, "%s", v) >=
          (int)sizeof knobs.kernel_record) {
    warn("TSR_KERNEL_RECORD", v, "a path shorter than 1024 bytes", "nothing is recorded");
    knobs.kernel_record[0] = '\0';
  }
  knobs.mpi_launched = getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK");
  knobs.mpi_iallreduce_algorithm_given = getenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm");
}

const tsri_env_knobs *tsri_env(void) {
  pthread_once(&knobs_once, read_knobs);
  return &knobs;
}
