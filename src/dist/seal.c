/* dist/seal.c — the seal (dist/seal.h): before any data moves, every rank learns every other
 * rank's (sequence, count, dtype, operation) through the transport's exchange, on the host and
 * synchronously. Each rank compares all of them, so all ranks see the same set and reach the
 * same verdict: every rank goes on, or every rank returns TSR_ERR_DIST. Not the data movement
 * (dist/mpi_transport.c, dist/nccl_transport.c). */
#include "dist/seal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/dtype.h"
#include "base/log.h"

static const char *op_name(uint64_t op) {
  switch (op) {
    case TSRI_SEAL_SUM:
      return "sum";
    case TSRI_SEAL_GATHER:
      return "gather";
    case TSRI_SEAL_REFUSED:
      return "refused: the call failed on that rank";
    default:
      return "unknown operation";
  }
}

static const char *describe(const tsri_seal_call *c, char *buf, size_t len) {
  const char *dtype =
      c->dtype <= (uint64_t)TSR_FLOAT32 ? tsr_dtype_name((tsr_dtype)c->dtype) : "unknown dtype";
  snprintf(buf, len, "(sequence %" PRIu64 ", count %" PRIu64 ", %s, %s)", c->sequence, c->count,
           dtype, op_name(c->op));
  return buf;
}

static bool same_call(const tsri_seal_call *a, const tsri_seal_call *b) {
  return a->sequence == b->sequence && a->count == b->count && a->dtype == b->dtype &&
         a->op == b->op && a->op != TSRI_SEAL_REFUSED;
}

/* The verdict on every rank's call: TSR_OK when they are one call, else TSR_ERR_DIST naming
   this rank's values and the first other rank's that differ. */
static tsr_status compare(const tsr_group *g, const char *what, const tsri_seal_call *all) {
  const tsri_seal_call *mine = &all[g->rank];
  for (int r = 0; r < g->size; r++) {
    if (same_call(&all[r], mine)) continue;
    if (r == g->rank && mine->op == TSRI_SEAL_REFUSED) continue; /* the caller reports its own */
    char tag[32], mine_text[128], theirs_text[128];
    return tsri_error(TSR_ERR_DIST,
                      "%s %s: the ranks disagree: this rank has %s, rank %d has %s; nothing "
                      "moved and the group is still usable",
                      tsri_group_tag(g, tag), what, describe(mine, mine_text, sizeof mine_text), r,
                      describe(&all[r], theirs_text, sizeof theirs_text));
  }
  return TSR_OK;
}

/* One exchange under the seal lock; the sequence number is this call's. */
static tsr_status exchange(tsr_group *g, const char *what, tsri_seal_call *mine,
                           tsri_seal_call *all) {
  double timeout_s = tsri_group_timeout(g);
  int absent = -1;
  tsr_status status = g->transport->exchange(g, mine, all, timeout_s, &absent);
  if (status == TSR_ERR_DIST && absent >= 0) {
    char tag[32], text[128], reason[TSR_ERROR_MAX];
    snprintf(reason, sizeof reason,
             "%s %s: rank %d did not arrive within %g s for the call %s; the group is now broken",
             tsri_group_tag(g, tag), what, absent, timeout_s, describe(mine, text, sizeof text));
    tsri_group_break(g, reason);
    return tsri_error(TSR_ERR_DIST, "%s", reason);
  }
  if (status != TSR_OK) /* the transport failed under us: nothing can be trusted after it */
    return tsri_group_move_failed(g, what, status);
  status = compare(g, what, all);
  if (status != TSR_OK) tsri_log(TSRI_LOG_WARN, "%s", tsr_last_error());
  return status;
}

tsr_status tsri_seal(tsr_group *g, const char *what, tsri_seal_op op, uint64_t count,
                     tsr_dtype dtype, uint64_t *ticket) {
  tsr_status status = tsri_group_check_usable(g, what);
  if (status != TSR_OK) return status;
  tsri_seal_call *all = calloc((size_t)g->size, sizeof *all);
  if (!all) return tsri_error(TSR_ERR_NOMEM, "%s: out of host memory", what);
  pthread_mutex_lock(&g->seal_mutex);
  tsri_seal_call mine = {g->sequence++, count, (uint64_t)dtype, (uint64_t)op};
  all[g->rank] = mine;
  status = g->size > 1 ? exchange(g, what, &mine, all) : TSR_OK;
  if (op == TSRI_SEAL_REFUSED) atomic_fetch_add(&g->refusals, 1);
  if (status == TSR_OK && op != TSRI_SEAL_REFUSED) {
    /* Tickets are taken in seal order, which every rank shares. */
    pthread_mutex_lock(&g->mutex);
    *ticket = g->tickets_issued++;
    pthread_mutex_unlock(&g->mutex);
  }
  pthread_mutex_unlock(&g->seal_mutex);
  free(all);
  return status;
}

bool tsri_seal_sums(tsr_dtype dtype) {
  return dtype == TSR_FLOAT32 || dtype == TSR_FLOAT16 || dtype == TSR_BFLOAT16 ||
         dtype == TSR_INT32 || dtype == TSR_INT64;
}
