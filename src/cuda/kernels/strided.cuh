/* cuda/kernels/strided.cuh — the strided layout every elementwise kernel walks: up to 8 axes, each
 * operand with its own element strides and offset (broadcast axes have stride 0), the output
 * index decomposed row-major. Included by kernel sources; not a kernel itself. */
#ifndef TSR_CUDA_KERNELS_STRIDED_CUH
#define TSR_CUDA_KERNELS_STRIDED_CUH

#define TSR_STRIDED_MAX_NDIM 8
#define TSR_STRIDED_MAX_OPERANDS 4

/* Passed by value; the host side (cuda/strided.h) fills the same layout. */
struct tsr_strided {
  int64_t n; /* elements of the output */
  int ndim, noperands;
  int64_t shape[TSR_STRIDED_MAX_NDIM];
  int64_t strides[TSR_STRIDED_MAX_OPERANDS][TSR_STRIDED_MAX_NDIM];
  int64_t offset[TSR_STRIDED_MAX_OPERANDS];
};

/* The element offsets of output element `index` in each operand. */
static __device__ inline void tsr_strided_offsets(const tsr_strided &s, int64_t index,
                                                  int64_t *offsets) {
  for (int k = 0; k < s.noperands; k++)
    offsets[k] = s.offset[k];
  for (int d = s.ndim - 1; d >= 0; d--) {
    int64_t extent = s.shape[d];
    int64_t i = index % extent;
    index /= extent;
    for (int k = 0; k < s.noperands; k++)
      offsets[k] += i * s.strides[k][d];
  }
}

#endif
