/* cuda/kernels/qmv.cuh — quantized_matmul / gather_qmm for decode: transpose (w's packed rows are
 * the output columns) and M <= 8 rows of x per product. Each warp owns COLS output columns; its
 * lanes walk the packed rows in chunks of 32 codes (TSR_QF_BITS consecutive words per lane, so a
 * warp reads consecutive 16-byte pieces of a row: coalesced), with x's K-tile in shared memory as
 * float32 and a warp-shuffle reduction at the end. Accumulates in float32 (quant-spec Part A §4):
 * affine factored per chunk, s * Σ x·q + b * Σ x (Σ x per chunk computed once per tile into
 * shared memory); fp modes with the exact weights value(code) * scale (docs/quant-rules.md).
 * Specialized by TSR_QF_MODE, TSR_QF_BITS, TSR_QF_GROUP_SIZE, TSR_X_DTYPE, TSR_S_DTYPE (affine
 * scales/biases; uint8 for the fp modes), TSR_OUT_DTYPE (tsr_dtype values) and TSR_QMV_M (M).
 * Operands are packed (cuda/qmm.c gathers strided ones first). */
#include "cuda/kernels/common.cuh" /* first: NVRTC's libc stand-in */
#include "cuda/kernels/qmm_batch.cuh"
#include "cuda/kernels/quant_common.cuh"

#if !defined(TSR_QF_MODE) || !defined(TSR_QF_BITS) || !defined(TSR_QF_GROUP_SIZE) || \
    !defined(TSR_X_DTYPE) || !defined(TSR_S_DTYPE) || !defined(TSR_OUT_DTYPE) ||     \
    !defined(TSR_QMV_M)
#error "qmv.cuh is specialized by TSR_QF_MODE, _BITS, _GROUP_SIZE, TSR_X/S/OUT_DTYPE, TSR_QMV_M"
#endif
#if TSR_QMV_M < 1 || TSR_QMV_M > 8
#error "qmv.cuh takes 1 to 8 rows of x"
#endif
#if TSR_QF_MODE == TSRI_QF_AFFINE && TSR_QF_GROUP_SIZE < 32
#error "an affine chunk of 32 codes must lie in one group"
#endif

#define M TSR_QMV_M
#define BITS TSR_QF_BITS
#define WARPS 8 /* cuda/qmm.c's QMV_WARPS */
#define COLS 4  /* cuda/qmm.c's QMV_COLS */
#define CHUNK 32
/* x's K-tile: a multiple of 32 lanes x 32 codes (so of every group size), M * TILE_K floats at
   most 32 KiB. */
#define TILE_K (M == 1 ? 8192 : M == 2 ? 4096 : M <= 4 ? 2048 : 1024)
/* One float of padding after every 32: lane l reads chunk c = l + 32 t at c * 33 + i, a different
   bank for every lane. */
#define XPAD(i) ((i) + ((i) >> 5))
#define X_ROW XPAD(TILE_K)
#define CHUNKS_PER_TILE (TILE_K / CHUNK)
/* fp modes: scale entries per chunk (nvfp4's groups of 16: two). */
#define CHUNK_GROUPS (TSR_QF_GROUP_SIZE < CHUNK ? CHUNK / TSR_QF_GROUP_SIZE : 1)

/* Mirrors cuda/qmm.c's qmv_args. */
struct tsr_qmv_args {
  int64_t n, k;
  int64_t w_rows, w_words, groups; /* of one packed weight matrix: rows, words and scales/row */
  int64_t col_blocks;              /* blocks per product: ceil(n / (WARPS * COLS)) */
  int64_t blocks;                  /* batch count * col_blocks */
  int vector_loads;                /* every full chunk may be read as 16-byte (8-byte) vectors */
  int unused;
};

/* Code i of a chunk held in words (i constant after unrolling); the affine 4- and 8-bit kernels
   decode with code_as_float instead. */
