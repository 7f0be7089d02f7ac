/* tests/quant/test_qmm_validation.c — every argument check of tsr_quantized_matmul and
 * tsr_gather_qmm (quant-spec.md Part A §6, Part B §4.1 and §4.2, including the checks MLX
 * forgets): the status, a message naming the values, and *out left untouched; plus the
 * out-of-range gathered index, which is data and so fails at evaluation, naming the index. */
#include "check.h"

static tsr_array *make(tsr_dtype dtype, const int64_t *shape, int ndim) {
  int64_t size = 1;
  for (int i = 0; i < ndim; i++)
    size *= shape[i];
  void *data = calloc((size_t)size + 1, 8);
  CHECK(data != NULL);
  tsr_array *a = NULL;
  CHECK_OK(tsr_array_from_data(&a, data, dtype, shape, ndim));
  free(data);
  return a;
}

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__}), (int)(sizeof((int64_t[]){__VA_ARGS__}) / 8)

static tsr_array *sentinel(void) {
  return (tsr_array *)(uintptr_t)0x1234;
}

/* quantized_matmul with these arguments must fail with TSR_ERR_INVALID naming each needle. */
static void expect_qmm_invalid(tsr_array *x, tsr_array *w, tsr_array *s, tsr_array *b,
                               bool transpose, int group_size, int bits, int mode,
                               const char *needle1, const char *needle2) {
  tsr_array *out = sentinel();
  CHECK_STATUS(tsr_quantized_matmul(&out, x, w, s, b, transpose, group_size, bits,
                                    (tsr_quant_mode)mode, NULL),
               TSR_ERR_INVALID);
  CHECK(out == sentinel());
  CHECK_MESSAGE("quantized_matmul");
  CHECK_MESSAGE(needle1);
  if (needle2) CHECK_MESSAGE(needle2);
}

static void expect_gather_invalid(tsr_array *x, tsr_array *w, tsr_array *s, tsr_array *b,
                                  tsr_array *lhs, tsr_array *rhs, const char *needle1,
                                  const char *needle2) {
  tsr_array *out = sentinel();
  CHECK_STATUS(
      tsr_gather_qmm(&out, x, w, s, b, lhs, rhs, true, 32, 4, TSR_QUANT_AFFINE, false, NULL),
      TSR_ERR_INVALID);
  CHECK(out == sentinel());
  CHECK_MESSAGE("gather_qmm");
  CHECK_MESSAGE(needle1);
  if (needle2) CHECK_MESSAGE(needle2);
}

/* Affine 4-bit group 32: x [3, 64] @ w [5, 64].T, w_q [5, 8], scales/biases [5, 2]. */
static void null_and_mode_checks(tsr_array *x, tsr_array *w, tsr_array *s, tsr_array *b) {
  tsr_array *out = sentinel();
  CHECK_STATUS(tsr_quantized_matmul(NULL, x, w, s, b, true, 32, 4, TSR_QUANT_AFFINE, NULL),
               TSR_ERR_INVALID);
  CHECK_MESSAGE("out is NULL");
  expect_qmm_invalid(NULL, w, s, b, true, 32, 4, 0, "x is NULL", NULL);
  expect_qmm_invalid(x, NULL, s, b, true, 32, 4, 0, "w_q is NULL", NULL);
  expect_qmm_invalid(x, w, NULL, b, true, 32, 4, 0, "scales is NULL", NULL);
  CHECK(out == sentinel());
  expect_qmm_invalid(x, w, s, b, true, 32, 4, 7, "mode 7", NULL);
  expect_qmm_invalid(x, w, s, b, true, 32, 4, -1, "mode -1", NULL);
  expect_qmm_invalid(x, w, s, b, true, 48, 4, 0, "group_size 48", "32, 64 or 128");
  expect_qmm_invalid(x, w, s, b, true, 16, 4, 0, "group_size 16", "affine");
  expect_qmm_invalid(x, w, s, b, true, -32, 4, 0, "group_size -32", NULL);
  expect_qmm_invalid(x, w, s, b, true, 32, 7, 0, "bits 7", "2, 3, 4, 5, 6 or 8");
  expect_qmm_invalid(x, w, s, b, true, 32, 1, 0, "bits 1", NULL);
  expect_qmm_invalid(x, w, s, NULL, true, 64, 4, 1, "group_size 64", "mxfp4");
  expect_qmm_invalid(x, w, s, NULL, true, 32, 8, 1, "bits 8", "mxfp4");
  expect_qmm_invalid(x, w, s, NULL, true, 32, 4, 2, "bits 4", "mxfp8");
  expect_qmm_invalid(x, w, s, NULL, true, 32, 4, 3, "group_size 32", "nvfp4");
  expect_qmm_invalid(x, w, s, NULL, true, 16, 8, 3, "bits 8", "nvfp4");
}

