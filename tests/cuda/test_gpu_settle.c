/* tests/cuda/test_gpu_settle.c — on a GPU, buffers come back stream-ordered: a released array's
 * bytes stay on the ledger until the kernels that read them are done (the release thread). Two
 * consequences a user must not see:
 *   - a reservation the cap would refuse only because of such bytes waits for them instead
 *     (memory/ledger.c asks the allocators to settle before refusing);
 *   - after tsr_stream_synchronize, the ledger shows what is really in use (core asks the stream
 *     to settle).
 * A host function that sleeps holds the stream back, so the releases are certainly still queued
 * when the next reservation or the snapshot comes. Without a usable GPU: one skip line. */
#include <time.h>

#include "check.h"

static const tsr_device gpu = {TSR_GPU, 0};

enum { MIB = 1 << 20, BLOCK_ELEMENTS = 16 * MIB }; /* 64 MiB of float32 */
static const uint64_t block_bytes = (uint64_t)BLOCK_ELEMENTS * 4;

static void sleep_300ms(void *ctx) {
  (void)ctx;
  struct timespec t = {0, 300 * 1000 * 1000};
  nanosleep(&t, NULL);
}

static tsr_array *filled(int64_t elements, double value, tsr_stream *s) {
  tsr_array *a = NULL;
  CHECK_OK(tsr_full(&a, &elements, 1, value, TSR_FLOAT32, s));
  CHECK_OK(tsr_eval(&a, 1));
  return a;
}

/* a + a queued behind a sleeping host function, then both arrays released: their 2 blocks stay
   on the ledger until the host function returns and the add has run. */
static void queue_held_releases(tsr_stream *s) {
  tsr_array *a = filled(BLOCK_ELEMENTS, 1.0, s), *sum = NULL;
  CHECK_OK(tsr_stream_enqueue_host(s, sleep_300ms, NULL));
  CHECK_OK(tsr_add(&sum, a, a, s));
  CHECK_OK(tsr_async_eval(&sum, 1));
  tsr_array_release(a);
  tsr_array_release(sum);
}

static void test_cap_waits_for_queued_releases(tsr_stream *s) {
  queue_held_releases(s);
  /* Two blocks more: with the two still held that is 4 > the cap's 3, with them back it fits. */
  tsr_array *big = NULL;
  int64_t elements = 2 * (int64_t)BLOCK_ELEMENTS;
  CHECK_OK(tsr_full(&big, &elements, 1, 2.0, TSR_FLOAT32, s));
  CHECK_OK(tsr_eval(&big, 1));
  tsr_backing_snapshot snap;
  CHECK_OK(tsr_calibration_snapshot(gpu, &snap));
  CHECK(snap.refusals == 0);
  CHECK(snap.active + snap.cached + snap.pending + snap.fixed <= snap.cap);
  tsr_array_release(big);
}

/* What settling cannot free is still refused, once, with the cap in the message: 4 blocks while
   the cap is 3 (above the cap itself), and 2 blocks while 2 live arrays hold 2. */
static void test_real_refusals(tsr_stream *s) {
  tsr_backing_snapshot before, after;
  CHECK_OK(tsr_calibration_snapshot(gpu, &before));
  tsr_array *huge = NULL;
  int64_t four = 4 * (int64_t)BLOCK_ELEMENTS;
  CHECK_OK(tsr_full(&huge, &four, 1, 1.0, TSR_FLOAT32, s));
  CHECK_STATUS(tsr_eval(&huge, 1), TSR_ERR_CAP);
  CHECK_MESSAGE("refused by the cap");
  tsr_array_release(huge);
  tsr_array *held = filled(2 * (int64_t)BLOCK_ELEMENTS, 1.0, s), *more = NULL;
  int64_t two = 2 * (int64_t)BLOCK_ELEMENTS;
  CHECK_OK(tsr_full(&more, &two, 1, 3.0, TSR_FLOAT32, s));
  CHECK_STATUS(tsr_eval(&more, 1), TSR_ERR_CAP);
  tsr_array_release(more);
  tsr_array_release(held);
  CHECK_OK(tsr_calibration_snapshot(gpu, &after));
  CHECK(after.refusals == before.refusals + 2);
}

static void test_synchronize_settles(tsr_stream *s) {
  queue_held_releases(s);
  CHECK_OK(tsr_stream_synchronize(s));
  tsr_backing_snapshot snap;
  CHECK_OK(tsr_calibration_snapshot(gpu, &snap));
  if (snap.active != 0 || snap.pending != 0)
    CHECK_FAIL_("after synchronize: active %llu, pending %llu (nothing is alive)",
                (unsigned long long)snap.active, (unsigned long long)snap.pending);
}

int main(void) {
  if (tsr_device_count(TSR_GPU) < 1) {
    printf("skip: no usable GPU\n");
    return 0;
  }
  CHECK_OK(tsr_calibration_install_cap(gpu, 3 * block_bytes));
  tsr_stream *s = tsr_default_stream(gpu);
  test_cap_waits_for_queued_releases(s);
  test_real_refusals(s);
  test_synchronize_settles(s);
  tsr_shutdown();
  printf("ok\n");
  return 0;
}
