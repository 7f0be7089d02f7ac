/* tessera/base.h — status codes, error messages, version and dtypes.
 *
 * Every fallible tessera function returns a tsr_status; TSR_OK is 0. On failure the calling
 * thread's message, with the values involved, is available from tsr_last_error() until that
 * thread's next failure.
 *
 *   tsr_array *a = NULL;
 *   int64_t shape[2] = {2, 3};
 *   float data[6] = {1, 2, 3, 4, 5, 6};
 *   tsr_status st = tsr_array_from_data(&a, data, TSR_FLOAT32, shape, 2);
 *   if (st != TSR_OK) {
 *     fprintf(stderr, "%s: %s\n", tsr_status_name(st), tsr_last_error());
 *     return 1;
 *   }
 *   printf("%zu bytes per element\n", tsr_dtype_size(tsr_array_dtype(a)));
 *   tsr_array_release(a);
 */
#ifndef TESSERA_BASE_H
#define TESSERA_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define TSR_API __attribute__((visibility("default")))
#else
#define TSR_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  TSR_OK = 0,
  TSR_ERR_INVALID = 1,    /* bad argument: NULL, axis, shape, dtype, unsupported bits/group/mode */
  TSR_ERR_NOMEM = 2,      /* the system or driver could not provide memory */
  TSR_ERR_CAP = 3,        /* the device's installed backing cap refused the reservation */
  TSR_ERR_STATE = 4,      /* not allowed now (second cap install, cap after first backing, ...) */
  TSR_ERR_DEVICE = 5,     /* no such device, or a driver/runtime failure */
  TSR_ERR_DIST = 6,       /* a collective or group failed */
  TSR_ERR_IO = 7,         /* file missing, truncated or corrupt */
  TSR_ERR_UNSUPPORTED = 8 /* valid request this build or backend cannot do */
} tsr_status;

/* "TSR_ERR_CAP" for TSR_ERR_CAP; "TSR_ERR_UNKNOWN" for a value outside the enum. Never fails. */
TSR_API const char *tsr_status_name(tsr_status s);

/* This thread's message for its last failure ("" when it has had none). The pointer stays valid
 * until this thread's next tessera call. Never fails; any thread. */
TSR_API const char *tsr_last_error(void);

/* Sets this thread's message (printf-style) and returns `status`, for code built on the library
 * that reports failures the way tessera does (the model layer, tools):
 * `return tsr_error_set(TSR_ERR_IO, "load: %s: no config.json", dir);`. The arguments may include
 * tsr_last_error() itself, to add context to a message: the text is formatted before it is
 * stored. Never fails; any thread. */
TSR_API tsr_status tsr_error_set(tsr_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Diagnostics (warnings such as an unusable TSR_DEFAULT_DEVICE, a rank's collective failures)
 * go to stderr as "tessera: LEVEL: text", one line each, at or above the level TSR_LOG names
 * (error|warn|info|debug; default warn). A process that is one rank of a distributed job starts
 * each text with "[rank r/n] " (tessera/dist.h). */
typedef enum {
  TSR_LOG_ERROR = 0,
  TSR_LOG_WARN = 1,
  TSR_LOG_INFO = 2,
  TSR_LOG_DEBUG = 3
} tsr_log_level;
/* Receives one message: `text` (no newline, rank tag included) is valid during the call only. */
typedef void (*tsr_log_fn)(tsr_log_level level, const char *text, void *ctx);
/* Routes the messages to fn(level, text, ctx) instead of stderr, from now on; NULL restores
 * stderr. fn may run on any tessera thread (stream workers included), concurrently with itself,
 * and may call tessera; it must not block for long. A message being delivered while the
 * callback is replaced may still reach the old one. Process-wide; never fails; any thread. */
TSR_API void tsr_log_set_callback(tsr_log_fn fn, void *ctx);

/* "0.1.0". Never fails. */
TSR_API const char *tsr_version(void);

typedef enum {
  TSR_BOOL,
  TSR_UINT8,
  TSR_UINT32,
  TSR_INT8,
  TSR_INT32,
  TSR_INT64,
  TSR_FLOAT16,
  TSR_BFLOAT16,
  TSR_FLOAT32
} tsr_dtype;

/* What this library was built with. Strings are static. Never fails; any thread. */
typedef struct {
  const char *version;      /* tsr_version() */
  const char *build_type;   /* "Release", "RelWithDebInfo", "Debug", ... */
  const char *compiler;     /* the compiler of the library, with its version */
  const char *sanitizers;   /* "" or e.g. "address,undefined" */
  bool cuda;                /* built with the CUDA toolkit (GPU discovery; GPU kernels need a
                               driver and a device at run time) */
  int cuda_toolkit_version; /* e.g. 13000 for 13.0; 0 without CUDA */
  uint64_t reserved[8];
} tsr_build_info;
TSR_API void tsr_build_info_get(tsr_build_info *out);

/* Bytes per element; 0 for a value outside the enum. Never fails. */
TSR_API size_t tsr_dtype_size(tsr_dtype t);

/* "float32" for TSR_FLOAT32; "unknown" for a value outside the enum. Never fails. */
TSR_API const char *tsr_dtype_name(tsr_dtype t);

/* Exact conversions between float32 and the 16-bit float formats (IEEE binary16 and bfloat16),
 * given as raw bit patterns. Narrowing rounds to nearest, ties to even; overflow gives infinity;
 * NaN stays NaN (quiet, sign kept). Widening is exact. Never fail; any thread. */
TSR_API uint16_t tsr_f32_to_f16(float x);
TSR_API float tsr_f16_to_f32(uint16_t h);
TSR_API uint16_t tsr_f32_to_bf16(float x);
TSR_API float tsr_bf16_to_f32(uint16_t b);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_BASE_H */