[[maybe_unused]] static __device__ __forceinline__ uint32_t chunk_code(const uint32_t *words,
                                                                       int i) {
  const int bit = i * BITS, word = bit >> 5, shift = bit & 31;
  uint32_t v = words[word] >> shift;
  if (shift + BITS > 32) v |= words[word + 1] << (32 - shift);
  return v & ((1u << BITS) - 1u);
}

/* Code i of a chunk as an exact float without a conversion instruction (I2F issues at a quarter
   of the FMA pipe's rate and capped this kernel): for 4- and 8-bit codes the code's bits are ORed
   into the mantissa of 2^e, e chosen so that the code's lowest bit is worth 1 (2^e + code, one
   lop3), then 2^e is subtracted (exact). A code must lie in the low 23 bits: those above bit 23
   come from the word shifted down by 16 (one shift per word). */
static __device__ __forceinline__ float code_as_float(const uint32_t *words, int i) {
#if BITS == 4 || BITS == 8
  const int bit = i * BITS, shift = bit & 31;
  const bool high = shift + BITS > 23;
  const int s = high ? shift - 16 : shift;
  const uint32_t source = high ? words[bit >> 5] >> 16 : words[bit >> 5];
  const uint32_t power = (uint32_t)(127 + 23 - s) << 23; /* 2^(23 - s) */
  return __uint_as_float((source & (((1u << BITS) - 1u) << s)) | power) - __uint_as_float(power);
#else
  return (float)chunk_code(words, i);
#endif
}

/* The chunk at p: BITS words, or the BITS / 2 of a 16-code tail (nvfp4, K = 16 mod 32; the rest
   zero), never a word past the row. */
static __device__ __forceinline__ void load_chunk(const uint32_t *p, int codes, bool vector_loads,
                                                  uint32_t *words) {
  if (codes == CHUNK) {
#if BITS % 4 == 0
    if (vector_loads) {
#pragma unroll
      for (int q = 0; q < BITS / 4; q++) {
        uint4 v = __ldg((const uint4 *)p + q);
        words[4 * q] = v.x;
        words[4 * q + 1] = v.y;
        words[4 * q + 2] = v.z;
        words[4 * q + 3] = v.w;
      }
      return;
    }
#elif BITS == 2
    if (vector_loads) {
      uint2 v = __ldg((const uint2 *)p);
      words[0] = v.x;
      words[1] = v.y;
      return;
    }
#endif
#pragma unroll
    for (int j = 0; j < BITS; j++)
      words[j] = __ldg(p + j);
    return;
  }
#pragma unroll
  for (int j = 0; j < BITS; j++)
    words[j] = j < BITS / 2 ? __ldg(p + j) : 0u;
}

/* The scale (exact float32) of scale entry e: affine scales' dtype, else a decoded code. */
static __device__ __forceinline__ float matmul_scale(const void *scales, int64_t e) {
#if TSR_QF_MODE == TSRI_QF_AFFINE
  return tsr_q_load(scales, e, TSR_S_DTYPE);
#elif TSR_QF_MODE == TSRI_QF_NVFP4
  return tsri_qf_e4m3_decode(((const uint8_t *)scales)[e]);
#else
  return tsri_qf_e8m0_decode(((const uint8_t *)scales)[e]);
#endif
}

/* x[m, 0..K) of the product's matrix, K-tile by K-tile, times the warp's COLS packed rows. */
struct qmv_state {
  float acc[COLS][M];
};

