/* tests/cuda/test_gpu_runtime.c — what only the GPU runtime does, through the public API: a GPU
 * stream's native handle and host-function order, buffers held by a slow stream (a host function
 * that sleeps blocks a CUDA stream until it returns: the "deliberately slow kernel") are neither
 * reused nor refunded until the stream has passed them, for tsr_array_record_stream and for a
 * node's inputs, and the ledger is back to zero after; tsr_eval and a consumer on another stream
 * wait for a launched kernel to have run. Without a usable GPU: one skip line. */
#include <stdlib.h>
#include <time.h>

#include "check.h"

static const tsr_device gpu = {TSR_GPU, 0};
enum { BYTES = 1 << 20, SLOW_MS = 300 };

static void sleep_ms(void *ctx) {
  (void)ctx;
  struct timespec t = {0, SLOW_MS * 1000000L};
  nanosleep(&t, NULL);
}

static tsr_array *gpu_array(float value) {
  static float host[BYTES / sizeof(float)];
  for (size_t i = 0; i < BYTES / sizeof(float); i++)
    host[i] = value;
  int64_t shape[1] = {BYTES / sizeof(float)};
  tsr_array *a = NULL;
  CHECK_OK(tsr_array_from_data_on(&a, host, TSR_FLOAT32, shape, 1, gpu));
  return a;
}

typedef struct {
  int order[3];
  int count;
} host_order;

static void mark(host_order *o, int tag) {
  o->order[o->count++] = tag;
}
static void mark1(void *ctx) {
  mark(ctx, 1);
}
static void mark2(void *ctx) {
  mark(ctx, 2);
}

static void test_native_and_host_order(void) {
  tsr_stream *s = NULL;
  CHECK_OK(tsr_stream_new(&s, gpu));
  CHECK(tsr_stream_native(s) != NULL); /* a cudaStream_t */
  host_order o = {{0}, 0};
  CHECK_OK(tsr_stream_enqueue_host(s, sleep_ms, NULL));
  CHECK_OK(tsr_stream_enqueue_host(s, mark1, &o));
  CHECK_OK(tsr_stream_enqueue_host(s, mark2, &o));
  CHECK_OK(tsr_stream_synchronize(s));
  CHECK_EQ_INT(o.count, 2);
  CHECK_EQ_INT(o.order[0], 1);
  CHECK_EQ_INT(o.order[1], 2);
  CHECK_OK(tsr_stream_free(s));
}

/* record_stream: the buffer stays the slow stream's until it passes; only then can it be reused
   (the cache) and, with the cache emptied, refunded. */
static void test_record_stream_holds_buffer(void) {
  tsr_stream *slow = NULL;
  CHECK_OK(tsr_stream_new(&slow, gpu));
  tsr_array *a = gpu_array(1.0f);
  void *held = NULL;
  CHECK_OK(tsr_array_data(a, &held));
  uint64_t with_a = tsr_memory_active(gpu);
  CHECK_OK(tsr_stream_enqueue_host(slow, sleep_ms, NULL));
  CHECK_OK(tsr_array_record_stream(a, slow));
  tsr_array_release(a);
  CHECK_EQ_U64(tsr_memory_active(gpu), with_a); /* still the slow stream's */
  tsr_array *b = gpu_array(2.0f);
  void *fresh = NULL;
  CHECK_OK(tsr_array_data(b, &fresh));
  CHECK(fresh != held); /* not handed out again while the stream may still read it */
  tsr_array_release(b);
  CHECK_OK(tsr_stream_synchronize(slow));
  CHECK_OK(tsr_stream_free(slow)); /* drains the releases that waited on the stream */
  CHECK_OK(tsr_memory_clear_cache(gpu));
  CHECK_EQ_U64(tsr_memory_active(gpu), 0);
  CHECK_EQ_U64(tsr_memory_cached(gpu), 0);
}

/* A node's input is released in stream order: while the stream sleeps ahead of the node's
   kernel, the input's bytes stay active even though nobody else holds the input. */
