/* tests/dist/test_mpi_graph.c — lazy collectives as ops in a graph: a tensor-shaped all_sum
 * between other ops, all_gather of 2-d, 0-d and strided inputs, empty arrays, several
 * collectives of one group evaluated in creation order even when each rank asks for them in
 * another order or on other streams, a node whose group was freed before it ran, and a rank
 * whose collective's input failed (the others fail at once, not at the group's timeout). */
#include "dist_check.h"

static int rank_of(tsr_group *g) {
  return tsr_group_rank(g);
}

static tsr_array *from(const void *data, tsr_dtype dtype, const int64_t *shape, int ndim) {
  tsr_array *a = NULL;
  CHECK_OK(tsr_array_from_data(&a, data, dtype, shape, ndim));
  return a;
}

/* out = all_sum(x * 2) + 1 for x [3, 5] = rank + index: each element is known exactly. */
static void sum_in_graph(tsr_group *g) {
  int n = tsr_group_size(g);
  float data[15], got[15], two = 2, one = 1;
  for (int i = 0; i < 15; i++)
    data[i] = (float)(rank_of(g) + i);
  int64_t shape[2] = {3, 5};
  tsr_array *x = from(data, TSR_FLOAT32, shape, 2), *c2 = from(&two, TSR_FLOAT32, NULL, 0);
  tsr_array *c1 = from(&one, TSR_FLOAT32, NULL, 0), *doubled = NULL, *sum = NULL, *out = NULL;
  CHECK_OK(tsr_multiply(&doubled, x, c2, NULL));
  CHECK_OK(tsr_all_sum(&sum, doubled, g, NULL));
  CHECK_OK(tsr_add(&out, sum, c1, NULL));
  CHECK_EQ_INT(tsr_array_ndim(out), 2);
  CHECK_OK(tsr_array_read(out, got, sizeof got));
  for (int i = 0; i < 15; i++) {
    float want = 1;
    for (int r = 0; r < n; r++)
      want += 2.0f * (float)(r + i);
    if (got[i] != want) CHECK_FAIL_("element %d: %g != %g", i, (double)got[i], (double)want);
  }
  tsr_array *all[] = {x, c2, c1, doubled, sum, out};
  for (size_t i = 0; i < 6; i++)
    tsr_array_release(all[i]);
}

/* all_gather of [2, 3] int32 (rank blocks in rank order), of a transposed view, of a 0-d x. */
static void gathers(tsr_group *g) {
  int n = tsr_group_size(g), r = rank_of(g);
  int32_t data[6], got[6 * 8], scalar = 100 + r;
  for (int i = 0; i < 6; i++)
    data[i] = r * 10 + i;
  int64_t shape[2] = {2, 3};
  tsr_array *x = from(data, TSR_INT32, shape, 2), *s = from(&scalar, TSR_INT32, NULL, 0);
  tsr_array *gx = NULL, *t = NULL, *gt = NULL, *gs = NULL;
  int axes[2] = {1, 0};
  CHECK_OK(tsr_transpose(&t, x, axes, 2, NULL));
  CHECK_OK(tsr_all_gather(&gx, x, g, NULL));
  CHECK_OK(tsr_all_gather(&gt, t, g, NULL));
  CHECK_OK(tsr_all_gather(&gs, s, g, NULL));
  CHECK_EQ_INT(tsr_array_dim(gx, 0), 2 * n);
  CHECK_EQ_INT(tsr_array_dim(gt, 0), 3 * n);
  CHECK_EQ_INT(tsr_array_dim(gs, 0), n);
  CHECK_OK(tsr_array_read(gx, got, (size_t)(6 * n) * sizeof *got));
  for (int q = 0; q < n; q++)
    for (int i = 0; i < 6; i++)
      CHECK_EQ_INT(got[q * 6 + i], q * 10 + i);
  CHECK_OK(tsr_array_read(gt, got, (size_t)(6 * n) * sizeof *got));
  for (int q = 0; q < n; q++) /* rank q's transpose: [3, 2], element (j, i) = q*10 + i*3 + j */
    for (int j = 0; j < 3; j++)
      for (int i = 0; i < 2; i++)
        CHECK_EQ_INT(got[q * 6 + j * 2 + i], q * 10 + i * 3 + j);
  CHECK_OK(tsr_array_read(gs, got, (size_t)n * sizeof *got));
  for (int q = 0; q < n; q++)
    CHECK_EQ_INT(got[q], 100 + q);
  tsr_array *all[] = {x, s, gx, t, gt, gs};
  for (size_t i = 0; i < 6; i++)
    tsr_array_release(all[i]);
}

