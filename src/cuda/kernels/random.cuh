/* cuda/kernels/random.cuh — the random draws on the GPU (cuda/random.c), one entry per kind
 * (TSR_RANDOM_KIND): 1 uniform, 2 normal, 3 categorical. Element i of a draw uses exactly the
 * Philox-4x32-10 counter block that ops/random.h assigns it and the CPU's formulas in the CPU's
 * precision (cpu/random.c), so both backends give the same numbers for any shape or slice.
 *
 * Exactness. Philox is integer arithmetic: the 32x32 -> 64-bit products are __umulhi (high word)
 * and the wrapping product (low word). Every double operation is spelled as its IEEE intrinsic
 * (__dmul_rn, __dadd_rn, __dsqrt_rn...), which nvcc and NVRTC never fuse into an FMA (they fuse
 * a plain a + b * c by default; the CPU build, -std=c11 with gcc, does not), and the conversions
 * to float and the dtype are the CPU's (base/half.h, base/element.h). What cannot be bit-exact by
 * construction: log, sin and cos in double are CUDA's (1-2 ulp) against the C library's (<1 ulp),
 * so the double before its rounding to float may differ in its last bits; the float result differs
 * only when that double lies within those few double ulps of a float rounding boundary (about 2^-28
 * per normal element), and a categorical draw only when two scores of a row are that close. */
#include "cuda/kernels/common.cuh" /* first: NVRTC's libc stand-in */
#ifndef __CUDACC_RTC__
#include <stdint.h> /* nvcc (AOT) builds; NVRTC has the stand-in */
#endif
/* base/element.h includes base/half.h; both are named here so the kernel manifest
   (scripts/update-kernel-manifest.sh) embeds both. */
#include "base/half.h"
#include "base/element.h"
#include "cuda/kernels/strided.cuh"

/* Philox-4x32-10 of counter (block low, block high, 0, 0) under key (seed low, seed high):
   cpu/random.c's philox4x32_10 word for word. */
static __device__ inline void tsr_philox4x32_10(uint64_t block, uint64_t seed, uint32_t word[4]) {
  const uint32_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u, w0 = 0x9E3779B9u, w1 = 0xBB67AE85u;
  uint32_t c0 = (uint32_t)block, c1 = (uint32_t)(block >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  for (int round = 0; round < 10; round++) {
    if (round > 0) {
      k0 += w0;
      k1 += w1;
    }
    uint32_t high0 = __umulhi(m0, c0), low0 = m0 * c0;
    uint32_t high1 = __umulhi(m1, c2), low1 = m1 * c2;
    uint32_t next0 = high1 ^ c1 ^ k0, next2 = high0 ^ c3 ^ k1;
    c1 = low1;
    c3 = low0;
    c0 = next0;
    c2 = next2;
  }
  word[0] = c0;
  word[1] = c1;
  word[2] = c2;
  word[3] = c3;
}

#if TSR_RANDOM_KIND != 3

/* tsri_cpu_store_f32 into packed element i of a float dtype. */
static __device__ inline void tsr_store(void *out, int64_t i, int dtype, float v) {
  tsri_element_store_f32((unsigned char *)out + i * tsri_element_size(dtype), dtype, v);
}

#endif

#if TSR_RANDOM_KIND == 1

/* The dtype value nearest to v, as a float (cpu/random.c's dtype_round). */
static __device__ inline float tsr_dtype_round(int dtype, float v) {
  if (dtype == TSRI_ELEMENT_FLOAT16) return tsri_f16_to_f32(tsri_f32_to_f16(v));
  if (dtype == TSRI_ELEMENT_BFLOAT16) return tsri_bf16_to_f32(tsri_f32_to_bf16(v));
  return v;
}

/* Element i: word i % 4 of block i / 4, its top 24 bits as u in [0, 1); low + width * u in
   double, rounded to float, to the dtype, and clamped to [lowest, highest]. A thread per block. */
TSR_KERNEL_ENTRY(tsr_random)
(void *out, int dtype, int64_t n, uint64_t seed, double low, double width, float lowest,
 float highest) {
  const int64_t blocks = (n + 3) / 4, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t b = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; b < blocks; b += stride) {
    uint32_t word[4];
    tsr_philox4x32_10((uint64_t)b, seed, word);
    for (int w = 0; w < 4; w++) {
      int64_t i = 4 * b + w;
      if (i >= n) break;
      double u = __dmul_rn((double)(word[w] >> 8), 0x1p-24); /* exact */
      float v = tsr_dtype_round(dtype, __double2float_rn(__dadd_rn(low, __dmul_rn(width, u))));
      tsr_store(out, i, dtype, v < lowest ? lowest : v > highest ? highest : v);
    }
  }
}

#elif TSR_RANDOM_KIND == 2

