/* tests/base/test_env_parse.c — the checked integer parser of base/env and every knob read
 * through it: whitespace, signs, overflow and range are refused (never clamped or wrapped
 * silently), a refused value is warned about naming the knob and the value, and the library
 * then behaves as if the knob were unset. base/env.c is libc-only, so this file compiles it in
 * to reach the parser; the knobs are also checked end to end through the library, each set in a
 * child process (they are read once per process). */
#include <fcntl.h>
#include <limits.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../src/base/env.c"
#include "check.h"

static void check_u64(const char *text, uint64_t min, uint64_t max, bool ok, uint64_t want) {
  uint64_t got = 12345;
  bool parsed = tsri_env_parse_u64(text, min, max, &got);
  if (parsed != ok)
    CHECK_FAIL_("parse_u64(\"%s\", %" PRIu64 ", %" PRIu64 ") gave %s", text ? text : "(null)", min,
                max, parsed ? "true" : "false");
  if (ok && got != want)
    CHECK_FAIL_("parse_u64(\"%s\") = %" PRIu64 ", want %" PRIu64, text, got, want);
  if (!ok && got != 12345) CHECK_FAIL_("parse_u64(\"%s\") wrote %" PRIu64 " on failure", text, got);
}

static void check_i64(const char *text, int64_t min, int64_t max, bool ok, int64_t want) {
  int64_t got = 12345;
  bool parsed = tsri_env_parse_i64(text, min, max, &got);
  if (parsed != ok)
    CHECK_FAIL_("parse_i64(\"%s\", %" PRId64 ", %" PRId64 ") gave %s", text ? text : "(null)", min,
                max, parsed ? "true" : "false");
  if (ok && got != want)
    CHECK_FAIL_("parse_i64(\"%s\") = %" PRId64 ", want %" PRId64, text, got, want);
  if (!ok && got != 12345) CHECK_FAIL_("parse_i64(\"%s\") wrote %" PRId64 " on failure", text, got);
}

static void test_parser(void) {
  check_u64("0", 0, UINT64_MAX, true, 0);
  check_u64("42", 0, UINT64_MAX, true, 42);
  check_u64("007", 0, UINT64_MAX, true, 7);
  check_u64("18446744073709551615", 0, UINT64_MAX, true, UINT64_MAX);
  check_u64("18446744073709551616", 0, UINT64_MAX, false, 0); /* 2^64 */
  check_u64("99999999999999999999999", 0, UINT64_MAX, false, 0);
  static const char *const malformed[] = {"",   " 5",   "5 ",  "\t5", "5\n",   "+5", "-5", " -5",
                                          "-0", "0x10", "1e3", "5k",  "1,000", "½",  "٣"};
  for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++)
    check_u64(malformed[i], 0, UINT64_MAX, false, 0);
  check_u64(NULL, 0, UINT64_MAX, false, 0);
  check_u64("0", 1, 256, false, 0);
  check_u64("1", 1, 256, true, 1);
  check_u64("256", 1, 256, true, 256);
  check_u64("257", 1, 256, false, 0);

  check_i64("-5", INT64_MIN, INT64_MAX, true, -5);
  check_i64("5", INT64_MIN, INT64_MAX, true, 5);
  check_i64("-0", INT64_MIN, INT64_MAX, true, 0);
  check_i64("9223372036854775807", INT64_MIN, INT64_MAX, true, INT64_MAX);
  check_i64("9223372036854775808", INT64_MIN, INT64_MAX, false, 0);
  check_i64("-9223372036854775808", INT64_MIN, INT64_MAX, true, INT64_MIN);
  check_i64("-9223372036854775809", INT64_MIN, INT64_MAX, false, 0);
  static const char *const bad_signed[] = {"", "-", "--5", "+5", " -5", "- 5", "-5 ", "-x"};
  for (size_t i = 0; i < sizeof bad_signed / sizeof bad_signed[0]; i++)
    check_i64(bad_signed[i], INT64_MIN, INT64_MAX, false, 0);
  check_i64("-3", -2, 2, false, 0);
  check_i64("3", -2, 2, false, 0);
  check_i64("-2", -2, 2, true, -2);
}

/* ---- knobs, each in a child process -----------------------------------------------------------
 */

typedef void (*child_fn)(void);

