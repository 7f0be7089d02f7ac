/* dist/group.c — a group's life (dist/group.h): creation, the registry lazy nodes resolve it
 * through, rank/size/timeout, the broken state and the order in which sealed calls move data.
 * Which transport a name picks is dist/init.c's; the seal is dist/seal.c's. */
#include "dist/group.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "tessera/testing.h"

/* Live groups, so a lazy node names its group by serial and finds it gone after tsr_group_free
   instead of reading freed memory. Process-wide like the stream handle table. */
static struct {
  pthread_mutex_t mutex;
  tsr_group **live;
  size_t count, capacity;
  uint64_t next_serial;
} registry = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 1};

static tsr_status registry_add(tsr_group *g) {
  tsr_status status = TSR_OK;
  pthread_mutex_lock(&registry.mutex);
  if (registry.count == registry.capacity) {
    size_t capacity = registry.capacity ? 2 * registry.capacity : 8;
    tsr_group **live = realloc(registry.live, capacity * sizeof *live);
    if (live) {
      registry.live = live;
      registry.capacity = capacity;
    } else {
      status = tsri_error(TSR_ERR_NOMEM, "group_init: out of host memory");
    }
  }
  if (status == TSR_OK) {
    g->serial = registry.next_serial++;
    registry.live[registry.count++] = g;
  }
  pthread_mutex_unlock(&registry.mutex);
  return status;
}

static void registry_remove(const tsr_group *g) {
  pthread_mutex_lock(&registry.mutex);
  for (size_t i = 0; i < registry.count; i++) {
    if (registry.live[i] != g) continue;
    registry.live[i] = registry.live[--registry.count];
    break;
  }
  if (registry.count == 0) { /* the last group: nothing left for a leak checker to see */
    free(registry.live);
    registry.live = NULL;
    registry.capacity = 0;
  }
  pthread_mutex_unlock(&registry.mutex);
}

tsr_group *tsri_group_find(uint64_t serial) {
  tsr_group *found = NULL;
  pthread_mutex_lock(&registry.mutex);
  for (size_t i = 0; i < registry.count && !found; i++)
    if (registry.live[i]->serial == serial) found = tsri_group_retain(registry.live[i]);
  pthread_mutex_unlock(&registry.mutex);
  return found;
}

tsr_status tsri_group_new(const tsri_transport *transport, void *transport_ctx, int rank, int size,
                          tsr_group **out) {
  tsr_group *g = calloc(1, sizeof *g);
  if (!g) {
    transport->destroy(&(tsr_group){.transport = transport, .transport_ctx = transport_ctx}, false);
    return tsri_error(TSR_ERR_NOMEM, "group_init: out of host memory");
  }
  atomic_init(&g->refs, 1);
  g->rank = rank;
  g->size = size;
  g->transport = transport;
  g->transport_ctx = transport_ctx;
  atomic_init(&g->chunk_elems, (uint_fast64_t)INT_MAX);
  atomic_init(&g->refusals, 0);
  g->timeout_s = 60.0;
  pthread_mutex_init(&g->seal_mutex, NULL);
  pthread_mutex_init(&g->mutex, NULL);
  pthread_cond_init(&g->turn, NULL);
  tsr_status status = registry_add(g);
  if (status != TSR_OK) {
    tsri_group_release(g);
    return status;
  }
  *out = g;
  return TSR_OK;
}

tsr_group *tsri_group_retain(tsr_group *g) {
  atomic_fetch_add(&g->refs, 1);
  return g;
}

void tsri_group_release(tsr_group *g) {
  if (!g || atomic_fetch_sub(&g->refs, 1) != 1) return;
  g->transport->destroy(g, g->broken);
  pthread_cond_destroy(&g->turn);
  pthread_mutex_destroy(&g->mutex);
  pthread_mutex_destroy(&g->seal_mutex);
  free(g);
}

void tsr_group_free(tsr_group *g) {
  if (!g) return;
  registry_remove(g);
  pthread_mutex_lock(&g->mutex);
  tsr_array *last = g->last_lazy;
  g->last_lazy = NULL;
  pthread_mutex_unlock(&g->mutex);
  tsr_array_release(last);
  tsri_group_release(g);
}

int tsr_group_rank(const tsr_group *g) {
  return g ? g->rank : -1;
}

int tsr_group_size(const tsr_group *g) {
  return g ? g->size : 0;
}

uint64_t tsr_group_refusals(const tsr_group *g) {
  return g ? atomic_load(&((tsr_group *)g)->refusals) : 0;
}

tsr_device tsr_group_device(const tsr_group *g) {
  if (!g) return (tsr_device){TSR_CPU, -1};
  return g->transport->home ? g->transport->home(g) : (tsr_device){TSR_CPU, 0};
}

