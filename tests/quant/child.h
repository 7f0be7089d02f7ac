/* tests/quant/child.h — runs this test program again in a child process with one environment
 * variable set (TSR_CPU_ISA=avx2 or scalar, TSR_NUM_THREADS=3): the instruction sets and thread
 * counts the machine would not otherwise take, through the same checks. The child is started
 * with the single argument "child"; its failure fails the parent. */
#ifndef TSR_TESTS_QUANT_CHILD_H
#define TSR_TESTS_QUANT_CHILD_H

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static inline bool test_is_child(int argc, char **argv) {
  return argc > 1 && strcmp(argv[1], "child") == 0;
}

static inline void test_run_child(const char *name, const char *value) {
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    setenv(name, value, 1);
    execl("/proc/self/exe", "test-child", "child", (char *)NULL);
    _exit(127);
  }
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    CHECK_FAIL_("child with %s=%s failed (status %d)", name, value, status);
}

#endif
