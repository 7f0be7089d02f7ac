/* bench/gpu_allsum.c — the GPU half of bench/allsum (CUDA builds): tessera's sealed all-sum on an
 * nccl group against raw ncclAllReduce on a communicator of the bench's own, on the same device
 * buffers and the same stream, float32 from 4 B to 256 MiB (TSR_BENCH_ALLSUM_MAX=BYTES lowers
 * the top), alternately timed, best of several repeats: GB/s both, their ratio and the
 * microseconds tessera adds per call (the seal over MPI). One process per GPU:
 *
 *   mpirun -np 1 build/bench/gpu_allsum        # (or -np <GPUs>)
 *
 * Each timed block is `iters` calls queued back to back and one synchronize, after an
 * MPI_Barrier; rank 0 prints. Without mpirun, GPUs or NCCL it says so and exits 0 (make bench runs
 * every benchmark plainly). libnccl is opened at run time, as the library does. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <mpi.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tessera/tessera.h>

#include "allsum_report.h"

enum { REPEATS = 5 };

typedef struct {
  ncclResult_t (*get_unique_id)(ncclUniqueId *);
  ncclResult_t (*comm_init_rank)(ncclComm_t *, int, ncclUniqueId, int);
  ncclResult_t (*all_reduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                             cudaStream_t);
  ncclResult_t (*comm_destroy)(ncclComm_t);
} nccl_api;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, const char *why) {
  fprintf(stderr, "gpu_allsum: %s: %s\n", what, why);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static bool load_nccl(nccl_api *api) {
  void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return false;
  api->get_unique_id = (ncclResult_t(*)(ncclUniqueId *))dlsym(lib, "ncclGetUniqueId");
  api->comm_init_rank =
      (ncclResult_t(*)(ncclComm_t *, int, ncclUniqueId, int))dlsym(lib, "ncclCommInitRank");
  api->all_reduce = (ncclResult_t(*)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                     ncclComm_t, cudaStream_t))dlsym(lib, "ncclAllReduce");
  api->comm_destroy = (ncclResult_t(*)(ncclComm_t))dlsym(lib, "ncclCommDestroy");
  return api->get_unique_id && api->comm_init_rank && api->all_reduce && api->comm_destroy;
}

/* The bench's own communicator over every rank (rank 0's id over MPI), on GPU `gpu`. */
static ncclComm_t raw_comm(const nccl_api *api, int gpu) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ncclUniqueId id;
  if (rank == 0 && api->get_unique_id(&id) != ncclSuccess) die("ncclGetUniqueId", "failed");
  MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  cudaSetDevice(gpu);
  ncclComm_t comm = NULL;
  if (api->comm_init_rank(&comm, size, id, rank) != ncclSuccess) die("ncclCommInitRank", "failed");
  return comm;
}

static int iterations(size_t bytes) {
  size_t iters = ((size_t)256 << 20) / (bytes ? bytes : 1);
  if (iters > 2000) iters = 2000;
  if (iters < 5) iters = 5;
  return (int)iters;
}

typedef struct {
  const nccl_api *api;
  ncclComm_t comm;
  tsr_group *group;
  tsr_stream *stream;
  cudaStream_t native;
  float *send, *recv;
} bench_ctx;

static double time_raw(const bench_ctx *b, size_t count, int iters) {
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = now_s();
  for (int i = 0; i < iters; i++)
    if (b->api->all_reduce(b->send, b->recv, count, ncclFloat32, ncclSum, b->comm, b->native) !=
        ncclSuccess)
      die("ncclAllReduce", "failed");
  cudaStreamSynchronize(b->native);
  return (now_s() - t0) / iters;
}

static double time_tessera(const bench_ctx *b, size_t count, int iters) {
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = now_s();
  for (int i = 0; i < iters; i++)
    if (tsr_group_all_sum_raw(b->group, b->send, b->recv, count, TSR_FLOAT32, b->stream) != TSR_OK)
      die("all_sum_raw", tsr_last_error());
  if (tsr_stream_synchronize(b->stream) != TSR_OK) die("synchronize", tsr_last_error());
  return (now_s() - t0) / iters;
}

static void run_size(const bench_ctx *b, size_t bytes) {
  size_t count = bytes / sizeof(float);
  int iters = iterations(bytes);
  double best_raw = 1e30, best_tsr = 1e30;
  for (int r = 0; r < REPEATS; r++) {
    double t_raw = time_raw(b, count, iters), t_tsr = time_tessera(b, count, iters);
    if (t_raw < best_raw) best_raw = t_raw;
    if (t_tsr < best_tsr) best_tsr = t_tsr;
  }
  if (tsr_group_rank(b->group) != 0) return;
  print_row(bytes, iters, best_raw, best_tsr);
}

static void run_all(bench_ctx *b) {
  size_t top = max_bytes();
  if (cudaMalloc((void **)&b->send, top) != cudaSuccess ||
      cudaMalloc((void **)&b->recv, top) != cudaSuccess)
    die("cudaMalloc", "out of device memory");
  cudaMemset(b->send, 0, top);
  if (tsr_group_rank(b->group) == 0) {
    printf("gpu_allsum: float32 sums over %d GPU rank(s), best of %d interleaved repeats\n",
           tsr_group_size(b->group), REPEATS);
    printf("%12s  %6s  %10s  %10s  %9s  %9s  %6s  %8s\n", "bytes", "iters", "NCCL GB/s", "tsr GB/s",
           "NCCL us", "tsr us", "ratio", "added us");
  }
  for (size_t bytes = 4; bytes <= top; bytes *= 4)
    run_size(b, bytes);
  cudaFree(b->send);
  cudaFree(b->recv);
}

int main(void) {
  if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK")) {
    printf(
        "gpu_allsum: not launched by mpirun; run `mpirun -np <GPUs> bench/gpu_allsum` "
        "(skipped)\n");
    return 0;
  }
  bench_ctx b = {0};
  tsr_status st = tsr_group_init(&b.group, "nccl");
  if (st != TSR_OK) { /* every rank gets the same answer */
    printf("gpu_allsum: skipped (%s)\n", tsr_last_error());
    tsr_shutdown();
    return 0;
  }
  nccl_api api;
  if (!load_nccl(&api)) die("dlopen", "libnccl.so.2");
  int local = 0;
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  b.api = &api;
  b.comm = raw_comm(&api, local);
  b.stream = tsr_default_stream((tsr_device){TSR_GPU, local});
  b.native = (cudaStream_t)tsr_stream_native(b.stream);
  run_all(&b);
  api.comm_destroy(b.comm);
  tsr_group_free(b.group);
  tsr_shutdown();
  return 0;
}
