/* bench/eval_overhead.c — what one lazy op costs: a chain of tiny adds (16 float32 each) built
 * and evaluated through tessera, against a plain C loop doing the same arithmetic, in the same
 * run. Prints µs per op for graph construction, evaluation (walk + dispatch + kernel + buffer
 * reuse) and the C loop, best of several repeats. Goal (issue 3): <= 3 µs/op in all. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <tessera/tessera.h>

enum { WIDTH = 16, CHAIN = 100000, REPEATS = 5 };

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int fail(const char *what, tsr_status st) {
  fprintf(stderr, "eval_overhead: %s: %s: %s\n", what, tsr_status_name(st), tsr_last_error());
  return 1;
}

/* One timed chain: build `CHAIN` adds, then evaluate; checks the result. */
static int run_chain(tsr_array *x, tsr_array *one, double *build_us, double *eval_us) {
  double t0 = now_us();
  tsr_array *a = tsr_array_retain(x);
  for (int i = 0; i < CHAIN; i++) {
    tsr_array *next = NULL;
    tsr_status st = tsr_add(&next, a, one, NULL);
    tsr_array_release(a);
    if (st != TSR_OK) return fail("add", st);
    a = next;
  }
  double t1 = now_us();
  tsr_status st = tsr_eval(&a, 1);
  double t2 = now_us();
  float got[WIDTH];
  if (st == TSR_OK) st = tsr_array_read(a, got, sizeof got);
  tsr_array_release(a);
  if (st != TSR_OK) return fail("eval", st);
  if (got[0] != (float)CHAIN) {
    fprintf(stderr, "eval_overhead: wrong result %g\n", (double)got[0]);
    return 1;
  }
  *build_us = t1 - t0;
  *eval_us = t2 - t1;
  return 0;
}

static double plain_loop_us(void) {
  static float a[WIDTH], b[WIDTH];
  for (int j = 0; j < WIDTH; j++)
    a[j] = 0.0f, b[j] = 1.0f;
  double t0 = now_us();
  for (int i = 0; i < CHAIN; i++) {
    for (int j = 0; j < WIDTH; j++)
      a[j] = a[j] + b[j];
    __asm__ volatile("" : : "r"(a) : "memory"); /* keep every step */
  }
  double t1 = now_us();
  if (a[0] != (float)CHAIN) fprintf(stderr, "eval_overhead: plain loop wrong\n");
  return t1 - t0;
}

int main(void) {
  float zeros[WIDTH] = {0}, ones[WIDTH];
  for (int j = 0; j < WIDTH; j++)
    ones[j] = 1.0f;
  int64_t shape[1] = {WIDTH};
  tsr_array *x = NULL, *one = NULL;
  tsr_status st = tsr_array_from_data(&x, zeros, TSR_FLOAT32, shape, 1);
  if (st == TSR_OK) st = tsr_array_from_data(&one, ones, TSR_FLOAT32, shape, 1);
  if (st != TSR_OK) return fail("from_data", st);
  double best_build = 1e30, best_eval = 1e30, best_plain = 1e30;
  for (int r = 0; r < REPEATS; r++) {
    double build_us = 0, eval_us = 0;
    if (run_chain(x, one, &build_us, &eval_us)) return 1;
    double plain = plain_loop_us();
    if (build_us < best_build) best_build = build_us;
    if (eval_us < best_eval) best_eval = eval_us;
    if (plain < best_plain) best_plain = plain;
  }
  double per_build = best_build / CHAIN, per_eval = best_eval / CHAIN;
  double per_plain = best_plain / CHAIN;
  printf("eval_overhead: chain of %d adds of %d float32, best of %d\n", CHAIN, WIDTH, REPEATS);
  printf("  build      %8.3f us/op\n", per_build);
  printf("  eval       %8.3f us/op\n", per_eval);
  printf("  total      %8.3f us/op   (goal <= 3)\n", per_build + per_eval);
  printf("  plain C    %8.4f us/op\n", per_plain);
  printf("  overhead   %8.1fx the plain loop\n", (per_build + per_eval) / per_plain);
  tsr_array_release(x);
  tsr_array_release(one);
  tsr_shutdown();
  return 0;
}
