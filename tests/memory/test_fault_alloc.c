/* tests/memory/test_fault_alloc.c — allocation fault injection on the CPU: the k-th system
 * allocation from now fails as out of memory, leaving nothing pending or active; a cache hit and
 * a 0-byte array are not system allocations; the countdown reads back through the testing API.
 * (Failing each allocation of a whole graph is tests/core's business.) */
#include <unistd.h>

#include <tessera/testing.h>

#include "check.h"

static const tsr_device cpu = {TSR_CPU, 0};
static uint8_t source[1 << 20];

static tsr_status try_bytes(uint64_t bytes, tsr_array **out) {
  int64_t shape[1] = {(int64_t)bytes};
  *out = NULL;
  return tsr_array_from_data_on(out, source, TSR_UINT8, shape, 1, cpu);
}

static tsr_array *bytes_array(uint64_t bytes) {
  tsr_array *a = NULL;
  CHECK_OK(try_bytes(bytes, &a));
  return a;
}

static tsr_backing_snapshot snapshot(void) {
  tsr_backing_snapshot s;
  CHECK_OK(tsr_calibration_snapshot(cpu, &s));
  return s;
}

static void check_first_fails(void) {
  tsr_array *a = NULL;
  tsr_backing_snapshot before = snapshot();
  CHECK_OK(tsr_testing_fail_allocation(cpu, 1));
  CHECK_EQ_U64(tsr_testing_fail_allocation_pending(cpu), 1);
  CHECK_STATUS(try_bytes(4000, &a), TSR_ERR_NOMEM);
  CHECK(a == NULL);
  CHECK_MESSAGE("4000");
  CHECK_MESSAGE("out of memory");
  CHECK_EQ_U64(tsr_testing_fail_allocation_pending(cpu), 0); /* it fired */
  tsr_backing_snapshot after = snapshot();
  CHECK_EQ_U64(after.active, before.active);
  CHECK_EQ_U64(after.pending, 0);
  CHECK_EQ_U64(after.reservations, before.reservations + 1); /* attempted, */
  CHECK_EQ_U64(after.refunds, before.refunds + 1);           /* then refunded */
  tsr_array_release(bytes_array(4000));                      /* disarmed once fired */
}

static void check_third_fails(void) {
  tsr_array *kept[3] = {NULL, NULL, NULL};
  CHECK_OK(tsr_testing_fail_allocation(cpu, 3));
  CHECK_EQ_U64(tsr_testing_fail_allocation_pending(cpu), 3);
  kept[0] = bytes_array(100);
  CHECK_EQ_U64(tsr_testing_fail_allocation_pending(cpu), 2);
  kept[1] = bytes_array(200000); /* a mapping counts the same */
  CHECK_EQ_U64(tsr_testing_fail_allocation_pending(cpu), 1);
  CHECK_STATUS(try_bytes(300000, &kept[2]), TSR_ERR_NOMEM);
  CHECK_MESSAGE("300000");
  CHECK(kept[2] == NULL);
  CHECK_EQ_U64(tsr_testing_fail_allocation_pending(cpu), 0);
  CHECK_EQ_U64(snapshot().pending, 0);
  uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  CHECK_EQ_U64(tsr_memory_active(cpu), 128 + (200000 + page - 1) / page * page);
  tsr_array_release(kept[0]);
  tsr_array_release(kept[1]);
}

/* Neither a cache hit nor a 0-byte array asks the system for memory, so neither fires it. */
static void check_not_system_allocations(void) {
  CHECK_OK(tsr_memory_set_cache_limit(cpu, 1 << 20));
  tsr_array_release(bytes_array(4096)); /* cached */
  CHECK_EQ_U64(tsr_memory_cached(cpu), 4096);
  CHECK_OK(tsr_testing_fail_allocation(cpu, 1));
  tsr_array *hit = bytes_array(4096), *empty = bytes_array(0), *missed = NULL;
  CHECK_EQ_U64(tsr_testing_fail_allocation_pending(cpu), 1);
  CHECK_STATUS(try_bytes(8192, &missed), TSR_ERR_NOMEM);
  CHECK_EQ_U64(tsr_testing_fail_allocation_pending(cpu), 0);
  tsr_array_release(hit);
  tsr_array_release(empty);
  CHECK_OK(tsr_memory_set_cache_limit(cpu, 0));
}

/* More than any device backs: out of memory at once, a backing attempt that holds nothing. */
static void check_impossible_size(void) {
  tsr_array *a = NULL;
  tsr_backing_snapshot before = snapshot();
  CHECK_STATUS(try_bytes((uint64_t)1 << 60, &a), TSR_ERR_NOMEM);
  CHECK_MESSAGE("1152921504606846976");
  CHECK(a == NULL);
  tsr_backing_snapshot after = snapshot();
  CHECK_EQ_U64(after.active, before.active);
  CHECK_EQ_U64(after.pending, 0);
  CHECK_EQ_U64(after.reservations, before.reservations + 1);
  CHECK_EQ_U64(after.refunds, before.refunds + 1);
}

static void check_disarm(void) {
  CHECK_OK(tsr_testing_fail_allocation(cpu, 2));
  CHECK_OK(tsr_testing_fail_allocation(cpu, 0));
  CHECK_EQ_U64(tsr_testing_fail_allocation_pending(cpu), 0);
  for (int i = 0; i < 4; i++)
    tsr_array_release(bytes_array(64));
  const tsr_device gpu99 = {TSR_GPU, 99};
  CHECK_STATUS(tsr_testing_fail_allocation(gpu99, 1), TSR_ERR_DEVICE);
  CHECK_MESSAGE("gpu:99");
}

int main(void) {
  CHECK_OK(tsr_memory_set_cache_limit(cpu, 0)); /* every allocation below reaches the system */
  check_first_fails();
  check_third_fails();
  check_not_system_allocations();
  check_impossible_size();
  check_disarm();
  CHECK_OK(tsr_memory_clear_cache(cpu));
  CHECK_NO_LEAKS();
  CHECK_EQ_U64(tsr_memory_cached(cpu), 0);
  tsr_shutdown();
  return 0;
}
