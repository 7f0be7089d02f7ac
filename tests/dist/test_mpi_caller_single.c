/* tests/dist/test_mpi_caller_single.c — a program that initialized MPI without
 * MPI_THREAD_MULTIPLE: tessera refuses an mpi group with TSR_ERR_DIST naming the levels (its
 * stream workers call MPI from other threads), on every rank, and the program goes on. */
#include <mpi.h>

#include "dist_check.h"

int main(int argc, char **argv) {
  int provided = 0;
  CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) == MPI_SUCCESS);
  tsr_group *g = NULL;
  if (provided < MPI_THREAD_MULTIPLE) {
    CHECK_STATUS(tsr_group_init(&g, "mpi"), TSR_ERR_DIST);
    CHECK_MESSAGE("MPI_THREAD_MULTIPLE");
    CHECK(g == NULL);
  }
  tsr_shutdown();
  CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  printf("[rank %d] test_mpi_caller_single: ok (provided level %d)\n", rank, provided);
  MPI_Finalize();
  return 0;
}
