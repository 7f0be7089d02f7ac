/* tests/core/test_step.c — tsr_step: every run after the first replays the recording and gives
 * the bits a fresh evaluation of the same graph gives (the same kernels on the same values),
 * buffers keep their addresses, values of the wrong kind are refused before anything runs, a
 * failed first run ends the step, a failed replay does not, and nothing leaks. On the default
 * device, so on a GPU the graph path (tsr_step_is_graph) is the one tested. */
#include "check.h"

static tsr_array *from_f32(const float *data, const int64_t *shape, int ndim) {
  tsr_array *a = NULL;
  CHECK_OK(tsr_array_from_data(&a, data, TSR_FLOAT32, shape, ndim));
  return a;
}

/* y = rms_norm(x * s + x) * w, then softmax: a few kernels of different kinds. */
static tsr_array *chain(tsr_array *x, tsr_array *s, tsr_array *w) {
  tsr_array *xs = NULL, *sum = NULL, *norm = NULL, *y = NULL;
  CHECK_OK(tsr_multiply(&xs, x, s, NULL));
  CHECK_OK(tsr_add(&sum, xs, x, NULL));
  CHECK_OK(tsr_rms_norm(&norm, sum, w, 1e-5f, NULL));
  CHECK_OK(tsr_softmax(&y, norm, -1, NULL));
  tsr_array_release(xs), tsr_array_release(sum), tsr_array_release(norm);
  return y;
}

static void fill(float *v, int n, int run) {
  for (int i = 0; i < n; i++)
    v[i] = (float)((i * 7 + run * 13) % 11) * 0.25f - 1.0f;
}

static void test_replay_matches_fresh_evaluation(void) {
  enum { N = 24 };
  int64_t shape[2] = {3, 8}, one[1] = {1}, wshape[1] = {8};
  float xv[N], sv[1] = {0.5f}, wv[8];
  fill(xv, N, 0);
  fill(wv, 8, 5);
  tsr_array *x = from_f32(xv, shape, 2), *s = from_f32(sv, one, 1), *w = from_f32(wv, wshape, 1);
  tsr_array *y = chain(x, s, w);
  tsr_step *step = NULL;
  tsr_array *inputs[2] = {x, s};
  CHECK_OK(tsr_step_new(&step, inputs, 2, &y, 1));
  CHECK(!tsr_step_is_graph(step)); /* nothing recorded yet */
  void *first_data = NULL;
  for (int run = 0; run < 5; run++) {
    fill(xv, N, run + 1);
    sv[0] = 0.25f * (float)run - 0.5f;
    tsr_array *nx = from_f32(xv, shape, 2), *ns = from_f32(sv, one, 1);
    tsr_array *values[2] = {nx, ns};
    CHECK_OK(tsr_step_run(step, values, 2));
    float got[N], want[N];
    CHECK_OK(tsr_array_read(y, got, sizeof got));
    tsr_array *fresh = chain(nx, ns, w);
    CHECK_OK(tsr_array_read(fresh, want, sizeof want));
    CHECK(memcmp(got, want, sizeof got) == 0);
    void *data = NULL;
    CHECK_OK(tsr_array_data(y, &data));
    if (run == 0) first_data = data;
    CHECK(data == first_data); /* replayed in place */
    tsr_array_release(fresh), tsr_array_release(nx), tsr_array_release(ns);
  }
  bool gpu = tsr_array_device(y).type == TSR_GPU;
  CHECK_EQ_INT(tsr_step_is_graph(step), gpu);
  /* No values: the inputs as they are (the last run's). */
  float before[N], after[N];
  CHECK_OK(tsr_array_read(y, before, sizeof before));
  CHECK_OK(tsr_step_run(step, NULL, 0));
  CHECK_OK(tsr_array_read(y, after, sizeof after));
  CHECK(memcmp(before, after, sizeof before) == 0);
  tsr_step_free(step);
  CHECK_OK(tsr_array_read(y, after, sizeof after)); /* still the caller's, last values */
  CHECK(memcmp(before, after, sizeof before) == 0);
  tsr_array_release(x), tsr_array_release(s), tsr_array_release(w), tsr_array_release(y);
}

/* A take whose indices are an input: a bad index fails that replay only. */
static void test_failed_replay_then_good_one(void) {
  float table[12];
  fill(table, 12, 3);
  int64_t tshape[2] = {4, 3}, one[1] = {1};
  int32_t index = 1;
  tsr_array *t = from_f32(table, tshape, 2), *idx = NULL, *row = NULL;
  CHECK_OK(tsr_array_from_data(&idx, &index, TSR_INT32, one, 1));
  CHECK_OK(tsr_take(&row, t, idx, 0, NULL));
  tsr_step *step = NULL;
  CHECK_OK(tsr_step_new(&step, &idx, 1, &row, 1));
  CHECK_OK(tsr_step_run(step, NULL, 0));
  float got[3];
  CHECK_OK(tsr_array_read(row, got, sizeof got));
  CHECK(memcmp(got, table + 3, sizeof got) == 0);
  int32_t values[3] = {3, 9, 2};
  tsr_status want[3] = {TSR_OK, TSR_ERR_INVALID, TSR_OK};
  for (int i = 0; i < 3; i++) {
    tsr_array *v = NULL;
    CHECK_OK(tsr_array_from_data(&v, &values[i], TSR_INT32, one, 1));
    CHECK_STATUS(tsr_step_run(step, &v, 1), want[i]);
    if (want[i] != TSR_OK) {
      CHECK_MESSAGE("9");
    } else {
      CHECK_OK(tsr_array_read(row, got, sizeof got));
      CHECK(memcmp(got, table + 3 * values[i], sizeof got) == 0);
    }
    tsr_array_release(v);
  }
  tsr_step_free(step);
  tsr_array_release(t), tsr_array_release(idx), tsr_array_release(row);
}

