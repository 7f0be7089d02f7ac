/* cuda/kernels/sdpa_common.cuh — what sdpa.cuh (a block per query row) and sdpa_split.cuh (a
 * block per slice of a row's keys, for decode over long caches) share: the arguments, element
 * loads and stores of the dtype codes (0 float32, 1 float16, 2 bfloat16), a row's place, its
 * query in shared memory, the scores of a range of keys and the weighted sum of v over them.
 * Scores are scale · q·k with float32 sums; a warp scores TSR_SDPA_KEYS keys at once (lanes over
 * the head's elements, the loads of every key in flight together); the weighted sum splits the
 * keys over the warps (lanes over the head's elements) and adds the warps' partial sums through
 * shared memory in warp order. Grouped heads read the kv head h / (Hq / Hkv); the causal mask is
 * a row length (keys j <= i + Tk - Tq), as on the CPU (cpu/attention.c). For tsr_sdpa_dynamic,
 * `length` (an int32 or int64 on the device, read here: no host round trip, so a recorded graph
 * replays with the step's value) clamped into [Tq, Tk] replaces Tk, as if k and v had been sliced
 * to their first L rows: keys and values from L on are never read. Not a kernel itself. */
#ifndef TSR_CUDA_KERNELS_SDPA_COMMON_CUH
#define TSR_CUDA_KERNELS_SDPA_COMMON_CUH

#include "base/half.h"
#include "cuda/kernels/position.cuh"

#if !defined(TSR_SDPA_Q) || !defined(TSR_SDPA_K) || !defined(TSR_SDPA_V) || !defined(TSR_SDPA_OUT)
#error "sdpa kernels are specialized by TSR_SDPA_Q, TSR_SDPA_K, TSR_SDPA_V and TSR_SDPA_OUT"
#endif

/* Keys a warp scores at once: their loads are in flight together. */
#define TSR_SDPA_KEYS 4
/* Head elements a lane accumulates at once in the weighted sum of v (D <= 256 in one pass). */
#define TSR_SDPA_ACC 8

/* q [B, Hq, Tq, D], k and v [B, Hkv, Tk, D]: element strides and offsets; out packed. Mirrors
   cuda/attention.c's sdpa_args. */
struct tsr_sdpa_args {
  int64_t q_strides[4], k_strides[4], v_strides[4];
  int64_t q_offset, k_offset, v_offset;
  int64_t batch, hq, hkv, tq, tk, d;
  float scale;
  int causal;
  int64_t splits, split_keys; /* sdpa_split: slices per row and keys per slice */
};
static_assert(sizeof(tsr_sdpa_args) == 192, "cuda/attention.c mirrors this layout");

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

