/* tests/base/test_status.c — status names, the version string and the thread-locality of
 * tsr_last_error; not the wording of any one op's messages (each layer's tests check those). */
#include <ctype.h>
#include <pthread.h>

#include "check.h"

static void check_status_names(void) {
  static const struct {
    tsr_status status;
    const char *name;
  } expected[] = {
      {TSR_OK, "TSR_OK"},
      {TSR_ERR_INVALID, "TSR_ERR_INVALID"},
      {TSR_ERR_NOMEM, "TSR_ERR_NOMEM"},
      {TSR_ERR_CAP, "TSR_ERR_CAP"},
      {TSR_ERR_STATE, "TSR_ERR_STATE"},
      {TSR_ERR_DEVICE, "TSR_ERR_DEVICE"},
      {TSR_ERR_DIST, "TSR_ERR_DIST"},
      {TSR_ERR_IO, "TSR_ERR_IO"},
      {TSR_ERR_UNSUPPORTED, "TSR_ERR_UNSUPPORTED"},
  };
  for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
    const char *name = tsr_status_name(expected[i].status);
    CHECK(name != NULL);
    if (strcmp(name, expected[i].name) != 0)
      CHECK_FAIL_("status %d is named \"%s\", want \"%s\"", (int)expected[i].status, name,
                  expected[i].name);
  }
  /* The values are part of the ABI (shared/API.md). */
  CHECK_EQ_INT(TSR_OK, 0);
  CHECK_EQ_INT(TSR_ERR_INVALID, 1);
  CHECK_EQ_INT(TSR_ERR_CAP, 3);
  CHECK_EQ_INT(TSR_ERR_UNSUPPORTED, 8);
  static const int unknown[] = {9, 10, 100, -1, 1 << 30};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
    CHECK(strcmp(tsr_status_name((tsr_status)unknown[i]), "TSR_ERR_UNKNOWN") == 0);
}

/* "MAJOR.MINOR.PATCH", digits only, and this release is 0.1.x. */
static void check_version(void) {
  const char *v = tsr_version();
  CHECK(v != NULL);
  int dots = 0;
  bool digit_before = false;
  for (const char *p = v; *p; p++) {
    if (*p == '.') {
      CHECK(digit_before);
      dots++;
      digit_before = false;
    } else {
      CHECK(isdigit((unsigned char)*p));
      digit_before = true;
    }
  }
  CHECK(digit_before);
  CHECK_EQ_INT(dots, 2);
  CHECK(strncmp(v, "0.1.", 4) == 0);
}

/* Two threads fail in turn, each with its own message; after each failure, each thread's message
 * must still be its own, whatever the other did meanwhile. */
enum { ROUNDS = 2000 };
static pthread_barrier_t round_barrier;

typedef struct {
  int gpu_index; /* a device that does not exist, different for each thread */
  char needle[32];
} failing_thread;

static void *fail_in_turns(void *arg) {
  failing_thread *t = arg;
  CHECK(strcmp(tsr_last_error(), "") == 0); /* a new thread has had no failure */
  tsr_device_info info;
  tsr_device missing = {TSR_GPU, t->gpu_index};
  for (int round = 0; round < ROUNDS; round++) {
    CHECK_STATUS(tsr_device_info_get(missing, &info), TSR_ERR_DEVICE);
    pthread_barrier_wait(&round_barrier); /* both have failed */
    pthread_barrier_wait(&round_barrier); /* both may now read */
    check_message_contains(t->needle);
    pthread_barrier_wait(&round_barrier);
  }
  return NULL;
}

static void check_last_error_is_per_thread(void) {
  /* This thread's own failure, which the others must not overwrite. */
  CHECK_STATUS(tsr_device_info_get((tsr_device){TSR_CPU, 0}, NULL), TSR_ERR_INVALID);
  char mine[1024];
  snprintf(mine, sizeof mine, "%s", tsr_last_error());
  CHECK(mine[0] != '\0');

  failing_thread threads[2] = {{.gpu_index = 1000}, {.gpu_index = 2000}};
  pthread_t ids[2];
  CHECK_EQ_INT(pthread_barrier_init(&round_barrier, NULL, 2), 0);
  for (int i = 0; i < 2; i++) {
    snprintf(threads[i].needle, sizeof threads[i].needle, "gpu:%d", threads[i].gpu_index);
    CHECK_EQ_INT(pthread_create(&ids[i], NULL, fail_in_turns, &threads[i]), 0);
  }
  for (int i = 0; i < 2; i++)
    CHECK_EQ_INT(pthread_join(ids[i], NULL), 0);
  pthread_barrier_destroy(&round_barrier);
  CHECK(strcmp(tsr_last_error(), mine) == 0);
  CHECK(strstr(tsr_last_error(), "gpu:1000") == NULL);
  CHECK(strstr(tsr_last_error(), "gpu:2000") == NULL);
}

int main(void) {
  check_status_names();
  check_version();
  check_last_error_is_per_thread();
  printf("test_status: ok\n");
  return 0;
}
