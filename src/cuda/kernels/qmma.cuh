/* cuda/kernels/qmma.cuh — quantized_matmul / gather_qmm on the tensor cores for affine 4- and
 * 8-bit weights, transpose (w's packed rows are the output columns), bfloat16 x, any M. One
 * mma.sync m16n8k16 (bf16 in, float32 accumulate) takes 16 weight rows (A) against 8 rows of x
 * (B); a block holds 16 weight rows and up to 8 * MT rows of x, and its 8 warps split K by groups
 * (a reduction through shared memory at the end), so decode shapes with few rows still fill the
 * GPU.
 *
 * Exactness: a code q (0..255) and a bfloat16 x are exact tensor-core inputs and their product
 * is exact; each group's Σ x·q is accumulated in its own float32 fragment, then the factored form
 * of quant-spec Part A §4 adds s * Σ x·q + b * Σ x (Σ x over the group from one more mma with an
 * A of ones) into the float32 result, rounded once to the output dtype.
 *
 * The k order inside a group is free (a dot product does not care) as long as A and B agree:
 * lane (g, t) of a warp owns the group's codes [t * G/4, (t + 1) * G/4) of rows g and g + 8 (one
 * contiguous load per row) and the same elements of x's row g, and feeds them to the mma in the
 * order its register layout makes cheapest (4-bit: codes i and i + 4 of a word share a register,
 * made by one lop3 into bfloat16's mantissa; x's pairs permuted to match with prmt).
 *
 * Specialized by TSR_QF_BITS (4, 8), TSR_QF_GROUP_SIZE (32, 64, 128), TSR_S_DTYPE, TSR_OUT_DTYPE
 * and TSR_QMMA_MT (x tiles of 8 rows per block: 1, 2, 4, 8). x is bfloat16 (TSR_X_DTYPE must say
 * so); operands are packed, w and x 16-byte aligned (cuda/qmm.c checks before choosing this). */
#include "cuda/kernels/common.cuh" /* first: NVRTC's libc stand-in */
#include "cuda/kernels/qmm_batch.cuh"
#include "cuda/kernels/quant_common.cuh"

#if !defined(TSR_QF_BITS) || !defined(TSR_QF_GROUP_SIZE) || !defined(TSR_X_DTYPE) || \
    !defined(TSR_S_DTYPE) || !defined(TSR_OUT_DTYPE) || !defined(TSR_QMMA_MT)
#error "qmma.cuh is specialized by TSR_QF_BITS, _GROUP_SIZE, TSR_X/S/OUT_DTYPE, TSR_QMMA_MT"
#endif
#if TSR_QF_BITS != 4 && TSR_QF_BITS != 8
#error "qmma.cuh takes 4- and 8-bit codes"
#endif
#if TSR_QF_GROUP_SIZE != 32 && TSR_QF_GROUP_SIZE != 64 && TSR_QF_GROUP_SIZE != 128
#error "qmma.cuh takes groups of 32, 64 and 128"
#endif
#if TSR_X_DTYPE != TSRI_ELEMENT_BFLOAT16
#error "qmma.cuh takes bfloat16 x"
#endif

#define BITS TSR_QF_BITS
#define G TSR_QF_GROUP_SIZE
#define MT TSR_QMMA_MT
#define WARPS 8                   /* cuda/qmm.c's QMMA_WARPS */
#define CODES (G / 4)             /* codes of one row a lane owns in a group */
#define WORDS (CODES * BITS / 32) /* their packed words */
#define XWORDS (CODES / 2)        /* x's bfloat16 pairs for them */
#define STEPS (G / 16)            /* mma k-steps per group */
/* Groups a warp loads before computing, so that ~64 bytes per lane are in flight. */
#define UNROLL (WORDS >= 8 ? 1 : 8 / WORDS)
/* Decode (one x tile): x's words are loaded with the weights, not in the products, so a group's
   product never waits for its x. */
#define X_EARLY (MT == 1)
#define EARLY_MT (X_EARLY ? MT : 1)

#include "cuda/kernels/qmma_codes.cuh" /* after BITS */

/* Mirrors cuda/qmm.c's qmma_args. */
struct tsr_qmma_args {
  int64_t m, n, k;
  int64_t w_rows, w_words, groups; /* of one packed weight matrix: rows, words and groups/row */
  int64_t n_blocks, m_blocks;      /* blocks per product along N (16 rows) and M (8 * MT rows) */
  int64_t blocks;                  /* batch count * n_blocks * m_blocks */
};

