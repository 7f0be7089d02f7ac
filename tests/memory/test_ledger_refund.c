/* tests/memory/test_ledger_refund.c — bytes are refunded only after the real deallocation: a
 * dealloc hook sleeps 200 ms before really freeing while another thread snapshots the CPU
 * ledger, and every snapshot taken while the hook sleeps must still count the bytes (as active
 * for a released buffer, as cached for a trimmed one, as pending for blocks evicted to make room
 * for an allocation). After each, the counters drop by exactly the bytes and refunds rise. */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include <tessera/testing.h>

#include "check.h"

#define CAP_BYTES ((uint64_t)4 << 20)

static const tsr_device cpu = {TSR_CPU, 0};
static uint8_t source[3 << 20];

/* The hook's phase: 0 idle, 1 sleeping before the real free, 2 past it. */
static atomic_int hook_phase;
static atomic_int hook_calls;
static _Atomic uint64_t hook_bytes;

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0)
    continue;
}

static void slow_free(void *ptr, uint64_t bytes, tsr_testing_real_free_fn real, void *ctx) {
  CHECK(ctx == &hook_calls);
  CHECK(ptr != NULL);
  atomic_fetch_add(&hook_calls, 1);
  atomic_store(&hook_bytes, bytes);
  atomic_store(&hook_phase, 1);
  sleep_ms(200);
  atomic_store(&hook_phase, 2);
  real(ptr, bytes);
}

/* What every snapshot taken while the hook sleeps must read. */
typedef struct {
  uint64_t active, cached, pending;
  atomic_bool stop;
  uint64_t during_hook; /* snapshots known to fall inside the sleep */
} watch_plan;

static void *watch(void *arg) {
  watch_plan *plan = arg;
  while (!atomic_load(&plan->stop)) {
    tsr_backing_snapshot s;
    /* A snapshot bracketed by two reads of phase 1 was taken before the real free began, so
       before any refund could happen. */
    int before = atomic_load(&hook_phase);
    CHECK_OK(tsr_calibration_snapshot(cpu, &s));
    int after = atomic_load(&hook_phase);
    CHECK(s.active + s.cached + s.pending + s.fixed <= s.cap);
    if (before != 1 || after != 1) continue;
    CHECK_EQ_U64(s.active, plan->active);
    CHECK_EQ_U64(s.cached, plan->cached);
    CHECK_EQ_U64(s.pending, plan->pending);
    plan->during_hook++;
    sleep_ms(1);
  }
  return NULL;
}

typedef void (*action_fn)(void *ctx);

/* Runs action on this thread while the watcher checks the plan; the hook must run once. */
static void watched(action_fn action, void *ctx, watch_plan *plan) {
  pthread_t watcher;
  atomic_store(&hook_phase, 0);
  atomic_store(&hook_calls, 0);
  atomic_store(&plan->stop, false);
  plan->during_hook = 0;
  CHECK_EQ_INT(pthread_create(&watcher, NULL, watch, plan), 0);
  action(ctx);
  atomic_store(&plan->stop, true);
  CHECK_EQ_INT(pthread_join(watcher, NULL), 0);
  CHECK_EQ_INT(atomic_load(&hook_calls), 1);
  CHECK(plan->during_hook >= 10);
}

static tsr_array *bytes_array(uint64_t bytes) {
  int64_t shape[1] = {(int64_t)bytes};
  tsr_array *a = NULL;
  CHECK_OK(tsr_array_from_data_on(&a, source, TSR_UINT8, shape, 1, cpu));
  return a;
}

static void release_action(void *ctx) {
  tsr_array_release(ctx);
}
static void clear_action(void *ctx) {
  (void)ctx;
  CHECK_OK(tsr_memory_clear_cache(cpu));
}
static void allocate_action(void *ctx) {
  *(tsr_array **)ctx = bytes_array(3 << 20);
}