/* Runs fn in a forked child with NAME=VALUE set; returns its stderr; the child must exit 0. */
static char *in_child(const char *name, const char *value, child_fn fn) {
  char path[] = "/tmp/tessera-test-env-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  unlink(path);
  fflush(NULL);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    dup2(fd, STDERR_FILENO);
    setenv(name, value, 1);
    fn();
    fflush(NULL);
    _exit(0);
  }
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  off_t size = lseek(fd, 0, SEEK_END);
  char *text = calloc((size_t)size + 1, 1);
  CHECK(text != NULL);
  CHECK(pread(fd, text, (size_t)size, 0) == size);
  close(fd);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    CHECK_FAIL_("child with %s=\"%s\" failed (status %d); its stderr:\n%s", name, value, status,
                text);
  return text;
}

static void expect_warning(const char *name, const char *value, child_fn fn) {
  char *err = in_child(name, value, fn);
  char quoted[128];
  snprintf(quoted, sizeof quoted, "%s=%s is not", name, value);
  if (!strstr(err, quoted) || !strstr(err, "warn"))
    CHECK_FAIL_("%s=\"%s\": want a warning naming the knob and value, stderr was:\n%s", name, value,
                err);
  free(err);
}

static void expect_silence(const char *name, const char *value, child_fn fn) {
  char *err = in_child(name, value, fn);
  if (err[0]) CHECK_FAIL_("%s=\"%s\": want no warning, stderr was:\n%s", name, value, err);
  free(err);
}

/* This file's copy of the knobs (the library's copy is read the same way, through the same
   code, but is hidden; the end-to-end children below reach it). */
static void child_threads_unset(void) {
  if (tsri_env()->num_threads != 0) exit(3);
}
static void child_threads_12(void) {
  if (tsri_env()->num_threads != 12) exit(3);
}
static void child_cache_unset(void) {
  if (tsri_env()->has_cache_limit) exit(3);
}
static void child_cache_big(void) {
  if (!tsri_env()->has_cache_limit || tsri_env()->cache_limit != UINT64_MAX) exit(3);
}
static void child_device_unset(void) {
  if (tsri_env()->device_kind != TSRI_ENV_DEVICE_UNSET) exit(3);
}
static void child_device_gpu7(void) {
  if (tsri_env()->device_kind != TSRI_ENV_DEVICE_GPU || tsri_env()->device_index != 7) exit(3);
}
static void child_isa_unset(void) {
  if (tsri_env()->cpu_isa != TSRI_ENV_ISA_UNSET) exit(3);
}

static void child_kernels_auto(void) {
  if (tsri_env()->kernels != TSRI_ENV_KERNELS_AUTO) exit(3);
}
static void child_kernels_aot(void) {
  if (tsri_env()->kernels != TSRI_ENV_KERNELS_AOT) exit(3);
}
static void child_poison_off(void) {
  if (tsri_env()->debug_poison) exit(3);
}
static void child_profile_off(void) {
  if (tsri_env()->profile) exit(3);
}
static void child_profile_on(void) {
  if (!tsri_env()->profile) exit(3);
}
static void child_qmv_mma_unset(void) {
  if (tsri_env()->qmv_mma != 0) exit(3);
}
static void child_qmv_mma_off(void) {
  if (tsri_env()->qmv_mma != -1) exit(3);
}
static void child_qmv_mma_2_16_1_1(void) {
  const tsri_env_knobs *k = tsri_env();
  if (k->qmv_mma != 1 || k->qmv_mma_rows != 2 || k->qmv_mma_warps != 16 || k->qmv_mma_blocks != 1 ||
      k->qmv_mma_staged != 1)
    exit(3);
}
static void child_poison_on(void) {
  if (!tsri_env()->debug_poison) exit(3);
}
static void child_cache_dir_given(void) {
  if (strcmp(tsri_env()->cache_dir, "/var/cache/x") != 0) exit(3);
}
static void child_cache_dir_none(void) {
  if (tsri_env()->cache_dir[0] != '\0') exit(3);
}
/* XDG_CACHE_HOME (absolute only, as the XDG spec says) is used when TSR_CACHE_DIR is unset. */
static void child_cache_dir_xdg(void) {
  unsetenv("TSR_CACHE_DIR");
  setenv("HOME", "/home/u", 1);
  if (strcmp(tsri_env()->cache_dir, "/xdg/tessera") != 0) exit(3);
}
static void child_cache_dir_home(void) {
  unsetenv("TSR_CACHE_DIR");
  setenv("HOME", "/home/u", 1);
  if (strcmp(tsri_env()->cache_dir, "/home/u/.cache/tessera") != 0) exit(3);
}

