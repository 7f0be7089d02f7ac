/* tests/core/test_stream_lifetime.c — a stream handle used after it was freed, after
 * tsr_shutdown, or while another thread frees it: every public function taking a tsr_stream *
 * answers TSR_ERR_STATE (or its documented value) and never reads freed memory (ASan in `make
 * sanitize`, TSan in `make tsan`). And waits a host function issues that could never end (on its
 * own stream, or on a stream that needs work queued behind it) are TSR_ERR_STATE naming the
 * stream instead of a silent deadlock (issue 9 items 2 and 8). */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "check.h"
#include "tessera/spi.h"

static const tsr_device cpu = {TSR_CPU, 0};

static void noop(void *ctx) {
  (void)ctx;
}

static tsr_array *vector(float base) {
  float xs[8];
  for (int i = 0; i < 8; i++)
    xs[i] = base + (float)i;
  int64_t shape[1] = {8};
  tsr_array *x = NULL;
  CHECK_OK(tsr_array_from_data(&x, xs, TSR_FLOAT32, shape, 1));
  return x;
}

/* Every public function that takes a stream, on a handle that is no longer live. */
static void expect_dead(tsr_stream *s, const char *why) {
  tsr_array *x = vector(0.0f), *y = NULL;
  int64_t shape[1] = {4};
  CHECK_STATUS(tsr_stream_free(s), TSR_ERR_STATE);
  CHECK_MESSAGE("not a live stream");
  CHECK_STATUS(tsr_stream_synchronize(s), TSR_ERR_STATE);
  CHECK_MESSAGE("stream_synchronize");
  CHECK_STATUS(tsr_stream_enqueue_host(s, noop, NULL), TSR_ERR_STATE);
  tsr_device d = tsr_stream_device(s);
  if (d.type != TSR_CPU || d.index != -1)
    CHECK_FAIL_("%s: stream_device gave type %d index %d, want cpu -1", why, (int)d.type, d.index);
  CHECK_MESSAGE("stream_device");
  CHECK(tsr_stream_native(s) == NULL);
  CHECK_MESSAGE("stream_native");
  CHECK_STATUS(tsr_add(&y, x, x, s), TSR_ERR_STATE);
  CHECK_MESSAGE("not a live stream");
  CHECK_STATUS(tsr_zeros(&y, shape, 1, TSR_FLOAT32, s), TSR_ERR_STATE);
  int64_t same[2] = {2, 4};
  CHECK_STATUS(tsr_reshape(&y, x, same, 2, s), TSR_ERR_STATE);
  CHECK_STATUS(tsr_to_device(&y, x, cpu, s), TSR_ERR_STATE);
  CHECK_STATUS(tsr_array_record_stream(x, s), TSR_ERR_STATE);
  CHECK(y == NULL);
  tsr_array_release(x);
}

static void test_freed_handle(void) {
  tsr_stream *s = NULL;
  CHECK_OK(tsr_stream_new(&s, cpu));
  /* A lazy array on s, then s freed: evaluating it is TSR_ERR_STATE naming the freed stream. */
  tsr_array *x = vector(1.0f), *y = NULL;
  CHECK_OK(tsr_add(&y, x, x, s));
  CHECK_OK(tsr_stream_free(s));
  CHECK_STATUS(tsr_eval(&y, 1), TSR_ERR_STATE);
  CHECK_MESSAGE("freed");
  tsr_array_release(y), tsr_array_release(x);
  expect_dead(s, "freed");
  /* The slot is reused by the next stream; the old handle still answers STATE. */
  tsr_stream *t = NULL;
  CHECK_OK(tsr_stream_new(&t, cpu));
  CHECK(t != s);
  expect_dead(s, "freed, slot reused");
  CHECK_OK(tsr_stream_synchronize(t));
  CHECK_OK(tsr_stream_free(t));
  /* Something that never was a stream. */
  int not_a_stream = 0;
  CHECK_STATUS(tsr_stream_synchronize((tsr_stream *)(void *)&not_a_stream), TSR_ERR_STATE);
}

