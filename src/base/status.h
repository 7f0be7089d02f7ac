/* base/status.h — the thread-local error message behind tsr_last_error, and status names. */
#ifndef TSR_BASE_STATUS_H
#define TSR_BASE_STATUS_H

#include <stdarg.h>

#include "tessera/base.h"

/* The one list of status codes (libuv's UV_ERRNO_MAP idea): adding one touches this line. */
// clang-format off
#define TSRI_STATUS_LIST(X)                                                                    \
  X(TSR_OK)                                                                                    \
  X(TSR_ERR_INVALID)                                                                           \
  X(TSR_ERR_NOMEM)                                                                             \
  X(TSR_ERR_CAP)                                                                               \
  X(TSR_ERR_STATE)                                                                             \
  X(TSR_ERR_DEVICE)                                                                            \
  X(TSR_ERR_DIST)                                                                              \
  X(TSR_ERR_IO)                                                                                \
  X(TSR_ERR_UNSUPPORTED)
// clang-format on

#define TSR_ERROR_MAX 1024

/* Formats this thread's message and returns `status`, so a failure reads
 * `return tsri_error(TSR_ERR_INVALID, "add: shapes %s and %s do not broadcast", a, b);`. */
tsr_status tsri_error(tsr_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
tsr_status tsri_verror(tsr_status status, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* Sets this thread's message to a copy of `message` (an error carried from elsewhere, such as a
 * failed array's own message) and returns `status`. */
tsr_status tsri_error_copy(tsr_status status, const char *message);

#endif
