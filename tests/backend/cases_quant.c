/* tests/backend/cases_quant.c — conformance cases for quantize, dequantize, quantized_matmul and
 * gather_qmm in the modes a checkpoint uses: affine 4-bit g64, 8-bit g32 (and 3-bit g128, whose
 * codes straddle words), mxfp4, mxfp8, nvfp4 (with and without a global scale).
 *
 * Tolerances. quantize and dequantize are exact: the quantized bits are MLX's and identical on
 * every backend, and dequantize's arithmetic is fixed to the rounding (quant-spec.md Part A §1-3,
 * docs/quant-rules.md: affine T(T(s q) + b), fp element times scale). The matmuls quantize their
 * float weight inside the case (so every backend multiplies the same bits) and accumulate in
 * float32 (Part A §4): a K-term dot product is within K u sum|x_i w_i| of exact with u = 2^-24;
 * |x| <= 1 and a dequantized weight is at most twice its group's largest |w| <= 1 (an fp scale
 * rounds up to a power of two), so sum|x_i w_i| <= 2 K; two backends: 2 * 2 K^2 u, plus one ulp
 * of a half-precision output. */
#include "harness.h"

/* p: group_size, bits, mode. Outputs w_q, scales and (affine) biases. */
static tsr_status b_quantize(tsr_array **o, tsr_array *const *in, const conf_params *p,
                             tsr_stream *s) {
  return tsr_quantize(&o[0], &o[1], &o[2], in[0], p->group_size, p->bits, p->mode, s);
}

/* x = global scale. */
static tsr_status b_quantize_scaled(tsr_array **o, tsr_array *const *in, const conf_params *p,
                                    tsr_stream *s) {
  return tsr_quantize_nvfp4_scaled(&o[0], &o[1], in[0], (float)p->x, s);
}

/* Inputs w_q, scales and (affine) biases; p->dtype the output's. */
static tsr_status b_dequantize(tsr_array **o, tsr_array *const *in, const conf_params *p,
                               tsr_stream *s) {
  return tsr_dequantize(&o[0], in[0], in[1], in[2], p->group_size, p->bits, p->mode, p->dtype, s);
}

static tsr_status b_dequantize_scaled(tsr_array **o, tsr_array *const *in, const conf_params *p,
                                      tsr_stream *s) {
  return tsr_dequantize_nvfp4_scaled(&o[0], in[0], in[1], (float)p->x, p->dtype, s);
}

/* Inputs x, the float weight w, then for gather_qmm rhs_indices and (optional) lhs_indices;
   w is quantized on s first. p->flag: transpose; p->flag2: gather_qmm. */
static tsr_status b_qmm(tsr_array **o, tsr_array *const *in, const conf_params *p, tsr_stream *s) {
  tsr_array *w_q = NULL, *scales = NULL, *biases = NULL;
  tsr_status st = tsr_quantize(&w_q, &scales, &biases, in[1], p->group_size, p->bits, p->mode, s);
  if (st == TSR_OK && p->flag2)
    st = tsr_gather_qmm(&o[0], in[0], w_q, scales, biases, in[3], in[2], p->flag, p->group_size,
                        p->bits, p->mode, false, s);
  else if (st == TSR_OK)
    st = tsr_quantized_matmul(&o[0], in[0], w_q, scales, biases, p->flag, p->group_size, p->bits,
                              p->mode, s);
  tsr_array_release(w_q);
  tsr_array_release(scales);
  tsr_array_release(biases);
  return st;
}

#define F32 TSR_FLOAT32
#define F16 TSR_FLOAT16
#define BF16 TSR_BFLOAT16
#define U CONF_UNIFORM
#define AFFINE(g, b) .group_size = (g), .bits = (b), .mode = TSR_QUANT_AFFINE
#define MXFP4 .group_size = 32, .bits = 4, .mode = TSR_QUANT_MXFP4
#define MXFP8 .group_size = 32, .bits = 8, .mode = TSR_QUANT_MXFP8
#define NVFP4 .group_size = 16, .bits = 4, .mode = TSR_QUANT_NVFP4
/* The bound at the top of the file, for K terms; `ulp` is the output's. */
#define QMM_TOL(K, ulp) .tol = {2 * 2 * CONF_U32 * (K) * (K) + 0x1p-24, (ulp)}

