/* tests/core/test_fault_graph.c — fault injection over a 50-op graph: failing each allocation in
 * turn gives TSR_ERR_NOMEM with a message naming the op and the size, leaks nothing (the ledger
 * returns to the inputs' bytes; LeakSanitizer under `make sanitize`), leaves the inputs valid,
 * and a re-evaluation afterwards gives the exact result. */
#include <tessera/testing.h>

#include "check.h"

enum { OPS = 50, WIDTH = 1000 };

static const tsr_device cpu = {TSR_CPU, 0};

/* node i = node (i - 1) + node (i / 2): a DAG with shared inputs, so buffers die at different
   times. Node 0 is x. */
static tsr_array *build(tsr_array *x) {
  tsr_array *nodes[OPS + 1];
  nodes[0] = tsr_array_retain(x);
  for (int i = 1; i <= OPS; i++)
    CHECK_OK(tsr_add(&nodes[i], nodes[i - 1], nodes[i / 2], NULL));
  for (int i = 0; i < OPS; i++)
    tsr_array_release(nodes[i]);
  return nodes[OPS];
}

static void reference(const float *x, float *out) {
  static float nodes[OPS + 1][WIDTH];
  for (int j = 0; j < WIDTH; j++)
    nodes[0][j] = x[j];
  for (int i = 1; i <= OPS; i++)
    for (int j = 0; j < WIDTH; j++)
      nodes[i][j] = nodes[i - 1][j] + nodes[i / 2][j];
  for (int j = 0; j < WIDTH; j++)
    out[j] = nodes[OPS][j];
}

static void check_exact(tsr_array *x, const float *want) {
  static float got[WIDTH];
  tsr_array *y = build(x);
  CHECK_OK(tsr_array_read(y, got, sizeof got));
  for (int j = 0; j < WIDTH; j++)
    CHECK(got[j] == want[j]);
  tsr_array_release(y);
}

int main(void) {
  CHECK_OK(tsr_memory_set_cache_limit(cpu, 0)); /* every op output is a system allocation */
  static float xs[WIDTH], want[WIDTH];
  for (int j = 0; j < WIDTH; j++)
    xs[j] = (float)(j % 7) * 0.25f - 0.5f;
  reference(xs, want);
  int64_t shape[1] = {WIDTH};
  tsr_array *x = NULL;
  CHECK_OK(tsr_array_from_data(&x, xs, TSR_FLOAT32, shape, 1));
  uint64_t inputs_active = tsr_memory_active(cpu);
  char size_text[32];
  snprintf(size_text, sizeof size_text, "%d bytes", WIDTH * 4 + 32); /* 4000 rounded to 64 */
  for (uint64_t k = 1; k <= OPS; k++) {
    CHECK_OK(tsr_testing_fail_allocation(cpu, k));
    tsr_array *y = build(x);
    CHECK_STATUS(tsr_eval(&y, 1), TSR_ERR_NOMEM);
    CHECK_MESSAGE("add [1000] float32");
    CHECK_MESSAGE(size_text);
    CHECK_EQ_U64(tsr_testing_fail_allocation_pending(cpu), 0); /* it fired */
    float probe[WIDTH];
    CHECK_STATUS(tsr_array_read(y, probe, sizeof probe), TSR_ERR_NOMEM); /* stays failed */
    tsr_array_release(y);
    CHECK_EQ_U64(tsr_memory_active(cpu), inputs_active);
    check_exact(x, want); /* recovered: the inputs are intact */
  }
  /* One past the graph's allocations: the armed failure never fires. */
  CHECK_OK(tsr_testing_fail_allocation(cpu, OPS + 1));
  check_exact(x, want);
  CHECK_EQ_U64(tsr_testing_fail_allocation_pending(cpu), 1);
  CHECK_OK(tsr_testing_fail_allocation(cpu, 0));
  tsr_array_release(x);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  puts("test_fault_graph: ok");
  return 0;
}
