/* tests/core/test_spi_race.c — the regression the execution SPI exists for: a raw completion
 * racing evaluation on a shared stream. One thread evaluates graphs on stream S (and drops its
 * own host markers on S); another, inside tsr_with_serialized_evaluation, enqueues 128 host
 * completions per round on the same S and evaluates recursively inside the scope. Every
 * completion must run, in order, and a round's 128 must be contiguous on S (nothing the other
 * thread submits can land between them); every value exact; no deadlock. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "check.h"

enum { COMPLETIONS = 128, WIDTH = 64 };

/* Touched only by S's worker while running; read by main after synchronizing S. */
static struct {
  int round, next_index;
  long completions, markers, violations;
} worker_log = {-1, COMPLETIONS, 0, 0, 0};

typedef struct {
  int round, index;
} completion;

static void on_completion(void *ctx) {
  const completion *c = ctx;
  bool starts_round =
      c->index == 0 && worker_log.next_index == COMPLETIONS && c->round == worker_log.round + 1;
  bool continues_round =
      c->index > 0 && c->round == worker_log.round && c->index == worker_log.next_index;
  if (!starts_round && !continues_round) worker_log.violations++;
  worker_log.round = c->round;
  worker_log.next_index = c->index + 1;
  worker_log.completions++;
}

static void on_marker(void *ctx) {
  (void)ctx;
  if (worker_log.next_index != COMPLETIONS) worker_log.violations++; /* inside a block */
  worker_log.markers++;
}

static tsr_stream *shared;
static atomic_bool stop_evaluator;
static atomic_int evaluator_iterations;

static bool add_twice_matches(int seed) {
  float xs[WIDTH], got[WIDTH];
  for (int i = 0; i < WIDTH; i++)
    xs[i] = (float)(seed % 1000 + i);
  int64_t shape[1] = {WIDTH};
  tsr_array *x = NULL, *y = NULL, *z = NULL;
  bool ok = tsr_array_from_data(&x, xs, TSR_FLOAT32, shape, 1) == TSR_OK &&
            tsr_add(&y, x, x, shared) == TSR_OK && tsr_add(&z, y, x, shared) == TSR_OK &&
            tsr_eval(&z, 1) == TSR_OK && tsr_array_read(z, got, sizeof got) == TSR_OK;
  for (int i = 0; ok && i < WIDTH; i++)
    ok = got[i] == 3.0f * xs[i];
  tsr_array_release(x), tsr_array_release(y), tsr_array_release(z);
  return ok;
}

static void *evaluator(void *arg) {
  long *failures = arg;
  for (int i = 0; !atomic_load(&stop_evaluator); i++) {
    if (!add_twice_matches(i)) (*failures)++;
    if (tsr_stream_enqueue_host(shared, on_marker, NULL) != TSR_OK) (*failures)++;
    atomic_fetch_add(&evaluator_iterations, 1);
  }
  return NULL;
}

typedef struct {
  int round;
  completion *slots;
  long failures;
} scope_job;

static tsr_status serialized_round(void *ctx) {
  scope_job *job = ctx;
  for (int i = 0; i < COMPLETIONS; i++) {
    job->slots[i] = (completion){job->round, i};
    tsr_status st = tsr_stream_enqueue_host(shared, on_completion, &job->slots[i]);
    if (st != TSR_OK) return st;
    /* Recursive evaluation inside the scope, on the same stream, mid-block. */
    if (i == COMPLETIONS / 2 && !add_twice_matches(job->round)) job->failures++;
  }
  return TSR_OK;
}

int main(void) {
  const char *sanitized = getenv("TSR_SANITIZED");
  int rounds = sanitized && *sanitized ? 1000 : 2000;
  CHECK_OK(tsr_stream_new(&shared, (tsr_device){TSR_CPU, 0}));
  long evaluator_failures = 0;
  pthread_t thread;
  CHECK(pthread_create(&thread, NULL, evaluator, &evaluator_failures) == 0);
  completion *slots = calloc((size_t)rounds * COMPLETIONS, sizeof *slots);
  CHECK(slots != NULL);
  scope_job job = {0, NULL, 0};
  for (int r = 0; r < rounds; r++) {
    job.round = r;
    job.slots = slots + (size_t)r * COMPLETIONS;
    CHECK_OK(tsr_with_serialized_evaluation(serialized_round, &job));
  }
  while (atomic_load(&evaluator_iterations) < 10)
    sched_yield(); /* the race really ran */
  atomic_store(&stop_evaluator, true);
  pthread_join(thread, NULL);
  CHECK_OK(tsr_stream_synchronize(shared));
  CHECK_EQ_INT(job.failures, 0);
  CHECK_EQ_INT(evaluator_failures, 0);
  CHECK_EQ_INT(worker_log.completions, (long)rounds * COMPLETIONS);
  CHECK_EQ_INT(worker_log.violations, 0);
  CHECK(worker_log.markers > 0);
  printf("test_spi_race: %d rounds, %ld completions, %ld interleaved markers: ok\n", rounds,
         worker_log.completions, worker_log.markers);
  CHECK_OK(tsr_stream_free(shared));
  free(slots);
  CHECK_OK(tsr_memory_clear_cache((tsr_device){TSR_CPU, 0}));
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
