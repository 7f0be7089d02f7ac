/* tests/memory/test_ledger_cap.c — the cap's rules on the CPU ledger, each case in its own
 * forked process (a cap is installed at most once per process, before the first backing
 * attempt, so each case needs a fresh ledger): install once, only before the first backing
 * attempt (a 0-byte array counts), refusals leave nothing pending, eviction makes room, bytes
 * counted as backed, wrapped memory, and the cache limit. */
#include <sys/wait.h>
#include <unistd.h>

#include <tessera/testing.h>

#include "check.h"

static const tsr_device cpu = {TSR_CPU, 0};
static uint8_t source[4 << 20];

static tsr_array *bytes_array(uint64_t bytes) {
  int64_t shape[1] = {(int64_t)bytes};
  tsr_array *a = NULL;
  CHECK_OK(tsr_array_from_data_on(&a, source, TSR_UINT8, shape, 1, cpu));
  return a;
}

static tsr_backing_snapshot snapshot(void) {
  tsr_backing_snapshot s;
  CHECK_OK(tsr_calibration_snapshot(cpu, &s));
  return s;
}

static uint64_t page_round(uint64_t bytes) {
  uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  return (bytes + page - 1) / page * page;
}

static void case_install_twice(void) {
  CHECK_OK(tsr_calibration_install_cap(cpu, 1 << 20));
  CHECK_STATUS(tsr_calibration_install_cap(cpu, 2 << 20), TSR_ERR_STATE);
  CHECK_MESSAGE("cap already installed on cpu (1048576 bytes)");
  CHECK_MESSAGE("cannot be raised or reset");
  CHECK_STATUS(tsr_calibration_install_cap(cpu, 1 << 20), TSR_ERR_STATE); /* not even the same */
  CHECK_EQ_U64(snapshot().cap, 1 << 20);
}

static void case_install_after_backing(void) {
  tsr_array_release(bytes_array(16));
  CHECK_STATUS(tsr_calibration_install_cap(cpu, 1 << 20), TSR_ERR_STATE);
  CHECK_MESSAGE("first backing attempt");
  CHECK_MESSAGE("1 reservations, 0 refusals");
  CHECK_EQ_U64(snapshot().cap, 0);
}

static void case_zero_bytes_is_an_attempt(void) {
  tsr_array *empty = bytes_array(0);
  tsr_backing_snapshot s = snapshot();
  CHECK_EQ_U64(s.reservations, 1);
  CHECK_EQ_U64(s.active, 0);
  CHECK_STATUS(tsr_calibration_install_cap(cpu, 1 << 20), TSR_ERR_STATE);
  CHECK_MESSAGE("first backing attempt");
  tsr_array_release(empty);
}

static void case_zero_cap_invalid(void) {
  CHECK_STATUS(tsr_calibration_install_cap(cpu, 0), TSR_ERR_INVALID);
  CHECK_MESSAGE("0 bytes");
  CHECK_OK(tsr_calibration_install_cap(cpu, 1 << 20)); /* the refused call used nothing up */
}

static void case_unknown_device(void) {
  const tsr_device gpu99 = {TSR_GPU, 99}, cpu1 = {TSR_CPU, 1};
  tsr_backing_snapshot s;
  tsr_array *a = NULL;
  int64_t shape[1] = {4};
  CHECK_STATUS(tsr_calibration_install_cap(gpu99, 1 << 20), TSR_ERR_DEVICE);
  CHECK_MESSAGE("gpu:99");
  CHECK_STATUS(tsr_calibration_snapshot(gpu99, &s), TSR_ERR_DEVICE);
  CHECK_MESSAGE("gpu:99");
  CHECK_STATUS(tsr_memory_set_cache_limit(gpu99, 0), TSR_ERR_DEVICE);
  CHECK_STATUS(tsr_memory_clear_cache(gpu99), TSR_ERR_DEVICE);
  CHECK_STATUS(tsr_calibration_install_cap(cpu1, 1 << 20), TSR_ERR_DEVICE);
  CHECK_EQ_U64(tsr_memory_active(gpu99), 0);
  CHECK_EQ_U64(tsr_memory_cached(gpu99), 0);
  CHECK_EQ_U64(tsr_memory_peak(gpu99), 0);
  tsr_memory_reset_peak(gpu99); /* nothing to do, and no crash */
  CHECK_STATUS(tsr_array_from_data_on(&a, source, TSR_UINT8, shape, 1, gpu99), TSR_ERR_DEVICE);
  CHECK_MESSAGE("gpu:99");
  CHECK(a == NULL);
  CHECK_STATUS(tsr_testing_fail_allocation(gpu99, 1), TSR_ERR_DEVICE);
  CHECK_EQ_U64(tsr_testing_fail_allocation_pending(gpu99), 0);
}

