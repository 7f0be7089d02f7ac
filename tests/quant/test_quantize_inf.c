/* tests/quant/test_quantize_inf.c — affine quantize of groups wider than float32's range: +Inf
 * and -Inf together (each saturated to the largest finite value of its sign), or finite values
 * of both signs near +-max. MLX's float32 steps overflow there (an infinite scale, the whole group
 * dequantized to NaN); tessera's rule (docs/quant-rules.md) takes the same steps in double. The
 * expected values are worked out by hand below from quant-spec.md Part B §2.1; NaN never appears
 * in a dequantized group unless the element itself was NaN. The cases MLX defines are the golden
 * test's (tests/quant/test_quantize_golden.c). */
#include <float.h>
#include <math.h>

#include "check.h"

enum { GROUP = 32 };

typedef struct {
  uint32_t words[GROUP / 2]; /* up to 8 bits a code */
  float scale, bias;
  float deq[GROUP];
} quantized_group;

static uint32_t code_at(const quantized_group *q, int bits, int i) {
  int bit = i * bits;
  uint64_t pair =
      q->words[bit / 32] | ((bit % 32 + bits > 32) ? (uint64_t)q->words[bit / 32 + 1] << 32 : 0);
  return (uint32_t)(pair >> (bit % 32)) & ((1u << bits) - 1u);
}

static float from_half(tsr_dtype dtype, uint16_t h) {
  return dtype == TSR_FLOAT16 ? tsr_f16_to_f32(h) : tsr_bf16_to_f32(h);
}

/* Quantizes one [1, 32] group of `dtype` (values given as float32), reads the parts back and
   dequantizes to float32. */
static quantized_group run(const float *values, tsr_dtype dtype, int bits) {
  uint16_t halves[GROUP];
  for (int i = 0; i < GROUP; i++)
    halves[i] = dtype == TSR_FLOAT16 ? tsr_f32_to_f16(values[i]) : tsr_f32_to_bf16(values[i]);
  int64_t shape[2] = {1, GROUP};
  tsr_array *w = NULL, *wq = NULL, *scales = NULL, *biases = NULL, *deq = NULL;
  CHECK_OK(tsr_array_from_data(&w, dtype == TSR_FLOAT32 ? (const void *)values : halves, dtype,
                               shape, 2));
  CHECK_OK(tsr_quantize(&wq, &scales, &biases, w, GROUP, bits, TSR_QUANT_AFFINE, NULL));
  CHECK_OK(
      tsr_dequantize(&deq, wq, scales, biases, GROUP, bits, TSR_QUANT_AFFINE, TSR_FLOAT32, NULL));
  quantized_group q;
  memset(&q, 0, sizeof q);
  CHECK_OK(tsr_array_read(wq, q.words, (size_t)(GROUP * bits / 8)));
  if (dtype == TSR_FLOAT32) {
    CHECK_OK(tsr_array_read(scales, &q.scale, sizeof q.scale));
    CHECK_OK(tsr_array_read(biases, &q.bias, sizeof q.bias));
  } else {
    uint16_t s = 0, b = 0;
    CHECK_OK(tsr_array_read(scales, &s, sizeof s));
    CHECK_OK(tsr_array_read(biases, &b, sizeof b));
    q.scale = from_half(dtype, s);
    q.bias = from_half(dtype, b);
  }
  CHECK_OK(tsr_array_read(deq, q.deq, sizeof q.deq));
  tsr_array_release(w), tsr_array_release(wq), tsr_array_release(scales);
  tsr_array_release(biases), tsr_array_release(deq);
  return q;
}

static void check_no_nan(const quantized_group *q, const float *values, const char *what) {
  for (int i = 0; i < GROUP; i++)
    if (isnan(q->deq[i]) && !isnan(values[i]))
      CHECK_FAIL_("%s: element %d (%g) dequantizes to NaN (scale %g, bias %g)", what, i,
                  (double)values[i], (double)q->scale, (double)q->bias);
}

/* [+Inf, -Inf, 0, ...] of float32, 4 bits: saturated to [+M, -M, 0, ...] with M = FLT_MAX. In
   double: scale = -(2M / 15) (|max| >= |min|: negative), edge = M, q0 = rint(M / scale) =
   rint(-7.5) = -8, so scale = M / -8 (exact) and bias = M. Codes: +M -> 0, 0 -> 8, -M -> 16
   clamped to 15. Dequantized in float32: code 0 -> M, code 8 -> -M + M = 0 exactly, code 15 ->
   15 * (-M / 8) overflows to -Inf: each Inf comes back saturated, nothing is NaN. */
