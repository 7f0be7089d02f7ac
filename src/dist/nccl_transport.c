/* dist/nccl_transport.c — the "nccl" transport (CUDA builds with nccl.h): one GPU per rank (the
 * rank's index among the ranks of its node), a communicator bootstrapped over MPI (rank 0's
 * unique id broadcast on MPI_COMM_WORLD), and the seal exchanged over a duplicated MPI
 * communicator like the mpi transport's. The data moves by ncclAllReduce/ncclAllGather enqueued
 * on the tessera stream's cudaStream_t at the call (moves_at_call): the seal order is the
 * enqueue order, so every rank's NCCL calls come in the same order.
 *
 * libnccl is opened at run time (dlopen "libnccl.so.2"), so the library never links it and a
 * machine without it gets TSR_ERR_UNSUPPORTED from "nccl" instead of failing to load tessera.
 * float16/bfloat16 sums are widened to float32 on the device by the CUDA backend's own astype
 * kernel (the CPU's rounding rules), summed there and rounded once on the way back, through a
 * staging buffer on the ledger released in stream order. Not done here: a deadline on the
 * device-side data movement (a rank that vanishes after the seal stalls its stream; a broken
 * group's communicator is aborted, not destroyed, when it is freed). */
#include "dist/nccl_transport.h"

#include <dlfcn.h>
#include <nccl.h>
#include <pthread.h>
#include <stdlib.h>

#include "core/backend.h"
#include "core/stream.h"
#include "cuda/runtime.h"
#include "memory/buffer.h"
#include "dist/mpi_runtime.h"
#include "dist/transport.h"
#include "tessera/device.h"

/* The entry points tessera uses, resolved once per process from the one loaded libnccl. */
typedef struct {
  ncclResult_t (*get_unique_id)(ncclUniqueId *);
  ncclResult_t (*comm_init_rank)(ncclComm_t *, int, ncclUniqueId, int);
  ncclResult_t (*all_reduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                             cudaStream_t);
  ncclResult_t (*all_gather)(const void *, void *, size_t, ncclDataType_t, ncclComm_t,
                             cudaStream_t);
  ncclResult_t (*comm_destroy)(ncclComm_t);
  ncclResult_t (*comm_abort)(ncclComm_t);
  const char *(*error_string)(ncclResult_t);
} nccl_api;

static nccl_api api;
static bool api_loaded;
static pthread_once_t api_once = PTHREAD_ONCE_INIT;

static void load_api(void) {
  void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return; /* kept open for the process: NCCL's threads may outlive any group */
  api.get_unique_id = (ncclResult_t(*)(ncclUniqueId *))dlsym(lib, "ncclGetUniqueId");
  api.comm_init_rank =
      (ncclResult_t(*)(ncclComm_t *, int, ncclUniqueId, int))dlsym(lib, "ncclCommInitRank");
  api.all_reduce = (ncclResult_t(*)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                    ncclComm_t, cudaStream_t))dlsym(lib, "ncclAllReduce");
  api.all_gather = (ncclResult_t(*)(const void *, void *, size_t, ncclDataType_t, ncclComm_t,
                                    cudaStream_t))dlsym(lib, "ncclAllGather");
  api.comm_destroy = (ncclResult_t(*)(ncclComm_t))dlsym(lib, "ncclCommDestroy");
  api.comm_abort = (ncclResult_t(*)(ncclComm_t))dlsym(lib, "ncclCommAbort");
  api.error_string = (const char *(*)(ncclResult_t))dlsym(lib, "ncclGetErrorString");
  api_loaded = api.get_unique_id && api.comm_init_rank && api.all_reduce && api.all_gather &&
               api.comm_destroy && api.comm_abort && api.error_string;
}

static bool nccl_available(void) {
  pthread_once(&api_once, load_api);
  return api_loaded;
}

typedef struct {
  MPI_Comm seal_comm;
  ncclComm_t comm;
  int gpu;
} nccl_ctx;

static nccl_ctx *ctx_of(const tsr_group *g) {
  return (nccl_ctx *)g->transport_ctx;
}

static tsr_status nccl_failed(const char *what, ncclResult_t result) {
  return tsri_error(TSR_ERR_DIST, "%s: NCCL error %d: %s", what, (int)result,
                    api.error_string(result));
}

static tsr_status nccl_exchange(tsr_group *g, const tsri_seal_call *mine, tsri_seal_call *all,
                                double timeout_s, int *absent) {
  return tsri_mpi_exchange(ctx_of(g)->seal_comm, g, mine, all, timeout_s, absent);
}

