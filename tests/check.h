/* tests/check.h — assertions for tessera's tests: each prints both operands, where it failed and
 * the thread's last tessera error, then exits 1 (one process per test, so nothing else runs).
 * Not a framework: no registration, no fixtures. */
#ifndef TSR_TESTS_CHECK_H
#define TSR_TESTS_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tessera/tessera.h>

#define CHECK_FAIL_(...)                                          \
  do {                                                            \
    fprintf(stderr, "%s:%d: check failed: ", __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__);                                 \
    fprintf(stderr, "\n  last error: %s\n", tsr_last_error());    \
    exit(1);                                                      \
  } while (0)

#define CHECK(cond)                        \
  do {                                     \
    if (!(cond)) CHECK_FAIL_("%s", #cond); \
  } while (0)

#define CHECK_EQ_U64(a, b)                                                          \
  do {                                                                              \
    uint64_t check_a_ = (uint64_t)(a), check_b_ = (uint64_t)(b);                    \
    if (check_a_ != check_b_)                                                       \
      CHECK_FAIL_("%s == %s: %" PRIu64 " != %" PRIu64, #a, #b, check_a_, check_b_); \
  } while (0)

#define CHECK_EQ_INT(a, b)                                                                       \
  do {                                                                                           \
    long long check_a_ = (long long)(a), check_b_ = (long long)(b);                              \
    if (check_a_ != check_b_) CHECK_FAIL_("%s == %s: %lld != %lld", #a, #b, check_a_, check_b_); \
  } while (0)

#define CHECK_STATUS(expr, expected)                                         \
  do {                                                                       \
    tsr_status check_got_ = (expr), check_want_ = (expected);                \
    if (check_got_ != check_want_)                                           \
      CHECK_FAIL_("%s: got %s, want %s", #expr, tsr_status_name(check_got_), \
                  tsr_status_name(check_want_));                             \
  } while (0)

#define CHECK_OK(expr) CHECK_STATUS(expr, TSR_OK)

/* The thread's last error must mention `needle` (a value the message is meant to name). */
#define CHECK_MESSAGE(needle)                                 \
  do {                                                        \
    if (!strstr(tsr_last_error(), (needle)))                  \
      CHECK_FAIL_("message should contain \"%s\"", (needle)); \
  } while (0)

static inline void check_message_contains(const char *needle) {
  CHECK_MESSAGE(needle);
}

/* The CPU ledger reads zero active and pending bytes: the test leaked no array. After
   tsr_shutdown (which ran every release) use CHECK_NO_LEAKS_AFTER_SHUTDOWN: a synchronize would
   start the library again. */
#define CHECK_NO_LEAKS_AFTER_SHUTDOWN()                           \
  do {                                                            \
    tsr_backing_snapshot check_snap_;                             \
    tsr_device check_cpu_ = {TSR_CPU, 0};                         \
    CHECK_OK(tsr_calibration_snapshot(check_cpu_, &check_snap_)); \
    CHECK_EQ_U64(check_snap_.active, 0);                          \
    CHECK_EQ_U64(check_snap_.pending, 0);                         \
  } while (0)

/* The same while the library runs: the default device's stream is synchronized first (on a GPU
   a released array's bytes come back once the kernels reading them are done, and a synchronize
   waits for those releases too). */
#define CHECK_NO_LEAKS()                    \
  do {                                      \
    CHECK_OK(tsr_stream_synchronize(NULL)); \
    CHECK_NO_LEAKS_AFTER_SHUTDOWN();        \
  } while (0)

#endif