/* Through the library: the default device falls back to the CPU. */
static void child_library_device(void) {
  /* Ignored: the automatic choice, GPU 0 where one is usable, else the CPU. */
  tsr_device d = tsr_default_device(), automatic = {TSR_CPU, 0};
  if (tsr_device_count(TSR_GPU) > 0) automatic = (tsr_device){TSR_GPU, 0};
  if (d.type != automatic.type || d.index != automatic.index) exit(3);
  tsr_shutdown();
}

/* Through the library: a refused TSR_CACHE_LIMIT leaves the default limit (a released 4 KiB
   buffer stays cached); "0" is honoured (nothing is cached). */
static void cache_probe(bool want_cached) {
  tsr_device cpu = {TSR_CPU, 0};
  float zeros[1024] = {0};
  int64_t shape[1] = {1024};
  tsr_array *a = NULL;
  if (tsr_array_from_data_on(&a, zeros, TSR_FLOAT32, shape, 1, cpu) != TSR_OK) exit(4);
  tsr_array_release(a);
  if ((tsr_memory_cached(cpu) > 0) != want_cached) exit(3);
  tsr_shutdown();
}
static void child_library_cache_default(void) {
  cache_probe(true);
}
static void child_library_cache_zero(void) {
  cache_probe(false);
}

/* Through the library: a quantized matmul runs (the thread pool and the ISA choice read
   TSR_NUM_THREADS and TSR_CPU_ISA). */
static void child_library_kernels(void) {
  float w[32 * 64], x[64];
  for (int i = 0; i < 32 * 64; i++)
    w[i] = (float)(i % 7) - 3.0f;
  for (int i = 0; i < 64; i++)
    x[i] = 1.0f;
  int64_t w_shape[2] = {32, 64}, x_shape[2] = {1, 64};
  tsr_array *wa = NULL, *xa = NULL, *wq = NULL, *sc = NULL, *bi = NULL, *y = NULL;
  if (tsr_array_from_data(&wa, w, TSR_FLOAT32, w_shape, 2) != TSR_OK ||
      tsr_array_from_data(&xa, x, TSR_FLOAT32, x_shape, 2) != TSR_OK ||
      tsr_quantize(&wq, &sc, &bi, wa, 64, 4, TSR_QUANT_AFFINE, NULL) != TSR_OK ||
      tsr_quantized_matmul(&y, xa, wq, sc, bi, true, 64, 4, TSR_QUANT_AFFINE, NULL) != TSR_OK ||
      tsr_eval(&y, 1) != TSR_OK)
    exit(4);
  tsr_array_release(wa), tsr_array_release(xa), tsr_array_release(wq);
  tsr_array_release(sc), tsr_array_release(bi), tsr_array_release(y);
  tsr_shutdown();
}

