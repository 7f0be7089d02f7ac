/* bench/allsum_report.h — what bench/allsum (MPI) and bench/gpu_allsum (NCCL) share: the largest
 * message of a run (TSR_BENCH_ALLSUM_MAX bytes, 4 B to 256 MiB) and one printed row, rank 0's
 * best times of the raw collective and of tessera's sealed all-sum side by side. */
#ifndef TSR_BENCH_ALLSUM_REPORT_H
#define TSR_BENCH_ALLSUM_REPORT_H

#include <stdio.h>
#include <stdlib.h>

static size_t max_bytes(void) {
  const char *v = getenv("TSR_BENCH_ALLSUM_MAX");
  size_t cap = (size_t)256 << 20;
  if (v && *v) {
    size_t asked = (size_t)strtoull(v, NULL, 10);
    if (asked >= 4 && asked < cap) cap = asked;
  }
  return cap;
}

/* bytes, iterations, GB/s raw and tessera, µs raw and tessera, the ratio, the µs tessera adds. */
static void print_row(size_t bytes, int iters, double best_raw, double best_tsr) {
  double gbs_raw = (double)bytes / best_raw * 1e-9, gbs_tsr = (double)bytes / best_tsr * 1e-9;
  printf("%12zu  %6d  %10.3f  %10.3f  %9.2f  %9.2f  %6.3f  %8.2f\n", bytes, iters, gbs_raw, gbs_tsr,
         best_raw * 1e6, best_tsr * 1e6, gbs_tsr / gbs_raw, (best_tsr - best_raw) * 1e6);
}

#endif