/* Empty arrays are sealed (count 0) and move nothing. */
static void empty(tsr_group *g) {
  int64_t shape[2] = {0, 3};
  tsr_array *x = from(NULL, TSR_FLOAT16, shape, 2), *sum = NULL, *gathered = NULL;
  CHECK_OK(tsr_all_sum(&sum, x, g, NULL));
  CHECK_OK(tsr_all_gather(&gathered, x, g, NULL));
  tsr_array *both[2] = {sum, gathered};
  CHECK_OK(tsr_eval(both, 2));
  CHECK_EQ_INT(tsr_array_size(gathered), 0);
  tsr_array_release(x);
  tsr_array_release(sum);
  tsr_array_release(gathered);
}

/* Three collectives created in one order; ranks ask for them in different orders, on two
   streams: each runs after the group's previous one, so every rank seals them alike. */
static void creation_order(tsr_group *g) {
  int n = tsr_group_size(g), r = rank_of(g);
  tsr_stream *other = NULL;
  CHECK_OK(tsr_stream_new(&other, (tsr_device){TSR_CPU, 0}));
  float a[4] = {1, 2, 3, 4}, got[4 * 8];
  int64_t shape[1] = {4};
  tsr_array *x = from(a, TSR_FLOAT32, shape, 1), *c[3] = {NULL, NULL, NULL};
  CHECK_OK(tsr_all_sum(&c[0], x, g, NULL));
  CHECK_OK(tsr_all_gather(&c[1], x, g, other));
  CHECK_OK(tsr_all_sum(&c[2], c[0], g, other)); /* depends on c[0] through data too */
  int order[3] = {2, 0, 1};
  if (r % 2 == 1) order[0] = 1, order[1] = 2, order[2] = 0;
  for (int k = 0; k < 3; k++)
    CHECK_OK(tsr_eval(&c[order[k]], 1));
  CHECK_OK(tsr_array_read(c[0], got, 4 * sizeof *got));
  for (int i = 0; i < 4; i++)
    CHECK(got[i] == a[i] * (float)n);
  CHECK_OK(tsr_array_read(c[2], got, 4 * sizeof *got));
  for (int i = 0; i < 4; i++)
    CHECK(got[i] == a[i] * (float)(n * n));
  CHECK_OK(tsr_array_read(c[1], got, (size_t)(4 * n) * sizeof *got));
  for (int i = 0; i < 4 * n; i++)
    CHECK(got[i] == a[i % 4]);
  for (int k = 0; k < 3; k++)
    tsr_array_release(c[k]);
  tsr_array_release(x);
  CHECK_OK(tsr_stream_free(other));
}

/* Device memory on an mpi group (a machine with a GPU, e.g. mpirun -np 2 on one GPU): the data is
   staged through the host in the GPU stream's order, lazily and raw. Skipped without a GPU. */
static void gpu_staging(tsr_group *g) {
  if (tsr_device_count(TSR_GPU) == 0) return;
  tsr_device gpu = {TSR_GPU, 0};
  tsr_stream *s = tsr_default_stream(gpu);
  float data[100], got[100];
  for (int i = 0; i < 100; i++)
    data[i] = (float)dist_value(rank_of(g), (uint64_t)i);
  int64_t shape[1] = {100};
  tsr_array *x = NULL, *sum = NULL, *out = NULL;
  CHECK_OK(tsr_array_from_data_on(&x, data, TSR_FLOAT32, shape, 1, gpu));
  CHECK_OK(tsr_all_sum(&sum, x, g, s));
  CHECK(tsr_array_device(sum).type == TSR_GPU);
  CHECK_OK(tsr_array_read(sum, got, sizeof got));
  dist_check_sum(got, TSR_FLOAT32, 100, tsr_group_size(g), "lazy on the GPU");
  CHECK_OK(tsr_array_from_data_on(&out, data, TSR_FLOAT32, shape, 1, gpu));
  void *send = NULL, *recv = NULL;
  CHECK_OK(tsr_eval(&out, 1));
  CHECK_OK(tsr_array_data(x, &send));
  CHECK_OK(tsr_array_data(out, &recv));
  CHECK_OK(tsr_group_all_sum_raw(g, send, recv, 100, TSR_FLOAT32, s));
  CHECK_OK(tsr_array_read(out, got, sizeof got));
  dist_check_sum(got, TSR_FLOAT32, 100, tsr_group_size(g), "raw on the GPU");
  tsr_array_release(x);
  tsr_array_release(sum);
  tsr_array_release(out);
}

