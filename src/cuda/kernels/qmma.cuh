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

/* Mirrors cuda/qmm.c's qmma_args. */
struct tsr_qmma_args {
  int64_t m, n, k;
  int64_t w_rows, w_words, groups; /* of one packed weight matrix: rows, words and groups/row */
  int64_t n_blocks, m_blocks;      /* blocks per product along N (16 rows) and M (8 * MT rows) */
  int64_t blocks;                  /* batch count * n_blocks * m_blocks */
};

static __device__ __forceinline__ void mma_bf16(float (&d)[4], uint32_t a0, uint32_t a1,
                                                uint32_t a2, uint32_t a3, uint32_t b0,
                                                uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

static __device__ __forceinline__ uint32_t prmt(uint32_t a, uint32_t b, uint32_t selector) {
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(selector));
  return d;
}

#if BITS == 8
/* The bfloat16 pair of two floats that are exact in bfloat16 (lo in the low half). */
static __device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  uint32_t d;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
  return d;
}
#endif

/* A's two registers of one row for k-step j: (lo, hi) = the pairs for slots 2t.. and 2t+8... */
static __device__ __forceinline__ void a_pairs(const uint32_t *words, int j, uint32_t *lo,
                                               uint32_t *hi) {
#if BITS == 4
  /* Word j/2 holds codes 0..7; step j takes (c0, c4), (c1, c5) or (c2, c6), (c3, c7): the nibbles
     at bits s and s + 16 land in bfloat16 mantissas as 128 + c (0x4300 | c), exact; one bf16x2
     fma takes the 128 off. */
  const uint32_t w = words[j >> 1] >> (8 * (j & 1));
  const uint32_t magic = 0x43004300u, one = 0x3f803f80u, minus128 = 0xc300c300u;
  uint32_t p0 = (w & 0x000f000fu) | magic, p1 = ((w >> 4) & 0x000f000fu) | magic;
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(*lo) : "r"(p0), "r"(one), "r"(minus128));
  asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(*hi) : "r"(p1), "r"(one), "r"(minus128));
#else
  /* Word j holds codes 0..3: each byte into a float's mantissa (2^23 + c), 2^23 off, then pairs
     (c0, c1) and (c2, c3). */
  const uint32_t w = words[j];
  const float big = 8388608.0f;
  float c0 = __uint_as_float(prmt(w, 0x4b000000u, 0x7440u)) - big;
  float c1 = __uint_as_float(prmt(w, 0x4b000000u, 0x7441u)) - big;
  float c2 = __uint_as_float(prmt(w, 0x4b000000u, 0x7442u)) - big;
  float c3 = __uint_as_float(prmt(w, 0x4b000000u, 0x7443u)) - big;
  *lo = pack_bf16(c0, c1);
  *hi = pack_bf16(c2, c3);
#endif
}

/* B's two registers for k-step j from x's pairs xw (in k order), matching a_pairs' order. */
static __device__ __forceinline__ void b_pairs(const uint32_t *xw, int j, uint32_t *lo,
                                               uint32_t *hi) {
#if BITS == 4
  const int q = 4 * (j >> 1) + (j & 1);  /* (x0, x1) (x2, x3) (x4, x5) (x6, x7) of word j/2 */
  *lo = prmt(xw[q], xw[q + 2], 0x5410u); /* (x0, x4) or (x2, x6) */
  *hi = prmt(xw[q], xw[q + 2], 0x7632u); /* (x1, x5) or (x3, x7) */
#else
  *lo = xw[2 * j];
  *hi = xw[2 * j + 1];
#endif
}

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