static void dtype_checks(tsr_array *x, tsr_array *w, tsr_array *s, tsr_array *b) {
  expect_qmm_invalid(x, w, s, NULL, true, 32, 4, 0, "biases must be given", "affine");
  tsr_array *u8 = make(TSR_UINT8, SHAPE(5, 2));
  expect_qmm_invalid(x, w, u8, u8, true, 32, 4, 1, "biases must be NULL", "mxfp4");
  expect_qmm_invalid(x, w, s, NULL, true, 32, 4, 1, "scales have dtype float32", "uint8");
  expect_qmm_invalid(x, w, u8, u8, true, 32, 4, 0, "scales have dtype uint8", "affine");
  tsr_array *xi = make(TSR_INT32, SHAPE(3, 64)), *xu = make(TSR_UINT8, SHAPE(3, 64));
  expect_qmm_invalid(xi, w, s, b, true, 32, 4, 0, "x has dtype int32", NULL);
  expect_qmm_invalid(xu, w, u8, NULL, true, 32, 4, 1, "x has dtype uint8", NULL);
  tsr_array *wf = make(TSR_FLOAT32, SHAPE(5, 8)), *wi = make(TSR_INT32, SHAPE(5, 8));
  expect_qmm_invalid(x, wf, s, b, true, 32, 4, 0, "w_q has dtype float32", "uint32");
  expect_qmm_invalid(x, wi, u8, NULL, true, 32, 4, 1, "w_q has dtype int32", NULL);
  tsr_array *b16 = make(TSR_FLOAT16, SHAPE(5, 2));
  expect_qmm_invalid(x, w, s, b16, true, 32, 4, 0, "biases have dtype float16", "float32");
  tsr_array *b_wide = make(TSR_FLOAT32, SHAPE(5, 1));
  expect_qmm_invalid(x, w, s, b_wide, true, 32, 4, 0, "biases [5, 1] and scales [5, 2]", NULL);
  tsr_array *all[] = {u8, xi, xu, wf, wi, b16, b_wide};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    tsr_array_release(all[i]);
}

static void shape_checks(tsr_array *x, tsr_array *w, tsr_array *s, tsr_array *b) {
  tsr_array *x0 = make(TSR_FLOAT32, NULL, 0);
  expect_qmm_invalid(x0, w, s, b, true, 32, 4, 0, "x is 0-d", NULL);
  tsr_array *w1 = make(TSR_UINT32, SHAPE(8)), *s1 = make(TSR_FLOAT32, SHAPE(2));
  expect_qmm_invalid(x, w1, s1, s1, true, 32, 4, 0, "w_q [8] has 1 axes", NULL);
  tsr_array *s_rows = make(TSR_FLOAT32, SHAPE(6, 2));
  expect_qmm_invalid(x, w, s_rows, s_rows, true, 32, 4, 0, "w_q [5, 8] and scales [6, 2]",
                     "every axis but the last");
  tsr_array *w3 = make(TSR_UINT32, SHAPE(2, 5, 8)), *s3 = make(TSR_FLOAT32, SHAPE(3, 5, 2));
  expect_qmm_invalid(x, w3, s3, s3, true, 32, 4, 0, "w_q [2, 5, 8] and scales [3, 5, 2]", NULL);
  expect_qmm_invalid(x, w3, s, b, true, 32, 4, 0, "w_q [2, 5, 8] and scales [5, 2]", NULL);
  tsr_array *s_groups = make(TSR_FLOAT32, SHAPE(5, 3));
  expect_qmm_invalid(x, w, s_groups, s_groups, true, 32, 4, 0, "group_size 32 and bits 4",
                     "8 words * 32 bits != 3 groups * 32 * 4 bits");
  /* group 64 over the same arrays: 8 words hold 64 codes, 2 groups of 64 would be 128. */
  expect_qmm_invalid(x, w, s, b, true, 64, 4, 0, "group_size 64 and bits 4", NULL);
  tsr_array *x63 = make(TSR_FLOAT32, SHAPE(3, 63));
  expect_qmm_invalid(x63, w, s, b, true, 32, 4, 0, "x [3, 63] has last dimension 63", "K = 64");
  /* Not transposed: w_q [5, 8] is [K = 5, N = 64]. */
  expect_qmm_invalid(x, w, s, b, false, 32, 4, 0, "last dimension 64", "K = 5");
  CHECK_MESSAGE("transpose false");
  tsr_array *xb = make(TSR_FLOAT32, SHAPE(2, 3, 64)), *wb = make(TSR_UINT32, SHAPE(4, 5, 8));
  tsr_array *sb = make(TSR_FLOAT32, SHAPE(4, 5, 2));
  expect_qmm_invalid(xb, wb, sb, sb, true, 32, 4, 0, "x's batch axes [2]", "[4] do not broadcast");
  tsr_array *all[] = {x0, w1, s1, s_rows, w3, s3, s_groups, x63, xb, wb, sb};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    tsr_array_release(all[i]);
}

