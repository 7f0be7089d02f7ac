/* tests/cli/tool_run.h — running the `tessera` program under test (TSR_TOOL_PATH) with its
 * stdout and stderr captured, for the CLI tests that take their arguments as an array. */
#ifndef TSR_TESTS_CLI_TOOL_RUN_H
#define TSR_TESTS_CLI_TOOL_RUN_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

typedef struct {
  int exit_code; /* -1 when the program did not exit normally */
  char *out, *err;
} tool_run;

/* The whole file as a NUL-terminated string (malloc'ed). */
static inline char *tool_read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL);
  CHECK_EQ_INT(fseek(f, 0, SEEK_END), 0);
  long size = ftell(f);
  rewind(f);
  char *text = calloc((size_t)size + 1, 1);
  CHECK(text != NULL);
  CHECK_EQ_U64(fread(text, 1, (size_t)size, f), (uint64_t)size);
  fclose(f);
  return text;
}

/* Runs argv[0] (a path) with argv (NULL-terminated), stdout and stderr captured in files in
   dir. */
static inline tool_run run_argv_in(const char *dir, const char *const *argv) {
  char out_path[300], err_path[300];
  snprintf(out_path, sizeof out_path, "%s/stdout", dir);
  snprintf(err_path, sizeof err_path, "%s/stderr", dir);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) _exit(126);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  return (tool_run){WIFEXITED(status) ? WEXITSTATUS(status) : -1, tool_read_file(out_path),
                    tool_read_file(err_path)};
}

/* Runs TSR_TOOL_PATH with args (NULL-terminated), stdout and stderr captured in files in dir. */
static inline tool_run run_tool_in(const char *dir, const char *const *args) {
  const char *argv[24] = {TSR_TOOL_PATH};
  int argc = 1;
  for (int i = 0; args[i] && argc < 23; i++)
    argv[argc++] = args[i];
  argv[argc] = NULL;
  return run_argv_in(dir, argv);
}

static inline void tool_run_free(tool_run *run) {
  free(run->out);
  free(run->err);
}

/* Runs the program (run_tool_in(dir, args)) and checks its exit code and that stdout/stderr hold
 * the given texts (NULL: anything; "" for `in_out`: nothing at all), printing the command and
 * both streams on a failure. The run is freed unless `keep`. */
static inline void tool_expect_in(const char *dir, const char *const *args, int exit_code,
                                  const char *in_out, const char *in_err, tool_run *keep) {
  tool_run run = run_tool_in(dir, args);
  bool out_ok = !in_out || (in_out[0] ? strstr(run.out, in_out) != NULL : run.out[0] == '\0');
  if (run.exit_code != exit_code || !out_ok || (in_err && !strstr(run.err, in_err))) {
    fprintf(stderr, "tessera");
    for (int i = 0; args[i]; i++)
      fprintf(stderr, " %s", args[i]);
    CHECK_FAIL_(
        "exit %d (want %d), stdout should hold \"%s\", stderr \"%s\"\n--- stdout:\n%s"
        "--- stderr:\n%s---",
        run.exit_code, exit_code, in_out ? in_out : "", in_err ? in_err : "", run.out, run.err);
  }
  if (keep)
    *keep = run;
  else
    tool_run_free(&run);
}

#endif
