/* tests/cli/test_cli.c — the tessera program as a user meets it: exit codes, what goes to stdout
 * and what to stderr, --help everywhere, --json that holds the expected keys; not the numbers
 * behind the output (the library's own tests check those). */
#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "check.h"

extern char **environ;

typedef struct {
  int exit_code; /* -1 when the program did not exit normally */
  char *out, *err;
} tool_run;

static char *read_whole_file(int fd) {
  struct stat st;
  CHECK(fstat(fd, &st) == 0);
  char *text = calloc((size_t)st.st_size + 1, 1);
  CHECK(text != NULL);
  CHECK(pread(fd, text, (size_t)st.st_size, 0) == st.st_size);
  return text;
}

static int make_temp_file(void) {
  char path[] = "/tmp/tessera-test-cli-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  unlink(path);
  return fd;
}

/* Runs TSR_TOOL_PATH with the given arguments (NULL-terminated), stdout and stderr captured. */
static tool_run run_tool(const char *first, ...) {
  const char *argv[16] = {TSR_TOOL_PATH};
  int argc = 1;
  va_list ap;
  va_start(ap, first);
  for (const char *arg = first; arg && argc < 15; arg = va_arg(ap, const char *))
    argv[argc++] = arg;
  va_end(ap);
  argv[argc] = NULL;

  int out_fd = make_temp_file(), err_fd = make_temp_file();
  posix_spawn_file_actions_t actions;
  CHECK_EQ_INT(posix_spawn_file_actions_init(&actions), 0);
  CHECK_EQ_INT(posix_spawn_file_actions_adddup2(&actions, out_fd, STDOUT_FILENO), 0);
  CHECK_EQ_INT(posix_spawn_file_actions_adddup2(&actions, err_fd, STDERR_FILENO), 0);
  pid_t pid;
  int spawned = posix_spawn(&pid, TSR_TOOL_PATH, &actions, NULL, (char *const *)argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) CHECK_FAIL_("could not run %s: %s", TSR_TOOL_PATH, strerror(spawned));
  int wait_status = 0;
  CHECK(waitpid(pid, &wait_status, 0) == pid);

  tool_run run = {WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1, read_whole_file(out_fd),
                  read_whole_file(err_fd)};
  close(out_fd);
  close(err_fd);
  return run;
}

static void free_run(tool_run *run) {
  free(run->out);
  free(run->err);
}

/* Fails with the whole run shown, so a broken expectation is easy to read. */
static void expect(const tool_run *run, const char *what, int exit_code, const char *in_out,
                   const char *in_err) {
  bool ok = run->exit_code == exit_code && (!in_out || strstr(run->out, in_out)) &&
            (!in_err || strstr(run->err, in_err));
  if (!ok)
    CHECK_FAIL_(
        "tessera %s: exit %d (want %d), stdout should contain \"%s\", stderr \"%s\"\n"
        "--- stdout:\n%s--- stderr:\n%s---",
        what, run->exit_code, exit_code, in_out ? in_out : "", in_err ? in_err : "", run->out,
        run->err);
}

/* The number after "key": in cJSON's output (any whitespace between); fails when absent. */
static double json_number(const char *json, const char *key) {
  char quoted[64];
  snprintf(quoted, sizeof quoted, "\"%s\":", key);
  const char *at = strstr(json, quoted);
  if (!at) CHECK_FAIL_("JSON has no key \"%s\":\n%s", key, json);
  char *end = NULL;
  double value = strtod(at + strlen(quoted), &end);
  CHECK(end != at + strlen(quoted));
  return value;
}

/* The text parses as one JSON object (cJSON, the library the program writes it with). */
static void check_json_shape(const char *json) {
  cJSON *root = cJSON_Parse(json);
  if (!root || !cJSON_IsObject(root)) CHECK_FAIL_("not one JSON object:\n%s", json);
  cJSON_Delete(root);
}

