/* cuda/kernels/sort.cuh — argsort, argpartition and topk on the GPU (cuda/sort.c): a bitonic sort
 * of each line's (key, index) pairs, padded to a power of two, one entry per kind
 * (TSR_SORT_KIND):
 *   1  chunk: a block sorts `chunk` consecutive pairs of a line in shared memory. The first pass
 *      (stage 0) loads them from the input and runs every stage up to the chunk's size; a later
 *      pass (stage k) loads them from the scratch and runs stage k's steps shorter than the
 *      chunk. The last pass writes the first `written` indices of each line to the output,
 *      the others go back to the scratch. A line that fits one chunk is one launch;
 *   2  step: one step (stage k, distance j >= chunk) over every line in the scratch, a thread per
 *      compare-exchange.
 *
 * Keys are cpu/sort.c's: a float's bits made to order like the value (-0 = +0, every NaN last and
 * equal), an integer's int64 with the sign bit flipped, all ones xor'ed in (`flip`) to put the
 * largest first (topk). Pairs compare by (key, index), a total order, so the sorted line is the
 * one any sort gives: argsort's stable order, topk's winners largest first with ties to the lower
 * index, and a full sort is an argpartition (cpu/sort.c's quickselect leaves the elements on each
 * side of kth in another order, which ops.h leaves free). Padding pairs (all-ones key and index)
 * sort after every real pair and are never written. */
#include "cuda/kernels/common.cuh" /* first: NVRTC's libc stand-in */
#ifndef __CUDACC_RTC__
#include <stdint.h> /* nvcc (AOT) builds; NVRTC has the stand-in */
#endif
/* base/element.h includes base/half.h; both are named here so the kernel manifest
   (scripts/update-kernel-manifest.sh) embeds both. */
#include "base/half.h"
#include "base/element.h"
#include "cuda/kernels/strided.cuh"

#define TSR_PAD_KEY 0xffffffffffffffffull
#define TSR_PAD_INDEX 0x7fffffff

/* a before b in the (key, index) order. */
static __device__ inline bool tsr_pair_less(uint64_t key_a, int32_t index_a, uint64_t key_b,
                                            int32_t index_b) {
  return key_a < key_b || (key_a == key_b && index_a < index_b);
}

/* The lower position of compare-exchange pair p at distance j (a power of two): pairs are
 * numbered within each block of 2j positions, which hold j of them. */
static __device__ inline int64_t tsr_pair_low(int64_t p, int64_t j) {
  return ((p & ~(j - 1)) << 1) | (p & (j - 1));
}

/* The compare-exchange of positions lo < hi = lo + j of stage k (lo's line position decides the
 * direction: ascending where bit k is clear). */
static __device__ inline void tsr_compare_exchange(uint64_t *keys, int32_t *index, int64_t lo,
                                                   int64_t hi, bool ascending) {
  uint64_t key_lo = keys[lo], key_hi = keys[hi];
  int32_t index_lo = index[lo], index_hi = index[hi];
  bool out_of_order = ascending ? tsr_pair_less(key_hi, index_hi, key_lo, index_lo)
                                : tsr_pair_less(key_lo, index_lo, key_hi, index_hi);
  if (out_of_order) {
    keys[lo] = key_hi;
    keys[hi] = key_lo;
    index[lo] = index_hi;
    index[hi] = index_lo;
  }
}

#if TSR_SORT_KIND == 1

/* The key of a float (cpu/sort.c's float_key) from its bits: -0 = +0, every NaN last and equal,
   the rest ordered like their values. */
static __device__ inline uint64_t tsr_float_key(uint32_t bits) {
  if ((bits & 0x7fffffffu) > 0x7f800000u) return TSR_PAD_KEY; /* NaN */
  if ((bits & 0x7fffffffu) == 0) bits = 0;                    /* -0 = +0 */
  return (bits & 0x80000000u) ? (uint64_t)(uint32_t)~bits : (uint64_t)(bits | 0x80000000u);
}

