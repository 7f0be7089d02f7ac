/* tests/dist/test_mpi_seal.c — the seal: calls that disagree on count, dtype or operation fail on
 * every rank with TSR_ERR_DIST naming both sides' values, leave recv untouched and the group
 * usable; a rank with invalid arguments fails itself with TSR_ERR_INVALID and the others at once
 * with TSR_ERR_DIST; a rank that never arrives makes the others fail within the (lowered)
 * timeout, after which the group is broken (TSR_ERR_STATE) and tsr_group_free still returns; the
 * late rank, arriving after, fails its seal on their notice that they gave up. */
#include <mpi.h>
#include <time.h>

#include "dist_check.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A sum that must succeed: the group is still usable and the sequence numbers still agree. */
static void sum_ok(tsr_group *g) {
  float send[5], recv[5];
  dist_fill(send, TSR_FLOAT32, 5, tsr_group_rank(g));
  CHECK_OK(tsr_group_all_sum_raw(g, send, recv, 5, TSR_FLOAT32, dist_cpu()));
  CHECK_OK(tsr_stream_synchronize(dist_cpu()));
  dist_check_sum(recv, TSR_FLOAT32, 5, tsr_group_size(g), "after a mismatch");
}

/* The last rank calls with other arguments than the rest; every rank fails, recv untouched. */
static void mismatch(tsr_group *g, size_t count, size_t odd_count, tsr_dtype dtype,
                     tsr_dtype odd_dtype, const char *mine_needle, const char *theirs_needle) {
  bool odd = tsr_group_rank(g) == tsr_group_size(g) - 1;
  int32_t send[16] = {0}, recv[16];
  for (int i = 0; i < 16; i++)
    recv[i] = 12345;
  CHECK_STATUS(tsr_group_all_sum_raw(g, send, recv, odd ? odd_count : count,
                                     odd ? odd_dtype : dtype, dist_cpu()),
               TSR_ERR_DIST);
  CHECK_MESSAGE(odd ? theirs_needle : mine_needle);
  CHECK_MESSAGE(odd ? mine_needle : theirs_needle);
  char tag[32];
  snprintf(tag, sizeof tag, "[rank %d/%d]", tsr_group_rank(g), tsr_group_size(g));
  CHECK_MESSAGE(tag);
  CHECK_OK(tsr_stream_synchronize(dist_cpu()));
  for (int i = 0; i < 16; i++)
    CHECK_EQ_INT(recv[i], 12345);
  sum_ok(g);
}

/* Rank 0 sums lazily while the others gather: the operations differ. */
static void op_mismatch(tsr_group *g) {
  float data[3] = {1, 2, 3};
  int64_t shape[1] = {3};
  tsr_array *x = NULL, *y = NULL;
  CHECK_OK(tsr_array_from_data(&x, data, TSR_FLOAT32, shape, 1));
  if (tsr_group_rank(g) == 0)
    CHECK_OK(tsr_all_sum(&y, x, g, NULL));
  else
    CHECK_OK(tsr_all_gather(&y, x, g, NULL));
  CHECK_STATUS(tsr_eval(&y, 1), TSR_ERR_DIST);
  CHECK_MESSAGE("sum");
  CHECK_MESSAGE("gather");
  tsr_array_release(y);
  tsr_array_release(x);
  sum_ok(g);
}

/* The last rank passes a NULL recv: it fails with its own TSR_ERR_INVALID, the others at once. */
static void refused(tsr_group *g) {
  bool odd = tsr_group_rank(g) == tsr_group_size(g) - 1;
  float send[4] = {0}, recv[4];
  tsr_status st = tsr_group_all_sum_raw(g, send, odd ? NULL : recv, 4, TSR_FLOAT32, dist_cpu());
  CHECK_STATUS(st, odd ? TSR_ERR_INVALID : TSR_ERR_DIST);
  CHECK_MESSAGE(odd ? "recv is NULL" : "refused");
  sum_ok(g);
  /* an unsupported dtype on every rank: each refuses, nobody waits */
  uint8_t bytes[4] = {0};
  CHECK_STATUS(tsr_group_all_sum_raw(g, bytes, bytes, 4, TSR_UINT8, dist_cpu()), TSR_ERR_INVALID);
  CHECK_MESSAGE("uint8");
  sum_ok(g);
}