static void test_failed_first_run_ends_the_step(void) {
  float table[6] = {0};
  int64_t tshape[2] = {2, 3}, one[1] = {1};
  int32_t bad = 5;
  tsr_array *t = from_f32(table, tshape, 2), *idx = NULL, *row = NULL;
  CHECK_OK(tsr_array_from_data(&idx, &bad, TSR_INT32, one, 1));
  CHECK_OK(tsr_take(&row, t, idx, 0, NULL));
  tsr_step *step = NULL;
  CHECK_OK(tsr_step_new(&step, &idx, 1, &row, 1));
  CHECK_STATUS(tsr_step_run(step, NULL, 0), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_step_run(step, NULL, 0), TSR_ERR_STATE);
  CHECK_MESSAGE("first run failed");
  CHECK_MESSAGE("5");
  tsr_step_free(step);
  tsr_array_release(t), tsr_array_release(idx), tsr_array_release(row);
}

static void test_bad_arguments(void) {
  float v[4] = {1, 2, 3, 4};
  int64_t s4[1] = {4}, s2[2] = {2, 2};
  tsr_array *x = from_f32(v, s4, 1), *y = NULL, *done = from_f32(v, s4, 1);
  CHECK_OK(tsr_add(&y, x, x, NULL));
  tsr_step *step = NULL;
  CHECK_STATUS(tsr_step_new(NULL, &x, 1, &y, 1), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_step_new(&step, &x, 1, NULL, 0), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_step_new(&step, &x, 1, &done, 1), TSR_ERR_INVALID);
  CHECK_MESSAGE("already evaluated");
  CHECK_STATUS(tsr_step_new(&step, &y, 1, &y, 1), TSR_ERR_INVALID); /* a lazy input */
  CHECK_MESSAGE("inputs[0]");
  CHECK_MESSAGE("lazy");
  tsr_array *many[TSR_STEP_MAX_INPUTS + 1];
  for (int i = 0; i <= TSR_STEP_MAX_INPUTS; i++)
    many[i] = x;
  CHECK_STATUS(tsr_step_new(&step, many, TSR_STEP_MAX_INPUTS + 1, &y, 1), TSR_ERR_INVALID);
  CHECK_MESSAGE("9 inputs");
  CHECK(step == NULL);
  tsr_stream *other = NULL; /* a graph over two streams */
  CHECK_OK(tsr_stream_new(&other, tsr_array_device(x)));
  tsr_array *z = NULL, *both = NULL;
  CHECK_OK(tsr_add(&z, x, x, other));
  CHECK_OK(tsr_add(&both, z, x, NULL));
  CHECK_STATUS(tsr_step_new(&step, &x, 1, &both, 1), TSR_ERR_UNSUPPORTED);
  CHECK_MESSAGE("another stream");
  CHECK(step == NULL);
  CHECK_OK(tsr_step_new(&step, &x, 1, &y, 1));
  tsr_array *wrong = from_f32(v, s2, 2), *ints = NULL;
  int32_t iv[4] = {1, 2, 3, 4};
  CHECK_OK(tsr_array_from_data(&ints, iv, TSR_INT32, s4, 1));
  CHECK_STATUS(tsr_step_run(step, &wrong, 1), TSR_ERR_INVALID);
  CHECK_MESSAGE("[2, 2]");
  CHECK_MESSAGE("[4]");
  CHECK_STATUS(tsr_step_run(step, &ints, 1), TSR_ERR_INVALID);
  CHECK_MESSAGE("int32");
  tsr_array *two[2] = {x, x};
  CHECK_STATUS(tsr_step_run(step, two, 2), TSR_ERR_INVALID);
  CHECK_MESSAGE("2 values for 1 inputs");
  CHECK(tsr_step_run(step, NULL, 0) == TSR_OK); /* nothing was run by the refusals */
  float got[4];
  CHECK_OK(tsr_array_read(y, got, sizeof got));
  CHECK(got[3] == 8.0f);
  CHECK_STATUS(tsr_step_run(NULL, NULL, 0), TSR_ERR_INVALID);
  CHECK(!tsr_step_is_graph(NULL));
  tsr_step_free(NULL);
  tsr_step_free(step);
  tsr_array_release(z), tsr_array_release(both), tsr_array_release(wrong);
  tsr_array_release(ints), tsr_array_release(x), tsr_array_release(y), tsr_array_release(done);
  CHECK_OK(tsr_stream_free(other));
}

int main(void) {
  test_replay_matches_fresh_evaluation();
  test_failed_replay_then_good_one();
  test_failed_first_run_ends_the_step();
  test_bad_arguments();
  CHECK_NO_LEAKS();
  printf("test_step: ok\n");
  return 0;
}
