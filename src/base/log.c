/* base/log.c — one line per message; the level is read once from TSR_LOG. The destination (stderr
 * or the embedding program's callback) and the rank tag are process-wide: a process has one
 * stderr and one rank. */
#include "base/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/env.h"
#include "tessera/base.h"

static pthread_mutex_t log_mutex = PTHREAD_MUTEX_INITIALIZER;
static tsr_log_fn log_callback; /* log_mutex */
static void *log_callback_ctx;  /* log_mutex */
static char rank_tag[32];       /* log_mutex: "" or "[rank r/n] " */

void tsr_log_set_callback(tsr_log_fn fn, void *ctx) {
  pthread_mutex_lock(&log_mutex);
  log_callback = fn;
  log_callback_ctx = ctx;
  pthread_mutex_unlock(&log_mutex);
}

void tsri_log_set_rank(int rank, int size) {
  pthread_mutex_lock(&log_mutex);
  if (size > 0)
    snprintf(rank_tag, sizeof rank_tag, "[rank %d/%d] ", rank, size);
  else
    rank_tag[0] = '\0';
  pthread_mutex_unlock(&log_mutex);
}

void tsri_log(tsri_log_level level, const char *fmt, ...) {
  static const char *const names[] = {"error", "warn", "info", "debug"};
  if ((int)level > tsri_env()->log_level) return;
  char text[1024], line[1100];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  /* The callback is called outside the lock, so it may itself call tessera (and log). */
  pthread_mutex_lock(&log_mutex);
  tsr_log_fn callback = log_callback;
  void *ctx = log_callback_ctx;
  /* a text that already starts with this rank's tag (a collective's error message) keeps one */
  bool tagged = rank_tag[0] && strncmp(text, rank_tag, strlen(rank_tag)) == 0;
  snprintf(line, sizeof line, "%s%s", tagged ? "" : rank_tag, text);
  pthread_mutex_unlock(&log_mutex);
  if (callback)
    callback((tsr_log_level)level, line, ctx);
  else
    fprintf(stderr, "tessera: %s: %s\n", names[level], line);
}
