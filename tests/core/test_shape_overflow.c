/* tests/core/test_shape_overflow.c — the one rule for shapes (base/shape.h): a shape is valid when
 * the product of its non-zero dimensions times the item size fits in int64, whatever the order of
 * its axes and whatever zeros it holds. Every way a shape enters (creation, from_data, reshape,
 * broadcast_to, matmul's broadcast batch, quantize and dequantize's derived shapes) answers the
 * same in every axis order, and an accepted zero-size shape with large dimensions evaluates
 * through views and ops without an overflow (UBSan in `make sanitize` checks the arithmetic). */
#include "check.h"

static const int64_t big = (int64_t)1 << 40; /* 2^40 * 2^40 passes int64 */
static const int64_t fit = (int64_t)1 << 30; /* 2^30 * 2^30 * 4 bytes fits */

/* Every permutation of three dims. */
static const int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};

static void permute(const int64_t dims[3], int p, int64_t out[3]) {
  for (int i = 0; i < 3; i++)
    out[i] = dims[perms[p][i]];
}

static void test_creation_any_order(void) {
  const int64_t overflowing[3] = {0, big, big}, fitting[3] = {0, fit, fit};
  for (int p = 0; p < 6; p++) {
    int64_t shape[3];
    permute(overflowing, p, shape);
    tsr_array *a = NULL;
    CHECK_STATUS(tsr_zeros(&a, shape, 3, TSR_FLOAT32, NULL), TSR_ERR_INVALID);
    CHECK(a == NULL);
    CHECK_MESSAGE("1099511627776");
    CHECK_MESSAGE("overflows");
    CHECK_STATUS(tsr_array_from_data(&a, NULL, TSR_FLOAT32, shape, 3), TSR_ERR_INVALID);
    CHECK_MESSAGE("overflows");
    CHECK_STATUS(tsr_full(&a, shape, 3, 1.0, TSR_FLOAT32, NULL), TSR_ERR_INVALID);
    CHECK(a == NULL);

    permute(fitting, p, shape);
    CHECK_OK(tsr_zeros(&a, shape, 3, TSR_FLOAT32, NULL));
    CHECK_EQ_INT(tsr_array_size(a), 0);
    CHECK_OK(tsr_eval(&a, 1));
    tsr_array_release(a);
    a = NULL;
    CHECK_OK(tsr_array_from_data(&a, NULL, TSR_FLOAT32, shape, 3));
    CHECK_EQ_INT(tsr_array_dim(a, 1), shape[1]);
    tsr_array_release(a);
  }
  /* The item size counts too: 2^30 * 2^31 elements of 4 bytes is 2^63 bytes. */
  int64_t bytes_over[3] = {(int64_t)1 << 31, 0, fit};
  tsr_array *a = NULL;
  CHECK_STATUS(tsr_zeros(&a, bytes_over, 3, TSR_FLOAT32, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("4 bytes");
  CHECK_OK(tsr_zeros(&a, bytes_over, 3, TSR_UINT8, NULL));
  tsr_array_release(a);
}

/* A zero-size array with large dimensions goes through views and ops: strides, offsets and
   element counts of every step stay in range. */
static void test_zero_size_ops(void) {
  int64_t shape[3] = {fit, 0, fit};
  tsr_array *a = NULL, *t = NULL, *r = NULL, *b = NULL, *sum = NULL, *sl = NULL, *c = NULL;
  CHECK_OK(tsr_zeros(&a, shape, 3, TSR_FLOAT32, NULL));
  int axes[3] = {2, 0, 1};
  CHECK_OK(tsr_transpose(&t, a, axes, 3, NULL));
  int64_t reshaped[3] = {0, fit, fit};
  CHECK_OK(tsr_reshape(&r, t, reshaped, 3, NULL));
  int64_t overflowing[3] = {big, 0, big};
  tsr_array *bad = NULL;
  CHECK_STATUS(tsr_reshape(&bad, t, overflowing, 3, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("overflows");
  int64_t wider[4] = {1, fit, 0, fit};
  CHECK_OK(tsr_broadcast_to(&b, a, wider, 4, NULL));
  int64_t wider_bad[4] = {big, big, 0, 1};
  int64_t one_shape[3] = {1, 0, 1};
  tsr_array *small = NULL;
  CHECK_OK(tsr_zeros(&small, one_shape, 3, TSR_FLOAT32, NULL));
  CHECK_STATUS(tsr_broadcast_to(&bad, small, wider_bad, 4, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("overflows");
  int sum_axes[1] = {1};
  CHECK_OK(tsr_sum(&sum, b, sum_axes, 1, false, NULL)); /* over a size-fit axis of 0 rows */
  CHECK_OK(tsr_contiguous(&c, r, NULL));
  int64_t start[3] = {0, 1, 2}, stop[3] = {0, fit, fit}, strides[3] = {1, 3, 5};
  CHECK_OK(tsr_slice(&sl, r, start, stop, strides, 3, NULL));
  tsr_array *all[5] = {t, r, b, c, sl};
  CHECK_OK(tsr_eval(all, 5));
  CHECK_EQ_INT(tsr_array_size(sum), 0);
  CHECK_EQ_INT(tsr_array_dim(sl, 2), (fit - 2 + 4) / 5);
  tsr_array_release(a), tsr_array_release(t), tsr_array_release(r), tsr_array_release(b);
  tsr_array_release(sum), tsr_array_release(sl), tsr_array_release(c), tsr_array_release(small);
}

/* matmul's broadcast batch shape is derived from two valid shapes; its product is checked before
   it is used, not only the output's. */
static void test_matmul_batch(void) {
  int64_t a_shape[4] = {(int64_t)1 << 32, 1, 1, 1}, b_shape[4] = {1, (int64_t)1 << 32, 1, 1};
  tsr_array *a = NULL, *b = NULL, *m = NULL;
  CHECK_OK(tsr_zeros(&a, a_shape, 4, TSR_FLOAT32, NULL));
  CHECK_OK(tsr_zeros(&b, b_shape, 4, TSR_FLOAT32, NULL));
  CHECK_STATUS(tsr_matmul(&m, a, b, NULL), TSR_ERR_INVALID);
  CHECK(m == NULL);
  CHECK_MESSAGE("4294967296");
  tsr_array_release(a), tsr_array_release(b);
}

/* quantize and dequantize derive packed shapes from K * bits: a valid lazy w whose K * bits
   passes int64 gets its parts' shapes without overflowing; a w_q whose bit count passes int64 is
   refused by name. Nothing is evaluated (the arrays would need exabytes). */
static void test_quant_derived_shapes(void) {
  int64_t w_shape[2] = {1, (int64_t)1 << 61};
  tsr_array *w = NULL, *wq = NULL, *scales = NULL, *biases = NULL;
  CHECK_OK(tsr_zeros(&w, w_shape, 2, TSR_FLOAT16, NULL));
  CHECK_OK(tsr_quantize(&wq, &scales, &biases, w, 64, 4, TSR_QUANT_AFFINE, NULL));
  CHECK_EQ_INT(tsr_array_dim(wq, 1), ((int64_t)1 << 61) / 8);
  CHECK_EQ_INT(tsr_array_dim(scales, 1), ((int64_t)1 << 61) / 64);
  tsr_array_release(w), tsr_array_release(wq), tsr_array_release(scales);
  tsr_array_release(biases);

  int64_t wq_shape[2] = {1, (int64_t)1 << 60}, s_shape[2] = {1, (int64_t)1 << 56};
  tsr_array *packed = NULL, *sc = NULL, *bi = NULL, *out = NULL;
  CHECK_OK(tsr_zeros(&packed, wq_shape, 2, TSR_UINT32, NULL));
  CHECK_OK(tsr_zeros(&sc, s_shape, 2, TSR_FLOAT16, NULL));
  CHECK_OK(tsr_zeros(&bi, s_shape, 2, TSR_FLOAT16, NULL));
  CHECK_STATUS(tsr_dequantize(&out, packed, sc, bi, 64, 4, TSR_QUANT_AFFINE, TSR_FLOAT32, NULL),
               TSR_ERR_INVALID);
  CHECK(out == NULL);
  CHECK_MESSAGE("1152921504606846976");
  tsr_array_release(packed), tsr_array_release(sc), tsr_array_release(bi);
}

int main(void) {
  test_creation_any_order();
  test_zero_size_ops();
  test_matmul_batch();
  test_quant_derived_shapes();
  CHECK_OK(tsr_memory_clear_cache((tsr_device){TSR_CPU, 0}));
  CHECK_NO_LEAKS();
  tsr_shutdown();
  puts("test_shape_overflow: ok");
  return 0;
}
