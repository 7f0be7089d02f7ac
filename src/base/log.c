/* base/log.c — one line per message on stderr; the level is read once from TSR_LOG. */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>

#include "base/env.h"

void tsri_log(tsri_log_level level, const char *fmt, ...) {
  static const char *const names[] = {"error", "warn", "info", "debug"};
  if ((int)level > tsri_env()->log_level) return;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "tessera: %s: %s\n", names[level], line);
}