static void test_inputs_released_in_stream_order(void) {
  tsr_stream *s = NULL;
  CHECK_OK(tsr_stream_new(&s, gpu));
  tsr_array *x = gpu_array(3.0f), *y = NULL;
  uint64_t with_x = tsr_memory_active(gpu);
  CHECK_OK(tsr_stream_enqueue_host(s, sleep_ms, NULL));
  CHECK_OK(tsr_negative(&y, x, s));
  CHECK_OK(tsr_async_eval(&y, 1));
  tsr_array_release(x);
  CHECK(tsr_memory_active(gpu) >= with_x); /* x's bytes: the node still reads them */
  CHECK_OK(tsr_eval(&y, 1));
  float first = 0.0f;
  tsr_array *one = NULL;
  int64_t start[1] = {0}, stop[1] = {1};
  CHECK_OK(tsr_slice(&one, y, start, stop, NULL, 1, NULL));
  CHECK_OK(tsr_array_read(one, &first, sizeof first));
  CHECK(first == -3.0f);
  tsr_array_release(one);
  tsr_array_release(y);
  CHECK_OK(tsr_stream_free(s));
  CHECK_OK(tsr_memory_clear_cache(gpu));
  CHECK_EQ_U64(tsr_memory_active(gpu), 0);
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

/* tsr_eval returns once the kernel has run on the device, not once it is launched: behind a
   sleeping host function the eval of a GPU op takes the sleep. */
static void test_eval_waits_for_the_device(void) {
  tsr_stream *s = NULL;
  CHECK_OK(tsr_stream_new(&s, gpu));
  tsr_array *x = gpu_array(1.5f), *y = NULL;
  CHECK_OK(tsr_eval(&x, 1));
  CHECK_OK(tsr_stream_enqueue_host(s, sleep_ms, NULL));
  double t0 = now_ms();
  CHECK_OK(tsr_add(&y, x, x, s));
  CHECK_OK(tsr_eval(&y, 1));
  double waited = now_ms() - t0;
  if (waited < 0.8 * SLOW_MS)
    printf("eval returned after %.1f ms, before the device ran\n", waited);
  CHECK(waited >= 0.8 * SLOW_MS);
  tsr_array_release(x);
  tsr_array_release(y);
  CHECK_OK(tsr_stream_free(s));
}

/* A consumer on another stream waits for an input whose kernel is launched but not yet run (the
   producer's stream sleeps before it): the result holds the input's values, not a stale
   buffer's. */
static void test_cross_stream_input_waits(void) {
  tsr_stream *slow = NULL, *fast = NULL;
  CHECK_OK(tsr_stream_new(&slow, gpu));
  CHECK_OK(tsr_stream_new(&fast, gpu));
  tsr_array *x = gpu_array(1.25f), *y = NULL, *z = NULL;
  CHECK_OK(tsr_eval(&x, 1));
  CHECK_OK(tsr_stream_enqueue_host(slow, sleep_ms, NULL));
  CHECK_OK(tsr_add(&y, x, x, slow)); /* 2.5, once the sleep is over */
  CHECK_OK(tsr_async_eval(&y, 1));   /* launched: READY on the host, not run */
  CHECK_OK(tsr_multiply(&z, y, y, fast));
  static float got[BYTES / sizeof(float)];
  CHECK_OK(tsr_array_read(z, got, sizeof got));
  size_t wrong = 0;
  for (size_t i = 0; i < BYTES / sizeof(float); i++)
    wrong += got[i] != 6.25f;
  CHECK_EQ_U64(wrong, 0);
  tsr_array_release(x);
  tsr_array_release(y);
  tsr_array_release(z);
  CHECK_OK(tsr_stream_free(slow));
  CHECK_OK(tsr_stream_free(fast));
}

/* With a usable GPU and no TSR_DEFAULT_DEVICE, the default device is GPU 0: its backend runs every
   primitive (the rule waits for that; a primitive without a GPU kernel would keep the CPU). */
static void test_default_device_is_gpu0(void) {
  if (getenv("TSR_DEFAULT_DEVICE")) {
    printf("skip: default device (TSR_DEFAULT_DEVICE is set)\n");
    return;
  }
  tsr_device d = tsr_default_device();
  CHECK_EQ_INT(d.type, TSR_GPU);
  CHECK_EQ_INT(d.index, 0);
}

int main(void) {
  if (tsr_device_count(TSR_GPU) < 1) {
    printf("skip: no usable GPU\n");
    return 0;
  }
  test_default_device_is_gpu0();
  test_native_and_host_order();
  test_record_stream_holds_buffer();
  test_inputs_released_in_stream_order();
  test_eval_waits_for_the_device();
  test_cross_stream_input_waits();
  tsr_shutdown();
  printf("ok\n");
  return 0;
}