/* The last rank never calls; the others fail within the timeout and the group is broken. */
static void absent(tsr_group *g) {
  bool away = tsr_group_rank(g) == tsr_group_size(g) - 1;
  CHECK_OK(tsr_group_set_timeout(g, 0.5));
  if (!away) {
    float send[4] = {0}, recv[4];
    double start = now_s();
    CHECK_STATUS(tsr_group_all_sum_raw(g, send, recv, 4, TSR_FLOAT32, dist_cpu()), TSR_ERR_DIST);
    double waited = now_s() - start;
    CHECK(waited >= 0.45 && waited < 5);
    char needle[64];
    snprintf(needle, sizeof needle, "rank %d did not arrive", tsr_group_size(g) - 1);
    CHECK_MESSAGE(needle);
    CHECK_STATUS(tsr_group_all_sum_raw(g, send, recv, 4, TSR_FLOAT32, dist_cpu()), TSR_ERR_STATE);
    CHECK_MESSAGE("broken");
    tsr_array *x = NULL, *y = NULL;
    int64_t shape[1] = {4};
    CHECK_OK(tsr_array_from_data(&x, send, TSR_FLOAT32, shape, 1));
    CHECK_STATUS(tsr_all_sum(&y, x, g, NULL), TSR_ERR_STATE);
    tsr_array_release(x);
  } else {
    /* it arrives after the others gave up: its seal sees their notice instead of agreeing with
       their stale call (and waiting for data nobody moves) */
    struct timespec nap = {1, 0};
    nanosleep(&nap, NULL);
    float send[4] = {0}, recv[4];
    tsr_status st = tsr_group_all_sum_raw(g, send, recv, 4, TSR_FLOAT32, dist_cpu());
    /* The notice is best effort (one still in flight is missed): then the seal passes on the
       stale call and the data, which nobody else moves, times out on the stream, breaking the
       group. Either way the group ends broken. */
    if (st != TSR_OK) {
      CHECK_STATUS(st, TSR_ERR_DIST);
      CHECK_MESSAGE("gave up");
    }
    CHECK_OK(tsr_stream_synchronize(dist_cpu()));
    CHECK_STATUS(tsr_group_all_sum_raw(g, send, recv, 4, TSR_FLOAT32, dist_cpu()), TSR_ERR_STATE);
  }
  tsr_group_free(g); /* returns on every rank, the broken ones included */
}

typedef struct {
  int calls;
  tsr_log_level level;
  char last[512];
} log_capture;

static void capture(tsr_log_level level, const char *text, void *ctx) {
  log_capture *c = ctx; /* the mismatch is logged on the calling thread: no race here */
  c->calls++;
  c->level = level;
  snprintf(c->last, sizeof c->last, "%s", text);
}

int main(void) {
  tsr_group *g = dist_group("mpi");
  CHECK(tsr_group_size(g) >= 2);
  CHECK_OK(tsr_group_set_timeout(g, 20));
  /* the first mismatch goes through the log callback, tagged with this rank */
  log_capture log = {0};
  tsr_log_set_callback(capture, &log);
  mismatch(g, 10, 12, TSR_FLOAT32, TSR_FLOAT32, "count 10", "count 12");
  tsr_log_set_callback(NULL, NULL);
  char tag[32];
  snprintf(tag, sizeof tag, "[rank %d/%d] ", tsr_group_rank(g), tsr_group_size(g));
  CHECK_EQ_INT(log.calls, 1);
  CHECK_EQ_INT(log.level, TSR_LOG_WARN);
  if (strncmp(log.last, tag, strlen(tag)) != 0 || !strstr(log.last, "disagree"))
    CHECK_FAIL_("logged \"%s\"", log.last);
  mismatch(g, 8, 8, TSR_INT32, TSR_FLOAT32, "int32", "float32");
  mismatch(g, 0, 3, TSR_INT64, TSR_INT64, "count 0", "count 3");
  op_mismatch(g);
  refused(g);
  absent(g);
  /* every rank, broken or not, reaches here and finalizes MPI through tsr_shutdown */
  MPI_Barrier(MPI_COMM_WORLD);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  printf("[rank %d/%d] test_mpi_seal: ok\n", rank, size);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
