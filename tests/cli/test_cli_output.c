/* tests/cli/test_cli_output.c — the tessera program when its output cannot be written: stdout on
 * /dev/full, stdout closed, stdout read-only. Every subcommand that prints (and --help and
 * --version) must exit 1 with a message on stderr instead of 0; a run that writes nothing to
 * stdout keeps its own exit code. Not what the output says (tests/cli/test_cli.c checks that). */
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

extern char **environ;

typedef enum { STDOUT_FULL, STDOUT_CLOSED, STDOUT_READ_ONLY } stdout_kind;
static const char *const kind_names[] = {"/dev/full", "closed", "read-only"};

typedef struct {
  int exit_code;
  char err[4096];
} tool_run;

/* Runs the program with argv (NULL-terminated) and stdout as `kind`; stderr captured. */
static tool_run run_tool(stdout_kind kind, const char *const *args) {
  const char *argv[16] = {TSR_TOOL_PATH};
  int argc = 1;
  for (int i = 0; args[i] && argc < 15; i++)
    argv[argc++] = args[i];
  argv[argc] = NULL;
  char path[] = "/tmp/tessera-test-cli-output-XXXXXX";
  int err_fd = mkstemp(path);
  CHECK(err_fd >= 0);
  unlink(path);
  posix_spawn_file_actions_t actions;
  CHECK_EQ_INT(posix_spawn_file_actions_init(&actions), 0);
  CHECK_EQ_INT(posix_spawn_file_actions_adddup2(&actions, err_fd, STDERR_FILENO), 0);
  if (kind == STDOUT_FULL)
    CHECK_EQ_INT(
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/full", O_WRONLY, 0), 0);
  else if (kind == STDOUT_CLOSED)
    CHECK_EQ_INT(posix_spawn_file_actions_addclose(&actions, STDOUT_FILENO), 0);
  else
    CHECK_EQ_INT(
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_RDONLY, 0), 0);
  pid_t pid;
  int spawned = posix_spawn(&pid, TSR_TOOL_PATH, &actions, NULL, (char *const *)argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) CHECK_FAIL_("could not run %s: %s", TSR_TOOL_PATH, strerror(spawned));
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  tool_run run = {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ""};
  ssize_t n = pread(err_fd, run.err, sizeof run.err - 1, 0);
  CHECK(n >= 0);
  run.err[n] = '\0';
  close(err_fd);
  return run;
}

static void join_args(const char *const *args, char *buf, size_t cap) {
  buf[0] = '\0';
  for (int i = 0; args[i]; i++) {
    strncat(buf, " ", cap - strlen(buf) - 1);
    strncat(buf, args[i], cap - strlen(buf) - 1);
  }
}

static void expect_write_failure(const char *const *args) {
  for (int kind = 0; kind < 3; kind++) {
    tool_run run = run_tool((stdout_kind)kind, args);
    char text[256];
    join_args(args, text, sizeof text);
    if (run.exit_code != 1 || !strstr(run.err, "could not write the output"))
      CHECK_FAIL_(
          "tessera%s with stdout %s: exit %d (want 1) and stderr should say the output "
          "could not be written; stderr:\n%s",
          text, kind_names[kind], run.exit_code, run.err);
  }
}

int main(void) {
  static const char *const version[] = {"--version", NULL};
  static const char *const help[] = {"--help", NULL};
  static const char *const info[] = {"info", NULL};
  static const char *const info_json[] = {"info", "--json", NULL};
  static const char *const info_help[] = {"info", "--help", NULL};
  static const char *const selfcheck[] = {"selfcheck", "--device", "cpu", NULL};
  static const char *const selfcheck_json[] = {"selfcheck", "--json", NULL};
  static const char *const selfcheck_help[] = {"selfcheck", "--help", NULL};
  static const char *const generate_help[] = {"generate", "--help", NULL};
  static const char *const logits_help[] = {"logits", "--help", NULL};
  static const char *const demo_help[] = {"demo-model", "--help", NULL};
  const char *const *printing[] = {version,       help,        info,           info_json,
                                   info_help,     selfcheck,   selfcheck_json, selfcheck_help,
                                   generate_help, logits_help, demo_help};
  for (size_t i = 0; i < sizeof printing / sizeof printing[0]; i++)
    expect_write_failure(printing[i]);

  /* Nothing written to stdout: the run's own code stands (2 for bad usage), with stdout closed. */
  static const char *const unknown[] = {"frobnicate", NULL};
  static const char *const bad_flag[] = {"info", "--frobnicate", NULL};
  static const char *const none[] = {NULL};
  const char *const *usage[] = {unknown, bad_flag, none};
  for (size_t i = 0; i < sizeof usage / sizeof usage[0]; i++) {
    tool_run run = run_tool(STDOUT_CLOSED, usage[i]);
    CHECK_EQ_INT(run.exit_code, 2);
    CHECK(strstr(run.err, "could not write the output") == NULL);
  }
  puts("test_cli_output: ok");
  return 0;
}