/* A released buffer with the cache off: active until the real free has returned. */
static void check_release(uint64_t requested, uint64_t backed) {
  CHECK_OK(tsr_memory_set_cache_limit(cpu, 0));
  tsr_array *a = bytes_array(requested);
  tsr_backing_snapshot before;
  CHECK_OK(tsr_calibration_snapshot(cpu, &before));
  CHECK_EQ_U64(before.active, backed);
  watch_plan plan = {.active = backed, .cached = 0, .pending = 0};
  watched(release_action, a, &plan);
  tsr_backing_snapshot after;
  CHECK_OK(tsr_calibration_snapshot(cpu, &after));
  CHECK_EQ_U64(atomic_load(&hook_bytes), backed);
  CHECK_EQ_U64(after.active, before.active - backed);
  CHECK_EQ_U64(after.refunds, before.refunds + 1);
}

/* A trimmed cache block: cached until its real free has returned. */
static void check_trim(void) {
  CHECK_OK(tsr_memory_set_cache_limit(cpu, CAP_BYTES));
  CHECK_OK(tsr_testing_set_dealloc_hook(cpu, NULL, NULL));
  tsr_array_release(bytes_array(1 << 20)); /* kept: the hook is not called */
  CHECK_OK(tsr_testing_set_dealloc_hook(cpu, slow_free, &hook_calls));
  tsr_backing_snapshot before;
  CHECK_OK(tsr_calibration_snapshot(cpu, &before));
  CHECK_EQ_U64(before.cached, 1 << 20);
  watch_plan plan = {.active = 0, .cached = 1 << 20, .pending = 0};
  watched(clear_action, NULL, &plan);
  tsr_backing_snapshot after;
  CHECK_OK(tsr_calibration_snapshot(cpu, &after));
  CHECK_EQ_U64(after.cached, 0);
  CHECK_EQ_U64(after.refunds, before.refunds + 1);
}

/* An allocation that must evict first: the victim's bytes are held as pending for it (never
 * free room for anyone else) until the victim is really gone. */
static void check_eviction(void) {
  CHECK_OK(tsr_memory_set_cache_limit(cpu, CAP_BYTES));
  CHECK_OK(tsr_testing_set_dealloc_hook(cpu, NULL, NULL));
  tsr_array_release(bytes_array(1536 << 10)); /* 1.5 MiB cached; 3 MiB more will not fit */
  CHECK_OK(tsr_testing_set_dealloc_hook(cpu, slow_free, &hook_calls));
  tsr_backing_snapshot before;
  CHECK_OK(tsr_calibration_snapshot(cpu, &before));
  CHECK_EQ_U64(before.cached, 1536 << 10);
  tsr_array *a = NULL;
  watch_plan plan = {.active = 0, .cached = 0, .pending = 3 << 20};
  watched(allocate_action, &a, &plan);
  tsr_backing_snapshot after;
  CHECK_OK(tsr_calibration_snapshot(cpu, &after));
  CHECK_EQ_U64(after.active, 3 << 20);
  CHECK_EQ_U64(after.cached, 0);
  CHECK_EQ_U64(after.pending, 0);
  CHECK_EQ_U64(after.refunds, before.refunds + 1);
  CHECK_EQ_U64(after.reservations, before.reservations + 1);
  CHECK_OK(tsr_testing_set_dealloc_hook(cpu, NULL, NULL));
  tsr_array_release(a);
  CHECK_OK(tsr_memory_clear_cache(cpu));
}

int main(void) {
  CHECK_OK(tsr_calibration_install_cap(cpu, CAP_BYTES));
  check_eviction();
  CHECK_OK(tsr_testing_set_dealloc_hook(cpu, slow_free, &hook_calls));
  check_release(3 << 20, 3 << 20); /* a mapping */
  check_release(1000, 1024);       /* a heap block */
  check_trim();
  CHECK_OK(tsr_testing_set_dealloc_hook(cpu, NULL, NULL));
  CHECK_OK(tsr_memory_clear_cache(cpu));
  CHECK_NO_LEAKS();
  CHECK_EQ_U64(tsr_memory_cached(cpu), 0);
  tsr_shutdown();
  return 0;
}