static void test_after_shutdown(void) {
  tsr_stream *s = NULL, *def = tsr_default_stream(cpu);
  CHECK(def != NULL);
  CHECK_OK(tsr_stream_new(&s, cpu));
  tsr_array *x = vector(2.0f), *y = NULL;
  CHECK_OK(tsr_add(&y, x, x, s));
  tsr_shutdown();
  CHECK_STATUS(tsr_eval(&y, 1), TSR_ERR_STATE);
  tsr_array_release(y), tsr_array_release(x);
  expect_dead(s, "after shutdown");
  expect_dead(def, "default stream after shutdown");
  /* The library starts again: NULL means the new default stream. */
  CHECK_OK(tsr_stream_synchronize(NULL));
  CHECK(tsr_default_stream(cpu) != def);
}

/* Threads racing: one frees, others enqueue, synchronize and build ops on the same handle. Each
   call either works or answers TSR_ERR_STATE; the free succeeds exactly once. */
typedef struct {
  tsr_stream *s;
  atomic_int frees, failures;
} race;

static void *racer(void *arg) {
  race *r = arg;
  tsr_array *x = vector(3.0f);
  for (int i = 0; i < 200; i++) {
    tsr_status st = tsr_stream_enqueue_host(r->s, noop, NULL);
    if (st != TSR_OK && st != TSR_ERR_STATE) atomic_fetch_add(&r->failures, 1);
    st = tsr_stream_synchronize(r->s);
    if (st != TSR_OK && st != TSR_ERR_STATE) atomic_fetch_add(&r->failures, 1);
    tsr_array *y = NULL;
    st = tsr_add(&y, x, x, r->s);
    if (st == TSR_OK) {
      st = tsr_eval(&y, 1);
      tsr_array_release(y);
    }
    if (st != TSR_OK && st != TSR_ERR_STATE) atomic_fetch_add(&r->failures, 1);
    if (i == 100 && tsr_stream_free(r->s) == TSR_OK) atomic_fetch_add(&r->frees, 1);
  }
  tsr_array_release(x);
  return NULL;
}

static void test_racing_free(void) {
  for (int round = 0; round < 5; round++) {
    race r = {NULL, 0, 0};
    CHECK_OK(tsr_stream_new(&r.s, cpu));
    pthread_t threads[4];
    for (int t = 0; t < 4; t++)
      CHECK(pthread_create(&threads[t], NULL, racer, &r) == 0);
    for (int t = 0; t < 4; t++)
      pthread_join(threads[t], NULL);
    CHECK_EQ_INT(atomic_load(&r.frees), 1);
    CHECK_EQ_INT(atomic_load(&r.failures), 0);
  }
}

/* ---- waits from host functions (item 8) --------------------------------------------------- */

typedef struct {
  tsr_stream *stream, *other;
  tsr_status status;
  char message[512];
} host_call;

static void keep_result(host_call *call, tsr_status st) {
  call->status = st;
  snprintf(call->message, sizeof call->message, "%s", st == TSR_OK ? "" : tsr_last_error());
}

static void sync_own_stream(void *ctx) {
  host_call *call = ctx;
  keep_result(call, tsr_stream_synchronize(call->stream));
}

static void eval_on_own_stream(void *ctx) {
  host_call *call = ctx;
  tsr_array *x = vector(4.0f), *y = NULL;
  tsr_status st = tsr_add(&y, x, x, call->stream);
  if (st == TSR_OK) st = tsr_eval(&y, 1);
  keep_result(call, st);
  tsr_array_release(y), tsr_array_release(x);
}

/* b on the other stream needs a, queued on this stream behind this host function. */
static void eval_through_other(void *ctx) {
  host_call *call = ctx;
  tsr_array *x = vector(5.0f), *a = NULL, *b = NULL;
  tsr_status st = tsr_add(&a, x, x, call->stream);
  if (st == TSR_OK) st = tsr_add(&b, a, x, call->other);
  if (st == TSR_OK) st = tsr_eval(&b, 1);
  keep_result(call, st);
  tsr_array_release(b), tsr_array_release(a), tsr_array_release(x);
}

