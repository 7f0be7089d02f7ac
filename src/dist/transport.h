/* dist/transport.h — the transports a group can have (the interface is dist/group.h's
 * tsri_transport): "local" (dist/local_transport.c), "mpi" (dist/mpi_transport.c) and, in CUDA
 * builds, "nccl" (dist/nccl_transport.c). */
#ifndef TSR_DIST_TRANSPORT_H
#define TSR_DIST_TRANSPORT_H

#include <mpi.h>

#include "dist/group.h"

extern const tsri_transport tsri_local_transport;
extern const tsri_transport tsri_mpi_transport;
/* A new mpi transport state over MPI_COMM_WORLD (collective: every rank calls it). MPI must be
 * ready (dist/mpi_runtime.h). */
tsr_status tsri_mpi_transport_ctx(void **out);
/* The seal's exchange over one communicator (every rank sends its call to every other, point to
 * point, with a deadline): what the mpi and nccl transports' exchange run. */
tsr_status tsri_mpi_exchange(MPI_Comm comm, const tsr_group *g, const tsri_seal_call *mine,
                             tsri_seal_call *all, double timeout_s, int *absent);
/* A duplicate of MPI_COMM_WORLD whose errors come back as codes (collective). */
tsr_status tsri_mpi_comm_dup(MPI_Comm *out);

#endif
