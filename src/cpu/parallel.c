/* cpu/parallel.c — the worker pool behind tsri_parallel_for (cpu/parallel.h): one job at a time,
 * chunks claimed through an atomic counter, workers sleeping on a condition variable between jobs
 * after a short spin. Not a general scheduler, and not the pool's size (cpu/context.c decides
 * that). */
#include "cpu/parallel.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

enum {
  MAX_THREADS = TSRI_PARALLEL_MAX_THREADS,
  /* Polls of the job counter a worker makes after a job before it sleeps: back-to-back decode
     products (a few hundred microseconds apart) then skip the condition variable's wake-up. */
  SPIN_POLLS = 20000,
  /* Chunks per thread a range is cut into, so uneven chunks even out. */
  CHUNKS_PER_THREAD = 4
};

typedef struct {
  tsri_parallel_fn fn;
  void *ctx;
  int64_t n, chunk;
  atomic_llong next; /* the first item not yet claimed */
} parallel_job;

/* `job_owner` is held by the one call using the pool for the whole job; `lock` guards the fields
   below it and is held only briefly. */
struct tsri_parallel_pool {
  int threads; /* what a call may use, the caller included */
  pthread_mutex_t job_owner;
  pthread_mutex_t lock;
  pthread_cond_t wake, done;
  atomic_ullong generation;            /* bumped (under lock) when a job is posted */
  unsigned long long start_generation; /* the generation when the workers were started */
  bool stop, started;
  int workers; /* running worker threads */
  int pending; /* workers that have not finished the current job */
  parallel_job job;
  pthread_t worker_threads[MAX_THREADS];
};

tsri_parallel_pool *tsri_parallel_pool_new(int threads) {
  tsri_parallel_pool *pool = calloc(1, sizeof *pool);
  if (!pool) return NULL;
  pool->threads = threads < 1 ? 1 : threads > MAX_THREADS ? MAX_THREADS : threads;
  pthread_mutex_init(&pool->job_owner, NULL);
  pthread_mutex_init(&pool->lock, NULL);
  pthread_cond_init(&pool->wake, NULL);
  pthread_cond_init(&pool->done, NULL);
  atomic_init(&pool->generation, 0);
  return pool;
}

int tsri_parallel_threads(const tsri_parallel_pool *pool) {
  return pool->threads;
}

static void run_chunks(parallel_job *job) {
  for (;;) {
    int64_t begin = (int64_t)atomic_fetch_add(&job->next, (long long)job->chunk);
    if (begin >= job->n) return;
    int64_t end = begin + job->chunk < job->n ? begin + job->chunk : job->n;
    job->fn(begin, end, job->ctx);
  }
}

/* Waits for a job newer than `seen`: polls first, then sleeps. Returns false on stop. */
static bool wait_for_job(tsri_parallel_pool *pool, unsigned long long seen) {
  for (int i = 0; i < SPIN_POLLS; i++) {
    if (atomic_load_explicit(&pool->generation, memory_order_relaxed) != seen) break;
    if ((i & 63) == 63) sched_yield();
  }
  pthread_mutex_lock(&pool->lock);
  while (atomic_load(&pool->generation) == seen && !pool->stop)
    pthread_cond_wait(&pool->wake, &pool->lock);
  bool stop = pool->stop;
  pthread_mutex_unlock(&pool->lock);
  return !stop;
}

static void *worker_main(void *arg) {
  tsri_parallel_pool *pool = arg;
  /* Not the generation now: the first job may be posted before this thread runs. */
  unsigned long long seen = pool->start_generation;
  while (wait_for_job(pool, seen)) {
    /* Taking the lock orders this read of the job after the poster's writes. */
    pthread_mutex_lock(&pool->lock);
    seen = atomic_load(&pool->generation);
    pthread_mutex_unlock(&pool->lock);
    run_chunks(&pool->job);
    pthread_mutex_lock(&pool->lock);
    if (--pool->pending == 0) pthread_cond_signal(&pool->done);
    pthread_mutex_unlock(&pool->lock);
  }
  return NULL;
}

/* Starts the workers (with job_owner held). Fewer than asked when threads cannot be made. */
static void start_workers(tsri_parallel_pool *pool) {
  int wanted = pool->threads - 1;
  pool->stop = false;
  pool->workers = 0;
  pool->start_generation = atomic_load(&pool->generation);
  for (int i = 0; i < wanted; i++) {
    if (pthread_create(&pool->worker_threads[i], NULL, worker_main, pool) != 0) break;
    pool->workers++;
  }
  pool->started = true;
}

/* Posts fn over [0, n) to the workers, runs chunks on the calling thread too, and waits for the
   workers' last chunks (with job_owner held and workers running). */
static void run_job(tsri_parallel_pool *pool, int64_t n, int64_t grain, tsri_parallel_fn fn,
                    void *ctx) {
  int64_t pieces = (int64_t)(pool->workers + 1) * CHUNKS_PER_THREAD;
  int64_t chunk = (n + pieces - 1) / pieces;
  pthread_mutex_lock(&pool->lock);
  pool->job.fn = fn;
  pool->job.ctx = ctx;
  pool->job.n = n;
  pool->job.chunk = chunk > grain ? chunk : grain;
  atomic_store(&pool->job.next, 0);
  pool->pending = pool->workers;
  atomic_fetch_add(&pool->generation, 1);
  pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->lock);

  run_chunks(&pool->job);

  pthread_mutex_lock(&pool->lock);
  while (pool->pending > 0)
    pthread_cond_wait(&pool->done, &pool->lock);
  pthread_mutex_unlock(&pool->lock);
}

void tsri_parallel_for(tsri_parallel_pool *pool, int64_t n, int64_t grain, tsri_parallel_fn fn,
                       void *ctx) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  if (n <= grain || pool->threads == 1 || pthread_mutex_trylock(&pool->job_owner) != 0) {
    fn(0, n, ctx);
    return;
  }
  if (!pool->started) start_workers(pool);
  if (pool->workers == 0) {
    pthread_mutex_unlock(&pool->job_owner);
    fn(0, n, ctx);
    return;
  }
  run_job(pool, n, grain, fn, ctx);
  pthread_mutex_unlock(&pool->job_owner);
}

/* Stops and joins the workers, if they were started (a call in progress finishes first). */
static void stop_workers(tsri_parallel_pool *pool) {
  pthread_mutex_lock(&pool->job_owner);
  if (pool->started) {
    pthread_mutex_lock(&pool->lock);
    pool->stop = true;
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 0; i < pool->workers; i++)
      pthread_join(pool->worker_threads[i], NULL);
    pool->workers = 0;
    pool->started = false;
    pool->stop = false;
  }
  pthread_mutex_unlock(&pool->job_owner);
}

void tsri_parallel_pool_free(tsri_parallel_pool *pool) {
  if (!pool) return;
  stop_workers(pool);
  pthread_mutex_destroy(&pool->job_owner);
  pthread_mutex_destroy(&pool->lock);
  pthread_cond_destroy(&pool->wake);
  pthread_cond_destroy(&pool->done);
  free(pool);
}
