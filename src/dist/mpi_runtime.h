/* dist/mpi_runtime.h — MPI itself, once per process: whether mpirun launched us, MPI_Init_thread
 * when nobody has initialized it, MPI_Finalize at tsr_shutdown when tessera initialized it, and
 * waiting on requests with a deadline instead of blocking in MPI. */
#ifndef TSR_DIST_MPI_RUNTIME_H
#define TSR_DIST_MPI_RUNTIME_H

#include <mpi.h>
#include <stdbool.h>

#include "dist/group.h"
#include "tessera/base.h"

/* MPI ready for a group with MPI_THREAD_MULTIPLE: TSR_OK; TSR_ERR_DIST (one line naming `what`)
 * outside an mpirun launch (MPI untouched), when the caller initialized MPI with a lower thread
 * level, or after MPI was finalized. Sets the logger's rank tag to the world rank. */
tsr_status tsri_mpi_ready(const char *what);
/* Whether MPI has been finalized (a group freed after tsr_shutdown must not call MPI). */
bool tsri_mpi_finalized(void);
/* Drives the requests until all complete (TSR_OK) or timeout_s passes (0 = never): then
 * TSR_ERR_DIST with *pending = the index of the first incomplete request and nothing cancelled.
 * TSR_ERR_DIST with *pending = -1 (message set, naming `what`) when MPI reports an error. Spins
 * briefly, then yields the core between tests so oversubscribed ranks progress. */
tsr_status tsri_mpi_wait(MPI_Request *requests, int count, double timeout_s, const char *what,
                         int *pending);
/* The seal's exchange over one communicator (every rank sends its call to every other, point to
 * point, with a deadline): what the mpi and nccl transports' exchange run (mpi_transport.c). */
tsr_status tsri_mpi_exchange(MPI_Comm comm, const tsr_group *g, const tsri_seal_call *mine,
                             tsri_seal_call *all, double timeout_s, int *absent);
/* A duplicate of MPI_COMM_WORLD whose errors come back as codes (collective; mpi_transport.c). */
tsr_status tsri_mpi_comm_dup(MPI_Comm *out);
/* "MPI error 15: MPI_ERR_TRUNCATE: message truncated" for an MPI error code, into buf. */
const char *tsri_mpi_error_text(int code, char *buf, size_t len);

#endif
