/* cuda/kernels/indexing.cuh — the GPU halves of cuda/indexing.c, one entry per kind
 * (TSR_INDEXING_KIND):
 *   1  check:   every index of an indices array against [0, dim); the row-major position of the
 *               first one outside goes to a device flag (atomicMin), which the host reads back;
 *   2  gather:  take and take_along_axis: output element i (packed) is a's element at operand 0's
 *               offset + index * axis_stride, the index read at operand 1's offset; words of
 *               TSR_INDEXING_BYTES (1, 2, 4 or 8) bytes. An index outside is skipped: the check
 *               reports it and the output is then thrown away;
 *   3  convert: slice_update's update written into dst's region in dst's dtype (operand 0 the
 *               update, operand 1 the region), by base/element.h's astype of one element, the
 *               CPU's own rules;
 *   4  dynamic: tsr_slice_update_dynamic's update written as kind 3 (copied unchanged when the
 *               dtypes agree), the region moved along its axis by a start read here from the
 *               device (an int32 or int64 of start_bytes) and clamped into [0, last]: no host
 *               round trip, so a recorded graph replays with the step's start.
 * Same-dtype copies (concatenate, static slice_update) are copy.cuh's. Dtypes are tsr_dtype's
 * values (base/element.h checks them against tessera/base.h). */
#include "cuda/kernels/common.cuh" /* first: NVRTC's libc stand-in */
#ifndef __CUDACC_RTC__
#include <stdint.h> /* nvcc (AOT) builds; NVRTC has the stand-in */
#endif
/* base/element.h includes base/half.h; both are named here so the kernel manifest
   (scripts/update-kernel-manifest.sh) embeds both. */
#include "base/half.h"
#include "base/element.h"
#include "cuda/kernels/position.cuh"
#include "cuda/kernels/strided.cuh"

#if TSR_INDEXING_KIND == 1 || TSR_INDEXING_KIND == 2

/* Element `at` of an integer array (the indices) as int64. */
static __device__ inline int64_t tsr_index_at(const void *base, int64_t at, int dtype) {
  return tsri_element_load_i64((const unsigned char *)base + at * tsri_element_size(dtype), dtype);
}

#endif

#if TSR_INDEXING_KIND == 1

TSR_KERNEL_ENTRY(tsr_indexing)
(tsr_strided layout, const void *indices, int index_dtype, int64_t dim,
 unsigned long long *first_bad) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < layout.n; j += stride) {
    int64_t offsets[TSR_STRIDED_MAX_OPERANDS];
    tsr_strided_offsets(layout, j, offsets);
    int64_t v = tsr_index_at(indices, offsets[0], index_dtype);
    if (v < 0 || v >= dim) atomicMin(first_bad, (unsigned long long)j);
  }
}

#elif TSR_INDEXING_KIND == 2

#if TSR_INDEXING_BYTES == 1
typedef uint8_t tsr_word;
#elif TSR_INDEXING_BYTES == 2
typedef uint16_t tsr_word;
#elif TSR_INDEXING_BYTES == 4
typedef uint32_t tsr_word;
#elif TSR_INDEXING_BYTES == 8
typedef uint64_t tsr_word;
#else
#error "the gather is specialized by TSR_INDEXING_BYTES (1, 2, 4 or 8)"
#endif

TSR_KERNEL_ENTRY(tsr_indexing)
(tsr_strided layout, const tsr_word *a, const void *indices, int index_dtype, int64_t axis_stride,
 int64_t dim, tsr_word *out) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < layout.n; i += stride) {
    int64_t offsets[TSR_STRIDED_MAX_OPERANDS];
    tsr_strided_offsets(layout, i, offsets);
    int64_t v = tsr_index_at(indices, offsets[1], index_dtype);
    if (v < 0 || v >= dim) continue;
    out[i] = a[offsets[0] + v * axis_stride];
  }
}

#elif TSR_INDEXING_KIND == 3

TSR_KERNEL_ENTRY(tsr_indexing)
(tsr_strided layout, const void *update, int update_dtype, void *out, int out_dtype) {
  const int64_t update_size = tsri_element_size(update_dtype),
                out_size = tsri_element_size(out_dtype);
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < layout.n; i += stride) {
    int64_t offsets[TSR_STRIDED_MAX_OPERANDS];
    tsr_strided_offsets(layout, i, offsets);
    tsri_element_convert((const unsigned char *)update + offsets[0] * update_size, update_dtype,
                         (unsigned char *)out + offsets[1] * out_size, out_dtype);
  }
}

#elif TSR_INDEXING_KIND == 4

/* One element of `bytes` bytes moved unchanged (the words copy.cuh moves). */
static __device__ inline void tsr_move_element(const unsigned char *from, unsigned char *to,
                                               int bytes) {
  switch (bytes) {
    case 1:
      *to = *from;
      break;
    case 2:
      *(uint16_t *)to = *(const uint16_t *)from;
      break;
    case 4:
      *(uint32_t *)to = *(const uint32_t *)from;
      break;
    default:
      *(uint64_t *)to = *(const uint64_t *)from;
      break;
  }
}

TSR_KERNEL_ENTRY(tsr_indexing)
(tsr_strided layout, const void *update, int update_dtype, void *out, int out_dtype,
 const void *start, int start_bytes, int64_t last, int64_t axis_stride) {
  const int64_t update_size = tsri_element_size(update_dtype),
                out_size = tsri_element_size(out_dtype);
  int64_t first = tsr_position_load(start, start_bytes);
  first = first < 0 ? 0 : first > last ? last : first;
  const int64_t shift = first * axis_stride;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < layout.n; i += stride) {
    int64_t offsets[TSR_STRIDED_MAX_OPERANDS];
    tsr_strided_offsets(layout, i, offsets);
    const unsigned char *from = (const unsigned char *)update + offsets[0] * update_size;
    unsigned char *to = (unsigned char *)out + (offsets[1] + shift) * out_size;
    if (update_dtype == out_dtype)
      tsr_move_element(from, to, (int)out_size);
    else
      tsri_element_convert(from, update_dtype, to, out_dtype);
  }
}

#else
#error "indexing.cuh is specialized by TSR_INDEXING_KIND (1 check, 2 gather, 3 convert, 4 dynamic)"
#endif
