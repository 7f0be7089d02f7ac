/* tests/cuda/quant_gpu.h — what the GPU quantized-op tests (test_quant_gpu, test_qmm_sweep) share:
 * the two devices, every format the ops accept, the float dtypes, and host arrays built from
 * float values. */
#ifndef TSR_TESTS_CUDA_QUANT_GPU_H
#define TSR_TESTS_CUDA_QUANT_GPU_H

#include "check.h"
#include "quant/formats.h"

static const tsr_device cpu = {TSR_CPU, 0}, gpu = {TSR_GPU, 0};

static const char *const MODE_NAMES[] = {"affine", "mxfp4", "mxfp8", "nvfp4"};
static const tsr_dtype FLOATS[3] = {TSR_FLOAT32, TSR_FLOAT16, TSR_BFLOAT16};

/* v stored as element i of a float dtype's buffer (half precision rounded to nearest even). */
static inline void storef(void *dst, tsr_dtype dtype, int64_t i, float v) {
  if (dtype == TSR_FLOAT32)
    ((float *)dst)[i] = v;
  else
    ((uint16_t *)dst)[i] = dtype == TSR_FLOAT16 ? tsr_f32_to_f16(v) : tsr_f32_to_bf16(v);
}

/* A CPU array holding a copy of data. */
static inline tsr_array *host_array(const void *data, tsr_dtype dtype, const int64_t *shape,
                                    int ndim) {
  tsr_array *a = NULL;
  CHECK_OK(tsr_array_from_data_on(&a, data, dtype, shape, ndim, cpu));
  return a;
}

#endif