/* A 53-bit uniform in [0, 1) from two words (every step exact). */
static __device__ inline double tsr_uniform53(uint32_t high, uint32_t low) {
  return __dmul_rn(__dadd_rn(__dmul_rn((double)(high >> 5), 67108864.0), (double)(low >> 6)),
                   0x1p-53);
}

/* Box-Muller on block i / 2: r = sqrt(-2 ln(1 - u1)), theta = 2 pi u2; element 2j is
   mean + std * r cos(theta), 2j + 1 is mean + std * r sin(theta), rounded to float, then to the
   dtype. A thread per block (two elements). */
TSR_KERNEL_ENTRY(tsr_random)
(void *out, int dtype, int64_t n, uint64_t seed, double mean, double std) {
  const double two_pi = 6.283185307179586476925;
  const int64_t blocks = (n + 1) / 2, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t b = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; b < blocks; b += stride) {
    uint32_t word[4];
    tsr_philox4x32_10((uint64_t)b, seed, word);
    double u1 = tsr_uniform53(word[0], word[1]), u2 = tsr_uniform53(word[2], word[3]);
    double radius = __dsqrt_rn(__dmul_rn(-2.0, log(__dadd_rn(1.0, -u1))));
    double theta = __dmul_rn(two_pi, u2);
    double z0 = __dmul_rn(radius, cos(theta));
    tsr_store(out, 2 * b, dtype, __double2float_rn(__dadd_rn(mean, __dmul_rn(std, z0))));
    if (2 * b + 1 < n) {
      double z1 = __dmul_rn(radius, sin(theta));
      tsr_store(out, 2 * b + 1, dtype, __double2float_rn(__dadd_rn(mean, __dmul_rn(std, z1))));
    }
  }
}

#elif TSR_RANDOM_KIND == 3

/* The best of a row so far: cpu/random.c's fold (a NaN score wins, the first one; else the
   largest score, the first of equals; an empty best loses to anything). */
struct tsr_best {
  double score;
  int64_t index; /* -1: empty */
  bool nan;
};

static __device__ inline bool tsr_beats(const tsr_best &a, const tsr_best &b) {
  if (b.index < 0) return a.index >= 0;
  if (a.index < 0) return false;
  if (a.nan != b.nan) return a.nan;
  if (!a.nan && a.score != b.score) return a.score > b.score;
  return a.index < b.index;
}

static __device__ inline tsr_best tsr_shuffle_down(const tsr_best &b, int delta) {
  tsr_best other;
  other.score = __shfl_down_sync(0xffffffffu, b.score, delta);
  other.index = __shfl_down_sync(0xffffffffu, b.index, delta);
  other.nan = __shfl_down_sync(0xffffffffu, (int)b.nan, delta) != 0;
  return other;
}

#define TSR_CATEGORICAL_WARPS 32

/* Gumbel-max, a block per output row: rows' operand 0 is the row's first logit in memory,
   operand 1 its row-major index in the logits (the counter); along the axis both step by
   axis_stride and axis_counter_stride. u = (word + 1/2) / 2^32, score = x - log(-log(u)). */
TSR_KERNEL_ENTRY(tsr_random)
(tsr_strided rows, const void *logits, int dtype, int64_t n, int64_t axis_stride,
 int64_t axis_counter_stride, uint64_t seed, int32_t *out) {
  __shared__ tsr_best warp_best[TSR_CATEGORICAL_WARPS];
  const int64_t size = tsri_element_size(dtype);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
  for (int64_t r = blockIdx.x; r < rows.n; r += gridDim.x) {
    int64_t offsets[TSR_STRIDED_MAX_OPERANDS];
    tsr_strided_offsets(rows, r, offsets);
    tsr_best best = {0.0, -1, false};
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      uint64_t counter = (uint64_t)(offsets[1] + j * axis_counter_stride);
      uint32_t word[4];
      tsr_philox4x32_10(counter >> 2, seed, word);
      double u = __dmul_rn(__dadd_rn((double)word[counter & 3u], 0.5), 0x1p-32); /* exact */
      const unsigned char *at =
          (const unsigned char *)logits + (offsets[0] + j * axis_stride) * size;
      double x = (double)tsri_element_load_f32(at, dtype);
      tsr_best here;
      here.score = __dsub_rn(x, log(-log(u)));
      here.index = j;
      here.nan = here.score != here.score;
      if (tsr_beats(here, best)) best = here;
    }
    for (int delta = 16; delta > 0; delta /= 2) {
      tsr_best other = tsr_shuffle_down(best, delta);
      if (tsr_beats(other, best)) best = other;
    }
    if (lane == 0) warp_best[warp] = best;
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 1; w < warps; w++)
        if (tsr_beats(warp_best[w], best)) best = warp_best[w];
      out[r] = (int32_t)best.index;
    }
    __syncthreads(); /* warp_best is reused by the next row */
  }
}

#else
#error "random.cuh is specialized by TSR_RANDOM_KIND (1 uniform, 2 normal, 3 categorical)"
#endif
