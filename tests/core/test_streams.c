/* tests/core/test_streams.c — streams: new/free/synchronize, host functions in stream order,
 * cross-stream edges as fences, several threads evaluating on one shared stream, and the bad
 * inputs of every stream function. */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "check.h"

static const tsr_device cpu = {TSR_CPU, 0};

typedef struct {
  atomic_int next;
  atomic_int out_of_order;
} order_log;

typedef struct {
  order_log *log;
  int index;
} order_entry;

static void record_order(void *ctx) {
  order_entry *e = ctx;
  int expected = atomic_fetch_add(&e->log->next, 1);
  if (expected != e->index) atomic_fetch_add(&e->log->out_of_order, 1);
}

static void slow_host(void *ctx) {
  usleep(20000);
  atomic_store((atomic_int *)ctx, 1);
}

static void test_host_order_and_sync(void) {
  tsr_stream *s = NULL;
  CHECK_OK(tsr_stream_new(&s, cpu));
  CHECK(tsr_stream_device(s).type == TSR_CPU);
  CHECK(tsr_stream_native(s) == NULL);
  order_log log = {0};
  order_entry entries[500];
  for (int i = 0; i < 500; i++) {
    entries[i] = (order_entry){&log, i};
    CHECK_OK(tsr_stream_enqueue_host(s, record_order, &entries[i]));
  }
  atomic_int done = 0;
  CHECK_OK(tsr_stream_enqueue_host(s, slow_host, &done));
  CHECK_OK(tsr_stream_synchronize(s));
  CHECK_EQ_INT(atomic_load(&done), 1);
  CHECK_EQ_INT(atomic_load(&log.next), 500);
  CHECK_EQ_INT(atomic_load(&log.out_of_order), 0);
  atomic_store(&done, 0);
  CHECK_OK(tsr_stream_enqueue_host(s, slow_host, &done));
  CHECK_OK(tsr_stream_free(s)); /* waits for its work */
  CHECK_EQ_INT(atomic_load(&done), 1);
}

static void test_cross_stream_fence(void) {
  tsr_stream *s1 = NULL, *s2 = NULL;
  CHECK_OK(tsr_stream_new(&s1, cpu));
  CHECK_OK(tsr_stream_new(&s2, cpu));
  float xs[256], got[256];
  for (int i = 0; i < 256; i++)
    xs[i] = (float)i;
  int64_t shape[1] = {256};
  tsr_array *x = NULL, *a = NULL, *b = NULL, *c = NULL;
  CHECK_OK(tsr_array_from_data(&x, xs, TSR_FLOAT32, shape, 1));
  /* s1 is held up by a slow host function, so b on s2 must wait on the fence for a. */
  atomic_int done = 0;
  CHECK_OK(tsr_stream_enqueue_host(s1, slow_host, &done));
  CHECK_OK(tsr_add(&a, x, x, s1));
  CHECK_OK(tsr_add(&b, a, x, s2));
  CHECK_OK(tsr_add(&c, b, a, NULL));
  CHECK_OK(tsr_array_read(c, got, sizeof got));
  for (int i = 0; i < 256; i++)
    CHECK(got[i] == 5.0f * xs[i]);
  tsr_array_release(x), tsr_array_release(a), tsr_array_release(b), tsr_array_release(c);
  CHECK_OK(tsr_stream_free(s1));
  CHECK_OK(tsr_stream_free(s2));
}

typedef struct {
  tsr_stream *stream;
  int thread;
  int failures;
} shared_job;

static void *evaluate_on_shared(void *arg) {
  shared_job *job = arg;
  float xs[32], got[32];
  int64_t shape[1] = {32};
  for (int round = 0; round < 200; round++) {
    for (int i = 0; i < 32; i++)
      xs[i] = (float)(job->thread * 1000 + round + i);
    tsr_array *x = NULL, *y = NULL, *z = NULL;
    if (tsr_array_from_data(&x, xs, TSR_FLOAT32, shape, 1) != TSR_OK ||
        tsr_add(&y, x, x, job->stream) != TSR_OK || tsr_add(&z, y, x, job->stream) != TSR_OK ||
        tsr_array_read(z, got, sizeof got) != TSR_OK) {
      job->failures++;
    } else {
      for (int i = 0; i < 32; i++)
        job->failures += got[i] != 3.0f * xs[i];
    }
    tsr_array_release(x), tsr_array_release(y), tsr_array_release(z);
  }
  return NULL;
}

static void test_threads_share_a_stream(void) {
  tsr_stream *s = NULL;
  CHECK_OK(tsr_stream_new(&s, cpu));
  pthread_t threads[4];
  shared_job jobs[4];
  for (int t = 0; t < 4; t++) {
    jobs[t] = (shared_job){t % 2 ? s : NULL, t, 0};
    CHECK(pthread_create(&threads[t], NULL, evaluate_on_shared, &jobs[t]) == 0);
  }
  for (int t = 0; t < 4; t++) {
    pthread_join(threads[t], NULL);
    CHECK_EQ_INT(jobs[t].failures, 0);
  }
  CHECK_OK(tsr_stream_free(s));
}

static void noop(void *ctx) {
  (void)ctx;
}

static void test_bad_inputs(void) {
  tsr_device gpu99 = {TSR_GPU, 99}, cpu1 = {TSR_CPU, 1};
  tsr_stream *s = NULL;
  CHECK_STATUS(tsr_stream_new(NULL, cpu), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_stream_new(&s, gpu99), TSR_ERR_DEVICE);
  CHECK_MESSAGE("gpu:99");
  CHECK(s == NULL);
  CHECK_STATUS(tsr_stream_new(&s, cpu1), TSR_ERR_DEVICE);
  CHECK(tsr_default_stream(gpu99) == NULL);
  CHECK_STATUS(tsr_stream_free(NULL), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_stream_free(tsr_default_stream(cpu)), TSR_ERR_INVALID);
  CHECK_MESSAGE("default");
  CHECK_STATUS(tsr_stream_enqueue_host(NULL, NULL, NULL), TSR_ERR_INVALID);
  CHECK_OK(tsr_stream_enqueue_host(NULL, noop, NULL));
  CHECK_OK(tsr_stream_synchronize(NULL));
  CHECK_STATUS(tsr_with_serialized_evaluation(NULL, NULL), TSR_ERR_INVALID);
}

int main(void) {
  test_host_order_and_sync();
  test_cross_stream_fence();
  test_threads_share_a_stream();
  test_bad_inputs();
  CHECK_OK(tsr_memory_clear_cache(cpu));
  CHECK_NO_LEAKS();
  tsr_shutdown();
  puts("test_streams: ok");
  return 0;
}
