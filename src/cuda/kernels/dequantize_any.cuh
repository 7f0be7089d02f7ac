/* cuda/kernels/dequantize_any.cuh — TSRI_PRIM_DEQUANTIZE on the GPU for every mode, bit width,
 * group size, scale dtype and output dtype, a chunk of a group per thread, bit for bit with
 * cpu/quant.c (docs/quant-rules.md "Decoding"): affine T(T(s * q) + b) in the scales' dtype T;
 * mxfp4/mxfp8/nvfp4 T(value * T(scale)) in the output dtype T; nvfp4 with a global scale g
 * float32(value * float32(dec(scale) * float32(g / 2688))); each then stored as the output dtype.
 * Specialized by TSR_QF_MODE, TSR_QF_BITS, TSR_QF_GROUP_SIZE, TSR_S_DTYPE (the scales' and
 * biases' dtype: tsr_dtype's value; uint8 codes for the fp modes) and TSR_OUT_DTYPE. Operands are
 * packed (the launcher, cuda/quant.c, gathers strided ones first). TSR_DQ_UNROUNDED=1 (affine,
 * float32 output only) gives a matmul's weights instead: s * q + b in float32, not rounded to the
 * scales' dtype (quant-spec Part A §4; cpu/qmm.h's round_weights), for cuda/qmm.c's dequantized
 * prefill, so its result does not depend on M. The float32-only
 * dequantize.cuh stays for the kernel-module tests. */
#include "cuda/kernels/common.cuh" /* first: NVRTC's libc stand-in */
#include "cuda/kernels/quant_common.cuh"

#if !defined(TSR_QF_MODE) || !defined(TSR_QF_BITS) || !defined(TSR_QF_GROUP_SIZE) || \
    !defined(TSR_S_DTYPE) || !defined(TSR_OUT_DTYPE)
#error \
    "dequantize_any.cuh is specialized by TSR_QF_MODE, TSR_QF_BITS, TSR_QF_GROUP_SIZE, TSR_S_DTYPE, TSR_OUT_DTYPE"
#endif
#ifndef TSR_DQ_UNROUNDED
#define TSR_DQ_UNROUNDED 0
#endif
#if TSR_DQ_UNROUNDED && (TSR_QF_MODE != TSRI_QF_AFFINE || TSR_OUT_DTYPE != TSRI_ELEMENT_FLOAT32)
#error "unrounded weights are affine into float32 only"
#endif
#if TSR_QF_GROUP_SIZE * TSR_QF_BITS % 32 != 0
#error "a group must be whole 32-bit words"
#endif

/* Mirrors cuda/quant.c's dequantize_args. */
struct tsr_dequantize_args {
  int64_t size;        /* output elements: rows * k (whole chunks: rows are whole groups) */
  float global_factor; /* nvfp4 with a global scale: float32(g / 2688) (host float32) */
  int has_global_scale;
};

/* A group's decoding constants, read once per chunk: affine s and b (the scales' dtype, widened);
   for the fp modes the scale as the element rule uses it. */
struct tsr_dequantize_group {
  float scale, bias;
};

static __device__ __forceinline__ tsr_dequantize_group dequantize_group(
    const tsr_dequantize_args &a, const void *scales, const void *biases, int64_t group) {
  tsr_dequantize_group g;
#if TSR_QF_MODE == TSRI_QF_AFFINE
  (void)a;
  g.scale = tsr_q_load(scales, group, TSR_S_DTYPE);
  g.bias = tsr_q_load(biases, group, TSR_S_DTYPE);
#else
  (void)biases;
  uint32_t scale_code = ((const uint8_t *)scales)[group];
  g.bias = 0.0f;
#if TSR_QF_MODE == TSRI_QF_NVFP4
  if (a.has_global_scale)
    g.scale = __fmul_rn(tsri_qf_e4m3_decode(scale_code), a.global_factor);
  else
    g.scale = tsr_q_round(tsri_qf_e4m3_decode(scale_code), TSR_OUT_DTYPE);
#else
  (void)a;
  g.scale = tsr_q_round(tsri_qf_e8m0_decode(scale_code), TSR_OUT_DTYPE);
#endif
#endif
  return g;
}

