/* dist/mpi_transport.c — the "mpi" transport (dist/transport.h): two duplicates of
 * MPI_COMM_WORLD per group, one for the seal's point-to-point messages and one for the data's
 * collectives, so neither can match the other's traffic. Every operation is non-blocking MPI
 * driven to a deadline (dist/mpi_runtime.c), never a call that could block forever. Host memory
 * moves as it is; device memory (a GPU stream, e.g. `mpirun -np 2` on a one-GPU machine) is
 * staged through host buffers with the stream's own copies, which wait for the stream. Not the
 * seal's verdict (dist/seal.c) nor the order of calls (dist/group.c).
 *
 * After a timeout the group is broken and its communicators may still have operations pending
 * that no rank will complete (a receive cancelled, a collective that cannot be cancelled):
 * destroy then leaves them, and their buffers, to MPI_Finalize rather than free a communicator
 * MPI still uses. */
#include "dist/transport.h"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "core/stream.h"
#include "dist/mpi_runtime.h"

typedef struct {
  MPI_Comm seal_comm;
  MPI_Comm data_comm;
} mpi_ctx;

#define SEAL_TAG 7
#define GAVE_UP_TAG 8
/* Half-precision sums travel as float32 through a staging buffer of at most this many elements
   (16 MiB), converted chunk by chunk. */
#define STAGE_ELEMS ((uint64_t)1 << 22)

static mpi_ctx *ctx_of(const tsr_group *g) {
  return (mpi_ctx *)g->transport_ctx;
}

static tsr_status mpi_failed(const char *what, int code) {
  char text[MPI_MAX_ERROR_STRING + 32];
  return tsri_error(TSR_ERR_DIST, "%s: %s", what, tsri_mpi_error_text(code, text, sizeof text));
}

/* ---- the seal's exchange: every rank sends its call to every other, point to point --------- */

/* After a timeout: the receives nobody will match are cancelled (their buffers are then free);
   sends are small enough to have left already (eager), and one that has not is let go. */
static void abandon(MPI_Request *requests, int count) {
  for (int i = 0; i < count; i++) {
    if (requests[i] == MPI_REQUEST_NULL) continue;
    int done = 0;
    MPI_Test(&requests[i], &done, MPI_STATUS_IGNORE);
    if (done) continue;
    if (MPI_Cancel(&requests[i]) == MPI_SUCCESS) MPI_Wait(&requests[i], MPI_STATUS_IGNORE);
    if (requests[i] != MPI_REQUEST_NULL) MPI_Request_free(&requests[i]);
  }
}

/* After this rank gave up on a call, every peer is told (sequence number, tag GAVE_UP_TAG), so a
   rank that arrives late fails its seal instead of agreeing with the stale call and then waiting
   for data nobody moves. The notice is small (eager); one not gone within 0.1 s is let go, its
   8 bytes left to the process (MPI may still read them). */
static void tell_peers(MPI_Comm comm, const tsr_group *g, uint64_t sequence) {
  for (int r = 0; r < g->size; r++) {
    uint64_t *notice = malloc(sizeof *notice);
    MPI_Request request = MPI_REQUEST_NULL;
    if (r == g->rank || !notice) {
      free(notice);
      continue;
    }
    *notice = sequence;
    int pending = 0;
    if (MPI_Isend(notice, 1, MPI_UINT64_T, r, GAVE_UP_TAG, comm, &request) != MPI_SUCCESS ||
        tsri_mpi_wait(&request, 1, 0.1, "seal", &pending) == TSR_OK)
      free(notice);
    else if (request != MPI_REQUEST_NULL)
      MPI_Request_free(&request);
  }
}

/* A peer's notice that it gave up on this group (tell_peers): TSR_ERR_DIST naming it. A probe
   drives MPI's progress once, which may take in one peer's messages only, so there is one probe
   per peer (a few hundred nanoseconds in all); a notice still in flight is missed, and the late
   rank then fails when its data does not move (the timeout). */