tsr_status tsr_group_set_timeout(tsr_group *g, double seconds) {
  if (!g) return tsri_error(TSR_ERR_INVALID, "group_set_timeout: g is NULL");
  if (!(seconds >= 0) || isinf(seconds))
    return tsri_error(TSR_ERR_INVALID,
                      "group_set_timeout: %g seconds (use a finite value >= 0; 0 waits forever)",
                      seconds);
  pthread_mutex_lock(&g->mutex);
  g->timeout_s = seconds;
  pthread_mutex_unlock(&g->mutex);
  return TSR_OK;
}

tsr_status tsr_testing_group_set_chunk(tsr_group *g, uint64_t elements) {
  if (!g) return tsri_error(TSR_ERR_INVALID, "testing_group_set_chunk: g is NULL");
  if (elements < 1 || elements > INT_MAX)
    return tsri_error(TSR_ERR_INVALID,
                      "testing_group_set_chunk: %" PRIu64 " elements (use 1 to %d)", elements,
                      INT_MAX);
  atomic_store(&g->chunk_elems, elements);
  return TSR_OK;
}

double tsri_group_timeout(tsr_group *g) {
  pthread_mutex_lock(&g->mutex);
  double seconds = g->timeout_s;
  pthread_mutex_unlock(&g->mutex);
  return seconds;
}

const char *tsri_group_tag(const tsr_group *g, char buf[32]) {
  snprintf(buf, 32, "[rank %d/%d]", g->rank, g->size);
  return buf;
}

tsr_status tsri_group_check_usable(tsr_group *g, const char *what) {
  pthread_mutex_lock(&g->mutex);
  tsr_status status = TSR_OK;
  if (g->broken)
    status = tsri_error(TSR_ERR_STATE, "%s: the group is broken by an earlier failure (%s)", what,
                        g->broken_reason);
  pthread_mutex_unlock(&g->mutex);
  return status;
}

void tsri_group_break(tsr_group *g, const char *reason) {
  pthread_mutex_lock(&g->mutex);
  bool first = !g->broken;
  if (first) {
    g->broken = true;
    snprintf(g->broken_reason, sizeof g->broken_reason, "%s", reason);
  }
  pthread_cond_broadcast(&g->turn);
  pthread_mutex_unlock(&g->mutex);
  if (first) tsri_log(TSRI_LOG_ERROR, "%s", reason);
}

tsr_status tsri_group_move_failed(tsr_group *g, const char *what, tsr_status status) {
  char tag[32], reason[TSR_ERROR_MAX];
  snprintf(reason, sizeof reason, "%s %s: %s; the group is now broken", tsri_group_tag(g, tag),
           what, tsr_last_error());
  tsri_group_break(g, reason);
  return tsri_error(status, "%s", reason);
}

/* The absolute CLOCK_REALTIME instant `seconds` from now, for pthread_cond_timedwait. */
static struct timespec deadline_after(double seconds) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  double whole = floor(seconds);
  t.tv_sec += (time_t)whole;
  t.tv_nsec += (long)((seconds - whole) * 1e9);
  if (t.tv_nsec >= 1000000000L) {
    t.tv_sec++;
    t.tv_nsec -= 1000000000L;
  }
  return t;
}

tsr_status tsri_group_wait_turn(tsr_group *g, uint64_t ticket, const char *what) {
  pthread_mutex_lock(&g->mutex);
  double seconds = g->timeout_s;
  struct timespec deadline = deadline_after(seconds);
  bool timed_out = false;
  while (!g->broken && g->tickets_done != ticket && !timed_out) {
    if (seconds == 0)
      pthread_cond_wait(&g->turn, &g->mutex);
    else
      timed_out = pthread_cond_timedwait(&g->turn, &g->mutex, &deadline) == ETIMEDOUT;
  }
  bool broken = g->broken, my_turn = !broken && g->tickets_done == ticket;
  uint64_t done = g->tickets_done;
  pthread_mutex_unlock(&g->mutex);
  if (my_turn) return TSR_OK;
  if (broken) return tsri_group_check_usable(g, what);
  char tag[32], reason[TSR_ERROR_MAX];
  snprintf(reason, sizeof reason,
           "%s %s: call %" PRIu64 " of this group waited %g s for call %" PRIu64
           " to move its data; the group is now broken",
           tsri_group_tag(g, tag), what, ticket + 1, seconds, done + 1);
  tsri_group_break(g, reason);
  return tsri_error(TSR_ERR_DIST, "%s", reason);
}

void tsri_group_turn_done(tsr_group *g) {
  pthread_mutex_lock(&g->mutex);
  g->tickets_done++;
  pthread_cond_broadcast(&g->turn);
  pthread_mutex_unlock(&g->mutex);
}
