/* tests/backend/cases_nn.c — conformance cases for matmul (float32, float16, bfloat16, batch
 * broadcasting, 1-D operands), softmax, rms_norm, rope, sdpa (prefill and decode shapes, grouped
 * heads), their dynamic forms (position read when the op runs) and the random ops.
 *
 * Tolerances, with u = 2^-24 and inputs bounded by 1 unless a case says otherwise; each bound is
 * what one backend may be off from the exact result, doubled for two backends, plus one ulp of a
 * half-precision output (its one rounding may land on either neighbour):
 * - matmul: a K-term float32 dot product is within K u sum|a_i b_i| <= K^2 M u (M bounds
 *   |a_i b_i|).
 * - softmax over K: exp within 4 ulps, the sum of K positive terms within K u relative, one
 *   division: relative (K + 6) u.
 * - rms_norm over K: the mean of K squares within K u relative, rsqrt 4 ulps, two products:
 *   relative (K + 8) u.
 * - rope: the angle p * base^(-2i/dims) <= theta in float32 is within 4 ulps of theta (4 theta
 *   2^-23), cos and sin add 4 u each, x0 cos - x1 sin sums two: 2 (4 theta 2^-23 + 4 u).
 * - sdpa: a score is a D-term dot product times scale: within scale D^2 u; an error e in the
 *   scores moves the softmax weights by 2 e relative, their sum and the K-term weighted sum of v
 *   add (2 Tk + 6) u: 2 scale D^2 u + (2 Tk + 6) u.
 * - random: the draws are counter-based (element i depends only on the seed and i), the same
 *   numbers on every backend: exact. */
#include <math.h>

#include "harness.h"

static tsr_status b_matmul(tsr_array **o, tsr_array *const *in, const conf_params *p,
                           tsr_stream *s) {
  (void)p;
  return tsr_matmul(&o[0], in[0], in[1], s);
}

static tsr_status b_softmax(tsr_array **o, tsr_array *const *in, const conf_params *p,
                            tsr_stream *s) {
  return tsr_softmax(&o[0], in[0], p->axis, s);
}

/* The weight is the second input, NULL for a case with one. */
static tsr_status b_rms_norm(tsr_array **o, tsr_array *const *in, const conf_params *p,
                             tsr_stream *s) {
  return tsr_rms_norm(&o[0], in[0], in[1], (float)p->x, s);
}

/* k = dims, flag = traditional, x = base, y = offset. */
static tsr_status b_rope(tsr_array **o, tsr_array *const *in, const conf_params *p, tsr_stream *s) {
  return tsr_rope(&o[0], in[0], p->k, p->flag, (float)p->x, (int64_t)p->y, s);
}

/* rope_dynamic: k = dims, flag = traditional, x = base, the offset conf_position_scalar's (y).
   A second output, for an offset >= 0, is where the result differs from tsr_rope's on the same
   backend (all false: the same bits). */
static tsr_status b_rope_dynamic(tsr_array **o, tsr_array *const *in, const conf_params *p,
                                 tsr_stream *s) {
  tsr_array *offset = NULL, *fixed = NULL;
  tsr_status st = conf_position_scalar(&offset, p, s);
  if (st == TSR_OK) st = tsr_rope_dynamic(&o[0], in[0], p->k, p->flag, (float)p->x, offset, s);
  if (st == TSR_OK && p->y >= 0)
    st = tsr_rope(&fixed, in[0], p->k, p->flag, (float)p->x, (int64_t)p->y, s);
  if (st == TSR_OK && fixed) st = tsr_not_equal(&o[1], o[0], fixed, s);
  tsr_array_release(fixed);
  tsr_array_release(offset);
  return st;
}

/* x = scale, flag = causal. */
static tsr_status b_sdpa(tsr_array **o, tsr_array *const *in, const conf_params *p, tsr_stream *s) {
  return tsr_sdpa(&o[0], in[0], in[1], in[2], (float)p->x, p->flag, s);
}

