/* tests/ops/nn_data.h — test data for the matmul / nn / attention-block tests: deterministic
 * random values exactly representable in a dtype (kept as float64 for the references), arrays
 * made from them, and results read back as float64. Public API only; not a framework. */
#ifndef TSR_TESTS_OPS_NN_DATA_H
#define TSR_TESTS_OPS_NN_DATA_H

#include <math.h>

#include "check.h"

static uint64_t nn_data_rng = 0x9e3779b97f4a7c15ull;

/* Uniform in [-1, 1), from a 64-bit LCG (the same sequence on every run). */
static inline double nn_uniform(void) {
  nn_data_rng = nn_data_rng * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(nn_data_rng >> 11) * 0x1p-52 - 1.0;
}

/* scale * uniform values, each exactly representable in `dtype` (integers: small ones, so every
 * float32 sum of them is exact; uint8: non-negative). */
static inline void nn_random(double *v, int64_t n, tsr_dtype dtype, double scale) {
  for (int64_t i = 0; i < n; i++) {
    double x = scale * nn_uniform();
    if (dtype == TSR_FLOAT16)
      v[i] = (double)tsr_f16_to_f32(tsr_f32_to_f16((float)x));
    else if (dtype == TSR_BFLOAT16)
      v[i] = (double)tsr_bf16_to_f32(tsr_f32_to_bf16((float)x));
    else if (dtype == TSR_FLOAT32)
      v[i] = (double)(float)x;
    else if (dtype == TSR_UINT8)
      v[i] = floor((x / scale + 1.0) * 4.0);
    else
      v[i] = floor(x / scale * 8.0);
  }
}

static inline int64_t nn_count(const int64_t *shape, int ndim) {
  int64_t n = 1;
  for (int i = 0; i < ndim; i++)
    n *= shape[i];
  return n;
}

/* A ready array of `dtype` holding v (values already representable in it). */
static inline tsr_array *nn_make(const double *v, tsr_dtype dtype, const int64_t *shape, int ndim) {
  int64_t n = nn_count(shape, ndim);
  void *data = malloc((size_t)(n > 0 ? n : 1) * 8);
  CHECK(data);
  for (int64_t i = 0; i < n; i++) {
    switch (dtype) {
      case TSR_FLOAT32:
        ((float *)data)[i] = (float)v[i];
        break;
      case TSR_FLOAT16:
        ((uint16_t *)data)[i] = tsr_f32_to_f16((float)v[i]);
        break;
      case TSR_BFLOAT16:
        ((uint16_t *)data)[i] = tsr_f32_to_bf16((float)v[i]);
        break;
      case TSR_INT8:
        ((int8_t *)data)[i] = (int8_t)v[i];
        break;
      case TSR_INT32:
        ((int32_t *)data)[i] = (int32_t)v[i];
        break;
      case TSR_UINT8:
        ((uint8_t *)data)[i] = (uint8_t)v[i];
        break;
      default:
        CHECK_FAIL_("nn_make: dtype %s", tsr_dtype_name(dtype));
    }
  }
  tsr_array *a = NULL;
  CHECK_OK(tsr_array_from_data(&a, data, dtype, shape, ndim));
  free(data);
  return a;
}

/* Evaluates a float array and reads it, row-major, as float64. */
static inline void nn_read(tsr_array *a, double *out) {
  int64_t n = tsr_array_size(a);
  tsr_dtype dtype = tsr_array_dtype(a);
  void *data = malloc((size_t)(n > 0 ? n : 1) * 4);
  CHECK(data);
  CHECK_OK(tsr_array_read(a, data, (size_t)n * tsr_dtype_size(dtype)));
  for (int64_t i = 0; i < n; i++) {
    if (dtype == TSR_FLOAT32)
      out[i] = (double)((float *)data)[i];
    else if (dtype == TSR_FLOAT16)
      out[i] = (double)tsr_f16_to_f32(((uint16_t *)data)[i]);
    else if (dtype == TSR_BFLOAT16)
      out[i] = (double)tsr_bf16_to_f32(((uint16_t *)data)[i]);
    else
      CHECK_FAIL_("nn_read: dtype %s", tsr_dtype_name(dtype));
  }
  free(data);
}

/* Unit roundoff of storing a float32 result in `dtype` (0 for float32 itself). */
static inline double nn_store_unit(tsr_dtype dtype) {
  return dtype == TSR_FLOAT16 ? 0x1p-11 : dtype == TSR_BFLOAT16 ? 0x1p-8 : 0.0;
}

/* The smallest normal of `dtype`: below it a relative bound no longer holds, an absolute one
 * of this size does. */
static inline double nn_tiny(tsr_dtype dtype) {
  return dtype == TSR_FLOAT16 ? 0x1p-24 : 0x1p-126;
}

/* |got - want| <= tolerance for every element, or a failure naming the first that is not. */
static inline void nn_expect_close(const char *what, const double *got, const double *want,
                                   const double *tolerance, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (!(fabs(got[i] - want[i]) <= tolerance[i]))
      CHECK_FAIL_("%s: element %lld: got %.9g, want %.9g (|diff| %.3g > tolerance %.3g)", what,
                  (long long)i, got[i], want[i], fabs(got[i] - want[i]), tolerance[i]);
}

static inline void nn_release_all(tsr_array **arrays, size_t n) {
  for (size_t i = 0; i < n; i++)
    tsr_array_release(arrays[i]);
}

#endif
