/* base/status.c — status names and the thread-local message. Nothing here allocates. */
#include "base/status.h"

#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[TSR_ERROR_MAX];

const char *tsr_status_name(tsr_status s) {
  switch (s) {
#define TSRI_STATUS_CASE(name) \
  case name:                   \
    return #name;
    TSRI_STATUS_LIST(TSRI_STATUS_CASE)
#undef TSRI_STATUS_CASE
  }
  return "TSR_ERR_UNKNOWN";
}

const char *tsr_last_error(void) {
  return last_error;
}

const char *tsr_version(void) {
  return TSR_VERSION_STRING;
}

tsr_status tsri_verror(tsr_status status, const char *fmt, va_list ap) {
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  return status;
}

tsr_status tsri_error(tsr_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tsri_verror(status, fmt, ap);
  va_end(ap);
  return status;
}

tsr_status tsr_error_set(tsr_status status, const char *fmt, ...) {
  /* Formatted apart first: an argument may be last_error itself (context added to a message). */
  char text[TSR_ERROR_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  memcpy(last_error, text, sizeof last_error);
  return status;
}

tsr_status tsri_error_copy(tsr_status status, const char *message) {
  if (message != last_error) snprintf(last_error, sizeof last_error, "%s", message ? message : "");
  return status;
}
