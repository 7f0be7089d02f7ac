/* bench/allsum.c — tessera's sealed all-sum against raw MPI_Allreduce on the same buffers, in one
 * run under mpirun: float32 sums of 4 B to 256 MiB (TSR_BENCH_ALLSUM_MAX=BYTES lowers the top),
 * the two timed alternately (best of several repeats each), printing each one's bandwidth
 * (bytes per rank / time per call), their ratio and, per call, the time tessera adds (the seal
 * and the stream hop; at small sizes this is the seal's latency). Goals (issue 14): ratio >= 0.97
 * at large sizes, <= 5 µs added at small ones on one node.
 *
 *   mpirun -np 2 build/bench/allsum
 *
 * tessera's calls are the raw form on a CPU stream, `iters` of them queued back to back and the
 * stream synchronized once, as a caller overlapping its sums would; MPI's are `iters` blocking
 * MPI_Allreduce calls. Each block starts after an MPI_Barrier. Rank 0 prints. Outside mpirun it
 * says how to run it and exits 0 (make bench runs every benchmark plainly). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tessera/tessera.h>

#include "allsum_report.h"

enum { REPEATS = 5 };

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int fail(const char *what, tsr_status st) {
  fprintf(stderr, "allsum: %s: %s: %s\n", what, tsr_status_name(st), tsr_last_error());
  MPI_Abort(MPI_COMM_WORLD, 1);
  return 1;
}

/* Calls per timed block: enough to time small sums well, a few for the large ones. */
static int iterations(size_t bytes) {
  size_t iters = ((size_t)64 << 20) / (bytes ? bytes : 1);
  if (iters > 2000) iters = 2000;
  if (iters < 3) iters = 3;
  return (int)iters;
}

static double time_mpi(const float *send, float *recv, size_t count, int iters) {
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = now_s();
  for (int i = 0; i < iters; i++)
    MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  return (now_s() - t0) / iters;
}

static double time_tessera(tsr_group *g, tsr_stream *s, const float *send, float *recv,
                           size_t count, int iters) {
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = now_s();
  for (int i = 0; i < iters; i++) {
    tsr_status st = tsr_group_all_sum_raw(g, send, recv, count, TSR_FLOAT32, s);
    if (st != TSR_OK) return fail("all_sum_raw", st);
  }
  tsr_status st = tsr_stream_synchronize(s);
  if (st != TSR_OK) return fail("synchronize", st);
  return (now_s() - t0) / iters;
}

/* Both results equal, so the comparison is of the same work. */
static void check_same(const float *a, const float *b, size_t count) {
  if (memcmp(a, b, count * sizeof *a) != 0) {
    fprintf(stderr, "allsum: tessera and MPI_Allreduce differ\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

static void run_size(tsr_group *g, tsr_stream *s, float *send, float *recv, float *ref,
                     size_t bytes) {
  size_t count = bytes / sizeof(float);
  int iters = iterations(bytes);
  double best_mpi = 1e30, best_tsr = 1e30;
  for (int r = 0; r < REPEATS; r++) { /* interleaved: drift hits both alike */
    double t_mpi = time_mpi(send, ref, count, iters);
    double t_tsr = time_tessera(g, s, send, recv, count, iters);
    if (t_mpi < best_mpi) best_mpi = t_mpi;
    if (t_tsr < best_tsr) best_tsr = t_tsr;
  }
  check_same(recv, ref, count);
  if (tsr_group_rank(g) != 0) return;
  print_row(bytes, iters, best_mpi, best_tsr);
}

static void run_all(tsr_group *g, tsr_stream *s) {
  size_t top = max_bytes();
  float *send = malloc(top), *recv = malloc(top), *ref = malloc(top);
  if (!send || !recv || !ref) {
    fprintf(stderr, "allsum: out of memory for %zu bytes\n", top);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (size_t i = 0; i < top / sizeof *send; i++)
    send[i] = (float)((i * 7 + (size_t)tsr_group_rank(g)) % 1000) * 0.25f;
  if (tsr_group_rank(g) == 0) {
    int size = tsr_group_size(g);
    printf("allsum: float32 sums over %d ranks, best of %d interleaved repeats\n", size, REPEATS);
    printf("%12s  %6s  %10s  %10s  %9s  %9s  %6s  %8s\n", "bytes", "iters", "MPI GB/s", "tsr GB/s",
           "MPI us", "tsr us", "ratio", "added us");
  }
  for (size_t bytes = 4; bytes <= top; bytes *= 4)
    run_size(g, s, send, recv, ref, bytes);
  free(send);
  free(recv);
  free(ref);
}

int main(void) {
  if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK")) {
    printf("allsum: not launched by mpirun; run `mpirun -np 2 %s` (skipped)\n", "bench/allsum");
    return 0;
  }
  tsr_group *g = NULL;
  tsr_stream *s = NULL;
  tsr_status st = tsr_group_init(&g, "mpi");
  if (st != TSR_OK) return fail("group_init", st);
  st = tsr_stream_new(&s, (tsr_device){TSR_CPU, 0});
  if (st != TSR_OK) return fail("stream_new", st);
  run_all(g, s);
  tsr_stream_free(s);
  tsr_group_free(g);
  tsr_shutdown();
  return 0;
}