#if TSR_QF_MODE == TSRI_QF_AFFINE
/* One chunk, affine: per column s * Σ x·q + b * Σ x over the chunk's 32 codes. */
static __device__ __forceinline__ void chunk_affine(qmv_state &st, const float *xs,
                                                    const float *xsum, int c,
                                                    uint32_t (&words)[COLS][BITS], const float *s,
                                                    const float *b) {
  float dot[COLS][M];
#pragma unroll
  for (int j = 0; j < COLS; j++)
#pragma unroll
    for (int m = 0; m < M; m++)
      dot[j][m] = 0.0f;
#pragma unroll
  for (int i = 0; i < CHUNK; i++) {
    float q[COLS];
#pragma unroll
    for (int j = 0; j < COLS; j++)
      q[j] = code_as_float(words[j], i);
#pragma unroll
    for (int m = 0; m < M; m++) {
      float xv = xs[m * X_ROW + c * (CHUNK + 1) + i];
#pragma unroll
      for (int j = 0; j < COLS; j++)
        dot[j][m] = fmaf(xv, q[j], dot[j][m]);
    }
  }
#pragma unroll
  for (int m = 0; m < M; m++) {
    float sx = xsum[m * CHUNKS_PER_TILE + c];
#pragma unroll
    for (int j = 0; j < COLS; j++)
      st.acc[j][m] = fmaf(b[j], sx, fmaf(s[j], dot[j][m], st.acc[j][m]));
  }
}
#else
/* One chunk, fp modes: each weight exactly value(code) * scale, then x * w accumulated. */
static __device__ __forceinline__ void chunk_fp(qmv_state &st, const float *xs, const float *lut,
                                                int c, int codes, uint32_t (&words)[COLS][BITS],
                                                float (&s)[COLS][CHUNK_GROUPS]) {
#pragma unroll
  for (int i = 0; i < CHUNK; i++) {
    if (i >= CHUNK / 2 && codes != CHUNK) break; /* nvfp4's 16-code tail */
    float wv[COLS];
#pragma unroll
    for (int j = 0; j < COLS; j++)
      wv[j] = __fmul_rn(lut[chunk_code(words[j], i)], s[j][i / (CHUNK / CHUNK_GROUPS)]);
#pragma unroll
    for (int m = 0; m < M; m++) {
      float xv = xs[m * X_ROW + c * (CHUNK + 1) + i];
#pragma unroll
      for (int j = 0; j < COLS; j++)
        st.acc[j][m] = fmaf(xv, wv[j], st.acc[j][m]);
    }
  }
}
#endif

/* Loads x's tile [M, kt] (from element k0 of each row) as float32 into xs and, for affine, the
   sum of each 32-element chunk into xsum (in increasing k). Ends with the block synchronized. */
static __device__ void load_x_tile(const void *x, int64_t x_first, int64_t k, int64_t k0, int kt,
                                   float *xs, float *xsum) {
  __syncthreads(); /* the previous tile is consumed */
  for (int i = threadIdx.x; i < M * kt; i += WARPS * 32) {
    int m = i / kt, j = i - m * kt;
    xs[m * X_ROW + XPAD(j)] = tsr_q_load(x, x_first + m * k + k0 + j, TSR_X_DTYPE);
  }
  __syncthreads();
#if TSR_QF_MODE == TSRI_QF_AFFINE
  const int chunks = kt / CHUNK; /* affine tiles are whole chunks */
  for (int i = threadIdx.x; i < M * chunks; i += WARPS * 32) {
    int m = i / chunks, c = i - m * chunks;
    const float *row = xs + m * X_ROW + c * (CHUNK + 1);
    float sum = 0.0f;
    for (int j = 0; j < CHUNK; j++)
      sum = __fadd_rn(sum, row[j]);
    xsum[m * CHUNKS_PER_TILE + c] = sum;
  }
  __syncthreads();
#else
  (void)xsum;
#endif
}

/* The warp's partial sums reduced over its lanes and stored by lane 0: out[b, m, n]. */
static __device__ void store_columns(qmv_state &st, int64_t b, int64_t col0, int64_t n, void *out) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int j = 0; j < COLS; j++)
#pragma unroll
    for (int m = 0; m < M; m++) {
      float v = st.acc[j][m];
#pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
      if (lane == 0 && col0 + j < n) tsr_q_store(out, (b * M + m) * n + col0 + j, TSR_OUT_DTYPE, v);
    }
}

/* x packed [x matrices, M, K] of TSR_X_DTYPE; w packed [w matrices, w_rows = N, w_words];
   scales/biases [w matrices, N, groups]; out [batch, M, N]; flags: NULL, or the two first-bad
   batch positions (lhs, rhs) of a gather. */
