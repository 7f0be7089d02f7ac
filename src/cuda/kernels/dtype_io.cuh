/* cuda/kernels/dtype_io.cuh — element `index` of an array of a compile-time dtype loaded as
 * float32 or int64 and results stored back, by base/element.h's rules (the CPU's row loaders
 * use the same functions, cpu/rows.c): floats widen exactly, integers convert to nearest,
 * float16/bfloat16 narrow on the bits (ties to even, NaN kept quiet), integer stores wrap and
 * bool stores v != 0. Typed by a template argument so each kernel specialization folds the
 * dtype switch away. Included by the reduction and nn kernels; not a kernel itself. */
#ifndef TSR_CUDA_KERNELS_DTYPE_IO_CUH
#define TSR_CUDA_KERNELS_DTYPE_IO_CUH

#ifndef __CUDACC_RTC__ /* nvcc: the real header; NVRTC: common.cuh's stand-in */
#include <stdint.h>
#endif

#include "base/element.h"

/* tsr_dtype's values (base/element.h's, which the C build checks against tessera/base.h). */
#define TSR_DT_BOOL TSRI_ELEMENT_BOOL
#define TSR_DT_UINT8 TSRI_ELEMENT_UINT8
#define TSR_DT_UINT32 TSRI_ELEMENT_UINT32
#define TSR_DT_INT8 TSRI_ELEMENT_INT8
#define TSR_DT_INT32 TSRI_ELEMENT_INT32
#define TSR_DT_INT64 TSRI_ELEMENT_INT64
#define TSR_DT_FLOAT16 TSRI_ELEMENT_FLOAT16
#define TSR_DT_BFLOAT16 TSRI_ELEMENT_BFLOAT16
#define TSR_DT_FLOAT32 TSRI_ELEMENT_FLOAT32

#define TSR_DT_IS_FLOAT(d) \
  ((d) == TSR_DT_FLOAT16 || (d) == TSR_DT_BFLOAT16 || (d) == TSR_DT_FLOAT32)

template <int D>
static __device__ inline const unsigned char *tsr_element_at(const void *base, int64_t index) {
  return (const unsigned char *)base + index * tsri_element_size(D);
}

/* As float32 (tsri_element_load_f32): bool as its byte. */
template <int D>
static __device__ inline float tsr_load_f32(const void *base, int64_t index) {
  return tsri_element_load_f32(tsr_element_at<D>(base, index), D);
}

/* An integer or bool element as int64 (tsri_element_load_i64): bool as its byte. */
template <int D>
static __device__ inline int64_t tsr_load_i64(const void *base, int64_t index) {
  static_assert(!TSR_DT_IS_FLOAT(D), "tsr_load_i64 reads integer and bool dtypes");
  return tsri_element_load_i64(tsr_element_at<D>(base, index), D);
}

/* A float32 stored as the float dtype D (tsri_element_store_f32). */
template <int D>
static __device__ inline void tsr_store_f32(void *base, int64_t index, float value) {
  static_assert(TSR_DT_IS_FLOAT(D), "tsr_store_f32 writes float dtypes");
  tsri_element_store_f32((unsigned char *)base + index * tsri_element_size(D), D, value);
}

/* An int64 stored as the integer or bool dtype D (tsri_element_store_i64): wraps; bool != 0. */
template <int D>
static __device__ inline void tsr_store_i64(void *base, int64_t index, int64_t value) {
  static_assert(!TSR_DT_IS_FLOAT(D), "tsr_store_i64 writes integer and bool dtypes");
  tsri_element_store_i64((unsigned char *)base + index * tsri_element_size(D), D, value);
}

#endif
