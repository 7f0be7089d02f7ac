/* cuda/release.c — the release thread (cuda/release.h): a FIFO of batches, each waited for on its
 * event and then run. */
#include "cuda/release.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

typedef struct {
  void (*fn)(void *);
  void *ctx;
} release_item;

struct tsri_cuda_release_batch {
  struct tsri_cuda_release_batch *next;
  cudaEvent_t event;
  release_item *items;
  size_t count, capacity;
};

static struct {
  pthread_mutex_t mutex;
  pthread_cond_t work, idle;
  tsri_cuda_release_batch *head, *tail;
  uint64_t submitted, done; /* batches */
  bool started, stop;
  pthread_t thread;
} releases = {.mutex = PTHREAD_MUTEX_INITIALIZER,
              .work = PTHREAD_COND_INITIALIZER,
              .idle = PTHREAD_COND_INITIALIZER};

tsri_cuda_release_batch *tsri_cuda_release_batch_new(void) {
  return calloc(1, sizeof(tsri_cuda_release_batch));
}

bool tsri_cuda_release_batch_add(tsri_cuda_release_batch *batch, void (*fn)(void *), void *ctx) {
  if (batch->count == batch->capacity) {
    size_t grown = batch->capacity ? batch->capacity * 2 : 16;
    release_item *bigger = realloc(batch->items, grown * sizeof *bigger);
    if (!bigger) return false;
    batch->items = bigger;
    batch->capacity = grown;
  }
  batch->items[batch->count++] = (release_item){fn, ctx};
  return true;
}

size_t tsri_cuda_release_batch_count(const tsri_cuda_release_batch *batch) {
  return batch->count;
}

/* Waits for the batch's work, runs its releases and frees it. A failed wait (a device fault) still
   runs them: the work will never read the buffers again. */
static void run_batch(tsri_cuda_release_batch *batch) {
  if (batch->event) {
    cudaEventSynchronize(batch->event);
    cudaEventDestroy(batch->event);
  } else {
    cudaDeviceSynchronize();
  }
  (void)cudaGetLastError();
  for (size_t i = 0; i < batch->count; i++)
    batch->items[i].fn(batch->items[i].ctx);
  free(batch->items);
  free(batch);
}

static void *release_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&releases.mutex);
  for (;;) {
    while (!releases.head && !releases.stop)
      pthread_cond_wait(&releases.work, &releases.mutex);
    tsri_cuda_release_batch *batch = releases.head;
    if (!batch) break; /* stop requested and nothing left */
    releases.head = batch->next;
    if (!releases.head) releases.tail = NULL;
    pthread_mutex_unlock(&releases.mutex);
    run_batch(batch);
    pthread_mutex_lock(&releases.mutex);
    releases.done++;
    pthread_cond_broadcast(&releases.idle);
  }
  pthread_mutex_unlock(&releases.mutex);
  return NULL;
}

bool tsri_cuda_release_enqueue(tsri_cuda_release_batch *batch, cudaEvent_t event) {
  batch->event = event;
  batch->next = NULL;
  pthread_mutex_lock(&releases.mutex);
  if (!releases.started && !releases.stop)
    releases.started = pthread_create(&releases.thread, NULL, release_main, NULL) == 0;
  bool queued = releases.started && !releases.stop;
  if (queued) {
    if (releases.tail)
      releases.tail->next = batch;
    else
      releases.head = batch;
    releases.tail = batch;
    releases.submitted++;
    pthread_cond_signal(&releases.work);
  }
  pthread_mutex_unlock(&releases.mutex);
  return queued;
}

void tsri_cuda_release_submit(tsri_cuda_release_batch *batch, cudaEvent_t event) {
  if (!tsri_cuda_release_enqueue(batch, event))
    run_batch(batch); /* no thread: release here, after the device is done */
}

/* Waits until every batch submitted before the call has run, or past `deadline` (NULL: no
   limit). */
static bool drain_until(const struct timespec *deadline) {
  pthread_mutex_lock(&releases.mutex);
  bool self = releases.started && pthread_equal(pthread_self(), releases.thread);
  uint64_t target = releases.submitted;
  int err = 0;
  while (!self && releases.done < target && err != ETIMEDOUT)
    err = deadline ? pthread_cond_timedwait(&releases.idle, &releases.mutex, deadline)
                   : pthread_cond_wait(&releases.idle, &releases.mutex);
  bool drained = releases.done >= target;
  pthread_mutex_unlock(&releases.mutex);
  return drained;
}

void tsri_cuda_release_drain(void) {
  drain_until(NULL);
}

bool tsri_cuda_release_drain_within(unsigned ms) {
  struct timespec deadline; /* the condition variable's clock: CLOCK_REALTIME */
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += ms / 1000;
  deadline.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (deadline.tv_nsec >= 1000000000L) {
    deadline.tv_sec++;
    deadline.tv_nsec -= 1000000000L;
  }
  return drain_until(&deadline);
}

void tsri_cuda_release_shutdown(void) {
  pthread_mutex_lock(&releases.mutex);
  bool started = releases.started;
  releases.stop = true;
  pthread_cond_signal(&releases.work);
  pthread_mutex_unlock(&releases.mutex);
  if (started) pthread_join(releases.thread, NULL);
  pthread_mutex_lock(&releases.mutex);
  releases.started = false;
  releases.stop = false; /* a later use (after tsr_shutdown) starts a new thread */
  pthread_mutex_unlock(&releases.mutex);
}
