/* core/profile.c — the TSR_PROFILE counters (core/profile.h): relaxed atomics per (device type,
 * primitive), so concurrent streams add without a lock. */
#include "core/profile.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "base/env.h"
#include "base/log.h"

enum { DEVICE_TYPES = 2 };

typedef struct {
  atomic_uint_fast64_t count, total_ns, max_ns;
} counter;

static counter nodes[DEVICE_TYPES][TSRI_PRIM_COUNT];
static counter phases[TSRI_PROFILE_PHASES];

static void report_at_exit(void) {
  tsri_profile_report();
}

/* A program that never calls tsr_shutdown (the CLI) still gets its table, at exit. */
static void register_exit_report(void) {
  atexit(report_at_exit);
}

bool tsri_profile_on(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  if (!tsri_env()->profile) return false;
  pthread_once(&once, register_exit_report);
  return true;
}

uint64_t tsri_profile_now(void) {
  if (!tsri_profile_on()) return 0;
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void add(counter *c, uint64_t start_ns) {
  uint64_t ns = tsri_profile_now() - start_ns;
  atomic_fetch_add_explicit(&c->count, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&c->total_ns, ns, memory_order_relaxed);
  uint64_t seen = atomic_load_explicit(&c->max_ns, memory_order_relaxed);
  while (ns > seen && !atomic_compare_exchange_weak_explicit(
                          &c->max_ns, &seen, ns, memory_order_relaxed, memory_order_relaxed)) {
  }
}

void tsri_profile_node(tsr_device_type type, tsri_primitive p, uint64_t start_ns) {
  if (!tsri_profile_on() || (int)type < 0 || (int)type >= DEVICE_TYPES) return;
  add(&nodes[type][p], start_ns);
}

void tsri_profile_phase_add(tsri_profile_phase phase, uint64_t start_ns) {
  if (tsri_profile_on()) add(&phases[phase], start_ns);
}

typedef struct {
  const char *device, *what;
  uint64_t count, total_ns, max_ns;
} row;

static int by_total(const void *a, const void *b) {
  uint64_t x = ((const row *)a)->total_ns, y = ((const row *)b)->total_ns;
  return x < y ? 1 : x > y ? -1 : 0;
}

/* A counter's values into a row, cleared. */
static row take(counter *c, const char *device, const char *what) {
  return (row){device, what, atomic_exchange(&c->count, 0), atomic_exchange(&c->total_ns, 0),
               atomic_exchange(&c->max_ns, 0)};
}

void tsri_profile_report(void) {
  if (!tsri_profile_on()) return;
  static const char *const device_names[DEVICE_TYPES] = {"cpu", "gpu"};
  static const char *const phase_names[TSRI_PROFILE_PHASES] = {
      [TSRI_PROFILE_SUBMIT] = "eval: walk and submit",
      [TSRI_PROFILE_WAIT] = "eval: wait",
      [TSRI_PROFILE_INPUTS] = "node: input fences",
      [TSRI_PROFILE_OUTPUT] = "node: output",
      [TSRI_PROFILE_RELEASE] = "node: release hand",
      [TSRI_PROFILE_PRELUDE] = "node: backend prelude",
      [TSRI_PROFILE_LOOKUP] = "node: kernel lookup",
      [TSRI_PROFILE_LAUNCH] = "node: launch call",
      [TSRI_PROFILE_GRAPH_END] = "graph: end and launch",
      [TSRI_PROFILE_GRAPH_UPDATE] = "graph: update",
      [TSRI_PROFILE_GRAPH_INSTANTIATE] = "graph: instantiate"};
  row rows[DEVICE_TYPES * TSRI_PRIM_COUNT + TSRI_PROFILE_PHASES];
  size_t n = 0;
  for (int d = 0; d < DEVICE_TYPES; d++)
    for (int p = 0; p < TSRI_PRIM_COUNT; p++)
      rows[n++] = take(&nodes[d][p], device_names[d], tsri_primitive_name((tsri_primitive)p));
  for (int p = 0; p < TSRI_PROFILE_PHASES; p++)
    rows[n++] = take(&phases[p], "all", phase_names[p]);
  qsort(rows, n, sizeof *rows, by_total);
  if (rows[0].count == 0) return; /* nothing since the last report */
  /* Asked for by TSR_PROFILE=1: shown at the default log level (warn) too. */
  tsri_log_level level = tsri_env()->log_level >= TSRI_LOG_INFO ? TSRI_LOG_INFO : TSRI_LOG_WARN;
  tsri_log(level, "profile (TSR_PROFILE=1): host time per node's task, largest first");
  for (size_t i = 0; i < n && rows[i].count > 0; i++)
    tsri_log(level, "profile: %-4s %-22s %10llu x %9.2f us = %10.3f ms (max %.1f us)",
             rows[i].device, rows[i].what, (unsigned long long)rows[i].count,
             (double)rows[i].total_ns / 1e3 / (double)rows[i].count, (double)rows[i].total_ns / 1e6,
             (double)rows[i].max_ns / 1e3);
}