/* k and v with p->k rows of NaN appended along Tk (the unused tail of a cache; 0: as given). */
static tsr_status with_nan_tail(tsr_array **out, tsr_array *a, int64_t rows, tsr_stream *s) {
  if (rows == 0) return tsr_contiguous(out, a, s);
  int64_t shape[4] = {tsr_array_dim(a, 0), tsr_array_dim(a, 1), rows, tsr_array_dim(a, 3)};
  tsr_array *tail = NULL;
  tsr_status st = tsr_full(&tail, shape, 4, NAN, tsr_array_dtype(a), s);
  tsr_array *parts[2] = {a, tail};
  if (st == TSR_OK) st = tsr_concatenate(out, parts, 2, 2, s);
  tsr_array_release(tail);
  return st;
}

/* sdpa_dynamic: x = scale, the length conf_position_scalar's (y), k = NaN rows appended to k and
   v past the given ones (never read when the length is at most the given Tk). A second output is
   where the result differs from causal tsr_sdpa over k and v sliced to the clamped length on the
   same backend (all false: the same bits). */
static tsr_status b_sdpa_dynamic(tsr_array **o, tsr_array *const *in, const conf_params *p,
                                 tsr_stream *s) {
  int64_t tq = tsr_array_dim(in[0], 2), tk = tsr_array_dim(in[1], 2) + p->k;
  int64_t keys = p->y < (double)tq ? tq : p->y > (double)tk ? tk : (int64_t)p->y;
  int64_t start[3] = {0, 0, 0}, stop[3] = {INT64_MAX, INT64_MAX, keys};
  tsr_array *length = NULL, *k = NULL, *v = NULL, *k_head = NULL, *v_head = NULL, *fixed = NULL;
  tsr_status st = conf_position_scalar(&length, p, s);
  if (st == TSR_OK) st = with_nan_tail(&k, in[1], p->k, s);
  if (st == TSR_OK) st = with_nan_tail(&v, in[2], p->k, s);
  if (st == TSR_OK) st = tsr_sdpa_dynamic(&o[0], in[0], k, v, (float)p->x, length, s);
  if (st == TSR_OK) st = tsr_slice(&k_head, k, start, stop, NULL, 3, s);
  if (st == TSR_OK) st = tsr_slice(&v_head, v, start, stop, NULL, 3, s);
  if (st == TSR_OK) st = tsr_sdpa(&fixed, in[0], k_head, v_head, (float)p->x, true, s);
  if (st == TSR_OK) st = tsr_not_equal(&o[1], o[0], fixed, s);
  tsr_array *made[] = {length, k, v, k_head, v_head, fixed};
  for (int i = 0; i < 6; i++)
    tsr_array_release(made[i]);
  return st;
}

/* [low, high) = [x, y). */
static tsr_status b_uniform(tsr_array **o, tsr_array *const *in, const conf_params *p,
                            tsr_stream *s) {
  (void)in;
  return tsr_random_uniform(&o[0], p->shape, p->ndim, p->x, p->y, p->dtype, p->seed, s);
}

/* mean x, std y. */
static tsr_status b_normal(tsr_array **o, tsr_array *const *in, const conf_params *p,
                           tsr_stream *s) {
  (void)in;
  return tsr_random_normal(&o[0], p->shape, p->ndim, p->x, p->y, p->dtype, p->seed, s);
}

static tsr_status b_categorical(tsr_array **o, tsr_array *const *in, const conf_params *p,
                                tsr_stream *s) {
  return tsr_random_categorical(&o[0], in[0], p->axis, p->seed, s);
}

#define F32 TSR_FLOAT32
#define F16 TSR_FLOAT16
#define BF16 TSR_BFLOAT16
#define U CONF_UNIFORM
/* The bounds at the top of the file; `ulp` is the output's (CONF_ULP32 for float32). The 2^-24
   absolute term is one float16 subnormal step. */