static void gather_checks(tsr_array *w3, tsr_array *s3) {
  tsr_array *x = make(TSR_FLOAT32, SHAPE(4, 3, 64)), *x1 = make(TSR_FLOAT32, SHAPE(64));
  tsr_array *lf = make(TSR_FLOAT32, SHAPE(4)), *rb = make(TSR_BOOL, SHAPE(4));
  tsr_array *l3 = make(TSR_INT32, SHAPE(3)), *r2 = make(TSR_INT32, SHAPE(2));
  expect_gather_invalid(x, w3, s3, s3, lf, NULL, "lhs_indices have dtype float32", "integer");
  expect_gather_invalid(x, w3, s3, s3, NULL, rb, "rhs_indices have dtype bool", NULL);
  expect_gather_invalid(x1, w3, s3, s3, NULL, r2, "x [64] has 1 axes", NULL);
  expect_gather_invalid(x, w3, s3, s3, l3, r2, "lhs_indices [3] and rhs_indices [2]",
                        "do not broadcast");
  tsr_array *deep = make(TSR_INT32, SHAPE(1, 1, 1, 1, 1, 1, 1));
  expect_gather_invalid(x, w3, s3, s3, deep, NULL, "9 axes", "at most 8");
  /* The op's other checks carry the gather_qmm name too. */
  expect_gather_invalid(x, w3, s3, NULL, NULL, r2, "biases must be given", NULL);
  tsr_array *all[] = {x, x1, lf, rb, l3, r2, deep};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    tsr_array_release(all[i]);
}

