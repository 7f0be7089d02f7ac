/* tests/dist/test_mpi_spi.c — the scenario the execution SPI exists for: on every rank, one thread
 * evaluates graphs on stream S (no collectives of its own on the group) while another submits
 * raw all-sums on the same stream S inside tsr_with_serialized_evaluation, 128 per round, many
 * rounds. Every sum is exact, every evaluation right, nothing deadlocks (ctest's timeout would
 * say so), and ThreadSanitizer finds no race (`make tsan` runs it: label concurrency). */
#include <pthread.h>
#include <stdatomic.h>

#include "dist_check.h"

#define PER_ROUND 128
#define ELEMS 33

typedef struct {
  tsr_group *group;
  tsr_stream *stream;
  int rounds;
  atomic_bool done;
  int64_t send[PER_ROUND][ELEMS], recv[PER_ROUND][ELEMS];
  int round;
} spi_job;

/* Inside the evaluation lock: 128 raw sums queued on S, interleaved with the other thread's
   evaluations in S's order. */
static tsr_status submit_round(void *ctx) {
  spi_job *job = ctx;
  for (int k = 0; k < PER_ROUND; k++) {
    tsr_status st = tsr_group_all_sum_raw(job->group, job->send[k], job->recv[k], ELEMS, TSR_INT64,
                                          job->stream);
    if (st != TSR_OK) return st;
  }
  return TSR_OK;
}

static void fill_round(spi_job *job) {
  int rank = tsr_group_rank(job->group);
  for (int k = 0; k < PER_ROUND; k++)
    for (int i = 0; i < ELEMS; i++) {
      job->send[k][i] = (int64_t)(job->round * 1000003 + k * 1009 + i) * (rank + 1);
      job->recv[k][i] = -1;
    }
}

static void check_round(const spi_job *job) {
  int n = tsr_group_size(job->group);
  int64_t factor = (int64_t)n * (n + 1) / 2; /* sum over ranks of (rank + 1) */
  for (int k = 0; k < PER_ROUND; k++)
    for (int i = 0; i < ELEMS; i++) {
      int64_t want = (int64_t)(job->round * 1000003 + k * 1009 + i) * factor;
      if (job->recv[k][i] != want)
        CHECK_FAIL_("round %d sum %d element %d: %" PRId64 " != %" PRId64, job->round, k, i,
                    job->recv[k][i], want);
    }
}

static void *submitter(void *ctx) {
  spi_job *job = ctx;
  for (job->round = 0; job->round < job->rounds; job->round++) {
    fill_round(job);
    CHECK_OK(tsr_with_serialized_evaluation(submit_round, job));
    CHECK_OK(tsr_stream_synchronize(job->stream));
    check_round(job);
  }
  atomic_store(&job->done, true);
  return NULL;
}

/* The other thread: small graphs on S until the submitter is done; each result checked. */
static int evaluate_until_done(spi_job *job) {
  int graphs = 0;
  float data[64], got[64], three = 3;
  for (int i = 0; i < 64; i++)
    data[i] = (float)i;
  int64_t shape[2] = {8, 8};
  while (!atomic_load(&job->done)) {
    tsr_array *x = NULL, *c = NULL, *y = NULL, *z = NULL;
    CHECK_OK(tsr_array_from_data(&x, data, TSR_FLOAT32, shape, 2));
    CHECK_OK(tsr_array_from_data(&c, &three, TSR_FLOAT32, NULL, 0));
    CHECK_OK(tsr_multiply(&y, x, c, job->stream));
    CHECK_OK(tsr_matmul(&z, y, x, job->stream));
    CHECK_OK(tsr_array_read(z, got, sizeof got));
    for (int r = 0; r < 8; r++)
      for (int col = 0; col < 8; col++) {
        float want = 0;
        for (int k = 0; k < 8; k++)
          want += 3.0f * data[r * 8 + k] * data[k * 8 + col];
        CHECK(got[r * 8 + col] == want);
      }
    tsr_array_release(x);
    tsr_array_release(c);
    tsr_array_release(y);
    tsr_array_release(z);
    graphs++;
  }
  return graphs;
}

int main(void) {
  static spi_job job;
  job.group = dist_group("mpi");
  CHECK_OK(tsr_group_set_timeout(job.group, 60));
  CHECK_OK(tsr_stream_new(&job.stream, (tsr_device){TSR_CPU, 0}));
  job.rounds = getenv("TSR_SANITIZED") ? 16 : 64;
  pthread_t thread;
  CHECK(pthread_create(&thread, NULL, submitter, &job) == 0);
  int graphs = evaluate_until_done(&job);
  CHECK(pthread_join(thread, NULL) == 0);
  printf("[rank %d/%d] test_mpi_spi: ok (%d rounds of %d raw sums, %d graphs beside them)\n",
         tsr_group_rank(job.group), tsr_group_size(job.group), job.rounds, PER_ROUND, graphs);
  CHECK_OK(tsr_stream_free(job.stream));
  tsr_group_free(job.group);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
