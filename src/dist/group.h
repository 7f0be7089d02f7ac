/* dist/group.h — the group object: its transport and communicators (never process globals), its
 * sealed sequence, the order in which sealed calls move their data, and whether it is broken.
 *
 * A call goes through two steps. The seal (dist/seal.c) agrees with the other ranks on the call
 * and hands out a ticket; tickets are handed out in seal order, which is the same on every rank.
 * The data then moves (on a stream's worker, or inline in a lazy collective's kernel) when its
 * ticket's turn has come, so the group's collectives reach MPI or NCCL in the same order on every
 * rank whichever threads carry them. */
#ifndef TSR_DIST_GROUP_H
#define TSR_DIST_GROUP_H

#include <pthread.h>
#include <stdatomic.h>

#include "base/status.h"
#include "core/array.h"
#include "tessera/dist.h"

struct tsri_stream;

/* The operation a seal names. REFUSED: this rank's arguments were invalid; it takes part in the
 * seal only so that the others fail at once instead of waiting for it. */
typedef enum { TSRI_SEAL_SUM = 1, TSRI_SEAL_GATHER = 2, TSRI_SEAL_REFUSED = 3 } tsri_seal_op;

/* One call as the seal compares it. */
typedef struct {
  uint64_t sequence;
  uint64_t count;
  uint64_t dtype; /* tsr_dtype */
  uint64_t op;    /* tsri_seal_op */
} tsri_seal_call;

/* How a group moves bytes. Every function blocks until done, an error, or the timeout. */
typedef struct tsri_transport {
  const char *name;
  /* float16/bfloat16 sums travel and accumulate in float32 (else they are refused) */
  bool sums_halves;
  /* Whether a raw call on a stream of device d moves its data on the calling thread, right after
     the seal (NCCL enqueues on the stream's cudaStream_t; MPI stages device memory through the
     host, waiting for the stream), instead of in a host task queued on the stream. */
  bool (*moves_at_call)(const tsr_group *g, tsr_device d);
  /* Every rank's call into all[0..size) (all[rank] = *mine). Returns TSR_OK, or TSR_ERR_DIST with
     *absent = the first rank that did not arrive within timeout_s (0 = forever; the message set),
     or another error with the message set. */
  tsr_status (*exchange)(tsr_group *g, const tsri_seal_call *mine, tsri_seal_call *all,
                         double timeout_s, int *absent);
  /* recv = the sum of send over the ranks (count elements of dtype; send == recv in place), on
     the stream s's device; s is NULL for host memory. */
  tsr_status (*all_sum)(tsr_group *g, const void *send, void *recv, uint64_t count, tsr_dtype dtype,
                        struct tsri_stream *s, double timeout_s);
  /* recv[r * bytes ..] = rank r's `bytes` bytes of send. */
  tsr_status (*all_gather)(tsr_group *g, const void *send, void *recv, uint64_t bytes,
                           struct tsri_stream *s, double timeout_s);
  /* Releases the transport's state; `broken`: a call timed out, so nothing may wait for the
     other ranks (communicators with pending operations are left for MPI_Finalize). */
  void (*destroy)(tsr_group *g, bool broken);
  /* Whether the group's collectives can run on this device (raw and lazy). */
  bool (*runs_on)(const tsr_group *g, tsr_device d);
  /* Optional (NULL: the CPU): the device this rank's collectives run on natively. */
  tsr_device (*home)(const tsr_group *g);
} tsri_transport;

struct tsr_group {
  atomic_int refs; /* the caller's, + each queued raw sum, + each running lazy collective */
  uint64_t serial; /* how lazy nodes name it (tsri_group_find) */
  int rank, size;
  const tsri_transport *transport;
  void *transport_ctx;
  atomic_uint_fast64_t chunk_elems; /* the most elements one MPI/NCCL call moves (tests lower it) */

  pthread_mutex_t seal_mutex;    /* one seal at a time; guards sequence */
  uint64_t sequence;             /* seals made so far */
  atomic_uint_fast64_t refusals; /* of them, this rank's refusals (tsr_group_refusals) */

  pthread_mutex_t mutex; /* guards everything below */
  pthread_cond_t turn;   /* signalled when tickets_done or broken changes */
  double timeout_s;
  uint64_t tickets_issued, tickets_done;
  bool broken;
  char broken_reason[TSR_ERROR_MAX];
  tsr_array *last_lazy; /* the newest lazy collective built on this group (creation order) */
};

/* A new group (refs 1, registered) over this transport; takes transport_ctx. */
tsr_status tsri_group_new(const tsri_transport *transport, void *transport_ctx, int rank, int size,
                          tsr_group **out);
/* The live group with this serial, retained; NULL after tsr_group_free. */
tsr_group *tsri_group_find(uint64_t serial);
tsr_group *tsri_group_retain(tsr_group *g);
void tsri_group_release(tsr_group *g);

/* "[rank 1/4]" tag helpers: messages a rank sets or logs carry it. */
const char *tsri_group_tag(const tsr_group *g, char buf[32]);
double tsri_group_timeout(tsr_group *g);
/* TSR_ERR_STATE with the reason when the group is broken, else TSR_OK. */
tsr_status tsri_group_check_usable(tsr_group *g, const char *what);
/* Marks the group broken (the first reason is kept), wakes every data mover, logs it. */
void tsri_group_break(tsr_group *g, const char *reason);
/* A data move that failed part-way (the ranks may be anywhere in it, so nothing after it is
 * safe): breaks the group with "<tag> <what>: <last error>; the group is now broken" and returns
 * `status` with that message. */
tsr_status tsri_group_move_failed(tsr_group *g, const char *what, tsr_status status);

/* Waits until `ticket`'s turn to move data (every earlier ticket has moved) or the timeout:
 * TSR_OK, TSR_ERR_STATE (broken meanwhile) or TSR_ERR_DIST (timed out; breaks the group). */
tsr_status tsri_group_wait_turn(tsr_group *g, uint64_t ticket, const char *what);
/* The ticket's data has moved (or failed): the next ticket may go. */
void tsri_group_turn_done(tsr_group *g);

#endif
