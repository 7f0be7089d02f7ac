/* cuda/kernels/quantize.cuh — TSRI_PRIM_QUANTIZE on the GPU: one thread per group of a packed
 * w [rows, K], writing the group's words of w_q, its scale and (affine) its bias into the op's
 * blob, bit for bit with cpu/quant.c (docs/quant-rules.md: MLX's float32 steps in the same order,
 * a group wider than float32 in double, the NaN and Inf rules). Specialized by TSR_QF_MODE,
 * TSR_QF_BITS, TSR_QF_GROUP_SIZE and TSR_Q_DTYPE (w's dtype: tsr_dtype's value of float16,
 * bfloat16 or float32); the nvfp4 global scale is an argument. A group of at most 128 bytes is
 * read once, with 16-byte loads, into registers and both passes (its range, then its codes) run
 * from there; a wider group or an input off a 16-byte boundary reads its elements from memory in
 * each pass. The arithmetic is the same either way. */
#include "cuda/kernels/common.cuh" /* first: NVRTC's libc stand-in */
#include "cuda/kernels/quant_common.cuh"

#if !defined(TSR_QF_MODE) || !defined(TSR_QF_BITS) || !defined(TSR_QF_GROUP_SIZE) || \
    !defined(TSR_Q_DTYPE)
#error "quantize.cuh is specialized by TSR_QF_MODE, TSR_QF_BITS, TSR_QF_GROUP_SIZE, TSR_Q_DTYPE"
#endif
#if TSR_QF_GROUP_SIZE * TSR_QF_BITS % 32 != 0
#error "a group must be whole 32-bit words"
#endif

#define GROUP_WORDS (TSR_QF_GROUP_SIZE * TSR_QF_BITS / 32)

/* Mirrors cuda/quant.c's quantize_args. */
struct tsr_quantize_args {
  int64_t groups;                       /* rows * K / group size: one thread each */
  int64_t scales_offset, biases_offset; /* bytes into the blob */
  float scale_enc;                      /* nvfp4 with a global scale: 2688 / g (host float32) */
  int has_global_scale;
};

/* Where a group's elements come from: memory (element `first + i` of w) or registers. */
struct global_group {
  static constexpr int unroll = 8; /* loads in flight, not every element's registers */
  const void *w;
  int64_t first;
  __device__ __forceinline__ float at(int i) const { return tsr_q_load(w, first + i, TSR_Q_DTYPE); }
};

#define GROUP_BYTES (TSR_QF_GROUP_SIZE * (TSR_Q_DTYPE == TSRI_ELEMENT_FLOAT32 ? 4 : 2))
#define STAGED_MAX_BYTES 128 /* bfloat16/float16 groups of up to 64, float32 of 32 */
#define STAGED_LOADS (GROUP_BYTES <= STAGED_MAX_BYTES ? GROUP_BYTES / 16 : 1)

struct staged_group {
  static constexpr int unroll = TSR_QF_GROUP_SIZE; /* constant indices keep it in registers */
  uint4 bytes[STAGED_LOADS];
  __device__ __forceinline__ float at(int i) const { return tsr_q_load(bytes, i, TSR_Q_DTYPE); }
};

/* The group's bytes into registers: w + first elements is 16-byte aligned (checked by the
   caller), and a group is whole 16-byte pieces (at least 16 elements of 2 bytes). */
static __device__ __forceinline__ void stage_group(const void *w, int64_t first, staged_group *s) {
  const uint4 *from =
      (const uint4 *)((const unsigned char *)w + first * (GROUP_BYTES / TSR_QF_GROUP_SIZE));
#pragma unroll
  for (int i = 0; i < STAGED_LOADS; i++)
    s->bytes[i] = from[i];
}

#if TSR_QF_MODE == TSRI_QF_AFFINE

/* The code of one value for a scale and bias (cpu/quant.c's affine_codes): NaN as 0.0, Inf
   saturated, rint ties to even, clamped to [0, 2^bits - 1]; in double for a wide group. */
