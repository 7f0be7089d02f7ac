/* tests/cuda/test_gpu_indices.c — the GPU's bounds checks at the edge of the range, with indices
 * made from host data (whose value range tessera knows, so an in-range gather skips its device
 * flag and the synchronization that reads it back; core/value_range.h): an index equal to the
 * axis length or the matrix count is still refused with the value named, on every side of take,
 * take_along_axis and gather_qmm, and in-range indices gather the right values. Without a usable
 * GPU: one skip line. */
#include "check.h"

static const tsr_device gpu = {TSR_GPU, 0};

static tsr_array *on_gpu(const void *data, tsr_dtype dtype, const int64_t *shape, int ndim) {
  tsr_array *a = NULL;
  CHECK_OK(tsr_array_from_data_on(&a, data, dtype, shape, ndim, gpu));
  return a;
}

static void expect_refused(tsr_array *out, const char *value) {
  CHECK_STATUS(tsr_eval(&out, 1), TSR_ERR_INVALID);
  CHECK_MESSAGE("out of range");
  CHECK_MESSAGE(value);
  tsr_array_release(out);
}

static void test_take(void) {
  float table[12] = {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23};
  int32_t edge[2] = {0, 3}, inside[2] = {2, 0};
  int64_t shape[2] = {3, 4}, two[1] = {2};
  tsr_array *a = on_gpu(table, TSR_FLOAT32, shape, 2), *bad = on_gpu(edge, TSR_INT32, two, 1);
  tsr_array *good = on_gpu(inside, TSR_INT32, two, 1), *out = NULL;
  CHECK_OK(tsr_take(&out, a, bad, 0, NULL));
  expect_refused(out, "index 3");
  CHECK_OK(tsr_take(&out, a, good, 0, NULL));
  float got[8];
  CHECK_OK(tsr_array_read(out, got, sizeof got));
  CHECK(got[0] == 20 && got[3] == 23 && got[4] == 0 && got[7] == 3);
  tsr_array_release(out);
  /* take_along_axis over axis 1 (length 4): 4 is one past the end */
  int32_t along_edge[6] = {0, 1, 4, 3, 2, 1}, along_inside[6] = {3, 2, 1, 0, 3, 2};
  int64_t along_shape[2] = {3, 2};
  tsr_array *along_bad = on_gpu(along_edge, TSR_INT32, along_shape, 2);
  tsr_array *along_good = on_gpu(along_inside, TSR_INT32, along_shape, 2);
  CHECK_OK(tsr_take_along_axis(&out, a, along_bad, 1, NULL));
  expect_refused(out, "index 4");
  CHECK_OK(tsr_take_along_axis(&out, a, along_good, 1, NULL));
  float along[6];
  CHECK_OK(tsr_array_read(out, along, sizeof along));
  CHECK(along[0] == 3 && along[1] == 2 && along[2] == 11 && along[5] == 22);
  tsr_array_release(out);
  tsr_array_release(a), tsr_array_release(bad), tsr_array_release(good);
  tsr_array_release(along_bad), tsr_array_release(along_good);
}

static void test_gather_qmm(void) {
  enum { E = 2, N = 64, K = 64 };
  static float w[E * N * K], x[K];
  for (int i = 0; i < E * N * K; i++)
    w[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
  for (int i = 0; i < K; i++)
    x[i] = 1.0f;
  int64_t w_shape[3] = {E, N, K}, x_shape[3] = {1, 1, K}, one[1] = {1};
  tsr_array *wa = on_gpu(w, TSR_FLOAT32, w_shape, 3), *xa = on_gpu(x, TSR_FLOAT32, x_shape, 3);
  tsr_array *w_q = NULL, *scales = NULL, *biases = NULL, *out = NULL;
  CHECK_OK(tsr_quantize(&w_q, &scales, &biases, wa, 64, 4, TSR_QUANT_AFFINE, NULL));
  int32_t rhs_edge[1] = {E}, rhs_inside[1] = {E - 1}, lhs_edge[1] = {1}, zero[1] = {0};
  tsr_array *rhs_bad = on_gpu(rhs_edge, TSR_INT32, one, 1);
  tsr_array *rhs_good = on_gpu(rhs_inside, TSR_INT32, one, 1);
  tsr_array *lhs_bad = on_gpu(lhs_edge, TSR_INT32, one, 1),
            *lhs_good = on_gpu(zero, TSR_INT32, one, 1);
  CHECK_OK(tsr_gather_qmm(&out, xa, w_q, scales, biases, NULL, rhs_bad, true, 64, 4,
                          TSR_QUANT_AFFINE, false, NULL));
  expect_refused(out, "rhs_indices value 2");
  CHECK_OK(tsr_gather_qmm(&out, xa, w_q, scales, biases, lhs_bad, rhs_good, true, 64, 4,
                          TSR_QUANT_AFFINE, false, NULL));
  expect_refused(out, "lhs_indices value 1");
  /* in range on both sides: matrix 1 against the same product through quantized_matmul */
  tsr_array *w1 = NULL, *s1 = NULL, *b1 = NULL, *x2 = NULL, *want = NULL;
  CHECK_OK(tsr_gather_qmm(&out, xa, w_q, scales, biases, lhs_good, rhs_good, true, 64, 4,
                          TSR_QUANT_AFFINE, false, NULL));
  CHECK_OK(tsr_slice(&w1, w_q, (int64_t[]){1}, (int64_t[]){2}, NULL, 1, NULL));
  CHECK_OK(tsr_slice(&s1, scales, (int64_t[]){1}, (int64_t[]){2}, NULL, 1, NULL));
  CHECK_OK(tsr_slice(&b1, biases, (int64_t[]){1}, (int64_t[]){2}, NULL, 1, NULL));
  CHECK_OK(tsr_reshape(&x2, xa, (int64_t[]){1, K}, 2, NULL));
  tsr_array *w1r = NULL, *s1r = NULL, *b1r = NULL;
  CHECK_OK(tsr_reshape(&w1r, w1, (int64_t[]){N, K / 8}, 2, NULL));
  CHECK_OK(tsr_reshape(&s1r, s1, (int64_t[]){N, 1}, 2, NULL));
  CHECK_OK(tsr_reshape(&b1r, b1, (int64_t[]){N, 1}, 2, NULL));
  CHECK_OK(tsr_quantized_matmul(&want, x2, w1r, s1r, b1r, true, 64, 4, TSR_QUANT_AFFINE, NULL));
  float got[N], expected[N];
  CHECK_OK(tsr_array_read(out, got, sizeof got));
  CHECK_OK(tsr_array_read(want, expected, sizeof expected));
  for (int i = 0; i < N; i++)
    CHECK(got[i] == expected[i]);
  tsr_array *all[] = {wa,       xa, w_q, scales, biases, out,  rhs_bad, rhs_good, lhs_bad,
                      lhs_good, w1, s1,  b1,     x2,     want, w1r,     s1r,      b1r};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    tsr_array_release(all[i]);
}

int main(void) {
  if (tsr_device_count(TSR_GPU) < 1) {
    printf("skip: no usable GPU\n");
    return 0;
  }
  test_take();
  test_gather_qmm();
  tsr_shutdown();
  printf("ok\n");
  return 0;
}