static bool nccl_type(tsr_dtype dtype, ncclDataType_t *out) {
  switch (dtype) {
    case TSR_FLOAT32:
      *out = ncclFloat32;
      return true;
    case TSR_INT32:
      *out = ncclInt32;
      return true;
    case TSR_INT64:
      *out = ncclInt64;
      return true;
    default:
      return false;
  }
}

static cudaStream_t native_of(struct tsri_stream *s) {
  return (cudaStream_t)s->iface->native(s);
}

/* Half-precision sums go through float32 staging of at most this many elements (64 MiB). */
#define STAGE_ELEMS ((uint64_t)1 << 24)

/* A packed 1-D view of n elements of dtype at data. */
static tsri_view flat_view(void *data, tsr_dtype dtype, uint64_t n) {
  tsri_view v = {.data = data, .dtype = dtype, .ndim = 1, .size = (int64_t)n};
  v.shape[0] = (int64_t)n;
  v.strides[0] = 1;
  return v;
}

/* The GPU backend's astype of n elements from `from` to `to`, enqueued on s. */
static tsr_status convert(struct tsri_stream *s, const tsri_view *from, const tsri_view *to) {
  const tsri_backend *gpu = tsri_backend_for(TSR_GPU);
  tsri_op op = {.primitive = TSRI_PRIM_ASTYPE, .ninputs = 1, .device = s->device, .stream = s};
  op.in[0] = *from;
  op.out = *to;
  if (!gpu || !gpu->kernels[TSRI_PRIM_ASTYPE])
    return tsri_error(TSR_ERR_UNSUPPORTED, "all_sum: no GPU astype kernel in this build");
  return gpu->kernels[TSRI_PRIM_ASTYPE](&op);
}

static void release_stage(void *buffer) {
  tsri_buffer_release(buffer);
}

/* float16/bfloat16: each chunk widened into float32 staging, summed there, rounded into recv. */
static tsr_status sum_half(tsr_group *g, const void *send, void *recv, uint64_t count,
                           tsr_dtype dtype, struct tsri_stream *s) {
  uint64_t stage_elems = count < STAGE_ELEMS ? count : STAGE_ELEMS;
  tsri_buffer *stage = NULL;
  tsr_status status = tsri_buffer_alloc(s->device, stage_elems * sizeof(float), &stage);
  for (uint64_t at = 0; at < count && status == TSR_OK; at += stage_elems) {
    uint64_t n = count - at < stage_elems ? count - at : stage_elems;
    tsri_view half_in = flat_view((char *)send + at * 2, dtype, n);
    tsri_view wide = flat_view(stage->data, TSR_FLOAT32, n);
    tsri_view half_out = flat_view((char *)recv + at * 2, dtype, n);
    status = convert(s, &half_in, &wide);
    if (status != TSR_OK) break;
    ncclResult_t result = api.all_reduce(stage->data, stage->data, (size_t)n, ncclFloat32, ncclSum,
                                         ctx_of(g)->comm, native_of(s));
    status = result == ncclSuccess ? convert(s, &wide, &half_out) : nccl_failed("all_sum", result);
  }
  /* the staging goes back once the stream has passed the last use */
  if (stage) s->iface->after_current(s, release_stage, stage);
  return status;
}

static tsr_status nccl_all_sum(tsr_group *g, const void *send, void *recv, uint64_t count,
                               tsr_dtype dtype, struct tsri_stream *s, double timeout_s) {
  (void)timeout_s;
  if (count == 0) return TSR_OK;
  if (dtype == TSR_FLOAT16 || dtype == TSR_BFLOAT16)
    return sum_half(g, send, recv, count, dtype, s);
  ncclDataType_t type;
  if (!nccl_type(dtype, &type))
    return tsri_error(TSR_ERR_UNSUPPORTED, "all_sum: NCCL sums of %s are not implemented",
                      tsr_dtype_name(dtype));
  if (count == 0) return TSR_OK;
  ncclResult_t result =
      api.all_reduce(send, recv, (size_t)count, type, ncclSum, ctx_of(g)->comm, native_of(s));
  return result == ncclSuccess ? TSR_OK : nccl_failed("all_sum", result);
}

static tsr_status nccl_all_gather(tsr_group *g, const void *send, void *recv, uint64_t bytes,
                                  struct tsri_stream *s, double timeout_s) {
  (void)timeout_s;
  if (bytes == 0) return TSR_OK;
  ncclResult_t result =
      api.all_gather(send, recv, (size_t)bytes, ncclUint8, ctx_of(g)->comm, native_of(s));
  return result == ncclSuccess ? TSR_OK : nccl_failed("all_gather", result);
}

