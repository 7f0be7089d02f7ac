/* cuda/kernels/sdpa_combine.cuh — the second half of decode attention over a long cache: a block
 * per query row adds its slices' {m, l, acc[D]} (sdpa_split.cuh): M = the largest m, w_s =
 * expf(m_s - M) / Σ_s l_s expf(m_s - M) for each slice with l_s != 0 (an empty slice, or one
 * whose scores are all -inf, adds nothing; a NaN l_s propagates), out[d] = Σ_s w_s acc_s[d]
 * rounded once to the output's dtype. Thread 0 walks the slices (one per 256 keys; very long
 * contexts would want them spread over the block). Specialized as sdpa.cuh (only TSR_SDPA_OUT is
 * used). */
#include "cuda/kernels/common.cuh" /* first: NVRTC's libc stand-in */
#include "cuda/kernels/sdpa_common.cuh"

TSR_KERNEL_ENTRY(tsr_sdpa_combine)(tsr_sdpa_args a, const float *parts, void *out) {
  extern __shared__ float weight[]; /* [splits] */
  const int64_t row = blockIdx.x, stride = 2 + a.d;
  const float *p = parts + row * a.splits * stride;
  if (threadIdx.x == 0) {
    float max = -__int_as_float(0x7f800000), total = 0.0f;
    for (int64_t s = 0; s < a.splits; s++)
      if (p[s * stride + 1] != 0.0f && p[s * stride] > max) max = p[s * stride];
    for (int64_t s = 0; s < a.splits; s++) {
      const float l = p[s * stride + 1];
      /* an empty slice's weight is -0: fmaf(-0, +0, acc) is acc, -0 included, so slices past
         a dynamic length change no bit (+0 would turn an acc of -0 into +0) */
      weight[s] = l != 0.0f ? expf(p[s * stride] - max) : -0.0f;
      total += l != 0.0f ? l * weight[s] : 0.0f;
    }
    const float inverse = 1.0f / total;
    for (int64_t s = 0; s < a.splits; s++)
      weight[s] *= inverse;
  }
  __syncthreads();
  for (int64_t d = threadIdx.x; d < a.d; d += blockDim.x) {
    float acc = 0.0f;
    for (int64_t s = 0; s < a.splits; s++) /* an empty slice: -0 * +0 */
      acc = __fmaf_rn(weight[s], p[s * stride + 2 + d], acc);
    tsr_sdpa_store(out, row * a.d + d, acc, TSR_SDPA_OUT);
  }
}
