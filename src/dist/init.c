/* dist/init.c — tsr_group_init: which transport a name gives ("auto" decides here) and the
 * transport's state made ready. A group's life after that is dist/group.c's. */
#include <string.h>

#include "base/env.h"
#include "base/log.h"
#include "dist/transport.h"
#ifdef TSR_HAVE_MPI
#include "dist/mpi_runtime.h"
#endif
#ifdef TSR_HAVE_NCCL
#include "dist/nccl_transport.h"
#endif

static tsr_status init_local(tsr_group **out) {
  return tsri_group_new(&tsri_local_transport, NULL, 0, 1, out);
}

static tsr_status init_mpi(tsr_group **out) {
#ifndef TSR_HAVE_MPI
  (void)out;
  return tsri_error(TSR_ERR_UNSUPPORTED,
                    "group_init(\"mpi\"): this build has no MPI (configure with libopenmpi-dev "
                    "installed)");
#else
  tsr_status status = tsri_mpi_ready("group_init(\"mpi\")");
  void *ctx = NULL;
  if (status == TSR_OK) status = tsri_mpi_transport_ctx(&ctx);
  if (status != TSR_OK) return status;
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return tsri_group_new(&tsri_mpi_transport, ctx, rank, size, out);
#endif
}

static tsr_status init_nccl(tsr_group **out) {
#ifdef TSR_HAVE_NCCL
  tsr_status status = tsri_mpi_ready("group_init(\"nccl\")");
  return status == TSR_OK ? tsri_nccl_group_new(out) : status;
#else
  (void)out;
  return tsri_error(TSR_ERR_UNSUPPORTED,
                    "group_init(\"nccl\"): this build has no NCCL (a CUDA and MPI build with "
                    "nccl.h)");
#endif
}

/* "auto": nccl when every rank has a GPU of its own, mpi under mpirun otherwise, else local. */
static tsr_status init_auto(tsr_group **out) {
  if (!tsri_env()->mpi_launched) return init_local(out);
#ifndef TSR_HAVE_MPI
  tsri_log(TSRI_LOG_WARN,
           "group_init(\"auto\"): launched by mpirun, but this build has no MPI: "
           "a local group");
  return init_local(out);
#endif
#ifdef TSR_HAVE_NCCL
  tsr_status status = tsri_mpi_ready("group_init(\"auto\")");
  if (status != TSR_OK) return status;
  if (tsri_nccl_every_rank_has_a_gpu()) return tsri_nccl_group_new(out);
#endif
  return init_mpi(out);
}

tsr_status tsr_group_init(tsr_group **out, const char *backend) {
  if (!out) return tsri_error(TSR_ERR_INVALID, "group_init: out is NULL");
  const char *name = backend ? backend : "auto";
  tsr_status status;
  if (strcmp(name, "auto") == 0)
    status = init_auto(out);
  else if (strcmp(name, "local") == 0)
    status = init_local(out);
  else if (strcmp(name, "mpi") == 0)
    status = init_mpi(out);
  else if (strcmp(name, "nccl") == 0)
    status = init_nccl(out);
  else
    status = tsri_error(TSR_ERR_INVALID,
                        "group_init: unknown backend \"%s\" (use \"auto\", \"local\", \"mpi\" or "
                        "\"nccl\")",
                        name);
  if (status == TSR_OK)
    tsri_log(TSRI_LOG_DEBUG, "group_init(\"%s\"): %s group, rank %d of %d", name,
             (*out)->transport->name, (*out)->rank, (*out)->size);
  return status;
}
