/* tests/backend/cases_elementwise.c — conformance cases for the binary arithmetic ops, the
 * comparisons and where (all with broadcasting and type promotion), and the unary ops.
 *
 * Tolerances. add, subtract, multiply, maximum and minimum are one IEEE operation in the
 * promoted dtype (float32 for the half types, rounded once after): correctly rounded, so bit for
 * bit everywhere; so are comparisons, where, integer arithmetic, negative and abs. Division and
 * the transcendental functions are a few float32 ulps apart between libm and a GPU's math
 * library (CUDA documents 2 ulps for expf/logf/tanhf/rsqrtf, glibc's are within 1), written as a
 * relative bound (one ulp is at most 2^-23 of a float32 value). A half-precision result is
 * float32 rounded once, and float32 results a few ulps apart can round to neighbouring half
 * values: one float16/bfloat16 ulp (plus, for float16, one subnormal step of 2^-24). */
#include "harness.h"

static tsr_status b_binary(tsr_array **o, tsr_array *const *in, const conf_params *p,
                           tsr_stream *s) {
  return p->binary(&o[0], in[0], in[1], s);
}

static tsr_status b_unary(tsr_array **o, tsr_array *const *in, const conf_params *p,
                          tsr_stream *s) {
  return p->unary(&o[0], in[0], s);
}

static tsr_status b_where(tsr_array **o, tsr_array *const *in, const conf_params *p,
                          tsr_stream *s) {
  (void)p;
  return tsr_where(&o[0], in[0], in[1], in[2], s);
}

#define F32 TSR_FLOAT32
#define F16 TSR_FLOAT16
#define BF16 TSR_BFLOAT16
#define U CONF_UNIFORM
#define SP CONF_SPECIAL
#define BIN(fn) .p = {.binary = (fn)}
#define UN(fn) .p = {.unary = (fn)}
/* Two to eight float32 ulps (see the top of the file); a half result: one ulp of its dtype. */
#define ULPS(n) .tol = {0, CONF_ULP32 * (n)}
#define HALF16 .tol = {0x1p-24, CONF_ULP16}
#define HALFBF .tol = {0, CONF_ULPBF16}

