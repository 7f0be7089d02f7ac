/* tests/core/test_eval_cap.c — evaluation under a backing cap: an op whose output does not fit
 * fails with TSR_ERR_CAP naming the op and the sizes, its inputs stay valid, nothing is left
 * pending; after freeing memory the caller rebuilds the op and evaluates it again, exactly. */
#include "check.h"

enum { N = 16384 }; /* 64 KiB of float32: one mapping of 16 pages */

static const tsr_device cpu = {TSR_CPU, 0};

int main(void) {
  CHECK_OK(tsr_calibration_install_cap(cpu, 3 * N * 4)); /* room for three such arrays */
  static float xs[N], got[N];
  for (int i = 0; i < N; i++)
    xs[i] = (float)i;
  int64_t shape[1] = {N};
  tsr_array *x = NULL, *y = NULL, *filler = NULL, *sum = NULL;
  CHECK_OK(tsr_array_from_data(&x, xs, TSR_FLOAT32, shape, 1));
  CHECK_OK(tsr_array_from_data(&y, xs, TSR_FLOAT32, shape, 1));
  CHECK_OK(tsr_array_from_data(&filler, xs, TSR_FLOAT32, shape, 1));
  CHECK_OK(tsr_add(&sum, x, y, NULL));
  CHECK_STATUS(tsr_eval(&sum, 1), TSR_ERR_CAP);
  CHECK_MESSAGE("add [16384] float32");
  CHECK_MESSAGE("65536");  /* the request */
  CHECK_MESSAGE("196608"); /* the cap */
  tsr_backing_snapshot snap;
  CHECK_OK(tsr_calibration_snapshot(cpu, &snap));
  CHECK_EQ_U64(snap.pending, 0);
  CHECK_EQ_U64(snap.active, 3 * N * 4);
  CHECK(snap.refusals >= 1);
  CHECK_STATUS(tsr_array_read(sum, got, sizeof got), TSR_ERR_CAP); /* the array stays failed */
  /* Recover: free memory, rebuild the op from its still-valid inputs, evaluate again. */
  tsr_array_release(sum);
  tsr_array_release(filler);
  CHECK_OK(tsr_memory_clear_cache(cpu));
  CHECK_OK(tsr_add(&sum, x, y, NULL));
  CHECK_OK(tsr_array_read(sum, got, sizeof got));
  for (int i = 0; i < N; i++)
    CHECK(got[i] == 2.0f * xs[i]);
  CHECK_OK(tsr_calibration_snapshot(cpu, &snap));
  CHECK(snap.active + snap.cached + snap.pending + snap.fixed <= snap.cap);
  CHECK(snap.peak <= snap.cap);
  tsr_array_release(sum), tsr_array_release(x), tsr_array_release(y);
  CHECK_OK(tsr_memory_clear_cache(cpu));
  CHECK_NO_LEAKS();
  tsr_shutdown();
  puts("test_eval_cap: ok");
  return 0;
}