static void nccl_destroy(tsr_group *g, bool broken) {
  nccl_ctx *ctx = ctx_of(g);
  if (!ctx) return;
  if (ctx->comm) broken ? api.comm_abort(ctx->comm) : api.comm_destroy(ctx->comm);
  if (!broken && !tsri_mpi_finalized() && ctx->seal_comm != MPI_COMM_NULL)
    MPI_Comm_free(&ctx->seal_comm);
  free(ctx);
}

static bool nccl_runs_on(const tsr_group *g, tsr_device d) {
  return d.type == TSR_GPU && d.index == ctx_of(g)->gpu;
}

static tsr_device nccl_home(const tsr_group *g) {
  return (tsr_device){TSR_GPU, ctx_of(g)->gpu};
}

static bool nccl_moves_at_call(const tsr_group *g, tsr_device d) {
  (void)g;
  (void)d;
  return true;
}

static const tsri_transport nccl_transport = {.name = "nccl",
                                              .sums_halves = true,
                                              .moves_at_call = nccl_moves_at_call,
                                              .exchange = nccl_exchange,
                                              .all_sum = nccl_all_sum,
                                              .all_gather = nccl_all_gather,
                                              .destroy = nccl_destroy,
                                              .runs_on = nccl_runs_on,
                                              .home = nccl_home};

/* This rank's index among the ranks of its node, and their number. */
static void node_rank(int *local_rank, int *local_size) {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, local_rank);
  MPI_Comm_size(node, local_size);
  MPI_Comm_free(&node);
}

bool tsri_nccl_every_rank_has_a_gpu(void) {
  int local_rank = 0, local_size = 0;
  node_rank(&local_rank, &local_size);
  int mine = nccl_available() && tsr_device_count(TSR_GPU) >= local_size, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all != 0;
}

/* The communicator over every rank (collective): rank 0's id broadcast over MPI. */
static tsr_status init_comm(nccl_ctx *ctx, int rank, int size) {
  ncclUniqueId id;
  ncclResult_t result = rank == 0 ? api.get_unique_id(&id) : ncclSuccess;
  int ok = result == ncclSuccess, all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all_ok) return tsri_error(TSR_ERR_DIST, "group_init(\"nccl\"): ncclGetUniqueId failed");
  MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  tsr_status status = tsri_cuda_use_device(ctx->gpu);
  if (status != TSR_OK) return status;
  result = api.comm_init_rank(&ctx->comm, size, id, rank);
  if (result != ncclSuccess) {
    ctx->comm = NULL;
    return nccl_failed("group_init(\"nccl\"): ncclCommInitRank", result);
  }
  return TSR_OK;
}

/* Whether this rank can join (NCCL loads, it has a GPU of its own), agreed by every rank first so
   that none goes on into the collective set-up while another gave up. */
static tsr_status check_every_rank(int rank, int size, int local_rank) {
  int gpus = tsr_device_count(TSR_GPU);
  int mine = nccl_available() && local_rank < gpus, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (all) return TSR_OK;
  if (!nccl_available())
    return tsri_error(TSR_ERR_UNSUPPORTED,
                      "group_init(\"nccl\"): [rank %d/%d] libnccl.so.2 cannot be loaded", rank,
                      size);
  return tsri_error(TSR_ERR_UNSUPPORTED,
                    "group_init(\"nccl\"): [rank %d/%d] is rank %d of its node, which has %d "
                    "GPU(s); NCCL needs one GPU per rank on every rank",
                    rank, size, local_rank, gpus);
}

tsr_status tsri_nccl_group_new(tsr_group **out) {
  int rank = 0, size = 0, local_rank = 0, local_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  node_rank(&local_rank, &local_size);
  tsr_status status = check_every_rank(rank, size, local_rank);
  if (status != TSR_OK) return status;
  nccl_ctx *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return tsri_error(TSR_ERR_NOMEM, "group_init: out of host memory");
  ctx->seal_comm = MPI_COMM_NULL;
  ctx->gpu = local_rank;
  status = tsri_mpi_comm_dup(&ctx->seal_comm);
  if (status == TSR_OK) status = init_comm(ctx, rank, size);
  if (status != TSR_OK) {
    tsr_group dead = {.transport = &nccl_transport, .transport_ctx = ctx};
    nccl_destroy(&dead, false);
    return status;
  }
  return tsri_group_new(&nccl_transport, ctx, rank, size, out);
}
