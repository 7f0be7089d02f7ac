/* tests/rerun.h — runs this test program again in a child process, with a mode argument (and an
 * optional second one) and optionally one environment variable set; the child's failure fails
 * the parent. Used to take paths the parent cannot (another instruction set or thread count, a
 * backing cap that installs once per process). */
#ifndef TSR_TESTS_RERUN_H
#define TSR_TESTS_RERUN_H

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

/* Runs `<this program> mode [arg]` with env name=value when name is not NULL, and waits. */
static inline void test_rerun(const char *mode, const char *arg, const char *name,
                              const char *value) {
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    if (name) setenv(name, value, 1);
    execl("/proc/self/exe", "test-child", mode, arg, (char *)NULL);
    _exit(127);
  }
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    CHECK_FAIL_("child '%s %s' with %s=%s failed (status %d)", mode, arg ? arg : "",
                name ? name : "(no variable)", name ? value : "", status);
}

#endif
