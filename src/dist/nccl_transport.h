/* dist/nccl_transport.h — NCCL groups (CUDA builds with nccl.h; dist/nccl_transport.c). */
#ifndef TSR_DIST_NCCL_TRANSPORT_H
#define TSR_DIST_NCCL_TRANSPORT_H

#include <stdbool.h>

#include "tessera/dist.h"

/* A new nccl group over every rank of the MPI job (collective; MPI must be ready):
 * TSR_ERR_UNSUPPORTED when libnccl cannot be loaded or this rank has no GPU of its own. */
tsr_status tsri_nccl_group_new(tsr_group **out);
/* Whether every rank of the job has a GPU of its own and NCCL (collective over the job). */
bool tsri_nccl_every_rank_has_a_gpu(void);

#endif
