/* tests/core/test_teardown.c — tsr_shutdown after work on several streams (some left unfreed,
 * some with work still queued) returns, leaks nothing (LeakSanitizer in `make sanitize`), and
 * the process exits 0; the library starts again on next use; arrays held across the shutdown
 * stay readable and are released afterwards. */
#include <unistd.h>

#include "check.h"

static void slow(void *ctx) {
  (void)ctx;
  usleep(10000);
}

static tsr_array *work_on(tsr_stream *s, float base) {
  float xs[100];
  for (int i = 0; i < 100; i++)
    xs[i] = base + (float)i;
  int64_t shape[1] = {100};
  tsr_array *x = NULL, *y = NULL;
  CHECK_OK(tsr_array_from_data(&x, xs, TSR_FLOAT32, shape, 1));
  CHECK_OK(tsr_add(&y, x, x, s));
  tsr_array_release(x);
  return y;
}

int main(void) {
  tsr_device cpu = {TSR_CPU, 0};
  tsr_stream *streams[4];
  tsr_array *kept = NULL;
  for (int k = 0; k < 4; k++) {
    CHECK_OK(tsr_stream_new(&streams[k], cpu));
    CHECK_OK(tsr_stream_enqueue_host(streams[k], slow, NULL));
    tsr_array *y = work_on(streams[k], (float)k);
    CHECK_OK(tsr_async_eval(&y, 1)); /* still queued behind `slow` at shutdown */
    if (k == 0)
      kept = y;
    else
      tsr_array_release(y);
  }
  CHECK_OK(tsr_stream_free(streams[1])); /* one freed by hand, three left to tsr_shutdown */
  tsr_shutdown();
  float got[100];
  CHECK_OK(tsr_array_read(kept, got, sizeof got)); /* ran before the workers stopped */
  for (int i = 0; i < 100; i++)
    CHECK(got[i] == 2.0f * (float)i);
  tsr_array_release(kept);
  /* The library starts again: a new default stream, new work. */
  tsr_array *again = work_on(NULL, 1.0f);
  CHECK_OK(tsr_array_read(again, got, sizeof got));
  CHECK(got[99] == 200.0f);
  tsr_array_release(again);
  tsr_shutdown();
  CHECK_NO_LEAKS_AFTER_SHUTDOWN();
  CHECK_EQ_U64(tsr_memory_cached(cpu), 0);
  puts("test_teardown: ok");
  return 0;
}
