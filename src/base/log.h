/* base/log.h — diagnostics on stderr, filtered by TSR_LOG (error|warn|info|debug; default warn). */
#ifndef TSR_BASE_LOG_H
#define TSR_BASE_LOG_H

typedef enum {
  TSRI_LOG_ERROR = 0,
  TSRI_LOG_WARN = 1,
  TSRI_LOG_INFO = 2,
  TSRI_LOG_DEBUG = 3
} tsri_log_level;

void tsri_log(tsri_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
