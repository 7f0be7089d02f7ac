/* cuda/kernels/sdpa_split.cuh — the first half of decode attention over a long cache: a block
 * per (query row, slice of split_keys keys), so a step's few rows (one query per head) spread
 * over many blocks. Each block scores its slice (sdpa_common.cuh), takes the slice's largest
 * score m, e_j = expf(s_j - m) (0 for s_j = -inf, so a slice whose scores all overflowed to -inf
 * adds nothing, as in one block), l = Σ e_j and acc = Σ e_j v_j, and writes {m, l, acc[D]} to
 * parts[row][slice]; a slice past the row's visible keys writes {-inf, 0, 0...}. sdpa_combine.cuh
 * adds the slices. Specialized as sdpa.cuh. */
#include "cuda/kernels/common.cuh" /* first: NVRTC's libc stand-in */
#include "cuda/kernels/sdpa_common.cuh"

TSR_KERNEL_ENTRY(tsr_sdpa_split)
(tsr_sdpa_args a, const void *q, const void *k, const void *v, float *parts, const void *length,
 int length_bytes) {
  extern __shared__ float shared[]; /* [32 scratch][D query][split_keys scores][warps x D] */
  float *scratch = shared, *query = shared + 32, *scores = query + a.d;
  float *partial = scores + a.split_keys;
  const int64_t row = blockIdx.x / a.splits, slice = blockIdx.x % a.splits;
  const tsr_sdpa_row r = tsr_sdpa_row_start(a, row, q, length, length_bytes, query);
  const int64_t begin = slice * a.split_keys;
  const int64_t end = begin + a.split_keys < r.visible ? begin + a.split_keys : r.visible;
  float *part = parts + (row * a.splits + slice) * (2 + a.d);
  if (begin >= end) { /* the same for the whole block */
    for (int64_t d = threadIdx.x; d < a.d; d += blockDim.x)
      part[2 + d] = 0.0f;
    if (threadIdx.x == 0) {
      part[0] = -__int_as_float(0x7f800000);
      part[1] = 0.0f;
    }
    return;
  }
  const float max = tsr_sdpa_block_reduce(
      tsr_sdpa_scores(a, query, k, r.k_base, begin, end, scores), true, scratch);
  float local_sum = 0.0f;
  for (int64_t j = threadIdx.x; j < end - begin; j += blockDim.x) {
    const float s = scores[j];
    const float e = s == -__int_as_float(0x7f800000) ? 0.0f : expf(s - max);
    scores[j] = e;
    local_sum += e;
  }
  const float sum = tsr_sdpa_block_reduce(local_sum, false, scratch);
  __syncthreads();
  if (threadIdx.x == 0) {
    part[0] = max;
    part[1] = sum;
  }
  tsr_sdpa_weighted_sum(a, scores, 1.0f, v, r.v_base, begin, end, partial,
                        [&](int64_t d, float total) { part[2 + d] = total; });
}