const conf_case conf_cases_quant[] = {
    /* ---- quantize: exact ---- */
    {CONF_CASE("quantize_affine4_g64_f32", b_quantize, 1, 3),
     .in = {CONF_IN(F32, U, -1, 1, 7, 128)}, .p = {AFFINE(64, 4)}},
    {CONF_CASE("quantize_affine8_g32_f16", b_quantize, 1, 3), .in = {CONF_IN(F16, U, -1, 1, 5, 96)},
     .p = {AFFINE(32, 8)}},
    {CONF_CASE("quantize_affine4_g64_bf16_3d", b_quantize, 1, 3),
     .in = {CONF_IN(BF16, U, -2, 1, 2, 3, 128)}, .p = {AFFINE(64, 4)}},
    {CONF_CASE("quantize_affine3_g128_f32", b_quantize, 1, 3),
     .in = {CONF_IN(F32, U, -1, 1, 3, 128)}, .p = {AFFINE(128, 3)}},
    {CONF_CASE("quantize_mxfp4_f32", b_quantize, 1, 2), .in = {CONF_IN(F32, U, -1, 1, 9, 64)},
     .p = {MXFP4}},
    {CONF_CASE("quantize_mxfp8_bf16", b_quantize, 1, 2), .in = {CONF_IN(BF16, U, -3, 3, 3, 96)},
     .p = {MXFP8}},
    {CONF_CASE("quantize_nvfp4_f16", b_quantize, 1, 2), .in = {CONF_IN(F16, U, -1, 1, 3, 48)},
     .p = {NVFP4}},
    {CONF_CASE("quantize_nvfp4_scaled_f32", b_quantize_scaled, 1, 2),
     .in = {CONF_IN(F32, U, -4, 4, 5, 32)}, .p = {.x = 3.5}},

    /* ---- dequantize of random codes and scales: exact ---- */
    {CONF_CASE("dequantize_affine4_g64_f16", b_dequantize, 3, 1),
     .in = {CONF_IN(TSR_UINT32, CONF_BITS, 0, 0, 7, 16), CONF_IN(F16, U, -0.1, 0.1, 7, 2),
            CONF_IN(F16, U, -1, 1, 7, 2)},
     .p = {AFFINE(64, 4), .dtype = F16}},
    {CONF_CASE("dequantize_affine8_g32_f32", b_dequantize, 3, 1),
     .in = {CONF_IN(TSR_UINT32, CONF_BITS, 0, 0, 5, 24), CONF_IN(F32, U, -0.01, 0.01, 5, 3),
            CONF_IN(F32, U, -1, 1, 5, 3)},
     .p = {AFFINE(32, 8), .dtype = F32}},
    {CONF_CASE("dequantize_mxfp4_bf16", b_dequantize, 2, 1),
     .in = {CONF_IN(TSR_UINT32, CONF_BITS, 0, 0, 9, 8), CONF_IN(TSR_UINT8, U, 118, 136, 9, 2)},
     .p = {MXFP4, .dtype = BF16}},
    {CONF_CASE("dequantize_mxfp8_f16", b_dequantize, 2, 1),
     .in = {CONF_IN(TSR_UINT32, CONF_BITS, 0, 0, 3, 24), CONF_IN(TSR_UINT8, U, 120, 136, 3, 3)},
     .p = {MXFP8, .dtype = F16}},
    {CONF_CASE("dequantize_nvfp4_f32_every_scale_code", b_dequantize, 2, 1),
     .in = {CONF_IN(TSR_UINT32, CONF_BITS, 0, 0, 17, 8),
            CONF_IN(TSR_UINT8, CONF_BITS, 0, 0, 17, 4)},
     .p = {NVFP4, .dtype = F32}},
    {CONF_CASE("dequantize_nvfp4_scaled_bf16", b_dequantize_scaled, 2, 1),
     .in = {CONF_IN(TSR_UINT32, CONF_BITS, 0, 0, 5, 4), CONF_IN(TSR_UINT8, U, 0, 0x7f, 5, 2)},
     .p = {.x = 3.5, .dtype = BF16}},

    /* ---- quantized_matmul and gather_qmm: x, then the float weight ---- */
    {CONF_CASE("qmm_affine4_g64_f32", b_qmm, 2, 1),
     .in = {CONF_IN(F32, U, -1, 1, 7, 128), CONF_IN(F32, U, -1, 1, 33, 128)},
     .p = {AFFINE(64, 4), .flag = true}, QMM_TOL(128, CONF_ULP32)},
    {CONF_CASE("qmm_affine8_g32_f16", b_qmm, 2, 1),
     .in = {CONF_IN(F16, U, -1, 1, 5, 96), CONF_IN(F16, U, -1, 1, 65, 96)},
     .p = {AFFINE(32, 8), .flag = true}, QMM_TOL(96, CONF_ULP16)},
    {CONF_CASE("qmm_mxfp4_bf16", b_qmm, 2, 1),
     .in = {CONF_IN(BF16, U, -1, 1, 3, 64), CONF_IN(BF16, U, -1, 1, 33, 64)},
     .p = {MXFP4, .flag = true}, QMM_TOL(64, CONF_ULPBF16)},
    {CONF_CASE("qmm_mxfp8_f32", b_qmm, 2, 1),
     .in = {CONF_IN(F32, U, -1, 1, 7, 96), CONF_IN(F32, U, -1, 1, 17, 96)},
     .p = {MXFP8, .flag = true}, QMM_TOL(96, CONF_ULP32)},
    {CONF_CASE("qmm_nvfp4_f32_decode", b_qmm, 2, 1),
     .in = {CONF_IN(F32, U, -1, 1, 1, 48), CONF_IN(F32, U, -1, 1, 65, 48)},
     .p = {NVFP4, .flag = true}, QMM_TOL(48, CONF_ULP32)},
    {CONF_CASE("qmm_affine4_g64_not_transposed", b_qmm, 2, 1),
     .in = {CONF_IN(F32, U, -1, 1, 5, 33), CONF_IN(F32, U, -1, 1, 33, 128)}, .p = {AFFINE(64, 4)},
     QMM_TOL(33, CONF_ULP32)},
    {CONF_CASE("qmm_affine4_g32_batched", b_qmm, 2, 1),
     .in = {CONF_IN(F32, U, -1, 1, 2, 3, 64), CONF_IN(F32, U, -1, 1, 2, 17, 64)},
     .p = {AFFINE(32, 4), .flag = true}, QMM_TOL(64, CONF_ULP32)},
    {CONF_CASE("gather_qmm_affine4_g64_f32", b_qmm, 4, 1),
     .in = {CONF_IN(F32, U, -1, 1, 4, 1, 64), CONF_IN(F32, U, -1, 1, 3, 33, 64),
            CONF_IN(TSR_UINT32, U, 0, 3, 6), CONF_IN(TSR_INT32, U, 0, 4, 6)},
     .p = {AFFINE(64, 4), .flag = true, .flag2 = true}, QMM_TOL(64, CONF_ULP32)},
    {CONF_CASE("gather_qmm_mxfp4_bf16_no_lhs", b_qmm, 3, 1),
     .in = {CONF_IN(BF16, U, -1, 1, 2, 5, 64), CONF_IN(BF16, U, -1, 1, 4, 17, 64),
            CONF_IN(TSR_INT32, U, 0, 4, 2)},
     .p = {MXFP4, .flag = true, .flag2 = true}, QMM_TOL(64, CONF_ULPBF16)},
    {CONF_CASE("gather_qmm_nvfp4_f32_decode", b_qmm, 3, 1),
     .in = {CONF_IN(F32, U, -1, 1, 1, 1, 48), CONF_IN(F32, U, -1, 1, 3, 65, 48),
            CONF_IN(TSR_INT32, U, 0, 3, 5)},
     .p = {NVFP4, .flag = true, .flag2 = true}, QMM_TOL(48, CONF_ULP32)},

    /* ---- big enough for the threaded rows and the fast paths (qmv, fused GEMM, tiles) ---- */
    {CONF_CASE("quantize_affine4_g64_f32_threaded", b_quantize, 1, 3),
     .in = {CONF_IN(F32, U, -1, 1, 65, 1024)}, .p = {AFFINE(64, 4)}},
    {CONF_CASE("dequantize_affine4_g64_f32_threaded", b_dequantize, 3, 1),
     .in = {CONF_IN(TSR_UINT32, CONF_BITS, 0, 0, 257, 128), CONF_IN(F32, U, -0.1, 0.1, 257, 16),
            CONF_IN(F32, U, -1, 1, 257, 16)},
     .p = {AFFINE(64, 4), .dtype = F32}},
    {CONF_CASE("qmm_affine4_g64_f32_decode_wide", b_qmm, 2, 1),
     .in = {CONF_IN(F32, U, -1, 1, 1, 1024), CONF_IN(F32, U, -1, 1, 257, 1024)},
     .p = {AFFINE(64, 4), .flag = true}, QMM_TOL(1024, CONF_ULP32)},
    {CONF_CASE("qmm_affine4_g64_f32_prefill", b_qmm, 2, 1),
     .in = {CONF_IN(F32, U, -1, 1, 65, 512), CONF_IN(F32, U, -1, 1, 129, 512)},
     .p = {AFFINE(64, 4), .flag = true}, QMM_TOL(512, CONF_ULP32)},
    {CONF_CASE("qmm_mxfp4_f16_m33", b_qmm, 2, 1),
     .in = {CONF_IN(F16, U, -1, 1, 33, 256), CONF_IN(F16, U, -1, 1, 129, 256)},
     .p = {MXFP4, .flag = true}, QMM_TOL(256, CONF_ULP16)},
};
const size_t conf_cases_quant_count = sizeof conf_cases_quant / sizeof conf_cases_quant[0];
