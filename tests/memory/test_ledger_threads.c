/* tests/memory/test_ledger_threads.c — 8 threads allocate and free CPU arrays of random sizes
 * under a cap while a 9th snapshots the ledger without pause: every snapshot must keep
 * active + cached + pending + fixed <= cap, the sequence never goes back, the counts of granted
 * and refused reservations match what the threads saw, and everything is refunded at the end.
 *
 * Operations: 10^5 in all by default, 10^6 with TSR_STRESS=1, and 2 * 10^4 under the sanitizers
 * (TSR_SANITIZED=1: ThreadSanitizer makes every access and lock ~10x slower; 2 * 10^4 still
 * drives the cap to hundreds of refusals and evictions). */
#include <pthread.h>
#include <stdatomic.h>

#include <tessera/testing.h>

#include "check.h"

#define WORKERS 8
#define MAX_HELD 32
/* Small enough that the threads' arrays together (~32 * 75 KiB each, ~19 MiB) pass it often. */
#define CAP_BYTES ((uint64_t)16 << 20)
#define MAX_ARRAY_BYTES ((uint64_t)2 << 20)

static const tsr_device cpu = {TSR_CPU, 0};
static uint8_t source[MAX_ARRAY_BYTES];
static atomic_bool workers_done;

typedef struct {
  pthread_t thread;
  uint64_t seed, ops;
  uint64_t granted, refused; /* what this thread saw */
  tsr_array *held[MAX_HELD];
  int nheld;
} worker;

static uint64_t next_random(uint64_t *state) { /* xorshift64* */
  uint64_t x = *state;
  x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
  *state = x;
  return x * 0x2545F4914F6CDD1DULL;
}

/* Mostly small heap blocks, a quarter just mapped, a few large mappings, and some empty arrays. */
static uint64_t pick_bytes(uint64_t *state) {
  uint64_t r = next_random(state) % 100;
  if (r < 2) return 0;
  if (r < 70) return 1 + next_random(state) % (16 << 10);
  if (r < 97) return (64 << 10) + next_random(state) % (192 << 10);
  return (512 << 10) + next_random(state) % (MAX_ARRAY_BYTES - (512 << 10));
}

static void allocate_one(worker *w) {
  int64_t shape[1] = {(int64_t)pick_bytes(&w->seed)};
  tsr_array *a = NULL;
  tsr_status st = tsr_array_from_data_on(&a, source, TSR_UINT8, shape, 1, cpu);
  if (st == TSR_ERR_CAP) {
    CHECK_MESSAGE("refused by the cap");
    CHECK(a == NULL);
    w->refused++;
    return;
  }
  CHECK_OK(st);
  w->held[w->nheld++] = a;
  w->granted++;
}

static void release_one(worker *w) {
  int i = (int)(next_random(&w->seed) % (uint64_t)w->nheld);
  tsr_array_release(w->held[i]);
  w->held[i] = w->held[--w->nheld];
}

static void *work(void *arg) {
  worker *w = arg;
  for (uint64_t op = 0; op < w->ops; op++) {
    bool allocate = w->nheld == 0 || (w->nheld < MAX_HELD && next_random(&w->seed) % 100 < 60);
    if (allocate)
      allocate_one(w);
    else
      release_one(w);
  }
  while (w->nheld > 0)
    release_one(w);
  return NULL;
}

typedef struct {
  uint64_t snapshots, max_total;
} watch_result;

static void *watch(void *arg) {
  watch_result *result = arg;
  uint64_t last_sequence = 0;
  while (!atomic_load(&workers_done)) {
    tsr_backing_snapshot s;
    CHECK_OK(tsr_calibration_snapshot(cpu, &s));
    uint64_t total = s.active + s.cached + s.pending + s.fixed;
    if (total > s.cap)
      CHECK_FAIL_("invariant broken in snapshot %" PRIu64 ": active %" PRIu64 " + cached %" PRIu64
                  " + pending %" PRIu64 " + fixed %" PRIu64 " > cap %" PRIu64,
                  s.sequence, s.active, s.cached, s.pending, s.fixed, s.cap);
    if (s.sequence < last_sequence)
      CHECK_FAIL_("sequence went back: %" PRIu64 " after %" PRIu64, s.sequence, last_sequence);
    CHECK(s.peak >= total);
    last_sequence = s.sequence;
    if (total > result->max_total) result->max_total = total;
    result->snapshots++;
  }
  return NULL;
}

static uint64_t total_ops(void) {
  const char *stress = getenv("TSR_STRESS"), *sanitized = getenv("TSR_SANITIZED");
  if (stress && strcmp(stress, "1") == 0) return 1000000;
  if (sanitized && strcmp(sanitized, "1") == 0) return 20000;
  return 100000;
}

int main(void) {
  static worker workers[WORKERS];
  watch_result watched = {0};
  pthread_t watcher;
  uint64_t ops = total_ops(), granted = 0, refused = 0;
  CHECK_OK(tsr_calibration_install_cap(cpu, CAP_BYTES));
  CHECK_EQ_INT(pthread_create(&watcher, NULL, watch, &watched), 0);
  for (int i = 0; i < WORKERS; i++) {
    workers[i].seed = 0x9E3779B97F4A7C15ULL * (uint64_t)(i + 1);
    workers[i].ops = ops / WORKERS;
    CHECK_EQ_INT(pthread_create(&workers[i].thread, NULL, work, &workers[i]), 0);
  }
  for (int i = 0; i < WORKERS; i++) {
    CHECK_EQ_INT(pthread_join(workers[i].thread, NULL), 0);
    granted += workers[i].granted;
    refused += workers[i].refused;
  }
  atomic_store(&workers_done, true);
  CHECK_EQ_INT(pthread_join(watcher, NULL), 0);

  tsr_backing_snapshot s;
  CHECK_OK(tsr_calibration_snapshot(cpu, &s));
  CHECK_EQ_U64(s.reservations, granted); /* a cache hit is a reservation too */
  CHECK_EQ_U64(s.refusals, refused);
  CHECK(refused > 0); /* the cap really was in play */
  CHECK(s.peak <= CAP_BYTES);
  CHECK_EQ_U64(s.active, 0);
  CHECK_EQ_U64(s.pending, 0);
  CHECK_OK(tsr_memory_clear_cache(cpu));
  CHECK_OK(tsr_calibration_snapshot(cpu, &s));
  CHECK_EQ_U64(s.active, 0);
  CHECK_EQ_U64(s.pending, 0);
  CHECK_EQ_U64(s.cached, 0);
  CHECK_EQ_U64(s.fixed, 0);
  printf("%" PRIu64 " operations: %" PRIu64 " granted, %" PRIu64 " refused, %" PRIu64
         " refunds; %" PRIu64 " snapshots, peak %" PRIu64 " of cap %" PRIu64 "\n",
         ops, granted, refused, s.refunds, watched.snapshots, s.peak, s.cap);
  tsr_shutdown();
  return 0;
}