/* The program reports the build this test links. */
static void check_build_json(const char *json) {
  tsr_build_info build;
  tsr_build_info_get(&build);
  cJSON *root = cJSON_Parse(json);
  CHECK(root != NULL);
  cJSON *b = cJSON_GetObjectItemCaseSensitive(root, "build");
  CHECK(cJSON_IsObject(b));
  CHECK(cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(b, "cuda")));
  CHECK_EQ_INT(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "cuda")), build.cuda);
  cJSON *type = cJSON_GetObjectItemCaseSensitive(b, "type");
  CHECK(cJSON_IsString(type) && strcmp(type->valuestring, build.build_type) == 0);
  cJSON_Delete(root);
}

static void check_top_level(void) {
  char version_line[64];
  snprintf(version_line, sizeof version_line, "tessera %s\n", tsr_version());
  tool_run run = run_tool("--version", NULL);
  expect(&run, "--version", 0, version_line, NULL);
  free_run(&run);

  run = run_tool("--help", NULL);
  expect(&run, "--help", 0, "usage: tessera", NULL);
  expect(&run, "--help", 0, "info", NULL);
  expect(&run, "--help", 0, "selfcheck", NULL);
  free_run(&run);

  run = run_tool(NULL);
  expect(&run, "(no arguments)", 2, NULL, "usage: tessera");
  free_run(&run);

  run = run_tool("frobnicate", NULL);
  expect(&run, "frobnicate", 2, NULL, "frobnicate");
  CHECK_EQ_INT(run.out[0], '\0'); /* nothing on stdout for a usage error */
  free_run(&run);

  run = run_tool("--frobnicate", NULL);
  expect(&run, "--frobnicate", 2, NULL, "--frobnicate");
  free_run(&run);
}