/* One output element from its code and its group's constants. */
static __device__ __forceinline__ float dequantize_one(uint32_t code, tsr_dequantize_group g,
                                                       bool global_scale) {
#if TSR_QF_MODE == TSRI_QF_AFFINE
  (void)global_scale;
#if TSR_DQ_UNROUNDED
  /* float32(float32(s * q) + b), as the CPU's matmul weights (s * q exact for half scales) */
  return __fadd_rn(__fmul_rn(g.scale, (float)code), g.bias);
#else
  float product = tsr_q_round(__fmul_rn(g.scale, (float)code), TSR_S_DTYPE); /* T(s * q) */
  return tsr_q_round(__fadd_rn(product, g.bias), TSR_S_DTYPE);               /* T(. + b) */
#endif
#else
  float element = tsr_q_fp_value(code, TSR_QF_BITS);
  if (global_scale) return __fmul_rn(element, g.scale); /* nvfp4: float32, stored once */
  return tsr_q_round(__fmul_rn(element, g.scale), TSR_OUT_DTYPE);
#endif
}

/* Each thread decodes a chunk of DQ_CHUNK consecutive elements: whole 32-bit words of codes (8
   elements for 4 and 8 bits, 16 for 2, 32 for 3, 5 and 6), inside one group (groups are 16, 32, 64
   or 128 elements and rows whole groups), so its constants are one load and its outputs leave as
   16-byte stores, adjacent threads writing adjacent bytes. w_q, scales and out are packed in row
   order, so chunk c's words start at c * DQ_WORDS and its group is c * DQ_CHUNK / group size: no
   division by the row length. One element per thread (a 64-bit division and a scale load each)
   ran at ~0.2 of the H200's copy roof. */
#define DQ_CHUNK (TSR_QF_BITS == 4 || TSR_QF_BITS == 8 ? 8 : TSR_QF_BITS == 2 ? 16 : 32)
#define DQ_WORDS (DQ_CHUNK * TSR_QF_BITS / 32)
#define DQ_OUT_BYTES (DQ_CHUNK * (TSR_OUT_DTYPE == TSRI_ELEMENT_FLOAT32 ? 4 : 2))
#if TSR_QF_GROUP_SIZE % DQ_CHUNK != 0 || DQ_OUT_BYTES % 16 != 0
#error "a chunk must lie inside a group and be whole 16-byte stores"
#endif

/* The chunk's staged outputs to out (16-byte stores when out is so aligned, which then holds for
   every chunk). */
static __device__ __forceinline__ void store_chunk(void *out, int64_t chunk, const uint4 *staged) {
  unsigned char *dst = (unsigned char *)out + chunk * DQ_OUT_BYTES;
  if (((unsigned long long)out & 15u) == 0) {
#pragma unroll
    for (int i = 0; i < DQ_OUT_BYTES / 16; i++)
      ((uint4 *)dst)[i] = staged[i];
  } else {
    const uint32_t *words = (const uint32_t *)staged;
    for (int i = 0; i < DQ_OUT_BYTES / 4; i++)
      memcpy(dst + 4 * i, &words[i], 4);
  }
}

/* w_q [rows, words] uint32, scales and biases [rows, groups] (biases affine only), out [rows, k]:
   all packed. */
TSR_KERNEL_ENTRY(tsr_dequantize_any)
(tsr_dequantize_args a, const uint32_t *w_q, const void *scales, const void *biases, void *out) {
  const int64_t chunks = a.size / DQ_CHUNK, stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t chunk = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; chunk < chunks;
       chunk += stride) {
    uint32_t codes[DQ_WORDS];
#pragma unroll
    for (int i = 0; i < DQ_WORDS; i++)
      codes[i] = w_q[chunk * DQ_WORDS + i];
    tsr_dequantize_group g =
        dequantize_group(a, scales, biases, chunk / (TSR_QF_GROUP_SIZE / DQ_CHUNK));
    uint4 staged[DQ_OUT_BYTES / 16];
#pragma unroll
    for (int j = 0; j < DQ_CHUNK; j++)
      tsr_q_store(staged, j, TSR_OUT_DTYPE,
                  dequantize_one(tsri_qf_get_code(codes, j, TSR_QF_BITS), g,
                                 TSR_QF_MODE == TSRI_QF_NVFP4 && a.has_global_scale));
    store_chunk(out, chunk, staged);
  }
}
