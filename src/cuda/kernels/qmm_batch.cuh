/* cuda/kernels/qmm_batch.cuh — which matrices of x and w an output matrix of quantized_matmul or
 * gather_qmm uses (ops/quant_matmul.h's geometry): the element of an index array at the output
 * matrix's batch position, or that position's flat index in the side's index shape, checked
 * against the side's matrix count as cpu/qmm.c checks it. An index out of range is recorded as
 * the first (lowest) such batch position of its side in a device flag, which the launcher
 * (cuda/qmm.c) reads back to report it as the CPU does. Included by qmv.cuh and qmm.cuh; not a
 * kernel itself. */
#ifndef TSR_CUDA_KERNELS_QMM_BATCH_CUH
#define TSR_CUDA_KERNELS_QMM_BATCH_CUH

#include "base/element.h"

#define TSR_QMM_MAX_NDIM 8

/* One side (x: lhs, w: rhs). Mirrors cuda/qmm.c's qmm_side. */
struct tsr_qmm_side {
  const void *indices;               /* NULL: the index is the flat position in `shape` */
  int64_t offset;                    /* elements, into indices */
  int64_t matrices;                  /* valid indices are [0, matrices) */
  int64_t shape[TSR_QMM_MAX_NDIM];   /* the index shape, right-aligned on the batch shape */
  int64_t strides[TSR_QMM_MAX_NDIM]; /* elements, of indices */
  int ndim, dtype;                   /* dtype: tsr_dtype's value of the indices */
};

/* Mirrors cuda/qmm.c's qmm_batch. */
struct tsr_qmm_batch {
  int64_t count;
  int64_t shape[TSR_QMM_MAX_NDIM];
  int ndim, unused;
  tsr_qmm_side lhs, rhs;
};

/* The matrix side s gives the output matrix b at batch coordinates coord, or -1 when it is out
   of range (then b is recorded in *flag, when flag is not NULL). */
static __device__ int64_t tsr_qmm_side_index(const tsr_qmm_side &s, const int64_t *coord,
                                             int batch_ndim, int64_t b, unsigned long long *flag) {
  int64_t flat = 0, offset = s.offset;
  for (int i = 0; i < s.ndim; i++) {
    int64_t c = s.shape[i] == 1 ? 0 : coord[batch_ndim - s.ndim + i];
    flat = flat * s.shape[i] + c;
    offset += c * s.strides[i];
  }
  int64_t value = flat;
  if (s.indices)
    value = tsri_element_load_i64(
        (const unsigned char *)s.indices + offset * tsri_element_size(s.dtype), s.dtype);
  if (value < 0 || value >= s.matrices) {
    if (flag) atomicMin(flag, (unsigned long long)b);
    return -1;
  }
  return value;
}

/* x's and w's matrices for output matrix b; false when either is out of range. Both sides are
   checked (and recorded in flags[0] and flags[1] when flags is not NULL) either way. */
static __device__ bool tsr_qmm_resolve(const tsr_qmm_batch &batch, int64_t b,
                                       unsigned long long *flags, int64_t *x_matrix,
                                       int64_t *w_matrix) {
  int64_t coord[TSR_QMM_MAX_NDIM], rest = b;
  for (int d = batch.ndim - 1; d >= 0; d--) {
    coord[d] = rest % batch.shape[d];
    rest /= batch.shape[d];
  }
  *x_matrix = tsr_qmm_side_index(batch.lhs, coord, batch.ndim, b, flags);
  *w_matrix = tsr_qmm_side_index(batch.rhs, coord, batch.ndim, b, flags ? flags + 1 : NULL);
  return *x_matrix >= 0 && *w_matrix >= 0;
}

#endif
