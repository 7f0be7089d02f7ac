/* tests/quant/test_quant_validation.c — every argument check of tsr_quantize, tsr_dequantize and
 * their nvfp4 global-scale forms (quant-spec.md Part A §6): status, a message naming the values,
 * and out-params left untouched. Also the shapes and dtypes of valid calls (defaults for 0, batch
 * axes, zero-size dimensions) and that the quantize parts outlive each other. Not the values:
 * the golden tests compare those with MLX. */
#include <math.h>

#include "check.h"

static tsr_array *sentinel(void) {
  static char marker;
  return (tsr_array *)(void *)&marker;
}

static tsr_array *make(tsr_dtype dtype, const int64_t *shape, int ndim) {
  tsr_array *a = NULL;
  CHECK_OK(tsr_zeros(&a, shape, ndim, dtype, NULL));
  return a;
}

static void check_shape(tsr_array *a, tsr_dtype dtype, const int64_t *shape, int ndim) {
  CHECK(a != NULL);
  CHECK_EQ_INT(tsr_array_dtype(a), dtype);
  CHECK_EQ_INT(tsr_array_ndim(a), ndim);
  for (int d = 0; d < ndim; d++)
    CHECK_EQ_INT(tsr_array_dim(a, d), shape[d]);
}

/* A failing quantize: the status, the message, and untouched out-params. */
static void quantize_fails(tsr_array *w, int group_size, int bits, tsr_quant_mode mode,
                           const char *needle) {
  tsr_array *w_q = sentinel(), *scales = sentinel(), *biases = sentinel();
  CHECK_STATUS(tsr_quantize(&w_q, &scales, &biases, w, group_size, bits, mode, NULL),
               TSR_ERR_INVALID);
  CHECK_MESSAGE(needle);
  CHECK_MESSAGE("quantize");
  CHECK(w_q == sentinel() && scales == sentinel() && biases == sentinel());
}

static void dequantize_fails(tsr_array *w_q, tsr_array *scales, tsr_array *biases, int group_size,
                             int bits, tsr_quant_mode mode, tsr_dtype dtype, const char *needle) {
  tsr_array *out = sentinel();
  CHECK_STATUS(tsr_dequantize(&out, w_q, scales, biases, group_size, bits, mode, dtype, NULL),
               TSR_ERR_INVALID);
  CHECK_MESSAGE(needle);
  CHECK_MESSAGE("dequantize");
  CHECK(out == sentinel());
}

