/* cuda/kernels/sdpa.cuh — scaled dot-product attention, one block per query row: the row's scores
 * over its visible keys in shared memory, a float32 softmax (max, expf of the shifted scores,
 * sum, one reciprocal), then out = Σ p_j v_j (sdpa_common.cuh: the row, the scores, the
 * weighted sum). Not a flash kernel: scores are materialized, Tk floats of shared memory per row;
 * few rows (decode) split each row's keys over several blocks instead (sdpa_split.cuh).
 * Specialized by the dtypes of q, k, v and the output: TSR_SDPA_Q, TSR_SDPA_K, TSR_SDPA_V,
 * TSR_SDPA_OUT (0 float32, 1 float16, 2 bfloat16). */
#include "cuda/kernels/common.cuh" /* first: NVRTC's libc stand-in */
#include "cuda/kernels/sdpa_common.cuh"

TSR_KERNEL_ENTRY(tsr_sdpa)
(tsr_sdpa_args a, const void *q, const void *k, const void *v, void *out, const void *length,
 int length_bytes) {
  extern __shared__ float shared[]; /* [32 scratch][D query][Tk scores][warps x D partial] */
  float *scratch = shared, *query = shared + 32, *scores = query + a.d, *partial = scores + a.tk;
  const int64_t row = blockIdx.x; /* over B * Hq * Tq */
  const tsr_sdpa_row r = tsr_sdpa_row_start(a, row, q, length, length_bytes, query);
  float max = tsr_sdpa_block_reduce(tsr_sdpa_scores(a, query, k, r.k_base, 0, r.visible, scores),
                                    true, scratch); /* its barriers publish the scores */
  float local_sum = 0.0f;
  for (int64_t j = threadIdx.x; j < r.visible; j += blockDim.x) {
    float e = expf(scores[j] - max);
    scores[j] = e;
    local_sum += e;
  }
  float inverse = 1.0f / tsr_sdpa_block_reduce(local_sum, false, scratch);
  __syncthreads();
  const int64_t out_base = row * a.d;
  tsr_sdpa_weighted_sum(
      a, scores, inverse, v, r.v_base, 0, r.visible, partial,
      [&](int64_t d, float total) { tsr_sdpa_store(out, out_base + d, total, TSR_SDPA_OUT); });
}
