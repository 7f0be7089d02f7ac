/* cuda/kernels/qmv_mma.cuh — decode (few rows of x) for affine 4- and 8-bit weights, transpose,
 * bfloat16 x, on the tensor cores, with a group per mma column. qmma.cuh gives each group its
 * own mma and spends 7 of its 8 columns on absent rows of x; here the columns carry the groups:
 * a k-window of 128 codes of a row holds GW = 128 / G groups, lane t of a quad owns the window's
 * codes [32 t, 32 t + 32) (one 16-byte load of 4-bit codes per row, two of 8-bit), and B's column
 * c = m * GW + grp holds row m of x on the codes of group grp and zeros elsewhere. So one mma
 * m16n8k16 takes 16 weight rows against MR = 8 / GW rows of x and every group of the window at
 * once, D[row][c] being that group's Σ x·q (g32: 2 rows of x, g64: 4, g128: 8).
 *
 * Exactness as in qmma.cuh: codes and bfloat16 x are exact tensor-core inputs, their products
 * exact, each group's Σ x·q accumulated in float32 (a fresh fragment per window), Σ x from one
 * more mma with an A of ones; then acc += s * Σ x·q + b * Σ x (quant-spec Part A §4's factored
 * form) in float32, the groups of one row of x added in a fixed order, rounded once.
 *
 * A warp owns RT tiles of 16 weight rows and a contiguous run of the windows; the block's WARPS
 * warps split K and add their sums through shared memory at the end. Each warp loads window i + 1
 * (weights and scales) before it computes window i, so a load is always in flight. A window past
 * K (K not a multiple of 128) reads zeros for the lanes past K.
 *
 * Specialized by TSR_QF_BITS (4, 8), TSR_QF_GROUP_SIZE (32, 64, 128), TSR_S_DTYPE,
 * TSR_OUT_DTYPE, TSR_QMVM_RT (1, 2) and TSR_QMVM_WARPS (4, 8, 16). M <= MR (cuda/qmm.c chooses
 * this kernel only then); x bfloat16, w and x packed on 16-byte boundaries. */
#include "cuda/kernels/common.cuh" /* first: NVRTC's libc stand-in */
#include "cuda/kernels/qmm_batch.cuh"
#include "cuda/kernels/quant_common.cuh"

#if !defined(TSR_QF_BITS) || !defined(TSR_QF_GROUP_SIZE) || !defined(TSR_X_DTYPE) || \
    !defined(TSR_S_DTYPE) || !defined(TSR_OUT_DTYPE) || !defined(TSR_QMVM_RT) ||     \
    !defined(TSR_QMVM_WARPS)
#error "qmv_mma.cuh is specialized by TSR_QF_BITS, _GROUP_SIZE, TSR_X/S/OUT_DTYPE, TSR_QMVM_*"
#endif
#if TSR_QF_BITS != 4 && TSR_QF_BITS != 8
#error "qmv_mma.cuh takes 4- and 8-bit codes"
#endif
#if TSR_QF_GROUP_SIZE != 32 && TSR_QF_GROUP_SIZE != 64 && TSR_QF_GROUP_SIZE != 128
#error "qmv_mma.cuh takes groups of 32, 64 and 128"
#endif
#if TSR_X_DTYPE != TSRI_ELEMENT_BFLOAT16
#error "qmv_mma.cuh takes bfloat16 x"
#endif

#define BITS TSR_QF_BITS
#define G TSR_QF_GROUP_SIZE
#define RT TSR_QMVM_RT
#define WARPS TSR_QMVM_WARPS
#define WINDOW 128                     /* codes of a row per k-window */
#define LANE_WORDS BITS                /* a lane's 32 codes of a row, in 32-bit words */
#define ROW_WORDS (WINDOW * BITS / 32) /* a window of one row, in words */
#define GW (WINDOW / G)                /* groups per window */
#define MR (8 / GW)                    /* rows of x one mma serves */
#define STEPS (WINDOW / 16)            /* mma k-steps per window */
#define S_SIZE (TSR_S_DTYPE == TSRI_ELEMENT_FLOAT32 ? 4 : 2)
/* x staged once per block in shared memory as B's fragments with Σ x per column (1), or read by
   each lane from global memory and permuted in registers (0). */
#ifndef TSR_QMVM_XS
#define TSR_QMVM_XS 0
#endif
#define XS TSR_QMVM_XS

#include "cuda/kernels/qmma_codes.cuh" /* after BITS */