static void test_quantize_checks(void) {
  const int64_t shape[2] = {4, 128}, odd[2] = {4, 48}, flat[1] = {128};
  tsr_array *w = make(TSR_FLOAT32, shape, 2), *w_odd = make(TSR_FLOAT32, odd, 2);
  tsr_array *w_int = make(TSR_INT32, shape, 2), *w_u8 = make(TSR_UINT8, shape, 2);
  tsr_array *w_1d = make(TSR_FLOAT32, flat, 1);
  tsr_array *a = sentinel(), *b = sentinel(), *c = sentinel();

  CHECK_STATUS(tsr_quantize(NULL, &b, &c, w, 0, 0, TSR_QUANT_AFFINE, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("w_q is NULL");
  CHECK_STATUS(tsr_quantize(&a, NULL, &c, w, 0, 0, TSR_QUANT_AFFINE, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("scales is NULL");
  CHECK_STATUS(tsr_quantize(&a, &b, &c, NULL, 0, 0, TSR_QUANT_AFFINE, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("w is NULL");
  CHECK_STATUS(tsr_quantize(&a, &b, NULL, w, 0, 0, TSR_QUANT_AFFINE, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("biases is NULL");
  CHECK(a == sentinel() && b == sentinel() && c == sentinel());

  quantize_fails(w, 0, 0, (tsr_quant_mode)9, "mode 9 not supported");
  quantize_fails(w, 0, 0, (tsr_quant_mode)-1, "mode -1 not supported");
  quantize_fails(w, 48, 4, TSR_QUANT_AFFINE,
                 "group_size 48 not supported for mode affine (use 32, 64 or 128)");
  quantize_fails(w, -32, 4, TSR_QUANT_AFFINE, "group_size -32");
  quantize_fails(w, 64, 0, TSR_QUANT_MXFP4, "group_size 64 not supported for mode mxfp4 (use 32)");
  quantize_fails(w, 16, 0, TSR_QUANT_MXFP8, "group_size 16 not supported for mode mxfp8 (use 32)");
  quantize_fails(w, 32, 0, TSR_QUANT_NVFP4, "group_size 32 not supported for mode nvfp4 (use 16)");
  quantize_fails(w, 64, 7, TSR_QUANT_AFFINE,
                 "bits 7 not supported for mode affine (use 2, 3, 4, 5, 6 or 8)");
  quantize_fails(w, 64, 1, TSR_QUANT_AFFINE, "bits 1 not supported for mode affine");
  quantize_fails(w, 0, 8, TSR_QUANT_MXFP4, "bits 8 not supported for mode mxfp4 (use 4)");
  quantize_fails(w, 0, 4, TSR_QUANT_MXFP8, "bits 4 not supported for mode mxfp8 (use 8)");
  quantize_fails(w, 0, 8, TSR_QUANT_NVFP4, "bits 8 not supported for mode nvfp4 (use 4)");
  quantize_fails(w_int, 0, 0, TSR_QUANT_AFFINE, "dtype int32");
  quantize_fails(w_u8, 0, 0, TSR_QUANT_MXFP4, "dtype uint8");
  quantize_fails(w_1d, 0, 0, TSR_QUANT_AFFINE, "[128] is 1-d");
  quantize_fails(w_odd, 32, 4, TSR_QUANT_AFFINE,
                 "last dimension 48 of w [4, 48] is not a multiple of group_size 32");
  quantize_fails(w_odd, 0, 0, TSR_QUANT_MXFP8, "not a multiple of group_size 32");

  const float bad_scales[] = {0.0f, -1.0f, NAN, INFINITY};
  for (int i = 0; i < 4; i++) {
    CHECK_STATUS(tsr_quantize_nvfp4_scaled(&a, &b, w, bad_scales[i], NULL), TSR_ERR_INVALID);
    CHECK_MESSAGE("quantize_nvfp4_scaled: global_scale");
    CHECK(a == sentinel() && b == sentinel());
  }
  CHECK_STATUS(tsr_quantize_nvfp4_scaled(NULL, &b, w, 1.0f, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("w_q is NULL");
  const int64_t k40[2] = {4, 40};
  tsr_array *w_40 = make(TSR_FLOAT16, k40, 2);
  CHECK_STATUS(tsr_quantize_nvfp4_scaled(&a, &b, w_40, 1.0f, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("last dimension 40 of w [4, 40] is not a multiple of group_size 16");
  tsr_array_release(w_40);
  CHECK_STATUS(tsr_quantize_nvfp4_scaled(&a, &b, w_int, 1.0f, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("dtype int32");
  CHECK(a == sentinel() && b == sentinel());
  tsr_array *all[] = {w, w_odd, w_int, w_u8, w_1d};
  for (int i = 0; i < 5; i++)
    tsr_array_release(all[i]);
}

/* NULL arguments, mode/group_size/bits membership, biases presence, the output dtype and the
   global scale. */
static void test_dequantize_arguments(void) {
  const int64_t wq_shape[2] = {4, 16}, sc_shape[2] = {4, 2}, fp_shape[2] = {4, 4};
  tsr_array *w_q = make(TSR_UINT32, wq_shape, 2), *scales = make(TSR_FLOAT16, sc_shape, 2);
  tsr_array *biases = make(TSR_FLOAT16, sc_shape, 2), *fp_scales = make(TSR_UINT8, fp_shape, 2);
  tsr_array *out = sentinel();
  CHECK_STATUS(
      tsr_dequantize(NULL, w_q, scales, biases, 64, 4, TSR_QUANT_AFFINE, TSR_FLOAT16, NULL),
      TSR_ERR_INVALID);
  CHECK_MESSAGE("out is NULL");
  dequantize_fails(NULL, scales, biases, 64, 4, TSR_QUANT_AFFINE, TSR_FLOAT16, "w_q is NULL");
  dequantize_fails(w_q, NULL, biases, 64, 4, TSR_QUANT_AFFINE, TSR_FLOAT16, "scales is NULL");
  dequantize_fails(w_q, scales, NULL, 64, 4, TSR_QUANT_AFFINE, TSR_FLOAT16, "biases is NULL");
  dequantize_fails(w_q, fp_scales, biases, 0, 0, TSR_QUANT_MXFP4, TSR_FLOAT16,
                   "biases given for mode mxfp4");
  dequantize_fails(w_q, scales, biases, 64, 4, (tsr_quant_mode)5, TSR_FLOAT16, "mode 5");
  dequantize_fails(w_q, scales, biases, 96, 4, TSR_QUANT_AFFINE, TSR_FLOAT16,
                   "group_size 96 not supported for mode affine (use 32, 64 or 128)");
  dequantize_fails(w_q, scales, biases, 64, 9, TSR_QUANT_AFFINE, TSR_FLOAT16,
                   "bits 9 not supported for mode affine");
  dequantize_fails(w_q, fp_scales, NULL, 16, 4, TSR_QUANT_MXFP4, TSR_FLOAT16,
                   "group_size 16 not supported for mode mxfp4 (use 32)");
  dequantize_fails(w_q, fp_scales, NULL, 16, 8, TSR_QUANT_NVFP4, TSR_FLOAT16,
                   "bits 8 not supported for mode nvfp4 (use 4)");
  dequantize_fails(w_q, scales, biases, 64, 4, TSR_QUANT_AFFINE, TSR_INT32,
                   "dtype int32 is not a float dtype");
  dequantize_fails(w_q, scales, biases, 64, 4, TSR_QUANT_AFFINE, TSR_UINT8,
                   "dtype uint8 is not a float dtype");
  const float bad_scales[] = {0.0f, -2.0f, NAN, -INFINITY};
  for (int i = 0; i < 4; i++) {
    CHECK_STATUS(
        tsr_dequantize_nvfp4_scaled(&out, w_q, fp_scales, bad_scales[i], TSR_FLOAT32, NULL),
        TSR_ERR_INVALID);
    CHECK_MESSAGE("dequantize_nvfp4_scaled: global_scale");
  }
  CHECK_STATUS(tsr_dequantize_nvfp4_scaled(&out, w_q, NULL, 1.0f, TSR_FLOAT32, NULL),
               TSR_ERR_INVALID);
  CHECK_MESSAGE("scales is NULL");
  CHECK(out == sentinel());
  tsr_array *all[] = {w_q, scales, biases, fp_scales};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    tsr_array_release(all[i]);
}

/* The arrays: w_q's dtype and rank, the scales' and biases' dtypes, and every shape agreement. */
static void test_dequantize_arrays(void) {
  const int64_t wq_shape[2] = {4, 16}, sc_shape[2] = {4, 2}, fp_shape[2] = {4, 4};
  const int64_t wq_3d[3] = {1, 4, 16}, sc_rows[2] = {3, 2}, sc_wide[2] = {4, 3}, flat[1] = {16};
  tsr_array *w_q = make(TSR_UINT32, wq_shape, 2), *scales = make(TSR_FLOAT16, sc_shape, 2);
  tsr_array *biases = make(TSR_FLOAT16, sc_shape, 2), *biases32 = make(TSR_FLOAT32, sc_shape, 2);
  tsr_array *rows3[2] = {make(TSR_FLOAT16, sc_rows, 2), make(TSR_FLOAT16, sc_rows, 2)};
  tsr_array *wide[2] = {make(TSR_FLOAT16, sc_wide, 2), make(TSR_FLOAT16, sc_wide, 2)};
  tsr_array *scales_int = make(TSR_INT32, sc_shape, 2), *fp_scales = make(TSR_UINT8, fp_shape, 2);
  tsr_array *fp_scales_f = make(TSR_FLOAT32, fp_shape, 2), *w_q_int = make(TSR_INT32, wq_shape, 2);
  tsr_array *w_q_1d = make(TSR_UINT32, flat, 1), *w_q_3d = make(TSR_UINT32, wq_3d, 3);
  tsr_array *out = sentinel();
  dequantize_fails(w_q_int, scales, biases, 64, 4, TSR_QUANT_AFFINE, TSR_FLOAT16,
                   "w_q [4, 16] has dtype int32 (uint32 needed)");
  dequantize_fails(w_q_1d, scales, biases, 64, 4, TSR_QUANT_AFFINE, TSR_FLOAT16, "w_q [16] is 1-d");
  dequantize_fails(w_q, scales_int, biases, 64, 4, TSR_QUANT_AFFINE, TSR_FLOAT16,
                   "scales [4, 2] has dtype int32");
  dequantize_fails(w_q, scales, biases32, 64, 4, TSR_QUANT_AFFINE, TSR_FLOAT16,
                   "biases dtype float32 differs from scales dtype float16");
  dequantize_fails(w_q, scales, rows3[0], 64, 4, TSR_QUANT_AFFINE, TSR_FLOAT16,
                   "biases [3, 2] and scales [4, 2] differ in shape");
  dequantize_fails(w_q, fp_scales_f, NULL, 32, 4, TSR_QUANT_MXFP4, TSR_FLOAT16,
                   "scales [4, 4] has dtype float32 (mode mxfp4 needs uint8)");
  dequantize_fails(w_q, rows3[1], rows3[0], 64, 4, TSR_QUANT_AFFINE, TSR_FLOAT16,
                   "w_q [4, 16] and scales [3, 2] differ in their leading");
  dequantize_fails(w_q_3d, scales, biases, 64, 4, TSR_QUANT_AFFINE, TSR_FLOAT16,
                   "w_q [1, 4, 16] and scales [4, 2] differ");
  dequantize_fails(w_q, wide[0], wide[1], 64, 4, TSR_QUANT_AFFINE, TSR_FLOAT16,
                   "w_q [4, 16] holds 128 elements per row at bits 4 but scales [4, 3] cover 192 "
                   "at group_size 64");
  dequantize_fails(w_q, fp_scales, NULL, 0, 0, TSR_QUANT_MXFP8, TSR_FLOAT16,
                   "holds 64 elements per row at bits 8 but scales [4, 4] cover 128");
  CHECK_STATUS(tsr_dequantize_nvfp4_scaled(&out, w_q, fp_scales, 1.0f, TSR_FLOAT32, NULL),
               TSR_ERR_INVALID); /* 128 elements at bits 4 need 8 groups of 16, not 4 */
  CHECK_MESSAGE("cover 64 at group_size 16");
  CHECK_STATUS(tsr_dequantize_nvfp4_scaled(&out, w_q, fp_scales_f, 1.0f, TSR_FLOAT32, NULL),
               TSR_ERR_INVALID);
  CHECK_MESSAGE("mode nvfp4 needs uint8");
  CHECK(out == sentinel());
  tsr_array *all[] = {w_q,     scales,     biases,    biases32,    rows3[0], rows3[1], wide[0],
                      wide[1], scales_int, fp_scales, fp_scales_f, w_q_int,  w_q_1d,   w_q_3d};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    tsr_array_release(all[i]);
}

/* Valid calls: shapes and dtypes, defaults, the fp modes' NULL biases, batch and zero-size axes,
   and parts that stay readable after the others are released. */
static void test_valid_shapes(void) {
  const int64_t shape[3] = {2, 3, 128};
  tsr_array *w = make(TSR_BFLOAT16, shape, 3);
  tsr_array *w_q = NULL, *scales = NULL, *biases = NULL;
  CHECK_OK(tsr_quantize(&w_q, &scales, &biases, w, 0, 0, TSR_QUANT_AFFINE, NULL));
  check_shape(w_q, TSR_UINT32, (const int64_t[]){2, 3, 16}, 3);
  check_shape(scales, TSR_BFLOAT16, (const int64_t[]){2, 3, 2}, 3);
  check_shape(biases, TSR_BFLOAT16, (const int64_t[]){2, 3, 2}, 3);
  /* Each part keeps the blob: read the biases after releasing the others (and w). */
  tsr_array_release(w_q);
  tsr_array_release(scales);
  uint16_t bias_bits[12];
  CHECK_OK(tsr_array_read(biases, bias_bits, sizeof bias_bits));
  for (int i = 0; i < 12; i++)
    CHECK_EQ_U64(bias_bits[i], 0); /* an all-zero group: bias 0 */
  tsr_array_release(biases);

  /* fp modes: *biases is set to NULL, and a NULL biases out-param is fine. */
  biases = sentinel();
  CHECK_OK(tsr_quantize(&w_q, &scales, &biases, w, 0, 0, TSR_QUANT_MXFP8, NULL));
  CHECK(biases == NULL);
  check_shape(w_q, TSR_UINT32, (const int64_t[]){2, 3, 32}, 3);
  check_shape(scales, TSR_UINT8, (const int64_t[]){2, 3, 4}, 3);
  uint8_t scale_codes[24];
  CHECK_OK(tsr_array_read(scales, scale_codes, sizeof scale_codes));
  for (int i = 0; i < 24; i++)
    CHECK_EQ_U64(scale_codes[i], 127); /* amax 0 gives code 127, as MLX */
  tsr_array_release(w_q);
  tsr_array_release(scales);
  CHECK_OK(tsr_quantize(&w_q, &scales, NULL, w, 16, 4, TSR_QUANT_NVFP4, NULL));
  check_shape(w_q, TSR_UINT32, (const int64_t[]){2, 3, 16}, 3);
  check_shape(scales, TSR_UINT8, (const int64_t[]){2, 3, 8}, 3);
  tsr_array *out = NULL;
  CHECK_OK(tsr_dequantize(&out, w_q, scales, NULL, 0, 0, TSR_QUANT_NVFP4, TSR_FLOAT16, NULL));
  check_shape(out, TSR_FLOAT16, shape, 3);
  tsr_array_release(out);
  CHECK_OK(tsr_dequantize_nvfp4_scaled(&out, w_q, scales, 3.0f, TSR_BFLOAT16, NULL));
  check_shape(out, TSR_BFLOAT16, shape, 3);
  tsr_array_release(out);
  tsr_array_release(w_q);
  tsr_array_release(scales);
  tsr_array_release(w);

  /* Zero-size: no rows, or no columns. */
  const int64_t no_rows[2] = {0, 64}, no_cols[2] = {3, 0};
  const int64_t *cases[2] = {no_rows, no_cols};
  for (int i = 0; i < 2; i++) {
    tsr_array *empty = make(TSR_FLOAT32, cases[i], 2);
    CHECK_OK(tsr_quantize(&w_q, &scales, &biases, empty, 32, 3, TSR_QUANT_AFFINE, NULL));
    check_shape(w_q, TSR_UINT32, (const int64_t[]){cases[i][0], cases[i][1] * 3 / 32}, 2);
    check_shape(scales, TSR_FLOAT32, (const int64_t[]){cases[i][0], cases[i][1] / 32}, 2);
    tsr_array *parts[3] = {w_q, scales, biases};
    CHECK_OK(tsr_eval(parts, 3));
    CHECK_OK(tsr_dequantize(&out, w_q, scales, biases, 32, 3, TSR_QUANT_AFFINE, TSR_FLOAT32, NULL));
    check_shape(out, TSR_FLOAT32, cases[i], 2);
    CHECK_OK(tsr_eval(&out, 1));
    tsr_array *all[] = {empty, w_q, scales, biases, out};
    for (int j = 0; j < 5; j++)
      tsr_array_release(all[j]);
  }
}

int main(void) {
  test_quantize_checks();
  test_dequantize_arguments();
  test_dequantize_arrays();
  test_valid_shapes();
  tsr_memory_clear_cache((tsr_device){TSR_CPU, 0});
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
