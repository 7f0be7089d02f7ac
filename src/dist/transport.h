/* dist/transport.h — the transports a group can have (the interface is dist/group.h's
 * tsri_transport): "local" (dist/local_transport.c), in MPI builds "mpi" (dist/mpi_transport.c)
 * and, in CUDA builds with NCCL, "nccl" (dist/nccl_transport.c). */
#ifndef TSR_DIST_TRANSPORT_H
#define TSR_DIST_TRANSPORT_H

#include "dist/group.h"

extern const tsri_transport tsri_local_transport;
#ifdef TSR_HAVE_MPI
extern const tsri_transport tsri_mpi_transport;
/* A new mpi transport state over MPI_COMM_WORLD (collective: every rank calls it). MPI must be
 * ready (dist/mpi_runtime.h). */
tsr_status tsri_mpi_transport_ctx(void **out);
#endif

#endif
