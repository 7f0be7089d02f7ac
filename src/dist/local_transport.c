/* dist/local_transport.c — the "local" transport: a group of one, where a sum or a gather is a
 * copy and the seal has nobody to ask. Host memory (CPU streams) for the raw form; lazy
 * collectives of a local group never reach it (dist/lazy.c builds a reshape instead). */
#include <string.h>

#include "dist/transport.h"

static tsr_status local_exchange(tsr_group *g, const tsri_seal_call *mine, tsri_seal_call *all,
                                 double timeout_s, int *absent) {
  (void)timeout_s;
  (void)absent;
  all[g->rank] = *mine;
  return TSR_OK;
}

static tsr_status local_all_sum(tsr_group *g, const void *send, void *recv, uint64_t count,
                                tsr_dtype dtype, struct tsri_stream *s, double timeout_s) {
  (void)g;
  (void)s;
  (void)timeout_s;
  if (send != recv && count > 0) memmove(recv, send, (size_t)count * tsr_dtype_size(dtype));
  return TSR_OK;
}

static tsr_status local_all_gather(tsr_group *g, const void *send, void *recv, uint64_t bytes,
                                   struct tsri_stream *s, double timeout_s) {
  (void)g;
  (void)s;
  (void)timeout_s;
  if (send != recv && bytes > 0) memmove(recv, send, (size_t)bytes);
  return TSR_OK;
}

static void local_destroy(tsr_group *g, bool broken) {
  (void)g;
  (void)broken;
}

static bool local_runs_on(const tsr_group *g, tsr_device d) {
  (void)g;
  return d.type == TSR_CPU;
}

static bool local_moves_at_call(const tsr_group *g, tsr_device d) {
  (void)g;
  (void)d;
  return false;
}

const tsri_transport tsri_local_transport = {.name = "local",
                                             .sums_halves = true,
                                             .moves_at_call = local_moves_at_call,
                                             .exchange = local_exchange,
                                             .all_sum = local_all_sum,
                                             .all_gather = local_all_gather,
                                             .destroy = local_destroy,
                                             .runs_on = local_runs_on};