/* Mirrors cuda/qmm.c's qmv_mma_args. */
struct tsr_qmv_mma_args {
  int64_t m, n, k;
  int64_t w_rows, w_words, groups; /* of one packed weight matrix: rows, words and groups/row */
  int64_t n_blocks;                /* blocks per product along N (16 * RT rows each) */
  int64_t blocks;                  /* batch count * n_blocks */
  int scale_pairs;                 /* a lane's two groups of a window load as one word */
  int unused;
};

/* 16 bytes of weights, read once: not kept in L1 (x is), the whole 128-byte line fetched into L2
   (the next window of the row is its other half). */
static __device__ __forceinline__ uint4 load_stream(const uint32_t *p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::128B.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

/* The four words of a 16-byte load, in order. */
static __device__ __forceinline__ void put_words(uint4 q, uint32_t *out) {
  out[0] = q.x;
  out[1] = q.y;
  out[2] = q.z;
  out[3] = q.w;
}

/* A scale or bias word: the lane's two groups of a window (16-bit dtypes: low half the first;
   float32: two words), or its one group (GW = 1). */
#define SCALE_WORDS (S_SIZE == 4 ? 2 : 1)

struct qmv_mma_window {
  uint32_t w[RT][2][LANE_WORDS]; /* rows g and g + 8 of each tile */
  uint32_t s[RT][2][SCALE_WORDS], b[RT][2][SCALE_WORDS];
};

/* Where a lane reads its current window, advanced window by window. */
struct qmv_mma_lane {
  const uint32_t *w[RT][2];                 /* its codes */
  const unsigned char *s[RT][2], *b[RT][2]; /* its first group's scale and bias */
#if XS
  const uint2 *x;   /* its B fragments as staged (stage_x): step j at x[4 j] */
  const float *sum; /* Σ x of its columns 2t and 2t + 1 as staged */
#else
  const uint32_t *x; /* its codes' x (valid even when its B is zero) */
#endif
  bool x_used; /* its B column is its codes' group: x, else zeros */
#if XS
  int x_rows; /* M: the staged rows of x per window */
#endif
};

static __device__ __forceinline__ void advance(qmv_mma_lane &l) {
#pragma unroll
  for (int rt = 0; rt < RT; rt++)
#pragma unroll
    for (int h = 0; h < 2; h++) {
      l.w[rt][h] += ROW_WORDS;
      l.s[rt][h] += GW * S_SIZE;
      l.b[rt][h] += GW * S_SIZE;
    }
#if XS
  l.x += STEPS * 4 * l.x_rows;
  l.sum += 8;
#else
  l.x += WINDOW / 2;
#endif
}

#if S_SIZE == 2
/* Element i of a 16-bit run, as the low half of a word. */
static __device__ __forceinline__ uint32_t load_half(const unsigned char *p, int i) {
  return *(const uint16_t *)(p + 2 * i);
}
#endif

/* The lane's scale (or bias) words at p: its groups 0 and 1 (GW >= 2), or group 0 (GW = 1), only
   the first `left` of them read (past the row: 0). PAIRS: two groups are one aligned load. */
template <bool PAIRS>
static __device__ __forceinline__ void load_scales(uint32_t (&out)[SCALE_WORDS],
                                                   const unsigned char *p, int left) {
#if S_SIZE == 4
  const uint32_t *f = (const uint32_t *)p;
  if (GW >= 2 && PAIRS && left >= 2) {
    uint2 v = __ldg((const uint2 *)f);
    out[0] = v.x;
    out[1] = v.y;
  } else {
    out[0] = left >= 1 ? __ldg(f) : 0u;
    out[1] = GW >= 2 ? (left >= 2 ? __ldg(f + 1) : 0u) : out[0];
  }
#else
  if (GW >= 2 && PAIRS && left >= 2) {
    out[0] = __ldg((const uint32_t *)p);
  } else {
    uint32_t lo = left >= 1 ? load_half(p, 0) : 0u;
    uint32_t hi = GW >= 2 ? (left >= 2 ? load_half(p, 1) : 0u) : lo;
    out[0] = lo | (hi << 16);
  }
#endif
}

/* The scale word's value for the lane's column i (0, 1). */
static __device__ __forceinline__ float scale_of(const uint32_t (&s)[SCALE_WORDS], int i) {
#if S_SIZE == 4
  return __uint_as_float(s[i]);
#else
  uint16_t h = (uint16_t)(i ? s[0] >> 16 : s[0]);
  return TSR_S_DTYPE == TSRI_ELEMENT_BFLOAT16 ? __uint_as_float((uint32_t)h << 16)
                                              : tsri_f16_to_f32(h);
#endif
}

/* The lane's current window: its codes and its groups' scales and biases. The last window of a
   row may be partial (K not a multiple of 128): then `codes` says whether the lane's codes are
   inside the row and `groups_left` how many of its groups are (else every code and group is). */
template <bool PAIRS>
static __device__ __forceinline__ void load_window(qmv_mma_window &d, const qmv_mma_lane &l,
                                                   bool codes = true, int groups_left = 2) {
#pragma unroll
  for (int rt = 0; rt < RT; rt++)
#pragma unroll
    for (int h = 0; h < 2; h++) {
#pragma unroll
      for (int v = 0; v < LANE_WORDS / 4; v++) {
        uint4 q = make_uint4(0u, 0u, 0u, 0u);
        if (codes) q = load_stream(l.w[rt][h] + 4 * v);
        put_words(q, &d.w[rt][h][4 * v]);
      }
      load_scales<PAIRS>(d.s[rt][h], l.s[rt][h], groups_left);
      load_scales<PAIRS>(d.b[rt][h], l.b[rt][h], groups_left);
    }
}

/* One window: the lane's x (zeros unless its column is its codes' group and they are inside the
   row), then per k-step one mma of ones for Σ x and one per row tile for Σ x·q, then the
   scales. */
static __device__ __forceinline__ void window_product(float (&acc)[RT][2][2],
                                                      const qmv_mma_window &d,
                                                      const qmv_mma_lane &l, bool x_used) {
  float dot[RT][4];
#pragma unroll
  for (int rt = 0; rt < RT; rt++)
#pragma unroll
    for (int i = 0; i < 4; i++)
      dot[rt][i] = 0.0f;
#if XS
  /* B's fragments and Σ x as stage_x left them (zeros past K and for absent rows of x). */
  float sum[2] = {l.sum[0], l.sum[1]};
#else
  /* The lane's x, permuted into B's order per k-step; Σ x from one more mma, of ones. */
  uint32_t xw[16];
#pragma unroll
  for (int v = 0; v < 4; v++) {
    uint4 q = make_uint4(0u, 0u, 0u, 0u);
    if (x_used) q = __ldg((const uint4 *)l.x + v);
    put_words(q, &xw[4 * v]);
  }
  float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  const uint32_t ones = 0x3f803f80u;
#endif
#pragma unroll
  for (int j = 0; j < STEPS; j++) {
    uint32_t b_lo = 0u, b_hi = 0u;
#if XS
    if (x_used) {
      uint2 fragment = l.x[4 * j];
      b_lo = fragment.x;
      b_hi = fragment.y;
    }
#else
    b_pairs(xw, j, &b_lo, &b_hi);
    mma_bf16(sum, ones, ones, ones, ones, b_lo, b_hi);
#endif
#pragma unroll
    for (int rt = 0; rt < RT; rt++) {
      uint32_t a0, a1, a2, a3;
      a_pairs(d.w[rt][0], j, &a0, &a2);
      a_pairs(d.w[rt][1], j, &a1, &a3);
      mma_bf16(dot[rt], a0, a1, a2, a3, b_lo, b_hi);
    }
  }
  /* dot[rt]: (row g, columns 2t, 2t+1), (row g+8, same); sum: Σ x of columns 2t, 2t+1. */
#pragma unroll
  for (int rt = 0; rt < RT; rt++)
#pragma unroll
    for (int h = 0; h < 2; h++)
#pragma unroll
      for (int i = 0; i < 2; i++)
        acc[rt][h][i] = fmaf(scale_of(d.b[rt][h], i), sum[i],
                             fmaf(scale_of(d.s[rt][h], i), dot[rt][2 * h + i], acc[rt][h][i]));
}

/* `full` whole windows from l's, window i + 1 loaded before window i is computed, then (tail) the
   partial last window of the row: the lane's codes inside the row or not, and how many of its
   groups are. */
template <bool PAIRS>
static __device__ void warp_windows(float (&acc)[RT][2][2], qmv_mma_lane l, int64_t full, bool tail,
                                    bool tail_codes, int tail_groups) {
  /* Two windows' registers in turn (a copy from one to the other costs a move per word). */
  qmv_mma_window even, odd;
  if (full > 0) load_window<PAIRS>(even, l);
  for (int64_t i = 0; i < full; i += 2) {
    qmv_mma_lane here = l;
    advance(l);
    if (i + 1 < full) load_window<PAIRS>(odd, l);
    window_product(acc, even, here, here.x_used);
    if (i + 1 >= full) break;
    here = l;
    advance(l);
    if (i + 2 < full) load_window<PAIRS>(even, l);
    window_product(acc, odd, here, here.x_used);
  }
  if (tail) {
    load_window<PAIRS>(even, l, tail_codes, tail_groups);
    window_product(acc, even, l, l.x_used && tail_codes);
  }
}

#if XS
/* The words of B's fragments of x's M rows in shared memory: window w, row m, k-step j and quad
   lane t at xs[((w * M + m) * STEPS + j) * 4 + t] (zeros past K); Σ x of window w's column
   c = m * GW + grp at sums[w * 8 + c] (0 for rows past M). A chunk (w, m, t) of 32 codes is
   summed in k order into partial[(w * M + m) * 4 + t], a group's chunks added in order. */
static __device__ void stage_x(const uint16_t *x_rows, const tsr_qmv_mma_args &a, int64_t windows,
                               uint2 *xs, float *partial, float *sums) {
  const int m_count = (int)a.m;
  for (int64_t u = threadIdx.x; u < windows * m_count * 4; u += blockDim.x) {
    const int t = (int)(u & 3), m = (int)((u >> 2) % m_count);
    const int64_t w = (u >> 2) / m_count, code = w * WINDOW + 32 * t;
    uint32_t xw[16];
#pragma unroll
    for (int v = 0; v < 4; v++) {
      uint4 q = make_uint4(0u, 0u, 0u, 0u);
      if (code < a.k) q = __ldg((const uint4 *)(x_rows + m * a.k + code) + v);
      put_words(q, &xw[4 * v]);
    }
    float total = 0.0f;
#pragma unroll
    for (int i = 0; i < 16; i++) {
      total += __uint_as_float(xw[i] << 16);
      total += __uint_as_float(xw[i] & 0xffff0000u);
    }
    partial[u] = total;
#pragma unroll
    for (int j = 0; j < STEPS; j++) {
      uint32_t lo, hi;
      b_pairs(xw, j, &lo, &hi);
      xs[((u >> 2) * STEPS + j) * 4 + t] = make_uint2(lo, hi);
    }
  }
  __syncthreads();
  for (int64_t v = threadIdx.x; v < windows * 8; v += blockDim.x) {
    const int c = (int)(v & 7), m = c / GW, grp = c % GW;
    const int64_t w = v >> 3;
    float total = 0.0f;
    if (m < m_count)
      for (int q = 0; q < G / 32; q++)
        total += partial[(w * m_count + m) * 4 + grp * (G / 32) + q];
    sums[v] = total;
  }
  __syncthreads();
}
#endif

/* The warps' sums of each (row, column) added in warp order through shared memory, the columns
   of one row of x in group order, and stored: out[b, m, n]. */
static __device__ void reduce_and_store(float (&acc)[RT][2][2], float *red, int64_t b, int64_t n0,
                                        const tsr_qmv_mma_args &a, void *out) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  /* red[warp][rt][h][column][g] */
#pragma unroll
  for (int rt = 0; rt < RT; rt++)
#pragma unroll
    for (int h = 0; h < 2; h++)
#pragma unroll
      for (int i = 0; i < 2; i++)
        red[(((warp * RT + rt) * 2 + h) * 8 + 2 * t + i) * 8 + g] = acc[rt][h][i];
  __syncthreads();
  for (int v = threadIdx.x; v < RT * 2 * MR * 8; v += WARPS * 32) {
    const int row = v & 7, m = (v >> 3) % MR, h = (v / (8 * MR)) & 1, rt = v / (16 * MR);
    float total = 0.0f;
    for (int w = 0; w < WARPS; w++)
#pragma unroll
      for (int grp = 0; grp < GW; grp++)
        total += red[(((w * RT + rt) * 2 + h) * 8 + m * GW + grp) * 8 + row];
    const int64_t n = n0 + 16 * rt + 8 * h + row;
    if (n < a.n && m < a.m) tsr_q_store(out, (b * a.m + m) * a.n + n, TSR_OUT_DTYPE, total);
  }
  __syncthreads(); /* red is reused by the block's next tile */
}