static void case_refusal_leaves_nothing_pending(void) {
  CHECK_OK(tsr_calibration_install_cap(cpu, 65536));
  tsr_array *big = bytes_array(60000), *refused = NULL, *small = NULL; /* 60032 backed */
  int64_t shape[1] = {8192};
  CHECK_STATUS(tsr_array_from_data_on(&refused, source, TSR_UINT8, shape, 1, cpu), TSR_ERR_CAP);
  CHECK(refused == NULL);
  CHECK_MESSAGE("allocation of 8192 bytes on cpu refused by the cap");
  CHECK_MESSAGE("cap 65536, active 60032, cached 0, pending 0, fixed 0");
  tsr_backing_snapshot s = snapshot();
  CHECK_EQ_U64(s.pending, 0);
  CHECK_EQ_U64(s.active, 60032);
  CHECK_EQ_U64(s.refusals, 1);
  CHECK_EQ_U64(s.reservations, 1);
  small = bytes_array(1024); /* fits: 61056 <= 65536 */
  CHECK_EQ_U64(snapshot().active, 61056);
  tsr_array_release(small);
  tsr_array_release(big);
}

static void case_eviction_makes_room(void) {
  CHECK_OK(tsr_calibration_install_cap(cpu, 1 << 20));
  CHECK_OK(tsr_memory_set_cache_limit(cpu, 4 << 20)); /* whatever TSR_CACHE_LIMIT says */
  tsr_array *blocks[4], *needs_room = NULL, *too_big = NULL;
  uint64_t block = page_round(200000), wanted = page_round(600000);
  for (int i = 0; i < 4; i++)
    blocks[i] = bytes_array(200000);
  for (int i = 0; i < 4; i++)
    tsr_array_release(blocks[i]);
  tsr_backing_snapshot before = snapshot();
  CHECK_EQ_U64(before.cached, 4 * block);
  CHECK_EQ_U64(before.active, 0);
  /* Too big even with the cache emptied: refused at once, and the cache is kept. */
  int64_t huge[1] = {2 << 20};
  CHECK_STATUS(tsr_array_from_data_on(&too_big, source, TSR_UINT8, huge, 1, cpu), TSR_ERR_CAP);
  CHECK_EQ_U64(snapshot().cached, 4 * block);
  /* Fits only once two cached blocks are gone. */
  needs_room = bytes_array(600000);
  tsr_backing_snapshot after = snapshot();
  CHECK_EQ_U64(after.active, wanted);
  CHECK(after.cached < before.cached);
  CHECK(after.active + after.cached + after.pending + after.fixed <= after.cap);
  CHECK_EQ_U64(after.pending, 0);
  CHECK_EQ_U64(after.cached % block, 0);
  CHECK_EQ_U64(after.refunds - before.refunds, (before.cached - after.cached) / block);
  CHECK_EQ_U64(after.refusals, 1);
  tsr_array_release(needs_room);
  CHECK_OK(tsr_memory_clear_cache(cpu));
  CHECK_EQ_U64(tsr_memory_cached(cpu), 0);
}

static void case_snapshot_null(void) {
  CHECK_STATUS(tsr_calibration_snapshot(cpu, NULL), TSR_ERR_INVALID);
}

static void case_cache_limit(void) {
  CHECK_OK(tsr_memory_set_cache_limit(cpu, 0)); /* disabled: release really frees */
  tsr_array_release(bytes_array(1000));
  CHECK_EQ_U64(tsr_memory_cached(cpu), 0);
  CHECK_EQ_U64(tsr_memory_active(cpu), 0);
  CHECK_OK(tsr_memory_set_cache_limit(cpu, 4096));
  tsr_array *a = bytes_array(1000), *b = bytes_array(3000), *c = bytes_array(3000);
  tsr_array_release(a);
  tsr_array_release(b);
  CHECK_EQ_U64(tsr_memory_cached(cpu), 1024 + 3008);
  tsr_array_release(c); /* over the limit: freed, not kept */
  CHECK_EQ_U64(tsr_memory_cached(cpu), 1024 + 3008);
  tsr_backing_snapshot before = snapshot();
  a = bytes_array(1000); /* a cache hit: a reservation, no new bytes */
  tsr_backing_snapshot hit = snapshot();
  CHECK_EQ_U64(hit.cached, 3008);
  CHECK_EQ_U64(hit.active, 1024);
  CHECK_EQ_U64(hit.reservations, before.reservations + 1);
  tsr_array_release(a);
  CHECK_OK(tsr_memory_set_cache_limit(cpu, 2048)); /* evicts what is over now */
  CHECK(tsr_memory_cached(cpu) <= 2048);
  CHECK_OK(tsr_memory_set_cache_limit(cpu, 0));
  CHECK_EQ_U64(tsr_memory_cached(cpu), 0);
}