const conf_case conf_cases_elementwise[] = {
    /* ---- arithmetic: correctly rounded or exact ---- */
    {CONF_CASE("add_f32_broadcast", b_binary, 2, 1),
     .in = {CONF_IN(F32, U, -1, 1, 7, 33), CONF_IN(F32, U, -1, 1, 33)}, BIN(tsr_add)},
    {CONF_CASE("multiply_f32_scalar_operand", b_binary, 2, 1),
     .in = {CONF_IN_SCALAR(F32, U, -2, 2), CONF_IN(F32, U, -1, 1, 3, 7)}, BIN(tsr_multiply)},
    {CONF_CASE("add_int32_wraps", b_binary, 2, 1),
     .in = {CONF_IN(TSR_INT32, U, -0x1p31, 0x1p31, 7, 33),
            CONF_IN(TSR_INT32, U, -0x1p31, 0x1p31, 7, 1)},
     BIN(tsr_add)},
    {CONF_CASE("subtract_bf16_broadcast", b_binary, 2, 1),
     .in = {CONF_IN(BF16, U, -1, 1, 3, 1, 7), CONF_IN(BF16, U, -1, 1, 5, 1)}, BIN(tsr_subtract)},
    {CONF_CASE("multiply_f16_overflows", b_binary, 2, 1),
     .in = {CONF_IN(F16, U, -300, 300, 5, 33), CONF_IN(F16, U, -300, 300, 5, 33)},
     BIN(tsr_multiply)},
    {CONF_CASE("multiply_uint32_wraps", b_binary, 2, 1),
     .in = {CONF_IN(TSR_UINT32, CONF_BITS, 0, 0, 7, 33), CONF_IN(TSR_UINT32, CONF_BITS, 0, 0, 33)},
     BIN(tsr_multiply)},
    {CONF_CASE("add_int8_uint8_promotes", b_binary, 2, 1),
     .in = {CONF_IN(TSR_INT8, U, -128, 128, 7, 33), CONF_IN(TSR_UINT8, U, 0, 256, 7, 33)},
     BIN(tsr_add)},
    {CONF_CASE("add_f16_bf16_promotes", b_binary, 2, 1),
     .in = {CONF_IN(F16, U, -100, 100, 7, 33), CONF_IN(BF16, U, -100, 100, 33)}, BIN(tsr_add)},
    {CONF_CASE("add_bool_or", b_binary, 2, 1),
     .in = {CONF_IN(TSR_BOOL, U, 0, 2, 7, 33), CONF_IN(TSR_BOOL, U, 0, 2, 33)}, BIN(tsr_add)},
    {CONF_CASE("multiply_bool_and", b_binary, 2, 1),
     .in = {CONF_IN(TSR_BOOL, U, 0, 2, 7, 33), CONF_IN(TSR_BOOL, U, 0, 2, 7, 1)},
     BIN(tsr_multiply)},
    {CONF_CASE("divide_f32", b_binary, 2, 1),
     .in = {CONF_IN(F32, U, -4, 4, 7, 33), CONF_IN(F32, U, -4, 4, 7, 33)}, BIN(tsr_divide),
     ULPS(2)},
    {CONF_CASE("divide_f32_special", b_binary, 2, 1),
     .in = {CONF_IN(F32, SP, -3, 4, 7, 33), CONF_IN(F32, SP, -3, 4, 33)}, BIN(tsr_divide), ULPS(2)},
    {CONF_CASE("divide_int32_gives_f32", b_binary, 2, 1),
     .in = {CONF_IN(TSR_INT32, U, -50, 50, 7, 33), CONF_IN(TSR_INT32, U, -5, 5, 33)},
     BIN(tsr_divide), ULPS(2)},
    {CONF_CASE("maximum_f32_special", b_binary, 2, 1),
     .in = {CONF_IN(F32, SP, -3, 4, 7, 33), CONF_IN(F32, SP, -3, 4, 33)}, BIN(tsr_maximum)},
    {CONF_CASE("minimum_f16_special", b_binary, 2, 1),
     .in = {CONF_IN(F16, SP, -3, 4, 3, 7, 33), CONF_IN(F16, SP, -3, 4, 7, 1)}, BIN(tsr_minimum)},
    {CONF_CASE("maximum_int8", b_binary, 2, 1),
     .in = {CONF_IN(TSR_INT8, U, -128, 128, 33, 7), CONF_IN(TSR_INT8, U, -128, 128, 7)},
     BIN(tsr_maximum)},
    {CONF_CASE("minimum_uint8", b_binary, 2, 1),
     .in = {CONF_IN(TSR_UINT8, U, 0, 256, 33, 7), CONF_IN(TSR_UINT8, U, 0, 256, 33, 1)},
     BIN(tsr_minimum)},
    /* powf: CUDA documents 4 ulps, glibc 1 */
    {CONF_CASE("power_f32", b_binary, 2, 1),
     .in = {CONF_IN(F32, U, 0.5, 4, 7, 33), CONF_IN(F32, U, -3, 3, 7, 33)}, BIN(tsr_power),
     ULPS(8)},
    {CONF_CASE("power_int32", b_binary, 2, 1),
     .in = {CONF_IN(TSR_INT32, U, -5, 5, 7, 33), CONF_IN(TSR_INT32, U, -2, 8, 33)}, BIN(tsr_power)},

    /* ---- comparisons and where: exact ---- */
    {CONF_CASE("equal_f32_special", b_binary, 2, 1),
     .in = {CONF_IN(F32, SP, -2, 3, 7, 33), CONF_IN(F32, SP, -2, 3, 33)}, BIN(tsr_equal)},
    {CONF_CASE("not_equal_f32_special", b_binary, 2, 1),
     .in = {CONF_IN(F32, SP, -2, 3, 7, 33), CONF_IN(F32, SP, -2, 3, 7, 1)}, BIN(tsr_not_equal)},
    {CONF_CASE("less_bf16_special", b_binary, 2, 1),
     .in = {CONF_IN(BF16, SP, -2, 3, 3, 7, 5), CONF_IN(BF16, SP, -2, 3, 7, 5)}, BIN(tsr_less)},
    {CONF_CASE("less_equal_int32_f16_promotes", b_binary, 2, 1),
     .in = {CONF_IN(TSR_INT32, U, -4, 4, 7, 33), CONF_IN(F16, SP, -4, 4, 33)}, BIN(tsr_less_equal)},
    {CONF_CASE("greater_f16_special", b_binary, 2, 1),
     .in = {CONF_IN(F16, SP, -2, 3, 65), CONF_IN(F16, SP, -2, 3, 3, 65)}, BIN(tsr_greater)},
    {CONF_CASE("greater_equal_uint8_int8", b_binary, 2, 1),
     .in = {CONF_IN(TSR_UINT8, U, 0, 256, 7, 33), CONF_IN(TSR_INT8, U, -128, 128, 7, 33)},
     BIN(tsr_greater_equal)},
    {CONF_CASE("where_bool_cond_f32", b_where, 3, 1),
     .in = {CONF_IN(TSR_BOOL, U, 0, 2, 7, 1), CONF_IN(F32, U, -1, 1, 7, 33),
            CONF_IN(F32, U, -1, 1, 33)}},
    {CONF_CASE("where_f32_special_cond_int32", b_where, 3, 1),
     .in = {CONF_IN(F32, SP, -1, 2, 7, 33), CONF_IN(TSR_INT32, U, -9, 9, 33),
            CONF_IN(TSR_INT32, U, -9, 9, 7, 1)}},

    /* ---- unary ---- */
    {CONF_CASE("negative_f32_special", b_unary, 1, 1), .in = {CONF_IN(F32, SP, -5, 5, 7, 33)},
     UN(tsr_negative)},
    {CONF_CASE("negative_uint8_wraps", b_unary, 1, 1), .in = {CONF_IN(TSR_UINT8, U, 0, 256, 7, 33)},
     UN(tsr_negative)},
    {CONF_CASE("abs_int8_min_stays", b_unary, 1, 1), .in = {CONF_IN(TSR_INT8, U, -128, 128, 33, 7)},
     UN(tsr_abs)},
    {CONF_CASE("abs_bf16_special", b_unary, 1, 1), .in = {CONF_IN(BF16, SP, -5, 5, 3, 65)},
     UN(tsr_abs)},
    {CONF_CASE("exp_f32", b_unary, 1, 1), .in = {CONF_IN(F32, U, -10, 10, 7, 33)}, UN(tsr_exp),
     ULPS(4)},
    {CONF_CASE("exp_f32_special", b_unary, 1, 1), .in = {CONF_IN(F32, SP, -5, 5, 33)}, UN(tsr_exp),
     ULPS(4)},
    {CONF_CASE("exp_f16", b_unary, 1, 1), .in = {CONF_IN(F16, U, -10, 10, 7, 33)}, UN(tsr_exp),
     HALF16},
    {CONF_CASE("log_f32", b_unary, 1, 1), .in = {CONF_IN(F32, U, 0.001, 100, 7, 33)}, UN(tsr_log),
     ULPS(4)},
    {CONF_CASE("log_bf16_special", b_unary, 1, 1), .in = {CONF_IN(BF16, SP, -3, 40, 7, 33)},
     UN(tsr_log), HALFBF},
    /* sqrt is correctly rounded in IEEE arithmetic; one ulp for a GPU's default sqrtf */
    {CONF_CASE("sqrt_f32", b_unary, 1, 1), .in = {CONF_IN(F32, U, 0, 1000, 7, 33)}, UN(tsr_sqrt),
     ULPS(1)},
    {CONF_CASE("rsqrt_f32", b_unary, 1, 1), .in = {CONF_IN(F32, U, 0.01, 100, 7, 33)},
     UN(tsr_rsqrt), ULPS(4)},
    /* sigmoid = 1 / (1 + exp(-x)): exp's ulps plus two roundings; silu one more */
    {CONF_CASE("sigmoid_f32", b_unary, 1, 1), .in = {CONF_IN(F32, U, -20, 20, 7, 33)},
     UN(tsr_sigmoid), ULPS(6)},
    {CONF_CASE("sigmoid_int32_gives_f32", b_unary, 1, 1),
     .in = {CONF_IN(TSR_INT32, U, -20, 20, 33, 7)}, UN(tsr_sigmoid), ULPS(6)},
    {CONF_CASE("silu_f32", b_unary, 1, 1), .in = {CONF_IN(F32, U, -8, 8, 7, 33)}, UN(tsr_silu),
     ULPS(8)},
    {CONF_CASE("silu_f16", b_unary, 1, 1), .in = {CONF_IN(F16, U, -8, 8, 3, 7, 33)}, UN(tsr_silu),
     HALF16},
    {CONF_CASE("tanh_f32", b_unary, 1, 1), .in = {CONF_IN(F32, U, -5, 5, 7, 33)}, UN(tsr_tanh),
     ULPS(4)},
    {CONF_CASE("tanh_bf16", b_unary, 1, 1), .in = {CONF_IN(BF16, U, -5, 5, 65, 3)}, UN(tsr_tanh),
     HALFBF},
};
const size_t conf_cases_elementwise_count =
    sizeof conf_cases_elementwise / sizeof conf_cases_elementwise[0];