static void test_plus_and_minus_inf(void) {
  float values[GROUP] = {INFINITY, -INFINITY};
  quantized_group q = run(values, TSR_FLOAT32, 4);
  check_no_nan(&q, values, "float32 [+Inf, -Inf, 0...]");
  CHECK(q.scale == -FLT_MAX / 8.0f);
  CHECK(q.bias == FLT_MAX);
  CHECK_EQ_INT(code_at(&q, 4, 0), 0);
  CHECK_EQ_INT(code_at(&q, 4, 1), 15);
  for (int i = 2; i < GROUP; i++)
    CHECK_EQ_INT(code_at(&q, 4, i), 8);
  CHECK(q.deq[0] == FLT_MAX);
  CHECK(q.deq[1] == -INFINITY);
  for (int i = 2; i < GROUP; i++)
    CHECK(q.deq[i] == 0.0f);

  /* The same group with a NaN beside: NaN stays in its own element, gets 0's code (8). */
  values[5] = NAN;
  q = run(values, TSR_FLOAT32, 4);
  check_no_nan(&q, values, "float32 [+Inf, -Inf, NaN, 0...]");
  CHECK_EQ_INT(code_at(&q, 4, 5), 8);
  CHECK(q.deq[5] == 0.0f);
}

/* bfloat16's range also passes float32's: [+Inf, -Inf] of bfloat16, 8 bits. M = 0x7f7f's value;
   scale = -(2M / 255) in double, q0 = rint(-127.5) = -128, scale = M / -128 (exact), bias = M.
   Codes: +M -> 0, -M -> 256 clamped to 255, 0 -> 128. */
static void test_bfloat16_inf(void) {
  float values[GROUP] = {-INFINITY, INFINITY};
  quantized_group q = run(values, TSR_BFLOAT16, 8);
  check_no_nan(&q, values, "bfloat16 [-Inf, +Inf, 0...]");
  float m = tsr_bf16_to_f32(0x7f7f);
  CHECK(q.scale == -m / 128.0f);
  CHECK(q.bias == m);
  CHECK_EQ_INT(code_at(&q, 8, 0), 255);
  CHECK_EQ_INT(code_at(&q, 8, 1), 0);
  CHECK_EQ_INT(code_at(&q, 8, 2), 128);
  CHECK(q.deq[1] == m);
  CHECK(q.deq[2] == 0.0f);
}

/* Finite values of both signs near +-FLT_MAX, every bit width: no NaN; each element comes back
   within half a step of itself, or as the Inf of its sign where 15 * scale (the dequantize
   formula's s * q) passes float32; the element at the edge comes back exactly. */
static void test_finite_wide(void) {
  float values[GROUP];
  for (int i = 0; i < GROUP; i++)
    values[i] = (float)((-0.95 + 1.9 * i / (GROUP - 1)) * (double)FLT_MAX);
  static const int widths[6] = {2, 3, 4, 5, 6, 8};
  for (int b = 0; b < 6; b++) {
    quantized_group q = run(values, TSR_FLOAT32, widths[b]);
    char what[64];
    snprintf(what, sizeof what, "float32 +-0.95 max, %d bits", widths[b]);
    check_no_nan(&q, values, what);
    CHECK(isfinite(q.scale) && isfinite(q.bias));
    CHECK(q.bias == values[GROUP - 1] || q.bias == values[0]); /* the larger-magnitude edge */
    for (int i = 0; i < GROUP; i++) {
      double err = fabs((double)q.deq[i] - (double)values[i]);
      bool near = err <= fabs((double)q.scale) * 0.5000001;
      bool saturated = isinf(q.deq[i]) && signbit(q.deq[i]) == signbit(values[i]);
      if (!near && !saturated)
        CHECK_FAIL_("%s: element %d %g dequantized to %g (scale %g)", what, i, (double)values[i],
                    (double)q.deq[i], (double)q.scale);
      if (values[i] == q.bias) CHECK(q.deq[i] == values[i]);
    }
  }
}

/* float16 [+Inf, -Inf]: the range (2 * 65504) fits float32, so MLX's float32 steps apply as
   they are (scale 65504 / -8 = -8188, bias 65504); no NaN either. */
static void test_float16_inf(void) {
  float values[GROUP] = {INFINITY, -INFINITY};
  quantized_group q = run(values, TSR_FLOAT16, 4);
  check_no_nan(&q, values, "float16 [+Inf, -Inf, 0...]");
  CHECK(q.scale == -8188.0f);
  CHECK(q.bias == 65504.0f);
  CHECK(q.deq[0] == 65504.0f && q.deq[2] == 0.0f);
}

int main(void) {
  test_plus_and_minus_inf();
  test_bfloat16_inf();
  test_finite_wide();
  test_float16_inf();
  CHECK_OK(tsr_memory_clear_cache((tsr_device){TSR_CPU, 0}));
  CHECK_NO_LEAKS();
  tsr_shutdown();
  puts("test_quantize_inf: ok");
  return 0;
}