/* A collective whose group is freed (on every rank) before it runs fails with TSR_ERR_STATE. */
static void freed_group(void) {
  tsr_group *g = dist_group("mpi");
  float a[2] = {1, 2};
  int64_t shape[1] = {2};
  tsr_array *x = from(a, TSR_FLOAT32, shape, 1), *sum = NULL;
  CHECK_OK(tsr_all_sum(&sum, x, g, NULL));
  tsr_group_free(g);
  CHECK_STATUS(tsr_eval(&sum, 1), TSR_ERR_STATE);
  CHECK_MESSAGE("group was freed");
  tsr_array_release(sum);
  tsr_array_release(x);
}

/* A take that fails at run time on the last rank only: its indices hold 99 (out of range, found
   when the take runs: they come out of an add, so no range is known at construction). */
typedef struct {
  tsr_array *x, *zero, *given, *indices, *taken;
} failing_take;

static failing_take failing_take_new(tsr_group *g) {
  static const float a[4] = {1, 2, 3, 4};
  static const int32_t good[2] = {0, 3}, bad[2] = {0, 99}, zero = 0;
  int64_t shape[1] = {4}, index_shape[1] = {2};
  bool last = rank_of(g) == tsr_group_size(g) - 1;
  failing_take t = {from(a, TSR_FLOAT32, shape, 1), from(&zero, TSR_INT32, NULL, 0),
                    from(last ? bad : good, TSR_INT32, index_shape, 1), NULL, NULL};
  CHECK_OK(tsr_add(&t.indices, t.given, t.zero, NULL));
  CHECK_OK(tsr_take(&t.taken, t.x, t.indices, 0, NULL));
  return t;
}

static void failing_take_free(failing_take *t) {
  tsr_array *all[] = {t->x, t->zero, t->given, t->indices, t->taken};
  for (size_t i = 0; i < 5; i++)
    tsr_array_release(all[i]);
}

/* all_sum of a failing take. The last rank fails with its own TSR_ERR_INVALID; its collective
   never sums, but it still takes part in the seal as a refusal, so every other rank fails at once
   with TSR_ERR_DIST naming it instead of waiting out the group's 30 s timeout; a second
   collective built behind the first (chained to it) fails alike on every rank without sealing,
   and the group stays usable. */
static void failed_input(tsr_group *g) {
  bool last = rank_of(g) == tsr_group_size(g) - 1;
  failing_take t = failing_take_new(g);
  tsr_array *sum = NULL, *second = NULL;
  CHECK_OK(tsr_all_sum(&sum, t.taken, g, NULL));
  CHECK_OK(tsr_all_sum(&second, t.x, g, NULL));
  double start = dist_seconds();
  tsr_status status = tsr_eval(&sum, 1);
  double waited = dist_seconds() - start;
  if (last) {
    CHECK_STATUS(status, TSR_ERR_INVALID);
  } else {
    CHECK_STATUS(status, TSR_ERR_DIST);
    CHECK_MESSAGE("refused");
  }
  if (waited > 10.0) CHECK_FAIL_("the sum took %.1f s to fail (the timeout is 30 s)", waited);
  CHECK(tsr_eval(&second, 1) != TSR_OK);
  tsr_array_release(sum);
  tsr_array_release(second);
  failing_take_free(&t);
  sum_in_graph(g); /* still usable */
}