/* Indices are data: out of range is found at evaluation, naming the value and its position. */
static void gather_index_range(tsr_array *w3, tsr_array *s3) {
  tsr_array *x3 = make(TSR_FLOAT32, SHAPE(3, 3, 64)), *x4 = make(TSR_FLOAT32, SHAPE(4, 3, 64));
  const int32_t good_rhs[3] = {1, 0, 1}, bad_rhs[3] = {1, 2, 0};
  const int64_t bad_lhs[3] = {3, -1, 0};
  int64_t three[1] = {3};
  tsr_array *rhs = NULL, *rhs_bad = NULL, *lhs_bad = NULL, *out = NULL;
  CHECK_OK(tsr_array_from_data(&rhs, good_rhs, TSR_INT32, three, 1));
  CHECK_OK(tsr_array_from_data(&rhs_bad, bad_rhs, TSR_INT32, three, 1));
  CHECK_OK(tsr_array_from_data(&lhs_bad, bad_lhs, TSR_INT64, three, 1));
  /* w3 holds 2 matrices: rhs value 2 at [1] is outside [0, 2), with the sorted hint or not. */
  for (int sorted = 0; sorted < 2; sorted++) {
    CHECK_OK(tsr_gather_qmm(&out, x3, w3, s3, s3, NULL, rhs_bad, true, 32, 4, TSR_QUANT_AFFINE,
                            sorted == 1, NULL));
    CHECK_STATUS(tsr_eval(&out, 1), TSR_ERR_INVALID);
    CHECK_MESSAGE("rhs_indices value 2 at [1] is out of range [0, 2)");
    tsr_array_release(out);
  }
  /* x4 holds 4 matrices: lhs value -1 at [1]. */
  CHECK_OK(tsr_gather_qmm(&out, x4, w3, s3, s3, lhs_bad, rhs, true, 32, 4, TSR_QUANT_AFFINE, false,
                          NULL));
  CHECK_STATUS(tsr_eval(&out, 1), TSR_ERR_INVALID);
  CHECK_MESSAGE("lhs_indices value -1 at [1] is out of range [0, 4)");
  tsr_array_release(out);
  /* In range: evaluates to [3, 3, 5]. */
  CHECK_OK(
      tsr_gather_qmm(&out, x3, w3, s3, s3, NULL, rhs, true, 32, 4, TSR_QUANT_AFFINE, false, NULL));
  CHECK_OK(tsr_eval(&out, 1));
  CHECK_EQ_INT(tsr_array_dim(out, 0), 3);
  tsr_array_release(out);
  /* The default lhs of x4 is arange(4), which does not broadcast with rhs [3]. */
  out = sentinel();
  CHECK_STATUS(
      tsr_gather_qmm(&out, x4, w3, s3, s3, NULL, rhs, true, 32, 4, TSR_QUANT_AFFINE, false, NULL),
      TSR_ERR_INVALID);
  CHECK_MESSAGE("lhs_indices [4] and rhs_indices [3] do not broadcast");
  CHECK(out == sentinel());
  tsr_array *all[] = {x3, x4, rhs, rhs_bad, lhs_bad};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    tsr_array_release(all[i]);
}

/* Mode defaults (0, 0) and both index arrays NULL build a node: the checks above are not
   over-eager. */
static void valid_calls(tsr_array *x, tsr_array *w, tsr_array *s, tsr_array *b) {
  tsr_array *out = NULL;
  CHECK_OK(tsr_quantized_matmul(&out, x, w, s, b, true, 32, 4, TSR_QUANT_AFFINE, NULL));
  CHECK_OK(tsr_eval(&out, 1));
  tsr_array_release(out);
  tsr_array *w64 = make(TSR_UINT32, SHAPE(5, 8)), *s64 = make(TSR_FLOAT32, SHAPE(5, 1));
  CHECK_OK(tsr_quantized_matmul(&out, x, w64, s64, s64, true, 0, 0, TSR_QUANT_AFFINE, NULL));
  CHECK_EQ_INT(tsr_array_dim(out, 1), 5);
  tsr_array_release(out);
  CHECK_OK(
      tsr_gather_qmm(&out, x, w, s, b, NULL, NULL, true, 32, 4, TSR_QUANT_AFFINE, false, NULL));
  CHECK_OK(tsr_eval(&out, 1));
  tsr_array_release(out);
  tsr_array_release(w64);
  tsr_array_release(s64);
}

int main(void) {
  tsr_array *x = make(TSR_FLOAT32, SHAPE(3, 64)), *w = make(TSR_UINT32, SHAPE(5, 8));
  tsr_array *s = make(TSR_FLOAT32, SHAPE(5, 2)), *b = make(TSR_FLOAT32, SHAPE(5, 2));
  tsr_array *w3 = make(TSR_UINT32, SHAPE(2, 5, 8)), *s3 = make(TSR_FLOAT32, SHAPE(2, 5, 2));
  null_and_mode_checks(x, w, s, b);
  dtype_checks(x, w, s, b);
  shape_checks(x, w, s, b);
  gather_checks(w3, s3);
  gather_index_range(w3, s3);
  valid_calls(x, w, s, b);
  printf("quantized_matmul / gather_qmm: every validation check passes\n");
  tsr_array *all[] = {x, w, s, b, w3, s3};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    tsr_array_release(all[i]);
  tsr_memory_clear_cache((tsr_device){TSR_CPU, 0});
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