static void test_knobs(void) {
  /* The cases: an overflowing thread count, a negative cache limit behind a space, a
     device index past int. */
  expect_warning("TSR_NUM_THREADS", "99999999999999999999999", child_threads_unset);
  expect_warning("TSR_NUM_THREADS", "257", child_threads_unset);
  expect_warning("TSR_NUM_THREADS", "0", child_threads_unset);
  expect_warning("TSR_NUM_THREADS", " 4", child_threads_unset);
  expect_warning("TSR_NUM_THREADS", "4 ", child_threads_unset);
  expect_warning("TSR_NUM_THREADS", "+4", child_threads_unset);
  expect_warning("TSR_NUM_THREADS", "-4", child_threads_unset);
  expect_silence("TSR_NUM_THREADS", "12", child_threads_12);
  expect_warning("TSR_CACHE_LIMIT", " -5", child_cache_unset);
  expect_warning("TSR_CACHE_LIMIT", "-5", child_cache_unset);
  expect_warning("TSR_CACHE_LIMIT", "18446744073709551616", child_cache_unset);
  expect_warning("TSR_CACHE_LIMIT", "1GB", child_cache_unset);
  expect_silence("TSR_CACHE_LIMIT", "18446744073709551615", child_cache_big);
  expect_warning("TSR_DEFAULT_DEVICE", "gpu:99999999999", child_device_unset);
  expect_warning("TSR_DEFAULT_DEVICE", "gpu:2147483648", child_device_unset);
  expect_warning("TSR_DEFAULT_DEVICE", "gpu:-1", child_device_unset);
  expect_warning("TSR_DEFAULT_DEVICE", "gpu: 1", child_device_unset);
  expect_warning("TSR_DEFAULT_DEVICE", "gpu:1x", child_device_unset);
  expect_warning("TSR_DEFAULT_DEVICE", "gpu:", child_device_unset);
  expect_silence("TSR_DEFAULT_DEVICE", "gpu:7", child_device_gpu7);
  expect_warning("TSR_CPU_ISA", "avx1024", child_isa_unset);
  expect_warning("TSR_CPU_ISA", " avx2", child_isa_unset);
  expect_warning("TSR_KERNELS", "JIT", child_kernels_auto);
  expect_warning("TSR_KERNELS", "aot ", child_kernels_auto);
  expect_silence("TSR_KERNELS", "aot", child_kernels_aot);
  expect_warning("TSR_DEBUG_POISON", "2", child_poison_off);
  expect_warning("TSR_DEBUG_POISON", "yes", child_poison_off);
  expect_silence("TSR_DEBUG_POISON", "0", child_poison_off);
  expect_silence("TSR_DEBUG_POISON", "1", child_poison_on);
  expect_warning("TSR_PROFILE", "yes", child_profile_off);
  expect_warning("TSR_PROFILE", "2", child_profile_off);
  expect_silence("TSR_PROFILE", "1", child_profile_on);
  expect_silence("TSR_QMV_MMA", "off", child_qmv_mma_off);
  expect_silence("TSR_QMV_MMA", "2,16,1,1", child_qmv_mma_2_16_1_1);
  expect_warning("TSR_QMV_MMA", "2,12,1,0", child_qmv_mma_unset);
  expect_warning("TSR_QMV_MMA", "3,8,1,0", child_qmv_mma_unset);
  expect_warning("TSR_QMV_MMA", "1,8,2", child_qmv_mma_unset);
  expect_warning("TSR_QMV_MMA", "1,8,2,1,", child_qmv_mma_unset);
  expect_warning("TSR_QMV_MMA", "1,8,2,1,0", child_qmv_mma_unset);
  expect_warning("TSR_QMV_MMA", "1,8,5,0", child_qmv_mma_unset);
  expect_warning("TSR_QMV_MMA", "1,8,2,2", child_qmv_mma_unset);
  expect_warning("TSR_QMV_MMA", "OFF", child_qmv_mma_unset);
  expect_silence("TSR_CACHE_DIR", "/var/cache/x", child_cache_dir_given);
  static char long_dir[1100];
  memset(long_dir, 'd', sizeof long_dir - 1);
  long_dir[0] = '/';
  char *err = in_child("TSR_CACHE_DIR", long_dir, child_cache_dir_none);
  CHECK(strstr(err, "TSR_CACHE_DIR=") && strstr(err, "shorter than 1024 bytes"));
  free(err);
  expect_silence("XDG_CACHE_HOME", "/xdg", child_cache_dir_xdg);
  expect_silence("XDG_CACHE_HOME", "relative/xdg", child_cache_dir_home);

  /* The same values through the library. */
  expect_warning("TSR_DEFAULT_DEVICE", "gpu:99999999999", child_library_device);
  expect_warning("TSR_CACHE_LIMIT", " -5", child_library_cache_default);
  expect_silence("TSR_CACHE_LIMIT", "0", child_library_cache_zero);
  expect_warning("TSR_NUM_THREADS", "99999999999999999999999", child_library_kernels);
  expect_warning("TSR_NUM_THREADS", "-3", child_library_kernels);
  expect_warning("TSR_CPU_ISA", "AVX2 ", child_library_kernels);
}

int main(void) {
  test_parser();
  test_knobs();
  puts("test_env_parse: ok");
  return 0;
}
