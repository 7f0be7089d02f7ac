/* cuda/kernels/qmm.cuh — quantized_matmul / gather_qmm, the general kernel: any M, transpose or
 * not (TSR_QMM_TRANSPOSE). A block computes a 64 x 64 tile of one product (256 threads, 4 x 4
 * outputs each) over K in steps of 32: x's tile converted to float32 and w's tile dequantized to
 * float32 in shared memory (affine s * q + b unrounded, as cpu/qmm.c's reference and fast paths
 * for matmul; fp modes exactly value(code) * scale), zeros past M, N and K, then a float32
 * multiply-add in increasing k (quant-spec Part A §4). Simple and correct on every geometry; the
 * tensor-core kernel comes later. Specialized by TSR_QF_MODE, TSR_QF_BITS, TSR_QF_GROUP_SIZE,
 * TSR_X_DTYPE, TSR_S_DTYPE, TSR_OUT_DTYPE (tsr_dtype values) and TSR_QMM_TRANSPOSE (0 or 1).
 * Operands are packed (cuda/qmm.c gathers strided ones first). */
#include "cuda/kernels/common.cuh" /* first: NVRTC's libc stand-in */
#include "cuda/kernels/qmm_batch.cuh"
#include "cuda/kernels/quant_common.cuh"

#if !defined(TSR_QF_MODE) || !defined(TSR_QF_BITS) || !defined(TSR_QF_GROUP_SIZE) || \
    !defined(TSR_X_DTYPE) || !defined(TSR_S_DTYPE) || !defined(TSR_OUT_DTYPE) ||     \
    !defined(TSR_QMM_TRANSPOSE)
#error \
    "qmm.cuh is specialized by TSR_QF_MODE, _BITS, _GROUP_SIZE, TSR_X/S/OUT_DTYPE, TSR_QMM_TRANSPOSE"
#endif

#define BM 64
#define BN 64
#define BK 32
#define THREADS 256 /* cuda/qmm.c's QMM_THREADS: 16 x 16, each 4 x 4 outputs */
#define PAD 4

/* Mirrors cuda/qmm.c's qmm_args. */
struct tsr_qmm_args {
  int64_t m, n, k;
  int64_t w_rows, w_words, groups; /* of one packed weight matrix */
  int64_t m_blocks, n_blocks;      /* tiles per product */
  int64_t blocks;                  /* batch count * m_blocks * n_blocks */
};

/* Weight `index` of packed row `row` (of the product's matrix) in float32, as the matmul uses it.
 */
static __device__ __forceinline__ float weight(const uint32_t *w, const void *scales,
                                               const void *biases, const tsr_qmm_args &a,
                                               int64_t row, int64_t index) {
  uint32_t code = tsri_qf_get_code(w + row * a.w_words, index, TSR_QF_BITS);
  int64_t entry = row * a.groups + index / TSR_QF_GROUP_SIZE;
#if TSR_QF_MODE == TSRI_QF_AFFINE
  float s = tsr_q_load(scales, entry, TSR_S_DTYPE), b = tsr_q_load(biases, entry, TSR_S_DTYPE);
  return __fadd_rn(__fmul_rn(s, (float)code), b);
#else
  (void)biases;
  uint32_t scale_code = ((const uint8_t *)scales)[entry];
#if TSR_QF_MODE == TSRI_QF_NVFP4
  float scale = tsri_qf_e4m3_decode(scale_code);
#else
  float scale = tsri_qf_e8m0_decode(scale_code);
#endif
  return __fmul_rn(tsr_q_fp_value(code, TSR_QF_BITS), scale);
#endif
}

/* The tiles of step k0: xs[kk][r] = x[m0 + r, k0 + kk], ws[kk][c] = W[k0 + kk, n0 + c] (W the
   K x N dequantized matrix), zero outside the product. */