static __device__ inline float tsr_sdpa_warp_sum(float x) {
  for (int offset = 16; offset > 0; offset >>= 1)
    x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

/* Query row `row` (over B * Hq * Tq): where its k and v start and how many keys it sees. */
struct tsr_sdpa_row {
  int64_t k_base, v_base, visible;
};

/* The row's place, with its query loaded into query[D] (the block synchronized after). */
static __device__ tsr_sdpa_row tsr_sdpa_row_start(const tsr_sdpa_args &a, int64_t row,
                                                  const void *q, const void *length,
                                                  int length_bytes, float *query) {
  const int64_t i = row % a.tq, h = (row / a.tq) % a.hq, b = row / (a.tq * a.hq);
  const int64_t kv = h / (a.hq / a.hkv);
  int64_t tk = a.tk;
  if (length) { /* the dynamic length, clamped into [Tq, Tk] */
    const int64_t l = tsr_position_load(length, length_bytes);
    tk = l < a.tq ? a.tq : l > a.tk ? a.tk : l;
  }
  tsr_sdpa_row r;
  r.visible = tk;
  if (a.causal && i + tk - a.tq + 1 < r.visible) r.visible = i + tk - a.tq + 1;
  r.k_base = a.k_offset + b * a.k_strides[0] + kv * a.k_strides[1];
  r.v_base = a.v_offset + b * a.v_strides[0] + kv * a.v_strides[1];
  const int64_t q_base = a.q_offset + b * a.q_strides[0] + h * a.q_strides[1] + i * a.q_strides[2];
  for (int64_t d = threadIdx.x; d < a.d; d += blockDim.x)
    query[d] = tsr_sdpa_load(q, q_base + d * a.q_strides[3], TSR_SDPA_Q);
  __syncthreads();
  return r;
}

/* scores[j - begin] = scale · q·k_j for keys [begin, end); returns this thread's largest score
   (-inf when it wrote none). The scores are visible to the block after the next barrier. */
static __device__ float tsr_sdpa_scores(const tsr_sdpa_args &a, const float *query, const void *k,
                                        int64_t k_base, int64_t begin, int64_t end, float *scores) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  float local_max = -__int_as_float(0x7f800000); /* -inf */
  for (int64_t j0 = begin + (int64_t)warp * TSR_SDPA_KEYS; j0 < end;
       j0 += (int64_t)warps * TSR_SDPA_KEYS) {
    float dot[TSR_SDPA_KEYS];
#pragma unroll
    for (int u = 0; u < TSR_SDPA_KEYS; u++)
      dot[u] = 0.0f;
#pragma unroll 4
    for (int64_t d = lane; d < a.d; d += 32) {
      const float qd = query[d];
#pragma unroll
      for (int u = 0; u < TSR_SDPA_KEYS; u++)
        if (j0 + u < end)
          dot[u] = __fmaf_rn(
              qd,
              tsr_sdpa_load(k, k_base + (j0 + u) * a.k_strides[2] + d * a.k_strides[3], TSR_SDPA_K),
              dot[u]);
    }
#pragma unroll
    for (int u = 0; u < TSR_SDPA_KEYS; u++) {
      const float s = __fmul_rn(a.scale, tsr_sdpa_warp_sum(dot[u]));
      if (j0 + u < end && lane == u) {
        scores[j0 + u - begin] = s;
        local_max = s > local_max ? s : local_max;
      }
    }
  }
  return local_max;
}

/* emit(d, Σ_j p[j - begin] · factor · v_j[d]) for every element d of the head, over keys
   [begin, end): each warp sums its share of the keys for TSR_SDPA_ACC * 32 elements at a time,
   the warps' partial sums (partial: warps x D floats) added in warp order. */
template <typename Emit>
static __device__ void tsr_sdpa_weighted_sum(const tsr_sdpa_args &a, const float *p, float factor,
                                             const void *v, int64_t v_base, int64_t begin,
                                             int64_t end, float *partial, Emit emit) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int64_t d0 = 0; d0 < a.d; d0 += 32 * TSR_SDPA_ACC) {
    float acc[TSR_SDPA_ACC];
#pragma unroll
    for (int i = 0; i < TSR_SDPA_ACC; i++)
      acc[i] = 0.0f;
#pragma unroll 2
    for (int64_t j = begin + warp; j < end; j += warps) {
      const float pj = __fmul_rn(p[j - begin], factor);
      const int64_t row = v_base + j * a.v_strides[2];
#pragma unroll
      for (int i = 0; i < TSR_SDPA_ACC; i++) {
        const int64_t d = d0 + lane + 32 * i;
        if (d < a.d)
          acc[i] = __fmaf_rn(pj, tsr_sdpa_load(v, row + d * a.v_strides[3], TSR_SDPA_V), acc[i]);
      }
    }
#pragma unroll
    for (int i = 0; i < TSR_SDPA_ACC; i++) {
      const int64_t d = d0 + lane + 32 * i;
      if (d < a.d) partial[warp * a.d + d] = acc[i];
    }
    __syncthreads();
    const int64_t last = d0 + 32 * TSR_SDPA_ACC < a.d ? d0 + 32 * TSR_SDPA_ACC : a.d;
    for (int64_t d = d0 + threadIdx.x; d < last; d += blockDim.x) {
      float total = 0.0f;
      for (int w = 0; w < warps; w++)
        total += partial[w * a.d + d];
      emit(d, total);
    }
    __syncthreads(); /* partial is reused by the next elements */
  }
}

#endif
