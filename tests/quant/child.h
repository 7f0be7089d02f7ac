/* tests/quant/child.h — runs this test program again in a child process with one environment
 * variable set (TSR_CPU_ISA=avx2 or scalar, TSR_NUM_THREADS=3): the instruction sets and thread
 * counts the machine would not otherwise take, through the same checks. The child is started
 * with the single argument "child"; its failure fails the parent. */
#ifndef TSR_TESTS_QUANT_CHILD_H
#define TSR_TESTS_QUANT_CHILD_H

#include <string.h>

#include "check.h"
#include "rerun.h"

static inline bool test_is_child(int argc, char **argv) {
  return argc > 1 && strcmp(argv[1], "child") == 0;
}

static inline void test_run_child(const char *name, const char *value) {
  test_rerun("child", NULL, name, value);
}

#endif