/* `count` 32-bit words from 16-byte-aligned global memory (count a power of two). */
template <int COUNT>
static __device__ __forceinline__ void load_words(const uint32_t *p, uint32_t *out) {
  if (COUNT >= 4) {
#pragma unroll
    for (int i = 0; i < COUNT / 4; i++) {
      uint4 v = __ldg((const uint4 *)p + i);
      out[4 * i] = v.x;
      out[4 * i + 1] = v.y;
      out[4 * i + 2] = v.z;
      out[4 * i + 3] = v.w;
    }
  } else if (COUNT == 2) {
    uint2 v = __ldg((const uint2 *)p);
    out[0] = v.x;
    out[1] = v.y;
  } else {
    out[0] = __ldg(p);
  }
}

/* What one lane reads, as pointers made once per block: its piece of rows g and g + 8 (clamped to
   the last row), their scale and bias entries, and (decode) its piece of x's row g, or none when
   that row is past M. Group i is then a constant stride away. */
struct qmma_lane {
  const uint32_t *w[2];
  const unsigned char *s[2], *b[2];
  const uint16_t *x; /* x_early only; NULL: zeros */
};

#define S_SIZE (TSR_S_DTYPE == TSRI_ELEMENT_FLOAT32 ? 4 : 2)

static __device__ __forceinline__ void zero_words(uint32_t (&xw)[XWORDS]) {
#pragma unroll
  for (int i = 0; i < XWORDS; i++)
    xw[i] = 0u;
}

/* One group's operands, loaded before any product needs them. */
struct qmma_group {
  uint32_t words[2][WORDS];
  uint32_t x[EARLY_MT][XWORDS];
  float s[2], b[2];
};

static __device__ __forceinline__ void load_group(qmma_group &q, const qmma_lane &l, int group) {
#pragma unroll
  for (int h = 0; h < 2; h++) {
    load_words<WORDS>(l.w[h] + group * (G * BITS / 32), q.words[h]);
    q.s[h] = tsri_element_load_f32(l.s[h] + group * S_SIZE, TSR_S_DTYPE);
    q.b[h] = tsri_element_load_f32(l.b[h] + group * S_SIZE, TSR_S_DTYPE);
  }
  if (X_EARLY) {
    if (l.x)
      load_words<XWORDS>((const uint32_t *)(l.x + group * G), q.x[0]);
    else
      zero_words(q.x[0]);
  }
}

/* One group of the warp: for every x tile, Σ x·q per row into a fresh fragment, Σ x into
   another, then acc += s * Σ x·q + b * Σ x. Late x (prefill) is read here from x_tiles, the
   lane's row of the block's first x tile (NULL when past M) and the row stride 8 * k. */
static __device__ __forceinline__ void group_product(float (&acc)[MT][4], const qmma_group &q,
                                                     const uint16_t *x_tiles, int64_t rows_left,
                                                     int64_t k, int group) {
  uint32_t a[STEPS][4];
#pragma unroll
  for (int j = 0; j < STEPS; j++) {
    a_pairs(q.words[0], j, &a[j][0], &a[j][2]);
    a_pairs(q.words[1], j, &a[j][1], &a[j][3]);
  }
  const uint32_t ones = 0x3f803f80u;
#pragma unroll
  for (int mt = 0; mt < MT; mt++) {
    uint32_t xw[XWORDS];
    if (X_EARLY) {
#pragma unroll
      for (int i = 0; i < XWORDS; i++)
        xw[i] = q.x[0][i];
    } else if (8 * mt < rows_left) {
      load_words<XWORDS>((const uint32_t *)(x_tiles + 8 * mt * k + group * G), xw);
    } else {
      zero_words(xw);
    }
    float dot[4] = {0.0f, 0.0f, 0.0f, 0.0f}, sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int j = 0; j < STEPS; j++) {
      uint32_t b_lo, b_hi;
      b_pairs(xw, j, &b_lo, &b_hi);
      mma_bf16(dot, a[j][0], a[j][1], a[j][2], a[j][3], b_lo, b_hi);
      mma_bf16(sum, ones, ones, ones, ones, b_lo, b_hi);
    }
    /* dot: (row g, x rows 2t, 2t+1), (row g+8, same); sum: Σ x of x rows 2t, 2t+1. */
    acc[mt][0] = fmaf(q.b[0], sum[0], fmaf(q.s[0], dot[0], acc[mt][0]));
    acc[mt][1] = fmaf(q.b[0], sum[1], fmaf(q.s[0], dot[1], acc[mt][1]));
    acc[mt][2] = fmaf(q.b[1], sum[0], fmaf(q.s[1], dot[2], acc[mt][2]));
    acc[mt][3] = fmaf(q.b[1], sum[1], fmaf(q.s[1], dot[3], acc[mt][3]));
  }
}

