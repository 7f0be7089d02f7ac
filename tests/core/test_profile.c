/* tests/core/test_profile.c — TSR_PROFILE=1: tsr_shutdown reports, through the logger, each
 * primitive's node count and host time per device, and the evaluation phases; the counters start
 * again from zero after a report (a second shutdown with no work reports nothing). */
#include <stdlib.h>
#include <string.h>

#include "check.h"

typedef struct {
  char text[8192];
  size_t used;
} captured;

static void capture(tsr_log_level level, const char *text, void *ctx) {
  (void)level;
  captured *c = ctx;
  size_t n = strlen(text);
  if (c->used + n + 2 >= sizeof c->text) return;
  memcpy(c->text + c->used, text, n);
  c->used += n;
  c->text[c->used++] = '\n';
  c->text[c->used] = '\0';
}

/* The count on the profile line of `what` (device "cpu"), or -1 when there is no such line. */
static long count_of(const captured *c, const char *what) {
  char key[64];
  snprintf(key, sizeof key, "cpu  %s ", what);
  const char *line = strstr(c->text, key);
  if (!line) return -1;
  return strtol(line + strlen(key), NULL, 10);
}

static void run_adds(int n) {
  const tsr_device cpu = {TSR_CPU, 0};
  float one = 1.0f;
  int64_t shape[1] = {1};
  tsr_array *x = NULL;
  CHECK_OK(tsr_array_from_data_on(&x, &one, TSR_FLOAT32, shape, 1, cpu));
  tsr_array *sum = tsr_array_retain(x);
  for (int i = 0; i < n; i++) {
    tsr_array *next = NULL;
    CHECK_OK(tsr_add(&next, sum, x, tsr_default_stream(cpu)));
    tsr_array_release(sum);
    sum = next;
  }
  float got = 0.0f;
  CHECK_OK(tsr_array_read(sum, &got, sizeof got));
  CHECK(got == (float)(n + 1));
  tsr_array_release(sum);
  tsr_array_release(x);
}

int main(void) {
  setenv("TSR_PROFILE", "1", 1); /* before the library reads its knobs */
  setenv("TSR_LOG", "info", 1);
  static captured log;
  tsr_log_set_callback(capture, &log);
  run_adds(10);
  tsr_shutdown();
  if (count_of(&log, "add") != 10)
    CHECK_FAIL_("want a profile line of 10 cpu adds, the log was:\n%s", log.text);
  CHECK(strstr(log.text, "eval: walk and submit") != NULL);
  CHECK(strstr(log.text, "eval: wait") != NULL);

  log.used = 0, log.text[0] = '\0';
  tsr_shutdown(); /* nothing ran since the report */
  CHECK(strstr(log.text, "profile") == NULL);

  run_adds(3);
  tsr_shutdown();
  CHECK_EQ_INT(count_of(&log, "add"), 3);
  tsr_log_set_callback(NULL, NULL);
  puts("test_profile: ok");
  return 0;
}