/* The key of element `at` before the flip (cpu/sort.c's key_at): floats loaded as float32
   (float16/bfloat16 widen exactly), everything else as int64 with the sign bit flipped. */
static __device__ inline uint64_t tsr_key_at(const void *in, int64_t at, int dtype) {
  const unsigned char *p = (const unsigned char *)in + at * tsri_element_size(dtype);
  if (tsri_element_is_float(dtype))
    return tsr_float_key(__float_as_uint(tsri_element_load_f32(p, dtype)));
  return (uint64_t)tsri_element_load_i64(p, dtype) ^ 0x8000000000000000ull;
}

/* lines: the lines' starts (operand 0 in the input, 1 in the output); n elements a line, padded
   to `padded`; the scratch holds lines * padded pairs (unused when one chunk is the line). */
TSR_KERNEL_ENTRY(tsr_sort)
(tsr_strided lines, const void *in, int dtype, int64_t n, int64_t in_stride, uint64_t flip,
 int32_t *out, int64_t written, int64_t out_stride, uint64_t *scratch_keys, int32_t *scratch_index,
 int64_t padded, int64_t chunk, int64_t stage, int last_pass) {
  extern __shared__ uint64_t shared[];
  uint64_t *keys = shared;
  int32_t *index = (int32_t *)(shared + chunk);
  const int64_t chunks_per_line = padded / chunk;
  const int half = (int)(chunk / 2);
  for (int64_t b = blockIdx.x; b < lines.n * chunks_per_line; b += gridDim.x) {
    int64_t line = b / chunks_per_line, base = (b % chunks_per_line) * chunk;
    int64_t offsets[TSR_STRIDED_MAX_OPERANDS];
    tsr_strided_offsets(lines, line, offsets);
    uint64_t *line_keys = scratch_keys + line * padded;
    int32_t *line_index = scratch_index + line * padded;
    for (int64_t t = threadIdx.x; t < chunk; t += blockDim.x) {
      int64_t i = base + t;
      if (stage != 0) {
        keys[t] = line_keys[i];
        index[t] = line_index[i];
      } else if (i < n) {
        keys[t] = tsr_key_at(in, offsets[0] + i * in_stride, dtype) ^ flip;
        index[t] = (int32_t)i;
      } else {
        keys[t] = TSR_PAD_KEY;
        index[t] = TSR_PAD_INDEX;
      }
    }
    __syncthreads();
    for (int64_t k = stage != 0 ? stage : 2; k <= (stage != 0 ? stage : chunk); k <<= 1) {
      for (int j = (int)((stage != 0 ? chunk : k) >> 1); j > 0; j >>= 1) {
        for (int p = threadIdx.x; p < half; p += blockDim.x) {
          int lo = (int)tsr_pair_low(p, j);
          tsr_compare_exchange(keys, index, lo, lo + j, ((base + lo) & k) == 0);
        }
        __syncthreads();
      }
    }
    for (int64_t t = threadIdx.x; t < chunk; t += blockDim.x) {
      int64_t i = base + t;
      if (!last_pass) {
        line_keys[i] = keys[t];
        line_index[i] = index[t];
      } else if (i < written) {
        out[offsets[1] + i * out_stride] = index[t];
      }
    }
    __syncthreads(); /* the next chunk reuses the shared memory */
  }
}

#elif TSR_SORT_KIND == 2

TSR_KERNEL_ENTRY(tsr_sort)
(uint64_t *keys, int32_t *index, int64_t lines, int64_t padded, int64_t k, int64_t j) {
  const int64_t half = padded / 2, pairs = lines * half;
  const int half_shift = __ffsll((long long)half) - 1; /* padded is a power of two */
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p < pairs; p += stride) {
    int64_t line = p >> half_shift, lo = tsr_pair_low(p & (half - 1), j);
    int64_t base = line * padded;
    tsr_compare_exchange(keys + base, index + base, lo, lo + j, (lo & k) == 0);
  }
}

#else
#error "sort.cuh is specialized by TSR_SORT_KIND (1 chunk, 2 step)"
#endif