static tsr_status check_gave_up(MPI_Comm comm, int peers) {
  int flag = 0;
  MPI_Status probe;
  for (int i = 0; i < peers && !flag; i++)
    MPI_Iprobe(MPI_ANY_SOURCE, GAVE_UP_TAG, comm, &flag, &probe);
  if (!flag) return TSR_OK;
  uint64_t sequence = 0;
  MPI_Recv(&sequence, 1, MPI_UINT64_T, probe.MPI_SOURCE, GAVE_UP_TAG, comm, MPI_STATUS_IGNORE);
  return tsri_error(TSR_ERR_DIST,
                    "seal: rank %d gave up on this group at sequence %" PRIu64
                    " (it timed out waiting for this rank)",
                    probe.MPI_SOURCE, sequence);
}

tsr_status tsri_mpi_exchange(MPI_Comm comm, const tsr_group *g, const tsri_seal_call *mine,
                             tsri_seal_call *all, double timeout_s, int *absent) {
  int peers = g->size - 1, n = 0, pending = -1;
  MPI_Request *requests = malloc(2 * (size_t)peers * sizeof *requests);
  if (!requests) return tsri_error(TSR_ERR_NOMEM, "seal: out of host memory");
  int code = MPI_SUCCESS;
  for (int r = 0; r < g->size && code == MPI_SUCCESS; r++) /* receives first: no unexpected */
    if (r != g->rank) code = MPI_Irecv(&all[r], 4, MPI_UINT64_T, r, SEAL_TAG, comm, &requests[n++]);
  for (int r = 0; r < g->size && code == MPI_SUCCESS; r++)
    if (r != g->rank) code = MPI_Isend(mine, 4, MPI_UINT64_T, r, SEAL_TAG, comm, &requests[n++]);
  tsr_status status = code == MPI_SUCCESS ? tsri_mpi_wait(requests, n, timeout_s, "seal", &pending)
                                          : mpi_failed("seal", code);
  if (status == TSR_ERR_DIST && pending >= 0) { /* timed out (not an MPI error) */
    /* requests[0..peers) are the receives, in rank order without this rank */
    *absent = pending < peers ? (pending < g->rank ? pending : pending + 1) : -1;
    abandon(requests, n);
    tell_peers(comm, g, mine->sequence);
  }
  if (status == TSR_OK) status = check_gave_up(comm, peers);
  free(requests);
  return status;
}

static tsr_status mpi_exchange(tsr_group *g, const tsri_seal_call *mine, tsri_seal_call *all,
                               double timeout_s, int *absent) {
  return tsri_mpi_exchange(ctx_of(g)->seal_comm, g, mine, all, timeout_s, absent);
}

/* ---- the data ------------------------------------------------------------------------------ */

static MPI_Datatype mpi_type(tsr_dtype dtype) {
  switch (dtype) {
    case TSR_INT32:
      return MPI_INT32_T;
    case TSR_INT64:
      return MPI_INT64_T;
    default:
      return MPI_FLOAT; /* float32, and float16/bfloat16 staged as float32 */
  }
}

/* One all-reduce of n elements, recv in place when send is recv. */
static tsr_status sum_block(MPI_Comm comm, const void *send, void *recv, int n, MPI_Datatype type,
                            double timeout_s) {
  MPI_Request request = MPI_REQUEST_NULL;
  int pending = 0;
  int code =
      MPI_Iallreduce(send == recv ? MPI_IN_PLACE : send, recv, n, type, MPI_SUM, comm, &request);
  if (code != MPI_SUCCESS) return mpi_failed("all_sum", code);
  return tsri_mpi_wait(&request, 1, timeout_s, "all_sum", &pending);
}

static void widen(const uint16_t *in, float *out, uint64_t n, tsr_dtype dtype) {
  for (uint64_t i = 0; i < n; i++)
    out[i] = dtype == TSR_FLOAT16 ? tsri_f16_to_f32(in[i]) : tsri_bf16_to_f32(in[i]);
}

static void narrow(const float *in, uint16_t *out, uint64_t n, tsr_dtype dtype) {
  for (uint64_t i = 0; i < n; i++)
    out[i] = dtype == TSR_FLOAT16 ? tsri_f32_to_f16(in[i]) : tsri_f32_to_bf16(in[i]);
}