static __device__ __forceinline__ uint32_t affine_code(float w, float limit, double scale,
                                                       double bias, bool wide) {
  const float n_bins = (float)((1 << TSR_QF_BITS) - 1);
  float v = tsr_q_isnan(w) ? 0.0f : tsr_q_saturate_inf(w, limit);
  float q = wide ? (float)rint(__ddiv_rn(__dsub_rn((double)v, bias), scale))
                 : rintf(__fdiv_rn(__fsub_rn(v, (float)bias), (float)scale));
  q = q > 0.0f ? q : 0.0f;
  q = q < n_bins ? q : n_bins;
  return (uint32_t)q;
}

/* Part B §2.1 in float32 (or, when max - min overflows float32, the same steps in double:
   cpu/quant.c's quantize_affine_wide); the codes go into words, the float32 scale and bias out. */
template <typename Group>
static __device__ __forceinline__ void quantize_group(const Group &w, uint32_t *words,
                                                      float *scale_out, float *bias_out) {
  const float limit = tsr_q_max_finite(TSR_Q_DTYPE), eps = 1e-7f;
  const float n_bins = (float)((1 << TSR_QF_BITS) - 1);
  float w_min = __uint_as_float(0x7f800000u), w_max = -w_min;
#pragma unroll Group::unroll
  for (int i = 0; i < TSR_QF_GROUP_SIZE; i++) {
    float x = w.at(i);
    if (tsr_q_isnan(x)) continue;
    float v = tsr_q_saturate_inf(x, limit);
    w_max = v > w_max ? v : w_max;
    w_min = v < w_min ? v : w_min;
  }
  if (w_min > w_max) w_min = w_max = 0.0f; /* all NaN: as an all-zero group */
  double scale, bias;
  bool wide = tsr_q_isinf(__fsub_rn(w_max, w_min));
  if (wide) {
    const double n_bins_wide = (double)((1 << TSR_QF_BITS) - 1);
    bool mask = fabs((double)w_min) > fabs((double)w_max);
    scale = __ddiv_rn(__dsub_rn((double)w_max, (double)w_min), n_bins_wide);
    scale = mask ? scale : -scale;
    double edge = mask ? (double)w_min : (double)w_max;
    double q0 = rint(__ddiv_rn(edge, scale));
    bias = 0.0;
    if (q0 != 0.0) {
      scale = __ddiv_rn(edge, q0);
      bias = edge;
    }
  } else {
    bool mask = fabsf(w_min) > fabsf(w_max);
    float s = __fdiv_rn(__fsub_rn(w_max, w_min), n_bins);
    s = s > eps ? s : eps;
    s = mask ? s : -s;
    float edge = mask ? w_min : w_max;
    float q0 = rintf(__fdiv_rn(edge, s));
    float b = 0.0f;
    if (q0 != 0.0f) {
      s = __fdiv_rn(edge, q0);
      b = edge;
    }
    scale = (double)s;
    bias = (double)b;
  }
#pragma unroll
  for (int i = 0; i < TSR_QF_GROUP_SIZE; i++)
    tsri_qf_put_code(words, i, TSR_QF_BITS, affine_code(w.at(i), limit, scale, bias, wide));
  *scale_out = (float)scale; /* exact for a float32 group; rounded once for a wide one */
  *bias_out = (float)bias;
}

#else /* mxfp4, mxfp8, nvfp4 */

/* max |w| over the group in w's dtype under the NaN/Inf rule (exact). */
template <typename Group>
static __device__ __forceinline__ float group_amax(const Group &w, float limit) {
  float amax = 0.0f;
#pragma unroll Group::unroll
  for (int i = 0; i < TSR_QF_GROUP_SIZE; i++) {
    float a = fabsf(tsr_q_saturate_inf(w.at(i), limit));
    amax = a > amax ? a : amax; /* a NaN compares false and is skipped */
  }
  return amax;
}

/* The largest code of x's sign: the Inf rule for fp elements. */
static __device__ __forceinline__ uint32_t saturated_code(float x) {
  bool negative = (__float_as_uint(x) >> 31) != 0u;
  return TSR_QF_BITS == 4 ? (negative ? 15u : 7u) : (negative ? 0xfeu : 0x7eu);
}

/* mxfp4/mxfp8: the E8M0 code rounded up from d = T(amax / M); elements from T(w / 2^e), 2^e the
   divisor before the code's wrap. nvfp4: scale E4M3(float32(T(amax / 6)) * scale_enc); element
   the nearest-lower fp4 of float32(T(w / T(dec(scale)))) * scale_enc. Returns the scale code. */
