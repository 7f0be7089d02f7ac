/* tests/base/test_discovery_threads.c — discovery runs once however many threads race to it
 * first, every thread sees the same devices, and a device that does not exist is refused with a
 * message naming it; not what the hardware is (any sane answer passes). */
#include <pthread.h>

#include "check.h"

enum { THREADS = 8, CALLS = 1000 };

static pthread_barrier_t start_line;

typedef struct {
  int cpu_count, gpu_count;
  tsr_device_info cpu; /* the last answer this thread got */
} thread_view;

/* Every call gives the same answer as this thread's first. */
static void *query_devices(void *arg) {
  thread_view *view = arg;
  pthread_barrier_wait(&start_line);
  tsr_device cpu = {TSR_CPU, 0};
  for (int i = 0; i < CALLS; i++) {
    int cpus = tsr_device_count(TSR_CPU), gpus = tsr_device_count(TSR_GPU);
    tsr_device_info info;
    CHECK_OK(tsr_device_info_get(cpu, &info));
    if (i == 0) {
      view->cpu_count = cpus;
      view->gpu_count = gpus;
      view->cpu = info;
    }
    CHECK_EQ_INT(cpus, view->cpu_count);
    CHECK_EQ_INT(gpus, view->gpu_count);
    CHECK(memcmp(&info, &view->cpu, sizeof info) == 0);
    if (gpus > 0) CHECK_OK(tsr_device_info_get((tsr_device){TSR_GPU, i % gpus}, &info));
  }
  return NULL;
}

static void race_to_discovery(thread_view views[THREADS]) {
  pthread_t ids[THREADS];
  memset(views, 0, sizeof(thread_view) * THREADS);
  CHECK_EQ_INT(pthread_barrier_init(&start_line, NULL, THREADS), 0);
  for (int i = 0; i < THREADS; i++)
    CHECK_EQ_INT(pthread_create(&ids[i], NULL, query_devices, &views[i]), 0);
  for (int i = 0; i < THREADS; i++)
    CHECK_EQ_INT(pthread_join(ids[i], NULL), 0);
  pthread_barrier_destroy(&start_line);
}

static void check_cpu_is_sane(const tsr_device_info *cpu) {
  CHECK_EQ_INT(cpu->device.type, TSR_CPU);
  CHECK_EQ_INT(cpu->device.index, 0);
  CHECK(cpu->name[0] != '\0');
  CHECK(memchr(cpu->name, '\0', sizeof cpu->name) != NULL);
  CHECK(memchr(cpu->features, '\0', sizeof cpu->features) != NULL);
  CHECK(cpu->compute_units >= 1);
  CHECK(cpu->memory_bytes > 0);
  CHECK_EQ_INT(cpu->cc_major, 0);
  CHECK_EQ_INT(cpu->cc_minor, 0);
  printf("cpu: %s, %d cores, %" PRIu64 " bytes, L2 %" PRIu64 " bytes, features: %s\n", cpu->name,
         cpu->compute_units, cpu->memory_bytes, cpu->l2_bytes, cpu->features);
}

static void check_gpus_are_sane(int gpu_count) {
  for (int i = 0; i < gpu_count; i++) {
    tsr_device_info gpu;
    CHECK_OK(tsr_device_info_get((tsr_device){TSR_GPU, i}, &gpu));
    CHECK_EQ_INT(gpu.device.type, TSR_GPU);
    CHECK_EQ_INT(gpu.device.index, i);
    CHECK(gpu.name[0] != '\0');
    CHECK(gpu.compute_units >= 1);
    CHECK(gpu.memory_bytes > 0);
    CHECK(gpu.cc_major >= 1);
    CHECK(strncmp(gpu.features, "sm_", 3) == 0);
    printf("gpu:%d: %s, %d SMs, cc %d.%d, %" PRIu64 " bytes, features: %s\n", i, gpu.name,
           gpu.compute_units, gpu.cc_major, gpu.cc_minor, gpu.memory_bytes, gpu.features);
  }
}

/* A refused query names the device, and leaves `out` as it was. */
static void check_refused(tsr_device d, tsr_status want, const char *needle) {
  tsr_device_info out, before;
  memset(&out, 0xab, sizeof out);
  before = out;
  CHECK_STATUS(tsr_device_info_get(d, &out), want);
  check_message_contains(needle);
  CHECK(memcmp(&out, &before, sizeof out) == 0);
}

static void check_missing_devices(int gpu_count) {
  char needle[64];
  snprintf(needle, sizeof needle, "gpu:%d", gpu_count);
  check_refused((tsr_device){TSR_GPU, gpu_count}, TSR_ERR_DEVICE, needle);
  snprintf(needle, sizeof needle, "has %d GPU", gpu_count);
  check_message_contains(needle);
  check_refused((tsr_device){TSR_GPU, gpu_count + 7}, TSR_ERR_DEVICE, "device_info_get");
  check_refused((tsr_device){TSR_GPU, -1}, TSR_ERR_DEVICE, "gpu:-1");
  check_refused((tsr_device){TSR_CPU, 1}, TSR_ERR_DEVICE, "cpu:1");
  check_refused((tsr_device){TSR_CPU, -1}, TSR_ERR_DEVICE, "cpu:-1");
  check_refused((tsr_device){(tsr_device_type)7, 0}, TSR_ERR_DEVICE, "type 7");
  CHECK_STATUS(tsr_device_info_get((tsr_device){TSR_CPU, 0}, NULL), TSR_ERR_INVALID);
  check_message_contains("NULL");
  CHECK_EQ_INT(tsr_device_count((tsr_device_type)7), 0);
  CHECK_EQ_INT(tsr_device_count((tsr_device_type)-1), 0);
}

int main(void) {
  thread_view views[THREADS];
  race_to_discovery(views); /* the first tessera calls of this process */
  CHECK_EQ_U64(tsr_device_discovery_probes(), 1);
  for (int i = 1; i < THREADS; i++) {
    CHECK_EQ_INT(views[i].gpu_count, views[0].gpu_count);
    CHECK(memcmp(&views[i].cpu, &views[0].cpu, sizeof views[0].cpu) == 0);
  }
  CHECK_EQ_INT(views[0].cpu_count, 1);
  CHECK(views[0].gpu_count >= 0);
  check_cpu_is_sane(&views[0].cpu);
  check_gpus_are_sane(views[0].gpu_count);
  check_missing_devices(views[0].gpu_count);
  CHECK_EQ_U64(tsr_device_discovery_probes(), 1); /* still one pass after all of this */
  printf("test_discovery_threads: ok (%d threads x %d calls, %d GPU(s))\n", THREADS, CALLS,
         views[0].gpu_count);
  return 0;
}