/* float16/bfloat16: each chunk widened to float32, summed there, rounded once into recv. */
static tsr_status sum_half(MPI_Comm comm, const uint16_t *send, uint16_t *recv, uint64_t count,
                           tsr_dtype dtype, uint64_t chunk, double timeout_s) {
  uint64_t stage_elems = chunk < STAGE_ELEMS ? chunk : STAGE_ELEMS;
  float *stage = malloc((size_t)(count < stage_elems ? count : stage_elems) * sizeof *stage);
  if (!stage) return tsri_error(TSR_ERR_NOMEM, "all_sum: out of host memory for staging");
  tsr_status status = TSR_OK;
  for (uint64_t at = 0; at < count && status == TSR_OK; at += stage_elems) {
    uint64_t n = count - at < stage_elems ? count - at : stage_elems;
    widen(send + at, stage, n, dtype);
    status = sum_block(comm, stage, stage, (int)n, MPI_FLOAT, timeout_s);
    if (status == TSR_OK) narrow(stage, recv + at, n, dtype);
  }
  /* After a timeout MPI may still write the staging buffer: it is left to the process. */
  if (status != TSR_ERR_DIST) free(stage);
  return status;
}

static tsr_status host_sum(tsr_group *g, const void *send, void *recv, uint64_t count,
                           tsr_dtype dtype, double timeout_s) {
  MPI_Comm comm = ctx_of(g)->data_comm;
  uint64_t chunk = atomic_load(&g->chunk_elems);
  if (dtype == TSR_FLOAT16 || dtype == TSR_BFLOAT16)
    return sum_half(comm, send, recv, count, dtype, chunk, timeout_s);
  size_t item = tsr_dtype_size(dtype);
  tsr_status status = TSR_OK;
  for (uint64_t at = 0; at < count && status == TSR_OK; at += chunk) {
    uint64_t n = count - at < chunk ? count - at : chunk;
    const char *from = (const char *)send + at * item;
    char *to = (char *)recv + at * item;
    status = sum_block(comm, send == recv ? to : from, to, (int)n, mpi_type(dtype), timeout_s);
  }
  return status;
}

/* One all-gather of `bytes` bytes per rank at offset `at` of each rank's block of `stride`
   bytes: the receive type is `bytes` bytes whose extent is the whole block, so rank r's piece
   lands at recv + r * stride + at without any count above INT_MAX. */
static tsr_status gather_block(MPI_Comm comm, const char *send, char *recv, int bytes,
                               uint64_t stride, double timeout_s) {
  MPI_Datatype piece = MPI_DATATYPE_NULL, block = MPI_DATATYPE_NULL;
  int code = MPI_Type_contiguous(bytes, MPI_BYTE, &piece);
  if (code == MPI_SUCCESS) code = MPI_Type_create_resized(piece, 0, (MPI_Aint)stride, &block);
  if (code == MPI_SUCCESS) code = MPI_Type_commit(&block);
  MPI_Request request = MPI_REQUEST_NULL;
  if (code == MPI_SUCCESS)
    code = MPI_Iallgather(send, bytes, MPI_BYTE, recv, 1, block, comm, &request);
  tsr_status status = code == MPI_SUCCESS ? TSR_OK : mpi_failed("all_gather", code);
  int pending = 0;
  if (status == TSR_OK) status = tsri_mpi_wait(&request, 1, timeout_s, "all_gather", &pending);
  if (block != MPI_DATATYPE_NULL) MPI_Type_free(&block); /* MPI keeps it while it is in use */
  if (piece != MPI_DATATYPE_NULL) MPI_Type_free(&piece);
  return status;
}

static tsr_status host_gather(tsr_group *g, const void *send, void *recv, uint64_t bytes,
                              double timeout_s) {
  uint64_t chunk = atomic_load(&g->chunk_elems);
  tsr_status status = TSR_OK;
  for (uint64_t at = 0; at < bytes && status == TSR_OK; at += chunk) {
    uint64_t n = bytes - at < chunk ? bytes - at : chunk;
    status = gather_block(ctx_of(g)->data_comm, (const char *)send + at, (char *)recv + at, (int)n,
                          bytes, timeout_s);
  }
  return status;
}

/* ---- device memory: staged through the host in the stream's order ------------------------- */

static bool on_device(const struct tsri_stream *s) {
  return s && s->device.type != TSR_CPU;
}

