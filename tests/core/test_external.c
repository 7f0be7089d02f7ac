/* tests/core/test_external.c — lifetimes across streams: an external array's deleter runs once,
 * only after the last reference and the last use on any stream; tsr_array_record_stream keeps a
 * buffer backed until the recorded stream has passed that point. */
#include <stdatomic.h>
#include <unistd.h>

#include "check.h"

static const tsr_device cpu = {TSR_CPU, 0};

typedef struct {
  atomic_int gate_open;
  atomic_int deleted;
} probe;

static void wait_for_gate(void *ctx) {
  probe *p = ctx;
  while (!atomic_load(&p->gate_open))
    usleep(1000);
}

static void count_delete(void *ctx) {
  atomic_fetch_add(&((probe *)ctx)->deleted, 1);
}

static void test_external_deleter_waits_for_use(void) {
  static float data[4096];
  for (int i = 0; i < 4096; i++)
    data[i] = (float)i;
  int64_t shape[1] = {4096};
  probe p = {0, 0};
  tsr_stream *s = NULL;
  CHECK_OK(tsr_stream_new(&s, cpu));
  tsr_array *ext = NULL, *sum = NULL;
  CHECK_OK(tsr_array_from_external(&ext, data, TSR_FLOAT32, shape, 1, cpu, count_delete, &p));
  CHECK_EQ_U64(tsr_memory_active(cpu), sizeof data);
  CHECK_OK(tsr_stream_enqueue_host(s, wait_for_gate, &p)); /* holds s up */
  CHECK_OK(tsr_add(&sum, ext, ext, s));
  CHECK_OK(tsr_async_eval(&sum, 1));
  tsr_array_release(ext); /* the last reference, but the add on s has not run */
  usleep(20000);
  CHECK_EQ_INT(atomic_load(&p.deleted), 0);
  atomic_store(&p.gate_open, 1);
  float got[4096];
  CHECK_OK(tsr_array_read(sum, got, sizeof got));
  for (int i = 0; i < 4096; i++)
    CHECK(got[i] == 2.0f * data[i]);
  CHECK_OK(tsr_stream_synchronize(s));
  CHECK_EQ_INT(atomic_load(&p.deleted), 1);
  tsr_array_release(sum);
  CHECK_OK(tsr_stream_free(s));
  CHECK_EQ_INT(atomic_load(&p.deleted), 1);
}

static void test_record_stream_holds_buffer(void) {
  CHECK_OK(tsr_memory_set_cache_limit(cpu, 0)); /* a release really frees */
  static float data[100000];
  int64_t shape[1] = {100000};
  probe p = {0, 0};
  tsr_stream *s = NULL;
  CHECK_OK(tsr_stream_new(&s, cpu));
  tsr_array *a = NULL;
  CHECK_OK(tsr_array_from_data(&a, data, TSR_FLOAT32, shape, 1));
  uint64_t held = tsr_memory_active(cpu);
  CHECK(held >= sizeof data);
  void *ptr = NULL;
  CHECK_OK(tsr_array_data(a, &ptr));
  CHECK_OK(tsr_stream_enqueue_host(s, wait_for_gate, &p)); /* "raw work" on s using ptr */
  CHECK_OK(tsr_array_record_stream(a, s));
  tsr_array_release(a);
  CHECK_EQ_U64(tsr_memory_active(cpu), held); /* still backed: s has not passed the point */
  atomic_store(&p.gate_open, 1);
  CHECK_OK(tsr_stream_synchronize(s));
  CHECK_EQ_U64(tsr_memory_active(cpu), 0);
  CHECK_OK(tsr_stream_free(s));
}

int main(void) {
  test_external_deleter_waits_for_use();
  test_record_stream_holds_buffer();
  CHECK_NO_LEAKS();
  tsr_shutdown();
  puts("test_external: ok");
  return 0;
}