static void case_counted_as_backed(void) {
  CHECK_OK(tsr_memory_set_cache_limit(cpu, 0));
  struct {
    uint64_t requested, backed;
  } cases[] = {{1, 64},
               {64, 64},
               {65, 128},
               {65472, 65472},
               {65473, 65536},
               {65536, page_round(65536)},
               {100000, page_round(100000)}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tsr_array *a = bytes_array(cases[i].requested);
    CHECK_EQ_U64(tsr_memory_active(cpu), cases[i].backed);
    tsr_array_release(a);
    CHECK_EQ_U64(tsr_memory_active(cpu), 0);
  }
  tsr_array *one = bytes_array(1), *many = bytes_array(100000);
  CHECK_EQ_U64(tsr_memory_active(cpu), 64 + page_round(100000));
  CHECK(tsr_memory_peak(cpu) >= 64 + page_round(100000));
  tsr_array_release(one);
  tsr_array_release(many);
  tsr_memory_reset_peak(cpu);
  CHECK_EQ_U64(tsr_memory_peak(cpu), 0);
}

static int deleted;
static void count_deletion(void *ctx) {
  CHECK(ctx == &deleted);
  deleted++;
}

static void case_external_wrap(void) {
  static float host[4096];
  int64_t shape[1] = {4096};
  tsr_array *a = NULL;
  tsr_backing_snapshot before = snapshot();
  CHECK_OK(tsr_array_from_external(&a, host, TSR_FLOAT32, shape, 1, cpu, count_deletion, &deleted));
  tsr_backing_snapshot wrapped = snapshot();
  CHECK_EQ_U64(wrapped.active, sizeof host); /* as given: the caller's memory, not rounded */
  CHECK_EQ_U64(wrapped.reservations, before.reservations + 1);
  tsr_array_retain(a);
  tsr_array_release(a);
  CHECK_EQ_INT(deleted, 0);
  tsr_array_release(a);
  CHECK_EQ_INT(deleted, 1);
  tsr_backing_snapshot released = snapshot();
  CHECK_EQ_U64(released.active, 0);
  CHECK_EQ_U64(released.refunds, wrapped.refunds + 1);
}

static void case_wrap_refused(void) {
  static float host[4096];
  int64_t shape[1] = {4096};
  tsr_array *a = NULL;
  CHECK_OK(tsr_calibration_install_cap(cpu, 8192));
  CHECK_STATUS(
      tsr_array_from_external(&a, host, TSR_FLOAT32, shape, 1, cpu, count_deletion, &deleted),
      TSR_ERR_CAP);
  CHECK_MESSAGE("16384 bytes on cpu refused by the cap");
  CHECK(a == NULL);
  CHECK_EQ_INT(deleted, 0); /* a refused wrap never runs the deleter */
  tsr_backing_snapshot s = snapshot();
  CHECK_EQ_U64(s.active, 0);
  CHECK_EQ_U64(s.pending, 0);
  CHECK_EQ_U64(s.refusals, 1);
}

typedef struct {
  const char *name;
  void (*run)(void);
} test_case;

/* Runs c in a child with a fresh ledger; the child's own checks exit(1) on failure. */
static bool run_forked(const test_case *c) {
  fflush(stdout);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    c->run();
    CHECK_OK(tsr_memory_clear_cache(cpu));
    CHECK_NO_LEAKS();
    tsr_shutdown();
    exit(0);
  }
  int status = 0;
  CHECK_EQ_INT(waitpid(pid, &status, 0), pid);
  bool passed = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  printf("%s %s\n", passed ? "ok  " : "FAIL", c->name);
  return passed;
}

int main(void) {
  static const test_case cases[] = {
      {"install twice", case_install_twice},
      {"install after the first backing attempt", case_install_after_backing},
      {"a 0-byte array is a backing attempt", case_zero_bytes_is_an_attempt},
      {"a cap of 0 bytes", case_zero_cap_invalid},
      {"unknown devices", case_unknown_device},
      {"a refusal leaves nothing pending", case_refusal_leaves_nothing_pending},
      {"eviction makes room under the cap", case_eviction_makes_room},
      {"snapshot into NULL", case_snapshot_null},
      {"the cache limit", case_cache_limit},
      {"bytes counted as backed", case_counted_as_backed},
      {"external memory", case_external_wrap},
      {"a refused wrap", case_wrap_refused},
  };
  int failed = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    failed += !run_forked(&cases[i]);
  /* The parent never touched the library: its ledger must read zero too. */
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return failed == 0 ? 0 : 1;
}
