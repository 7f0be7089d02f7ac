/* cuda/kernels/sdpa.cuh — scaled dot-product attention, one block per query row: the row's scores
 * over its visible keys (scale · q·k, float32 sums) in shared memory, a float32 softmax (max,
 * expf of the shifted scores, sum, one reciprocal), then out = Σ p_j v_j. Grouped heads read the
 * kv head h / (Hq / Hkv); the causal mask is a row length (keys j <= i + Tk - Tq), as on the CPU
 * (cpu/attention.c). Not a flash kernel: scores are materialized, Tk floats of shared memory per
 * row. Specialized by the dtypes of q, k, v and the output: TSR_SDPA_Q, TSR_SDPA_K, TSR_SDPA_V,
 * TSR_SDPA_OUT (0 float32, 1 float16, 2 bfloat16). For tsr_sdpa_dynamic, `length` (an int32 or
 * int64 of length_bytes on the device, read here: no host round trip, so a recorded graph
 * replays with the step's value) clamped into [Tq, Tk] replaces Tk, as if k and v had been sliced
 * to their first L rows: keys and values from L on are never read. */
#include "cuda/kernels/common.cuh" /* first: NVRTC's libc stand-in */
#include "base/half.h"

#if !defined(TSR_SDPA_Q) || !defined(TSR_SDPA_K) || !defined(TSR_SDPA_V) || !defined(TSR_SDPA_OUT)
#error "sdpa.cuh is specialized by TSR_SDPA_Q, TSR_SDPA_K, TSR_SDPA_V and TSR_SDPA_OUT"
#endif

/* q [B, Hq, Tq, D], k and v [B, Hkv, Tk, D]: element strides and offsets; out packed. */
struct tsr_sdpa_args {
  int64_t q_strides[4], k_strides[4], v_strides[4];
  int64_t q_offset, k_offset, v_offset;
  int64_t batch, hq, hkv, tq, tk, d;
  float scale;
  int causal;
};

static __device__ inline float tsr_sdpa_load(const void *base, int64_t i, int code) {
  if (code == 0) return ((const float *)base)[i];
  uint16_t bits = ((const uint16_t *)base)[i];
  return code == 1 ? tsri_f16_to_f32(bits) : tsri_bf16_to_f32(bits);
}

static __device__ inline void tsr_sdpa_store(void *base, int64_t i, float x, int code) {
  if (code == 0)
    ((float *)base)[i] = x;
  else
    ((uint16_t *)base)[i] = code == 1 ? tsri_f32_to_f16(x) : tsri_f32_to_bf16(x);
}

/* The block's reduction of one value per thread (max or sum), through shared scratch[32]. */
static __device__ float tsr_sdpa_block_reduce(float x, bool is_max, float *scratch) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    float other = __shfl_down_sync(0xffffffffu, x, offset);
    x = is_max ? (other > x ? other : x) : x + other;
  }
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  __syncthreads(); /* scratch may still be read by the previous reduction */
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  float r = scratch[0];
  for (int w = 1; w < warps; w++)
    r = is_max ? (scratch[w] > r ? scratch[w] : r) : r + scratch[w];
  return r;
}

/* The keys a dynamic length leaves: its value (int32 or int64) clamped into [Tq, Tk]. */
static __device__ inline int64_t tsr_sdpa_keys(const tsr_sdpa_args &a, const void *length,
                                               int length_bytes) {
  if (!length) return a.tk;
  const int64_t l =
      length_bytes == 8 ? *(const int64_t *)length : (int64_t) * (const int32_t *)length;
  return l < a.tq ? a.tq : l > a.tk ? a.tk : l;
}

TSR_KERNEL_ENTRY(tsr_sdpa)
(tsr_sdpa_args a, const void *q, const void *k, const void *v, void *out, const void *length,
 int length_bytes) {
  extern __shared__ float shared[]; /* [32 scratch][D query][Tk scores] */
  float *scratch = shared, *query = shared + 32, *scores = query + a.d;
  const int64_t row = blockIdx.x; /* over B * Hq * Tq */
  const int64_t i = row % a.tq, h = (row / a.tq) % a.hq, b = row / (a.tq * a.hq);
  const int64_t kv = h / (a.hq / a.hkv);
  const int64_t tk = tsr_sdpa_keys(a, length, length_bytes);
  int64_t visible = tk;
  if (a.causal && i + tk - a.tq + 1 < visible) visible = i + tk - a.tq + 1;
  const int64_t q_base = a.q_offset + b * a.q_strides[0] + h * a.q_strides[1] + i * a.q_strides[2];
  for (int64_t d = threadIdx.x; d < a.d; d += blockDim.x)
    query[d] = tsr_sdpa_load(q, q_base + d * a.q_strides[3], TSR_SDPA_Q);
  __syncthreads();
  const int64_t k_base = a.k_offset + b * a.k_strides[0] + kv * a.k_strides[1];
  const int64_t v_base = a.v_offset + b * a.v_strides[0] + kv * a.v_strides[1];
  float local_max = -__int_as_float(0x7f800000); /* -inf */
  for (int64_t j = threadIdx.x; j < visible; j += blockDim.x) {
    const int64_t key = k_base + j * a.k_strides[2];
    float dot = 0.0f;
    for (int64_t d = 0; d < a.d; d++)
      dot = __fmaf_rn(query[d], tsr_sdpa_load(k, key + d * a.k_strides[3], TSR_SDPA_K), dot);
    float s = __fmul_rn(a.scale, dot);
    scores[j] = s;
    local_max = s > local_max ? s : local_max;
  }
  float max = tsr_sdpa_block_reduce(local_max, true, scratch);
  float local_sum = 0.0f;
  for (int64_t j = threadIdx.x; j < visible; j += blockDim.x) {
    float e = expf(scores[j] - max);
    scores[j] = e;
    local_sum += e;
  }
  float inverse = 1.0f / tsr_sdpa_block_reduce(local_sum, false, scratch);
  __syncthreads();
  const int64_t out_base = row * a.d;
  for (int64_t d = threadIdx.x; d < a.d; d += blockDim.x) {
    float acc = 0.0f;
    for (int64_t j = 0; j < visible; j++)
      acc = __fmaf_rn(
          __fmul_rn(scores[j], inverse),
          tsr_sdpa_load(v, v_base + j * a.v_strides[2] + d * a.v_strides[3], TSR_SDPA_V), acc);
    tsr_sdpa_store(out, out_base + d, acc, TSR_SDPA_OUT);
  }
}
