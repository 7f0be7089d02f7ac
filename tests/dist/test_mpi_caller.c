/* tests/dist/test_mpi_caller.c — a program that initializes MPI itself (MPI_THREAD_MULTIPLE):
 * tessera's groups use that MPI, tsr_shutdown leaves it initialized (the caller's to finalize),
 * and MPI still works after it. */
#include <mpi.h>

#include "dist_check.h"

int main(int argc, char **argv) {
  int provided = 0;
  CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) == MPI_SUCCESS);
  CHECK(provided == MPI_THREAD_MULTIPLE);
  tsr_group *g = dist_group("mpi");
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK_EQ_INT(tsr_group_rank(g), rank);
  CHECK_EQ_INT(tsr_group_size(g), size);
  int64_t send[3] = {1, 2, 3}, recv[3] = {0};
  CHECK_OK(tsr_group_all_sum_raw(g, send, recv, 3, TSR_INT64, dist_cpu()));
  CHECK_OK(tsr_stream_synchronize(dist_cpu()));
  for (int i = 0; i < 3; i++)
    CHECK_EQ_INT(recv[i], send[i] * size);
  tsr_group_free(g);
  tsr_shutdown();
  int finalized = 1;
  MPI_Finalized(&finalized);
  CHECK(!finalized); /* not tessera's to finalize */
  CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS);
  printf("[rank %d/%d] test_mpi_caller: ok\n", rank, size);
  MPI_Finalize();
  return 0;
}