/* Work only on the other stream, needing nothing from this one: it can end, so it is not
   refused (the contract still says a host function should not wait). */
static void eval_independent(void *ctx) {
  host_call *call = ctx;
  tsr_array *x = vector(6.0f), *b = NULL;
  tsr_status st = tsr_add(&b, x, x, call->other);
  if (st == TSR_OK) st = tsr_eval(&b, 1);
  keep_result(call, st);
  tsr_array_release(b), tsr_array_release(x);
}

static void free_own_stream(void *ctx) {
  host_call *call = ctx;
  keep_result(call, tsr_stream_free(call->stream));
}

static void shutdown_from_host(void *ctx) {
  (void)ctx;
  tsr_shutdown(); /* refused: it would join this very worker */
}

static host_call run_host(tsr_stream *s, tsr_stream *other, void (*fn)(void *)) {
  host_call call = {s, other, TSR_ERR_DIST, ""};
  CHECK_OK(tsr_stream_enqueue_host(s, fn, &call));
  /* The first synchronize covers the host function only: what it submitted (a refused eval's
     arrays stay submitted) was queued after that call took its sequence number, so both streams
     are synchronized again once it has run (else their buffers may still be live at the ledger
     check: seen under load). */
  CHECK_OK(tsr_stream_synchronize(s));
  CHECK_OK(tsr_stream_synchronize(other));
  CHECK_OK(tsr_stream_synchronize(s));
  return call;
}

static void expect_refused(const host_call *call, const char *what, const char *needle) {
  if (call->status != TSR_ERR_STATE || !strstr(call->message, needle))
    CHECK_FAIL_("%s: got %s \"%s\", want TSR_ERR_STATE naming \"%s\"", what,
                tsr_status_name(call->status), call->message, needle);
}

static void test_host_waits(void) {
  alarm(120); /* before the fix these deadlocked: the alarm ends the test as failed */
  tsr_stream *s = NULL, *t = NULL;
  CHECK_OK(tsr_stream_new(&s, cpu));
  CHECK_OK(tsr_stream_new(&t, cpu));
  char name[64];
  snprintf(name, sizeof name, "stream ");
  host_call call = run_host(s, t, sync_own_stream);
  expect_refused(&call, "synchronize on its own stream", "stream_synchronize");
  expect_refused(&call, "synchronize on its own stream", name);
  call = run_host(s, t, eval_on_own_stream);
  expect_refused(&call, "eval on its own stream", "same stream");
  call = run_host(s, t, eval_through_other);
  expect_refused(&call, "eval through another stream", "could never end");
  call = run_host(s, t, eval_independent);
  CHECK_EQ_INT(call.status, TSR_OK);
  call = run_host(s, t, free_own_stream);
  expect_refused(&call, "free its own stream", "stream_free");
  /* The default stream is named as such. */
  call = run_host(tsr_default_stream(cpu), t, eval_on_own_stream);
  expect_refused(&call, "eval on the default stream", "default stream of cpu");
  /* tsr_shutdown from a host function does nothing; the streams still work. */
  CHECK_OK(tsr_stream_enqueue_host(s, shutdown_from_host, NULL));
  CHECK_OK(tsr_stream_synchronize(s));
  CHECK_OK(tsr_stream_enqueue_host(s, noop, NULL));
  CHECK_OK(tsr_stream_free(s));
  CHECK_OK(tsr_stream_free(t));
  alarm(0);
}

int main(void) {
  test_freed_handle();
  test_after_shutdown();
  test_racing_free();
  test_host_waits();
  CHECK_OK(tsr_memory_clear_cache(cpu));
  CHECK_NO_LEAKS();
  tsr_shutdown();
  puts("test_stream_lifetime: ok");
  return 0;
}