static void check_info(void) {
  char version_line[64];
  snprintf(version_line, sizeof version_line, "tessera %s\n", tsr_version());
  tool_run run = run_tool("info", NULL);
  expect(&run, "info", 0, version_line, NULL);
  expect(&run, "info", 0, "cpu", NULL);
  expect(&run, "info", 0, "features", NULL);
  /* The embedded kernel sources, each with its hash (every build, CPU-only included). */
  const char *kernel = "cuda/kernels/dequantize.cuh";
  char kernel_line[160];
  snprintf(kernel_line, sizeof kernel_line, "%s  %s", tsr_kernel_source_sha256(kernel), kernel);
  expect(&run, "info", 0, "kernel sources:", NULL);
  expect(&run, "info", 0, kernel_line, NULL);
  free_run(&run);

  run = run_tool("info", "--help", NULL);
  expect(&run, "info --help", 0, "usage: tessera info", NULL);
  free_run(&run);

  run = run_tool("info", "--frobnicate", NULL);
  expect(&run, "info --frobnicate", 2, NULL, "--frobnicate");
  free_run(&run);

  run = run_tool("info", "--json", NULL);
  expect(&run, "info --json", 0, "\"devices\":", NULL);
  check_json_shape(run.out);
  char version_value[64];
  snprintf(version_value, sizeof version_value, "\"%s\"", tsr_version());
  expect(&run, "info --json", 0, version_value, NULL);
  static const char *const keys[] = {"\"name\":", "\"features\":", "\"type\":", "\"build\":"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    expect(&run, "info --json", 0, keys[i], NULL);
  char kernel_hash[80];
  snprintf(kernel_hash, sizeof kernel_hash, "\"%s\"", tsr_kernel_source_sha256(kernel));
  expect(&run, "info --json", 0, "\"kernel_sources\":", NULL);
  expect(&run, "info --json", 0, kernel_hash, NULL);
  /* The program sees the machine this test sees. */
  CHECK_EQ_INT(json_number(run.out, "gpu_count"), tsr_device_count(TSR_GPU));
  CHECK_EQ_INT(json_number(run.out, "cpu_count"), 1);
  CHECK(json_number(run.out, "memory_bytes") > 0);
  CHECK(json_number(run.out, "compute_units") >= 1);
  CHECK_EQ_INT(json_number(run.out, "discovery_probes"), 1);
  check_build_json(run.out);
  free_run(&run);
}

static void check_selfcheck(void) {
  tool_run run = run_tool("selfcheck", "--help", NULL);
  expect(&run, "selfcheck --help", 0, "usage: tessera selfcheck", NULL);
  free_run(&run);

  run = run_tool("selfcheck", "--frobnicate", NULL);
  expect(&run, "selfcheck --frobnicate", 2, NULL, "--frobnicate");
  free_run(&run);

  run = run_tool("selfcheck", "--device", "tpu", NULL);
  expect(&run, "selfcheck --device tpu", 2, NULL, "tpu");
  free_run(&run);

  run = run_tool("selfcheck", "--device", "gpu:99", NULL);
  expect(&run, "selfcheck --device gpu:99", 2, NULL, "gpu:99");
  free_run(&run);

  run = run_tool("selfcheck", "--device", "cpu", NULL);
  expect(&run, "selfcheck --device cpu", 0, "selfcheck: ok\n", NULL);
  free_run(&run);

  run = run_tool("selfcheck", NULL);
  expect(&run, "selfcheck", 0, "selfcheck: ok\n", NULL);
  free_run(&run);

  run = run_tool("selfcheck", "--json", "--device", "cpu", NULL);
  expect(&run, "selfcheck --json", 0, "\"checks\":", NULL);
  check_json_shape(run.out);
  expect(&run, "selfcheck --json", 0, "\"ok\":\ttrue", NULL);
  CHECK(strstr(run.out, "false") == NULL);
  free_run(&run);
}

/* The environment knobs are read once per process, warned about when wrong, never fatal, and
 * TSR_LOG filters the warnings. Each run is a fresh process, so each sees its own values. */
static void check_env_knobs(void) {
  /* An unparseable value is ignored: the automatic choice, GPU 0 where one is usable. A parsed
     but unusable device falls back to the CPU. */
  const char *automatic = tsr_device_count(TSR_GPU) > 0 ? "default gpu:0" : "default cpu";
  setenv("TSR_DEFAULT_DEVICE", "bogus", 1);
  tool_run run = run_tool("info", NULL);
  expect(&run, "TSR_DEFAULT_DEVICE=bogus info", 0, automatic, "TSR_DEFAULT_DEVICE=bogus");
  free_run(&run);
  setenv("TSR_DEFAULT_DEVICE", "gpu:9", 1);
  run = run_tool("info", NULL);
  expect(&run, "TSR_DEFAULT_DEVICE=gpu:9 info", 0, "default cpu", "gpu:9 is not usable");
  free_run(&run);
  setenv("TSR_LOG", "error", 1); /* the same warning, filtered out */
  run = run_tool("info", NULL);
  expect(&run, "TSR_LOG=error info", 0, "default cpu", NULL);
  if (strstr(run.err, "gpu:9")) CHECK_FAIL_("TSR_LOG=error still printed: %s", run.err);
  free_run(&run);
  setenv("TSR_LOG", "loud", 1);
  setenv("TSR_CACHE_LIMIT", "12abc", 1);
  run = run_tool("selfcheck", NULL);
  expect(&run, "TSR_LOG=loud TSR_CACHE_LIMIT=12abc selfcheck", 0, "selfcheck: ok", "TSR_LOG=loud");
  expect(&run, "TSR_CACHE_LIMIT=12abc selfcheck", 0, NULL, "TSR_CACHE_LIMIT=12abc");
  free_run(&run);
  unsetenv("TSR_DEFAULT_DEVICE");
  unsetenv("TSR_LOG");
  unsetenv("TSR_CACHE_LIMIT");
}

int main(void) {
  check_top_level();
  check_info();
  check_selfcheck();
  check_env_knobs();
  printf("test_cli: ok (%s)\n", TSR_TOOL_PATH);
  return 0;
}
