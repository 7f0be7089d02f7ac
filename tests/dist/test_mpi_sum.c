/* tests/dist/test_mpi_sum.c — the all-sum over MPI is exact: every summed dtype, sizes from 0 to
 * 100,003 elements, the raw form (separate buffers and in place) and the lazy one, and the
 * chunking of large counts with the chunk lowered to a few hundred elements. Outside oracle:
 * each rank knows every rank's values (dist_check.h), and raw MPI_Allreduce on the same data.
 * all_gather of the same sizes, chunked too. */
#include <math.h>
#include <mpi.h>

#include "dist_check.h"
#include "tessera/testing.h"

static const uint64_t sizes[] = {0, 1, 2, 7, 1000, 4097, 100003};
#define NSIZES (sizeof sizes / sizeof sizes[0])

static void raw_case(tsr_group *g, tsr_dtype dtype, uint64_t n, bool in_place) {
  size_t bytes = (size_t)n * tsr_dtype_size(dtype);
  unsigned char *send = malloc(bytes + 1), *recv = malloc(bytes + 1);
  CHECK(send && recv);
  dist_fill(send, dtype, n, tsr_group_rank(g));
  void *target = in_place ? send : recv;
  CHECK_OK(tsr_group_all_sum_raw(g, send, target, n, dtype, dist_cpu()));
  CHECK_OK(tsr_stream_synchronize(dist_cpu()));
  dist_check_sum(target, dtype, n, tsr_group_size(g), in_place ? "raw in place" : "raw");
  free(send);
  free(recv);
}

static void lazy_case(tsr_group *g, tsr_dtype dtype, uint64_t n) {
  size_t bytes = (size_t)n * tsr_dtype_size(dtype);
  unsigned char *data = malloc(bytes + 1), *got = malloc(bytes + 1);
  CHECK(data && got);
  dist_fill(data, dtype, n, tsr_group_rank(g));
  int64_t shape[1] = {(int64_t)n};
  tsr_array *x = NULL, *sum = NULL;
  CHECK_OK(tsr_array_from_data(&x, data, dtype, shape, 1));
  CHECK_OK(tsr_all_sum(&sum, x, g, NULL));
  CHECK_EQ_INT(tsr_array_dtype(sum), dtype);
  CHECK_OK(tsr_array_read(sum, got, bytes));
  dist_check_sum(got, dtype, n, tsr_group_size(g), "lazy");
  tsr_array_release(sum);
  tsr_array_release(x);
  free(data);
  free(got);
}

/* float32 sums of non-integer data, whose bits depend on the order of the additions (the
   algorithm MPI picks: tessera asks libnbc for its ring, dist/mpi_runtime.c): every rank gets the
   same bits, and each element is within the rounding of its ranks - 1 additions of positive terms
   of the float64 sum, (ranks - 1) * 2^-24 of it (the same bound holds for MPI_Allreduce's own
   result, checked too). */
static void against_mpi(tsr_group *g) {
  enum { N = 3001, MOST_RANKS = 16 };
  static float mine[N], ours[N], theirs[N], every[MOST_RANKS * N];
  int ranks = tsr_group_size(g);
  CHECK(ranks <= MOST_RANKS);
  for (int i = 0; i < N; i++)
    mine[i] = 1.0f / (float)(i + 1 + tsr_group_rank(g));
  CHECK_OK(tsr_group_all_sum_raw(g, mine, ours, N, TSR_FLOAT32, dist_cpu()));
  CHECK_OK(tsr_stream_synchronize(dist_cpu()));
  CHECK(MPI_Allreduce(mine, theirs, N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS);
  CHECK(MPI_Allgather(ours, N, MPI_FLOAT, every, N, MPI_FLOAT, MPI_COMM_WORLD) == MPI_SUCCESS);
  for (int i = 0; i < N; i++) {
    double exact = 0;
    for (int r = 0; r < ranks; r++)
      exact += (double)(1.0f / (float)(i + 1 + r));
    double bound = (double)(ranks - 1) * 0x1p-24 * exact;
    if (fabs((double)ours[i] - exact) > bound || fabs((double)theirs[i] - exact) > bound)
      CHECK_FAIL_("element %d: %.9g (MPI_Allreduce %.9g) vs %.9g, bound %.3g", i, (double)ours[i],
                  (double)theirs[i], exact, bound);
    for (int r = 0; r < ranks; r++)
      if (every[r * N + i] != ours[i])
        CHECK_FAIL_("element %d: rank %d has %.9g, this rank %.9g", i, r, (double)every[r * N + i],
                    (double)ours[i]);
  }
}

/* all_gather of n int32 per rank (the chunking of gathers counts bytes). */
static void gather_case(tsr_group *g, uint64_t n) {
  int ranks = tsr_group_size(g);
  int32_t *data = malloc((size_t)n * sizeof *data + 4),
          *got = malloc((size_t)n * 4 * (size_t)ranks + 4);
  CHECK(data && got);
  for (uint64_t i = 0; i < n; i++)
    data[i] = (int32_t)dist_value(tsr_group_rank(g), i);
  int64_t shape[1] = {(int64_t)n};
  tsr_array *x = NULL, *all = NULL;
  CHECK_OK(tsr_array_from_data(&x, data, TSR_INT32, shape, 1));
  CHECK_OK(tsr_all_gather(&all, x, g, dist_cpu()));
  CHECK_OK(tsr_array_read(all, got, (size_t)n * 4 * (size_t)ranks));
  for (int r = 0; r < ranks; r++)
    for (uint64_t i = 0; i < n; i++)
      if (got[(uint64_t)r * n + i] != (int32_t)dist_value(r, i))
        CHECK_FAIL_("gather of %" PRIu64 ": rank %d element %" PRIu64 " is %d", n, r, i,
                    got[(uint64_t)r * n + i]);
  tsr_array_release(all);
  tsr_array_release(x);
  free(data);
  free(got);
}

static void every_case(tsr_group *g) {
  const tsr_dtype dtypes[] = DIST_SUMMED_DTYPES;
  for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++)
    for (size_t s = 0; s < NSIZES; s++) {
      raw_case(g, dtypes[d], sizes[s], false);
      raw_case(g, dtypes[d], sizes[s], true);
      lazy_case(g, dtypes[d], sizes[s]);
    }
  for (size_t s = 0; s < NSIZES; s++)
    gather_case(g, sizes[s]);
}

int main(void) {
  tsr_group *g = dist_group("mpi");
  tsr_device home = tsr_group_device(g); /* mpi groups take any device; the CPU is theirs */
  CHECK(home.type == TSR_CPU && home.index == 0);
  every_case(g);
  against_mpi(g);
  /* The chunking: 100,003 elements in chunks of 333 (301 calls), halves staged per chunk. */
  CHECK_OK(tsr_testing_group_set_chunk(g, 333));
  every_case(g);
  printf("[rank %d/%d] test_mpi_sum: ok\n", tsr_group_rank(g), tsr_group_size(g));
  tsr_group_free(g);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