#define DOT_TOL(K, M, ulp) .tol = {2 * CONF_U32 * (K) * (K) * (M) + 0x1p-24, (ulp)}
#define SOFTMAX_TOL(K, ulp) .tol = {0x1p-24, 2.0 * ((K) + 6) * CONF_U32 + (ulp)}
#define RMS_TOL(K, ulp) .tol = {0x1p-24, 2.0 * ((K) + 8) * CONF_U32 + (ulp)}
#define ROPE_TOL(THETA, ulp) .tol = {2 * 2 * (4 * CONF_ULP32 * (THETA) + 4 * CONF_U32), (ulp)}
#define SDPA_TOL(D, TK, SCALE, ulp) \
  .tol = {2.0 * (2.0 * (SCALE) * (D) * (D) + 2.0 * (TK) + 6) * CONF_U32 + 0x1p-24, (ulp)}

const conf_case conf_cases_nn[] = {
    /* ---- matmul ---- */
    {CONF_CASE("matmul_f32", b_matmul, 2, 1),
     .in = {CONF_IN(F32, U, -1, 1, 7, 33), CONF_IN(F32, U, -1, 1, 33, 5)},
     DOT_TOL(33, 1, CONF_ULP32)},
    {CONF_CASE("matmul_f32_batch_broadcast", b_matmul, 2, 1),
     .in = {CONF_IN(F32, U, -1, 1, 3, 7, 65), CONF_IN(F32, U, -1, 1, 65, 9)},
     DOT_TOL(65, 1, CONF_ULP32)},
    {CONF_CASE("matmul_f32_gemv_k129", b_matmul, 2, 1),
     .in = {CONF_IN(F32, U, -1, 1, 1, 129), CONF_IN(F32, U, -1, 1, 129, 65)},
     DOT_TOL(129, 1, CONF_ULP32)},
    {CONF_CASE("matmul_f16", b_matmul, 2, 1),
     .in = {CONF_IN(F16, U, -1, 1, 5, 65), CONF_IN(F16, U, -1, 1, 65, 33)},
     DOT_TOL(65, 1, CONF_ULP16)},
    {CONF_CASE("matmul_bf16_batch_broadcast", b_matmul, 2, 1),
     .in = {CONF_IN(BF16, U, -1, 1, 2, 1, 7, 33), CONF_IN(BF16, U, -1, 1, 3, 33, 5)},
     DOT_TOL(33, 1, CONF_ULPBF16)},
    {CONF_CASE("matmul_vector_left", b_matmul, 2, 1),
     .in = {CONF_IN(F32, U, -1, 1, 33), CONF_IN(F32, U, -1, 1, 33, 7)}, DOT_TOL(33, 1, CONF_ULP32)},
    {CONF_CASE("matmul_vector_right_f16", b_matmul, 2, 1),
     .in = {CONF_IN(F16, U, -1, 1, 7, 33), CONF_IN(F16, U, -1, 1, 33)}, DOT_TOL(33, 1, CONF_ULP16)},
    /* integers in [-3, 3): |a b| <= 3 */
    {CONF_CASE("matmul_int32_f32_promotes", b_matmul, 2, 1),
     .in = {CONF_IN(TSR_INT32, U, -3, 3, 7, 33), CONF_IN(F32, U, -1, 1, 33, 7)},
     DOT_TOL(33, 3, CONF_ULP32)},
    /* big enough for the blocked and threaded paths */
    {CONF_CASE("matmul_f32_large", b_matmul, 2, 1),
     .in = {CONF_IN(F32, U, -1, 1, 65, 257), CONF_IN(F32, U, -1, 1, 257, 129)},
     DOT_TOL(257, 1, CONF_ULP32)},

    /* ---- softmax, rms_norm, rope ---- */
    {CONF_CASE("softmax_f32_last", b_softmax, 1, 1), .in = {CONF_IN(F32, U, -10, 10, 7, 33)},
     .p = {.axis = -1}, SOFTMAX_TOL(33, 0)},
    {CONF_CASE("softmax_f32_axis0", b_softmax, 1, 1), .in = {CONF_IN(F32, U, -30, 30, 65, 7)},
     .p = {.axis = 0}, SOFTMAX_TOL(65, 0)},
    {CONF_CASE("softmax_f16", b_softmax, 1, 1), .in = {CONF_IN(F16, U, -8, 8, 3, 5, 33)},
     .p = {.axis = -1}, SOFTMAX_TOL(33, CONF_ULP16)},
    {CONF_CASE("softmax_bf16_special", b_softmax, 1, 1),
     .in = {CONF_IN(BF16, CONF_SPECIAL, -3, 4, 7, 33)}, .p = {.axis = 1},
     SOFTMAX_TOL(33, CONF_ULPBF16)},
    {CONF_CASE("rms_norm_f32", b_rms_norm, 2, 1),
     .in = {CONF_IN(F32, U, -1, 1, 7, 65), CONF_IN(F32, U, -1, 1, 65)}, .p = {.x = 1e-5},
     RMS_TOL(65, 0)},
    {CONF_CASE("rms_norm_f32_weight_2d", b_rms_norm, 2, 1),
     .in = {CONF_IN(F32, U, -1, 1, 3, 7, 33), CONF_IN(F32, U, -1, 1, 7, 33)}, .p = {.x = 1e-6},
     RMS_TOL(33, 0)},
    {CONF_CASE("rms_norm_f16", b_rms_norm, 2, 1),
     .in = {CONF_IN(F16, U, -1, 1, 3, 5, 33), CONF_IN(F16, U, -1, 1, 33)}, .p = {.x = 1e-6},
     RMS_TOL(33, CONF_ULP16)},
    {CONF_CASE("rms_norm_bf16_no_weight", b_rms_norm, 1, 1),
     .in = {CONF_IN(BF16, U, -1, 1, 7, 129)}, .p = {.x = 1e-5}, RMS_TOL(129, CONF_ULPBF16)},
    /* A block per line (more than 1024 elements): the CUDA kernel claims the CPU's bits
       (rms_norm.cuh), so these are exact: a decode step's norm (float32 x, bfloat16 weight),
       long lines, and more lines than blocks (the grid-stride loop). */
    {CONF_CASE("rms_norm_f32_bf16_weight_exact", b_rms_norm, 2, 1),
     .in = {CONF_IN(F32, U, -3, 3, 3, 4096), CONF_IN(BF16, U, -2, 2, 4096)}, .p = {.x = 1e-5}},
    {CONF_CASE("rms_norm_bf16_8192_exact", b_rms_norm, 1, 1),
     .in = {CONF_IN(BF16, U, -1, 1, 2, 8192)}, .p = {.x = 1e-6}},
    {CONF_CASE("rms_norm_f32_8193_exact", b_rms_norm, 2, 1),
     .in = {CONF_IN(F32, U, -1, 1, 2, 8193), CONF_IN(F32, U, -1, 1, 8193)}, .p = {.x = 1e-6}},
    {CONF_CASE("rms_norm_f16_grid_stride_exact", b_rms_norm, 2, 1),
     .in = {CONF_IN(F16, U, -1, 1, 4300, 1100), CONF_IN(F16, U, -1, 1, 1100)}, .p = {.x = 1e-6}},
    /* positions 5..11: theta < 12 */
    {CONF_CASE("rope_f32", b_rope, 1, 1), .in = {CONF_IN(F32, U, -1, 1, 1, 3, 7, 64)},
     .p = {.k = 64, .x = 10000, .y = 5}, ROPE_TOL(12, 0)},
    {CONF_CASE("rope_f32_traditional_partial", b_rope, 1, 1),
     .in = {CONF_IN(F32, U, -1, 1, 2, 5, 64)}, .p = {.k = 32, .flag = true, .x = 10000, .y = 0},
     ROPE_TOL(5, 0)},
    {CONF_CASE("rope_f16", b_rope, 1, 1), .in = {CONF_IN(F16, U, -1, 1, 1, 2, 7, 16)},
     .p = {.k = 16, .x = 500000, .y = 100}, ROPE_TOL(107, CONF_ULP16)},
    {CONF_CASE("rope_bf16_decode", b_rope, 1, 1), .in = {CONF_IN(BF16, U, -1, 1, 1, 4, 1, 128)},
     .p = {.k = 128, .x = 10000, .y = 2047}, ROPE_TOL(2048, CONF_ULPBF16)},

    /* ---- sdpa: q [B, Hq, Tq, D], k and v [B, Hkv, Tk, D] ---- */
    {CONF_CASE("sdpa_prefill_causal_f32", b_sdpa, 3, 1),
     .in = {CONF_IN(F32, U, -1, 1, 1, 4, 7, 16), CONF_IN(F32, U, -1, 1, 1, 2, 7, 16),
            CONF_IN(F32, U, -1, 1, 1, 2, 7, 16)},
     .p = {.x = 0.25, .flag = true}, SDPA_TOL(16, 7, 0.25, 0)},
    {CONF_CASE("sdpa_decode_f32", b_sdpa, 3, 1),
     .in = {CONF_IN(F32, U, -1, 1, 1, 4, 1, 64), CONF_IN(F32, U, -1, 1, 1, 2, 33, 64),
            CONF_IN(F32, U, -1, 1, 1, 2, 33, 64)},
     .p = {.x = 0.125}, SDPA_TOL(64, 33, 0.125, 0)},
    {CONF_CASE("sdpa_decode_causal_group4_f32", b_sdpa, 3, 1),
     .in = {CONF_IN(F32, U, -1, 1, 2, 8, 1, 64), CONF_IN(F32, U, -1, 1, 2, 2, 65, 64),
            CONF_IN(F32, U, -1, 1, 2, 2, 65, 64)},
     .p = {.x = 0.125, .flag = true}, SDPA_TOL(64, 65, 0.125, 0)},
    {CONF_CASE("sdpa_prefill_causal_more_keys_f16", b_sdpa, 3, 1),
     .in = {CONF_IN(F16, U, -1, 1, 1, 2, 3, 32), CONF_IN(F16, U, -1, 1, 1, 1, 9, 32),
            CONF_IN(F16, U, -1, 1, 1, 1, 9, 32)},
     .p = {.x = 0.17677669529663687, .flag = true},
     SDPA_TOL(32, 9, 0.17677669529663687, CONF_ULP16)},
    {CONF_CASE("sdpa_prefill_causal_large_f32", b_sdpa, 3, 1),
     .in = {CONF_IN(F32, U, -1, 1, 1, 8, 65, 64), CONF_IN(F32, U, -1, 1, 1, 2, 129, 64),
            CONF_IN(F32, U, -1, 1, 1, 2, 129, 64)},
     .p = {.x = 0.125, .flag = true}, SDPA_TOL(64, 129, 0.125, 0)},
    {CONF_CASE("sdpa_decode_bf16", b_sdpa, 3, 1),
     .in = {CONF_IN(BF16, U, -1, 1, 1, 4, 1, 128), CONF_IN(BF16, U, -1, 1, 1, 1, 33, 128),
            CONF_IN(BF16, U, -1, 1, 1, 1, 33, 128)},
     .p = {.x = 0.08838834764831845}, SDPA_TOL(128, 33, 0.08838834764831845, CONF_ULPBF16)},

    /* few rows over more than one slice of 256 keys (the GPU splits the keys over blocks) */
    {CONF_CASE("sdpa_decode_slices_causal_group4_f32", b_sdpa, 3, 1),
     .in = {CONF_IN(F32, U, -1, 1, 1, 8, 1, 128), CONF_IN(F32, U, -1, 1, 1, 2, 700, 128),
            CONF_IN(F32, U, -1, 1, 1, 2, 700, 128)},
     .p = {.x = 0.08838834764831845, .flag = true}, SDPA_TOL(128, 700, 0.08838834764831845, 0)},
    /* D > 256: the weighted sum's second pass over the head, in slices and in one block */
    {CONF_CASE("sdpa_decode_slices_d288_f32", b_sdpa, 3, 1),
     .in = {CONF_IN(F32, U, -1, 1, 1, 2, 1, 288), CONF_IN(F32, U, -1, 1, 1, 1, 300, 288),
            CONF_IN(F32, U, -1, 1, 1, 1, 300, 288)},
     .p = {.x = 0.05892556509887896, .flag = true}, SDPA_TOL(288, 300, 0.05892556509887896, 0)},
    {CONF_CASE("sdpa_prefill_d288_causal_f32", b_sdpa, 3, 1),
     .in = {CONF_IN(F32, U, -1, 1, 1, 4, 65, 288), CONF_IN(F32, U, -1, 1, 1, 2, 80, 288),
            CONF_IN(F32, U, -1, 1, 1, 2, 80, 288)},
     .p = {.x = 0.05892556509887896, .flag = true}, SDPA_TOL(288, 80, 0.05892556509887896, 0)},
    {CONF_CASE("sdpa_few_rows_slices_causal_f16", b_sdpa, 3, 1),
     .in = {CONF_IN(F16, U, -1, 1, 1, 2, 3, 32), CONF_IN(F16, U, -1, 1, 1, 1, 300, 32),
            CONF_IN(F16, U, -1, 1, 1, 1, 300, 32)},
     .p = {.x = 0.17677669529663687, .flag = true},
     SDPA_TOL(32, 300, 0.17677669529663687, CONF_ULP16)},

    /* ---- dynamic positions: the tolerances of rope and sdpa; the second output (bits equal to
       the static op's on the same backend) exact ---- */
    {CONF_CASE("rope_dynamic_f32_int32", b_rope_dynamic, 1, 2),
     .in = {CONF_IN(F32, U, -1, 1, 1, 3, 7, 64)},
     .p = {.k = 64, .x = 10000, .y = 5, .dtype = TSR_INT32, CONF_SHAPE(1)}, ROPE_TOL(12, 0)},
    {CONF_CASE("rope_dynamic_bf16_decode_int64_host", b_rope_dynamic, 1, 2),
     .in = {CONF_IN(BF16, U, -1, 1, 1, 4, 1, 128)},
     .p = {.k = 128, .x = 10000, .y = 2047, .z = 1, .dtype = TSR_INT64, CONF_SHAPE(1, 1)},
     ROPE_TOL(2048, CONF_ULPBF16)},
    /* positions -3..3: theta < 4 */
    {CONF_CASE("rope_dynamic_f16_traditional_negative", b_rope_dynamic, 1, 1),
     .in = {CONF_IN(F16, U, -1, 1, 2, 7, 32)},
     .p = {.k = 16, .flag = true, .x = 10000, .y = -3, .dtype = TSR_INT64, .ndim = 0},
     ROPE_TOL(4, CONF_ULP16)},
    {CONF_CASE("sdpa_dynamic_decode_group4_f32", b_sdpa_dynamic, 3, 2),
     .in = {CONF_IN(F32, U, -1, 1, 2, 8, 1, 64), CONF_IN(F32, U, -1, 1, 2, 2, 40, 64),
            CONF_IN(F32, U, -1, 1, 2, 2, 40, 64)},
     .p = {.x = 0.125, .y = 33, .k = 0, .dtype = TSR_INT32, CONF_SHAPE(1)},
     SDPA_TOL(64, 40, 0.125, 0)},
    {CONF_CASE("sdpa_dynamic_nan_tail_bf16_host_int64", b_sdpa_dynamic, 3, 2),
     .in = {CONF_IN(BF16, U, -1, 1, 1, 4, 1, 128), CONF_IN(BF16, U, -1, 1, 1, 1, 33, 128),
            CONF_IN(BF16, U, -1, 1, 1, 1, 33, 128)},
     .p =
         {.x = 0.08838834764831845, .y = 33, .z = 1, .k = 31, .dtype = TSR_INT64, CONF_SHAPE(1, 1)},
     SDPA_TOL(128, 33, 0.08838834764831845, CONF_ULPBF16)},
    /* length 600 of 800 keys (the last 100 NaN): the GPU's slices past 600 are empty, the bits
       those of sdpa over the first 600 */
    {CONF_CASE("sdpa_dynamic_decode_slices_bf16", b_sdpa_dynamic, 3, 2),
     .in = {CONF_IN(BF16, U, -1, 1, 1, 4, 1, 64), CONF_IN(BF16, U, -1, 1, 1, 1, 700, 64),
            CONF_IN(BF16, U, -1, 1, 1, 1, 700, 64)},
     .p = {.x = 0.125, .y = 600, .k = 100, .dtype = TSR_INT32, CONF_SHAPE(1)},
     SDPA_TOL(64, 700, 0.125, CONF_ULPBF16)},
    /* 3 causal query rows over a length of 530 of 800 keys: rows of 528, 529 and 530 keys,
       slices past them empty */
    {CONF_CASE("sdpa_dynamic_prefill_slices_f32", b_sdpa_dynamic, 3, 2),
     .in = {CONF_IN(F32, U, -1, 1, 1, 2, 3, 32), CONF_IN(F32, U, -1, 1, 1, 1, 700, 32),
            CONF_IN(F32, U, -1, 1, 1, 1, 700, 32)},
     .p = {.x = 0.17677669529663687, .y = 530, .k = 100, .dtype = TSR_INT64, CONF_SHAPE(1)},
     SDPA_TOL(32, 700, 0.17677669529663687, 0)},
    /* length 2 < Tq 5 is clamped to 5; length 100 > Tk to Tk */
    {CONF_CASE("sdpa_dynamic_prefill_clamped_low_f16", b_sdpa_dynamic, 3, 2),
     .in = {CONF_IN(F16, U, -1, 1, 1, 2, 5, 32), CONF_IN(F16, U, -1, 1, 1, 1, 9, 32),
            CONF_IN(F16, U, -1, 1, 1, 1, 9, 32)},
     .p = {.x = 0.17677669529663687, .y = 2, .dtype = TSR_INT32, .ndim = 0},
     SDPA_TOL(32, 9, 0.17677669529663687, CONF_ULP16)},
    {CONF_CASE("sdpa_dynamic_prefill_clamped_high_f32", b_sdpa_dynamic, 3, 2),
     .in = {CONF_IN(F32, U, -1, 1, 1, 4, 7, 16), CONF_IN(F32, U, -1, 1, 1, 2, 12, 16),
            CONF_IN(F32, U, -1, 1, 1, 2, 12, 16)},
     .p = {.x = 0.25, .y = 100, .dtype = TSR_INT64, CONF_SHAPE(1)}, SDPA_TOL(16, 12, 0.25, 0)},

    /* ---- random: exact ---- */
    {CONF_CASE("random_uniform_f32", b_uniform, 0, 1),
     .p = {CONF_SHAPE(7, 33), .x = -2, .y = 3, .dtype = F32, .seed = 42}},
    {CONF_CASE("random_uniform_bf16", b_uniform, 0, 1),
     .p = {CONF_SHAPE(65), .x = 0, .y = 1, .dtype = BF16, .seed = 7}},
    {CONF_CASE("random_normal_f32", b_normal, 0, 1),
     .p = {CONF_SHAPE(3, 33), .x = 1, .y = 2, .dtype = F32, .seed = 11}},
    {CONF_CASE("random_normal_f16", b_normal, 0, 1),
     .p = {CONF_SHAPE(7, 5), .x = 0, .y = 1, .dtype = F16, .seed = 3}},
    {CONF_CASE("random_categorical_f32", b_categorical, 1, 1),
     .in = {CONF_IN(F32, U, -3, 3, 7, 33)}, .p = {.axis = -1, .seed = 5}},
    {CONF_CASE("random_categorical_bf16_axis0", b_categorical, 1, 1),
     .in = {CONF_IN(BF16, U, -3, 3, 33, 5)}, .p = {.axis = 0, .seed = 9}},
};
const size_t conf_cases_nn_count = sizeof conf_cases_nn / sizeof conf_cases_nn[0];