template <typename Group>
static __device__ __forceinline__ uint32_t quantize_group(const Group &w, uint32_t *words,
                                                          const tsr_quantize_args &a) {
  const float limit = tsr_q_max_finite(TSR_Q_DTYPE);
  float amax = group_amax(w, limit);
  uint32_t scale_code;
  float divisor;
#if TSR_QF_MODE == TSRI_QF_NVFP4
  float scaled_amax = tsr_q_round(__fdiv_rn(amax, TSRI_QF_FP4_MAX), TSR_Q_DTYPE);
  if (a.has_global_scale) scaled_amax = __fmul_rn(scaled_amax, a.scale_enc);
  scale_code = tsri_qf_e4m3_encode(scaled_amax);
  divisor = tsr_q_round(tsri_qf_e4m3_decode(scale_code), TSR_Q_DTYPE);
#else
  const float element_max = TSR_QF_MODE == TSRI_QF_MXFP4 ? TSRI_QF_FP4_MAX : TSRI_QF_FP8_MAX;
  float d = tsr_q_round(__fdiv_rn(amax, element_max), TSR_Q_DTYPE);
  scale_code = tsri_qf_e8m0_encode_up(d);
  divisor = tsr_q_pow2(tsri_qf_mx_divisor_exponent(d));
#endif
#pragma unroll
  for (int i = 0; i < TSR_QF_GROUP_SIZE; i++) {
    float x = w.at(i);
    uint32_t code;
    if (tsr_q_isnan(x)) {
      code = 0u; /* the code of 0.0 */
    } else if (tsr_q_isinf(x)) {
      code = saturated_code(x);
    } else {
      float v = tsr_q_round(__fdiv_rn(x, divisor), TSR_Q_DTYPE);
#if TSR_QF_MODE == TSRI_QF_NVFP4
      if (a.has_global_scale) v = __fmul_rn(v, a.scale_enc);
      code = tsri_qf_fp4_encode_nearest_lower(v);
#elif TSR_QF_MODE == TSRI_QF_MXFP4
      code = tsri_qf_fp4_encode_nearest_lower(v);
#else
      code = tsri_qf_e4m3_encode(v);
#endif
    }
    tsri_qf_put_code(words, i, TSR_QF_BITS, code);
  }
  return scale_code;
}

#endif

/* One group: its words, scale and bias (or scale code) into the blob. */
template <typename Group>
static __device__ __forceinline__ void quantize_one(const tsr_quantize_args &a, const Group &w,
                                                    int64_t g, unsigned char *blob) {
  uint32_t words[GROUP_WORDS];
#pragma unroll
  for (int j = 0; j < GROUP_WORDS; j++)
    words[j] = 0u;
#if TSR_QF_MODE == TSRI_QF_AFFINE
  float scale, bias;
  quantize_group(w, words, &scale, &bias);
  tsr_q_store(blob + a.scales_offset, g, TSR_Q_DTYPE, scale);
  tsr_q_store(blob + a.biases_offset, g, TSR_Q_DTYPE, bias);
#else
  blob[a.scales_offset + g] = (unsigned char)quantize_group(w, words, a);
#endif
  uint32_t *out = (uint32_t *)blob + g * GROUP_WORDS;
#pragma unroll
  for (int j = 0; j < GROUP_WORDS; j++)
    out[j] = words[j];
}

/* w: packed [rows, K] of TSR_Q_DTYPE (group g is elements [g * group size, ...) of the flat
   array, since K is whole groups); blob: w_q words [groups][GROUP_WORDS] at byte 0, then the
   scales and biases at their offsets. */
TSR_KERNEL_ENTRY(tsr_quantize)(tsr_quantize_args a, const void *w, unsigned char *blob) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  const bool staged = GROUP_BYTES <= STAGED_MAX_BYTES && ((unsigned long long)w & 15u) == 0;
  for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < a.groups; g += stride) {
    int64_t first = g * TSR_QF_GROUP_SIZE;
    if (staged) {
      staged_group group;
      stage_group(w, first, &group);
      quantize_one(a, group, g, blob);
    } else {
      quantize_one(a, global_group{w, first}, g, blob);
    }
  }
}