/* x packed [x matrices, M, K] bfloat16; w packed [w matrices, w_rows = N, w_words]; scales and
   biases [w matrices, N, groups]; out [batch, M, N]; flags as in qmv.cuh. */
TSR_KERNEL_ENTRY(tsr_qmv_mma)
__launch_bounds__(WARPS * 32, TSR_QMVM_MINB)(tsr_qmv_mma_args a, tsr_qmm_batch batch,
                                             const uint16_t *x, const uint32_t *w,
                                             const void *scales, const void *biases, void *out,
                                             unsigned long long *flags) {
  __shared__ float red[WARPS * RT * 2 * 8 * 8];
#if XS
  extern __shared__ uint2 staged[]; /* stage_x's fragments, then its partial sums and sums */
  int64_t staged_matrix = -1;
#endif
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  /* The warp's windows [begin, end) of each row; the last of the row may be partial. */
  const int64_t windows = (a.k + WINDOW - 1) / WINDOW;
#if XS
  uint2 *xs = staged;
  float *partial = (float *)(xs + windows * a.m * STEPS * 4), *sums = partial + windows * a.m * 4;
#endif
  const int64_t per_warp = (windows + WARPS - 1) / WARPS;
  const int64_t begin = warp * per_warp < windows ? warp * per_warp : windows;
  const int64_t end = begin + per_warp < windows ? begin + per_warp : windows;
  const bool tail = end == windows && end > begin && a.k % WINDOW != 0;
  const int64_t full = end - begin - (tail ? 1 : 0);
  /* The lane's D columns 2t and 2t + 1 are groups (2t) % GW and (2t + 1) % GW of a window. */
  const int first_group = (2 * t) % GW;
  /* In the partial last window: whether the lane's codes [32 t, 32 t + 32) are inside the row,
     and how many of its groups. */
  const int64_t last_code = (windows - 1) * WINDOW, last_group = (windows - 1) * GW + first_group;
  const bool tail_codes = last_code + 32 * t < a.k;
  const int64_t groups_after = a.groups - last_group;
  const int tail_groups = groups_after < 0 ? 0 : groups_after > 2 ? 2 : (int)groups_after;
  /* B's column g: row g / GW of x on group g % GW; the lane's codes are group 32 t / G's. */
  const int x_row = g / GW;
  const bool x_column = g % GW == 32 * t / G;
  for (int64_t block = blockIdx.x; block < a.blocks; block += gridDim.x) {
    const int64_t b = block / a.n_blocks, n_block = block - b * a.n_blocks;
    int64_t x_matrix, w_matrix;
    if (!tsr_qmm_resolve(batch, b, threadIdx.x == 0 ? flags : NULL, &x_matrix, &w_matrix))
      continue; /* the same for every thread of the block */
    const int64_t n0 = n_block * 16 * RT;
    qmv_mma_lane l;
#pragma unroll
    for (int rt = 0; rt < RT; rt++)
#pragma unroll
      for (int h = 0; h < 2; h++) {
        int64_t n = n0 + 16 * rt + g + 8 * h;
        n = n < a.n ? n : a.n - 1; /* past N: read the last row, never stored */
        const int64_t row = w_matrix * a.w_rows + n;
        const int64_t group = row * a.groups + begin * GW + first_group;
        l.w[rt][h] = w + row * a.w_words + begin * ROW_WORDS + t * LANE_WORDS;
        l.s[rt][h] = (const unsigned char *)scales + group * S_SIZE;
        l.b[rt][h] = (const unsigned char *)biases + group * S_SIZE;
      }
    l.x_used = x_column && x_row < a.m;
#if XS
    if (x_matrix != staged_matrix) { /* the previous tile's reads ended in reduce_and_store */
      stage_x(x + x_matrix * a.m * a.k, a, windows, xs, partial, sums);
      staged_matrix = x_matrix;
    }
    l.x_rows = (int)a.m;
    l.x = xs + ((begin * a.m + (l.x_used ? x_row : 0)) * STEPS) * 4 + t;
    l.sum = sums + begin * 8 + 2 * t;
#else
    const int64_t x_at = (x_matrix * a.m + (l.x_used ? x_row : 0)) * a.k + begin * WINDOW + 32 * t;
    l.x = (const uint32_t *)(x + x_at);
#endif
    float acc[RT][2][2];
#pragma unroll
    for (int rt = 0; rt < RT; rt++)
#pragma unroll
      for (int h = 0; h < 2; h++)
        acc[rt][h][0] = acc[rt][h][1] = 0.0f;
    if (a.scale_pairs)
      warp_windows<true>(acc, l, full, tail, tail_codes, tail_groups);
    else
      warp_windows<false>(acc, l, full, tail, tail_codes, tail_groups);
    reduce_and_store(acc, red, b, n0, a, out);
  }
}