/* As failed_input, behind a slow sum on another stream: the failed collective's refusal waits
   for the sum it is ordered behind, so it does not take that one's place in the sequence (the
   others would pair their slow sum with the refusal and this rank's slow sum with their next
   call). */
static void refusal_behind_another_stream(tsr_group *g) {
  bool last = rank_of(g) == tsr_group_size(g) - 1;
  tsr_stream *other = NULL;
  CHECK_OK(tsr_stream_new(&other, (tsr_device){TSR_CPU, 0}));
  int64_t big[2] = {512, 512};
  float *m = malloc(512 * 512 * sizeof *m);
  CHECK(m != NULL);
  for (int i = 0; i < 512 * 512; i++)
    m[i] = (float)(i % 7) * 1e-3f;
  tsr_array *w = from(m, TSR_FLOAT32, big, 2), *slow = NULL, *p = NULL;
  CHECK_OK(tsr_matmul(&slow, w, w, other));
  for (int i = 0; i < 6; i++) { /* tens of ms of work before the slow sum can seal */
    tsr_array *next = NULL;
    CHECK_OK(tsr_matmul(&next, slow, w, other));
    tsr_array_release(slow);
    slow = next;
  }
  CHECK_OK(tsr_all_sum(&p, slow, g, other));
  failing_take t = failing_take_new(g);
  tsr_array *c = NULL;
  CHECK_OK(tsr_all_sum(&c, t.taken, g, NULL));
  CHECK_STATUS(tsr_eval(&c, 1), last ? TSR_ERR_INVALID : TSR_ERR_DIST);
  CHECK_OK(tsr_eval(&p, 1)); /* the slow sum paired with itself on every rank */
  tsr_array *all[] = {w, slow, p, c};
  for (size_t i = 0; i < 4; i++)
    tsr_array_release(all[i]);
  failing_take_free(&t);
  free(m);
  CHECK_OK(tsr_stream_free(other));
  sum_in_graph(g); /* still in step */
}

/* The last rank builds a lazy sum and abandons it (released unevaluated: its caller failed
   before evaluating it), telling the group with one raw refusal instead; the others' sum fails
   at once. The abandoned node must never run: the next lazy sum, on every rank, sums the right
   values (an abandoned node run behind it would seal out of step: one rank summing the wrong
   call's data, the other timing out). */
static void abandoned(tsr_group *g) {
  int rank = rank_of(g), last = tsr_group_size(g) - 1;
  float hundred[2] = {100, 100}, one[2] = {1, 1}, got[2];
  int64_t shape[1] = {2};
  tsr_array *x = from(hundred, TSR_FLOAT32, shape, 1), *ones = from(one, TSR_FLOAT32, shape, 1);
  tsr_array *first = NULL, *next = NULL;
  CHECK_OK(tsr_all_sum(&first, x, g, NULL));
  if (rank == last) {
    tsr_array_release(first);
    CHECK_STATUS(tsr_group_all_sum_raw(g, NULL, NULL, 1, TSR_FLOAT32, dist_cpu()), TSR_ERR_INVALID);
  } else {
    CHECK_STATUS(tsr_eval(&first, 1), TSR_ERR_DIST);
    tsr_array_release(first);
  }
  CHECK_OK(tsr_all_sum(&next, ones, g, NULL));
  CHECK_OK(tsr_array_read(next, got, sizeof got));
  CHECK(got[0] == (float)tsr_group_size(g) && got[1] == (float)tsr_group_size(g));
  tsr_array_release(next);
  tsr_array_release(ones);
  tsr_array_release(x);
}

int main(void) {
  tsr_group *g = dist_group("auto"); /* under mpirun without GPUs: an mpi group */
  CHECK_OK(tsr_group_set_timeout(g, 30));
  sum_in_graph(g);
  gathers(g);
  empty(g);
  creation_order(g);
  gpu_staging(g);
  failed_input(g);
  refusal_behind_another_stream(g);
  abandoned(g);
  int rank = rank_of(g), size = tsr_group_size(g);
  tsr_group_free(g);
  freed_group();
  printf("[rank %d/%d] test_mpi_graph: ok\n", rank, size);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