/* One call on device memory: send's bytes to the host, the host operation (a sum of count
   elements of dtype, or a gather of bytes_in per rank), the result back into recv. After a
   timeout MPI may still write the host buffers: they are left to the process then. */
typedef struct {
  bool gather;
  uint64_t count;
  tsr_dtype dtype;
  uint64_t bytes_in, bytes_out;
} staged_call;

static tsr_status staged(tsr_group *g, const void *send, void *recv, const staged_call *call,
                         struct tsri_stream *s, double timeout_s) {
  uint64_t bytes_in = call->bytes_in, bytes_out = call->bytes_out;
  char *host = malloc((size_t)(bytes_in + bytes_out + 1));
  if (!host) return tsri_error(TSR_ERR_NOMEM, "collective: out of host memory for staging");
  char *host_out = host + bytes_in;
  tsr_status status = s->iface->copy(s, host, send, bytes_in, TSRI_COPY_TO_HOST);
  bool gather = call->gather;
  uint64_t count = call->count;
  tsr_dtype dtype = call->dtype;
  if (status == TSR_OK)
    status = gather ? host_gather(g, host, host_out, bytes_in, timeout_s)
                    : host_sum(g, host, host_out, count, dtype, timeout_s);
  if (status == TSR_OK) status = s->iface->copy(s, recv, host_out, bytes_out, TSRI_COPY_FROM_HOST);
  if (status != TSR_ERR_DIST) free(host);
  return status;
}

static tsr_status mpi_all_sum(tsr_group *g, const void *send, void *recv, uint64_t count,
                              tsr_dtype dtype, struct tsri_stream *s, double timeout_s) {
  if (!on_device(s) || count == 0) return host_sum(g, send, recv, count, dtype, timeout_s);
  uint64_t bytes = count * tsr_dtype_size(dtype);
  staged_call call = {false, count, dtype, bytes, bytes};
  return staged(g, send, recv, &call, s, timeout_s);
}

static tsr_status mpi_all_gather(tsr_group *g, const void *send, void *recv, uint64_t bytes,
                                 struct tsri_stream *s, double timeout_s) {
  if (!on_device(s) || bytes == 0) return host_gather(g, send, recv, bytes, timeout_s);
  staged_call call = {true, 0, TSR_UINT8, bytes, bytes * (uint64_t)g->size};
  return staged(g, send, recv, &call, s, timeout_s);
}

static void mpi_destroy(tsr_group *g, bool broken) {
  mpi_ctx *ctx = ctx_of(g);
  if (!ctx) return;
  if (!broken && !tsri_mpi_finalized()) {
    MPI_Comm_free(&ctx->data_comm);
    MPI_Comm_free(&ctx->seal_comm);
  }
  free(ctx);
}

static bool mpi_runs_on(const tsr_group *g, tsr_device d) {
  (void)g;
  (void)d;
  return true; /* host memory as it is, device memory staged */
}

static bool mpi_moves_at_call(const tsr_group *g, tsr_device d) {
  (void)g;
  return d.type != TSR_CPU; /* staging waits for the stream: not in a host task */
}

const tsri_transport tsri_mpi_transport = {.name = "mpi",
                                           .sums_halves = true,
                                           .moves_at_call = mpi_moves_at_call,
                                           .exchange = mpi_exchange,
                                           .all_sum = mpi_all_sum,
                                           .all_gather = mpi_all_gather,
                                           .destroy = mpi_destroy,
                                           .runs_on = mpi_runs_on};

tsr_status tsri_mpi_comm_dup(MPI_Comm *out) {
  int code = MPI_Comm_dup(MPI_COMM_WORLD, out);
  if (code == MPI_SUCCESS) code = MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
  return code == MPI_SUCCESS ? TSR_OK : mpi_failed("group_init", code);
}

tsr_status tsri_mpi_transport_ctx(void **out) {
  mpi_ctx *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return tsri_error(TSR_ERR_NOMEM, "group_init: out of host memory");
  tsr_status status = tsri_mpi_comm_dup(&ctx->seal_comm);
  if (status == TSR_OK) status = tsri_mpi_comm_dup(&ctx->data_comm);
  if (status != TSR_OK) {
    free(ctx); /* a failed dup is a broken MPI job: what it holds is left to MPI */
    return status;
  }
  *out = ctx;
  return TSR_OK;
}