TSR_KERNEL_ENTRY(tsr_qmv)
__launch_bounds__(WARPS * 32, 2)(tsr_qmv_args a, tsr_qmm_batch batch, const void *x,
                                 const uint32_t *w, const void *scales, const void *biases,
                                 void *out, unsigned long long *flags) {
  __shared__ float xs[M * X_ROW];
#if TSR_QF_MODE == TSRI_QF_AFFINE
  __shared__ float xsum[M * CHUNKS_PER_TILE];
#else
  float *xsum = NULL;
  __shared__ float lut[1 << BITS];
  for (int i = threadIdx.x; i < (1 << BITS); i += WARPS * 32)
    lut[i] = tsr_q_fp_value((uint32_t)i, BITS);
  __syncthreads();
#endif
  (void)biases;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int64_t block = blockIdx.x; block < a.blocks; block += gridDim.x) {
    int64_t b = block / a.col_blocks, col_block = block - b * a.col_blocks;
    int64_t x_matrix, w_matrix;
    if (!tsr_qmm_resolve(batch, b, threadIdx.x == 0 ? flags : NULL, &x_matrix, &w_matrix))
      continue; /* the same for every thread of the block */
    const int64_t col0 = col_block * (WARPS * COLS) + warp * COLS;
    const uint32_t *rows[COLS];
    int64_t scale_rows[COLS];
#pragma unroll
    for (int j = 0; j < COLS; j++) {
      int64_t n = col0 + j < a.n ? col0 + j : a.n - 1; /* past N: read row N - 1, never stored */
      rows[j] = w + (w_matrix * a.w_rows + n) * a.w_words;
      scale_rows[j] = (w_matrix * a.w_rows + n) * a.groups;
    }
    qmv_state st;
#pragma unroll
    for (int j = 0; j < COLS; j++)
#pragma unroll
      for (int m = 0; m < M; m++)
        st.acc[j][m] = 0.0f;
    for (int64_t k0 = 0; k0 < a.k; k0 += TILE_K) {
      int kt = (int)(a.k - k0 < TILE_K ? a.k - k0 : TILE_K);
      load_x_tile(x, x_matrix * M * a.k, a.k, k0, kt, xs, xsum);
      const int chunks = (kt + CHUNK - 1) / CHUNK;
      for (int c = lane; c < chunks; c += 32) {
        const int64_t kc = k0 + (int64_t)c * CHUNK;
        const int codes = a.k - kc < CHUNK ? (int)(a.k - kc) : CHUNK;
        uint32_t words[COLS][BITS];
#pragma unroll
        for (int j = 0; j < COLS; j++)
          load_chunk(rows[j] + kc * BITS / 32, codes, a.vector_loads != 0, words[j]);
#if TSR_QF_MODE == TSRI_QF_AFFINE
        float s[COLS], bias[COLS];
        const int64_t group = kc / TSR_QF_GROUP_SIZE;
#pragma unroll
        for (int j = 0; j < COLS; j++) {
          s[j] = matmul_scale(scales, scale_rows[j] + group);
          bias[j] = tsr_q_load(biases, scale_rows[j] + group, TSR_S_DTYPE);
        }
        chunk_affine(st, xs, xsum, c, words, s, bias);
#else
        float s[COLS][CHUNK_GROUPS];
        const int64_t group = kc / TSR_QF_GROUP_SIZE;
#pragma unroll
        for (int j = 0; j < COLS; j++)
#pragma unroll
          for (int g = 0; g < CHUNK_GROUPS; g++)
            s[j][g] = g * TSR_QF_GROUP_SIZE < codes
                          ? matmul_scale(scales, scale_rows[j] + group + g)
                          : 0.0f;
        chunk_fp(st, xs, lut, c, codes, words, s);
#endif
      }
    }
    store_columns(st, b, col0, a.n, out);
  }
}