/* The warp's groups w * UNROLL + WARPS * UNROLL * i + [0, UNROLL): whole runs load all their
   groups first, then compute; the last, partial run one group at a time. */
static __device__ void warp_groups(float (&acc)[MT][4], const qmma_lane &l, const uint16_t *x_tiles,
                                   int64_t rows_left, int64_t k, int groups) {
  const int warp = threadIdx.x >> 5;
  int first = warp * UNROLL;
  for (; first + UNROLL <= groups; first += WARPS * UNROLL) {
    qmma_group q[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++)
      load_group(q[u], l, first + u);
#pragma unroll
    for (int u = 0; u < UNROLL; u++)
      group_product(acc, q[u], x_tiles, rows_left, k, first + u);
  }
  for (int group = first; group < groups && group < first + UNROLL; group++) {
    qmma_group q;
    load_group(q, l, group);
    group_product(acc, q, x_tiles, rows_left, k, group);
  }
}

/* The 8 warps' partial sums added through shared memory and stored: out[b, m, n]. */
static __device__ void reduce_and_store(float (&acc)[MT][4], float *red, int64_t b, int64_t n0,
                                        int64_t m0, const tsr_qmma_args &a, void *out) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int i = 0; i < 4; i++)
      red[((warp * MT + mt) * 4 + i) * 32 + lane] = acc[mt][i];
  __syncthreads();
  for (int v = threadIdx.x; v < MT * 4 * 32; v += WARPS * 32) {
    const int l = v & 31, i = (v >> 5) & 3, mt = v >> 7;
    float total = 0.0f;
#pragma unroll
    for (int w = 0; w < WARPS; w++)
      total += red[((w * MT + mt) * 4 + i) * 32 + l];
    const int64_t n = n0 + (l >> 2) + (i >= 2 ? 8 : 0);
    const int64_t m = m0 + 8 * mt + 2 * (l & 3) + (i & 1);
    if (n < a.n && m < a.m) tsr_q_store(out, (b * a.m + m) * a.n + n, TSR_OUT_DTYPE, total);
  }
  __syncthreads(); /* red is reused by the block's next tile */
}

/* x packed [x matrices, M, K] bfloat16; w packed [w matrices, w_rows = N, w_words]; scales and
   biases [w matrices, N, groups]; out [batch, M, N]; flags as in qmv.cuh. */
TSR_KERNEL_ENTRY(tsr_qmma)
__launch_bounds__(WARPS * 32, 2)(tsr_qmma_args a, tsr_qmm_batch batch, const uint16_t *x,
                                 const uint32_t *w, const void *scales, const void *biases,
                                 void *out, unsigned long long *flags) {
  __shared__ float red[WARPS * MT * 4 * 32];
  const int lane = threadIdx.x & 31, g = lane >> 2;
  for (int64_t block = blockIdx.x; block < a.blocks; block += gridDim.x) {
    const int64_t per_product = a.n_blocks * a.m_blocks;
    const int64_t b = block / per_product, rest = block - b * per_product;
    const int64_t m_block = rest / a.n_blocks, n_block = rest - m_block * a.n_blocks;
    int64_t x_matrix, w_matrix;
    if (!tsr_qmm_resolve(batch, b, threadIdx.x == 0 ? flags : NULL, &x_matrix, &w_matrix))
      continue; /* the same for every thread of the block */
    const int64_t n0 = n_block * 16, m0 = m_block * 8 * MT;
    const int t = lane & 3;
    qmma_lane l;
#pragma unroll
    for (int h = 0; h < 2; h++) {
      int64_t n = n0 + g + 8 * h;
      n = n < a.n ? n : a.n - 1; /* past N: read the last row, never stored */
      const int64_t row = w_matrix * a.w_rows + n;
      l.w[h] = w + row * a.w_words + t * WORDS;
      l.s[h] = (const unsigned char *)scales + row * a.groups * S_SIZE;
      l.b[h] = (const unsigned char *)biases + row * a.groups * S_SIZE;
    }
    const int64_t x_row = m0 + g, rows_left = a.m - x_row;
    const uint16_t *x_tiles = rows_left > 0 ? x + (x_matrix * a.m + x_row) * a.k + t * CODES : NULL;
    l.x = x_tiles;
    float acc[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int i = 0; i < 4; i++)
        acc[mt][i] = 0.0f;
    warp_groups(acc, l, x_tiles, rows_left, a.k, (int)a.groups);
    reduce_and_store(acc, red, b, n0, m0, a, out);
  }
}