static __device__ void load_tiles(const tsr_qmm_args &a, const void *x, int64_t x_first,
                                  const uint32_t *w, const void *scales, const void *biases,
                                  int64_t m0, int64_t n0, int64_t k0, float (*xs)[BM + PAD],
                                  float (*ws)[BN + PAD]) {
#pragma unroll
  for (int e = 0; e < BM * BK / THREADS; e++) {
    int i = threadIdx.x + e * THREADS, r = i / BK, kk = i % BK;
    int64_t m = m0 + r, k = k0 + kk;
    xs[kk][r] = m < a.m && k < a.k ? tsr_q_load(x, x_first + m * a.k + k, TSR_X_DTYPE) : 0.0f;
  }
#pragma unroll 2 /* registers: the accumulators stay live across this */
  for (int e = 0; e < BN * BK / THREADS; e++) {
    int i = threadIdx.x + e * THREADS;
#if TSR_QMM_TRANSPOSE /* w's rows are columns n, their codes run along k */
    int c = i / BK, kk = i % BK;
    int64_t n = n0 + c, k = k0 + kk;
    ws[kk][c] = n < a.n && k < a.k ? weight(w, scales, biases, a, n, k) : 0.0f;
#else /* w's rows are k, their codes run along n */
    int kk = i / BN, c = i % BN;
    int64_t n = n0 + c, k = k0 + kk;
    ws[kk][c] = n < a.n && k < a.k ? weight(w, scales, biases, a, k, n) : 0.0f;
#endif
  }
}

/* x packed [x matrices, M, K]; w packed [w matrices, w_rows, w_words]; scales/biases [w matrices,
   w_rows, groups]; out [batch, M, N]; flags: NULL, or a gather's two first-bad positions. */
TSR_KERNEL_ENTRY(tsr_qmm)
__launch_bounds__(THREADS, 2)(tsr_qmm_args a, tsr_qmm_batch batch, const void *x, const uint32_t *w,
                              const void *scales, const void *biases, void *out,
                              unsigned long long *flags) {
  __shared__ float xs[BK][BM + PAD];
  __shared__ float ws[BK][BN + PAD];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int64_t tiles = a.m_blocks * a.n_blocks;
  for (int64_t block = blockIdx.x; block < a.blocks; block += gridDim.x) {
    int64_t b = block / tiles, tile = block - b * tiles;
    int64_t m0 = tile / a.n_blocks * BM, n0 = tile % a.n_blocks * BN;
    int64_t x_matrix, w_matrix;
    if (!tsr_qmm_resolve(batch, b, threadIdx.x == 0 ? flags : NULL, &x_matrix, &w_matrix))
      continue; /* the same for every thread of the block */
    const uint32_t *w_matrix_words = w + w_matrix * a.w_rows * a.w_words;
    const int64_t scale_first = w_matrix * a.w_rows * a.groups;
    const void *s = (const unsigned char *)scales + scale_first * tsri_element_size(TSR_S_DTYPE);
    const void *bs =
        biases ? (const unsigned char *)biases + scale_first * tsri_element_size(TSR_S_DTYPE)
               : NULL;
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
      for (int j = 0; j < 4; j++)
        acc[i][j] = 0.0f;
    for (int64_t k0 = 0; k0 < a.k; k0 += BK) {
      __syncthreads(); /* the previous tiles are consumed */
      load_tiles(a, x, x_matrix * a.m * a.k, w_matrix_words, s, bs, m0, n0, k0, xs, ws);
      __syncthreads();
#pragma unroll 8
      for (int kk = 0; kk < BK; kk++) {
        float xv[4], wv[4];
#pragma unroll
        for (int i = 0; i < 4; i++)
          xv[i] = xs[kk][ty + 16 * i];
#pragma unroll
        for (int j = 0; j < 4; j++)
          wv[j] = ws[kk][tx + 16 * j];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
          for (int j = 0; j < 4; j++)
            acc[i][j] = fmaf(xv[i], wv[j], acc[i][j]);
      }
    }
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
      for (int j = 0; j < 4; j++) {
        int64_t m = m0 + ty + 16 * i, n = n0 + tx + 16 * j;
        if (m < a.m && n < a.n) tsr_q_store(out, (b * a.m + m) * a.n + n, TSR_OUT_DTYPE, acc[i][j]);
      }
  }
}
