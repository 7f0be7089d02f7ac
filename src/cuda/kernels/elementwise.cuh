/* cuda/kernels/elementwise.cuh — the elementwise ops on the GPU: the unary ops, astype, the
 * binary arithmetic ops and comparisons, and where, each output element computed from its input
 * elements exactly as the CPU kernels do (cpu/unary.c, cpu/convert.c, cpu/binary.c,
 * cpu/compare.c): operands are loaded, converted and stored through base/element.h, the CPU's
 * own element rules, and each op's arithmetic is the CPU's formula in the same precision. Not the
 * creation kernels (creation.cuh) and not the copy (copy.cuh).
 *
 * A specialization is one op on fixed dtypes, each dtype by name (bool, uint8, ..., float32):
 *   the op: TSR_EW_UNARY=<negative|abs|exp|log|sqrt|rsqrt|sigmoid|silu|tanh>,
 *           TSR_EW_BINARY=<add|subtract|multiply|divide|maximum|minimum|power|equal|not_equal|
 *                          less|less_equal|greater|greater_equal>, TSR_EW_ASTYPE or TSR_EW_WHERE;
 *   TSR_EW_IN0, TSR_EW_IN1, TSR_EW_IN2: the inputs' dtypes (as many as the op has; where's
 *           inputs are cond, a, b);
 *   TSR_EW_COMPUTE (binary ops only): the computation dtype, the promoted dtype of the inputs
 *           (float32 for divide when that is an integer or bool);
 *   TSR_EW_OUT: the output's dtype;
 *   TSR_EW_FLAT: 1 when the layout has at most one axis, so input k's element i is at
 *           offset[k] + i * strides[k][0] without any division (packed operands, broadcast
 *           scalars, and whatever cuda/elementwise.c merged into one axis); 0 for the n-d walk.
 * The output is packed (core allocates it): element i is at out + i.
 *
 * Arithmetic: nvcc and NVRTC fuse a multiply and an add into one FMA by default, which the CPU
 * does not; no formula here has a multiply feeding an add, and sqrt and divide use the IEEE
 * intrinsics (__fsqrt_rn, __fdiv_rn), correctly rounded as the CPU's are. The transcendental
 * functions run in float64 and round once, as on the CPU; CUDA's float64 exp/log/tanh/pow are
 * within 1-2 float64 ulps of glibc's, so a float32 result differs only when the exact value lies
 * within that of a float32 rounding midpoint (one float32 ulp, inside the harness's bounds). */
#include "cuda/kernels/common.cuh" /* first: NVRTC's libc stand-in */
/* base/element.h includes base/half.h; both are named here so the kernel manifest
   (scripts/update-kernel-manifest.sh) embeds both. */
#include "base/half.h"
#include "base/element.h"
#include "cuda/kernels/strided.cuh"

/* ---- the specialization ----------------------------------------------------------------- */

#define TSR_EW_DTYPE_bool TSRI_ELEMENT_BOOL
#define TSR_EW_DTYPE_uint8 TSRI_ELEMENT_UINT8
#define TSR_EW_DTYPE_uint32 TSRI_ELEMENT_UINT32
#define TSR_EW_DTYPE_int8 TSRI_ELEMENT_INT8
#define TSR_EW_DTYPE_int32 TSRI_ELEMENT_INT32
#define TSR_EW_DTYPE_int64 TSRI_ELEMENT_INT64
#define TSR_EW_DTYPE_float16 TSRI_ELEMENT_FLOAT16
#define TSR_EW_DTYPE_bfloat16 TSRI_ELEMENT_BFLOAT16
#define TSR_EW_DTYPE_float32 TSRI_ELEMENT_FLOAT32
/* A dtype's value from its name (usable in #if). */
#define TSR_EW_DTYPE(name) TSR_KERNEL_CAT(TSR_EW_DTYPE_, name)
#define TSR_EW_IS_FLOAT(dtype)                                            \
  ((dtype) == TSRI_ELEMENT_FLOAT16 || (dtype) == TSRI_ELEMENT_BFLOAT16 || \
   (dtype) == TSRI_ELEMENT_FLOAT32)

#if defined(TSR_EW_UNARY) || defined(TSR_EW_ASTYPE)
#define TSR_EW_NINPUTS 1
#elif defined(TSR_EW_BINARY)
#define TSR_EW_NINPUTS 2
#elif defined(TSR_EW_WHERE)
#define TSR_EW_NINPUTS 3
#else
#error "elementwise.cuh: define one of TSR_EW_UNARY, TSR_EW_BINARY, TSR_EW_ASTYPE, TSR_EW_WHERE"
#endif
#if !defined(TSR_EW_IN0) || !defined(TSR_EW_OUT) || !defined(TSR_EW_FLAT)
#error "elementwise.cuh: TSR_EW_IN0, TSR_EW_OUT and TSR_EW_FLAT are needed"
#endif

#define TSR_EW_IN0_DTYPE TSR_EW_DTYPE(TSR_EW_IN0)
#define TSR_EW_OUT_DTYPE TSR_EW_DTYPE(TSR_EW_OUT)
#if TSR_EW_NINPUTS >= 2
#define TSR_EW_IN1_DTYPE TSR_EW_DTYPE(TSR_EW_IN1)
#endif
#if TSR_EW_NINPUTS >= 3
#define TSR_EW_IN2_DTYPE TSR_EW_DTYPE(TSR_EW_IN2)
#endif

/* ---- the unary ops (cpu/unary.c) ---------------------------------------------------------- */

/* Negation and absolute value act on the sign bit, as the CPU's (x86: xor and and). */
__device__ inline float tsr_ew_f32_negative(float x) {
  return tsri_f32_from_bits(tsri_f32_bits(x) ^ 0x80000000u);
}
__device__ inline float tsr_ew_f32_abs(float x) {
  return tsri_f32_from_bits(tsri_f32_bits(x) & 0x7fffffffu);
}
__device__ inline float tsr_ew_f32_exp(float x) {
  return (float)exp((double)x);
}
__device__ inline float tsr_ew_f32_log(float x) {
  return (float)log((double)x);
}
__device__ inline float tsr_ew_f32_sqrt(float x) {
  return __fsqrt_rn(x);
}
__device__ inline float tsr_ew_f32_rsqrt(float x) {
  return (float)(1.0 / sqrt((double)x));
}
/* exp of -|x| only, so it never overflows: 1 / (1 + e^-x) for x >= 0, e^x / (1 + e^x) below. */
__device__ inline double tsr_ew_sigmoid_f64(double x) {
  if (x >= 0.0) return 1.0 / (1.0 + exp(-x));
  double e = exp(x); /* x < 0 (or NaN): e <= 1, no overflow */
  return e / (1.0 + e);
}
__device__ inline float tsr_ew_f32_sigmoid(float x) {
  return (float)tsr_ew_sigmoid_f64((double)x);
}
/* silu(-inf) is -0 (the limit), not the NaN of -inf * 0. */
__device__ inline float tsr_ew_f32_silu(float x) {
  if (isinf(x) && x < 0.0f) return -0.0f;
  return (float)((double)x * tsr_ew_sigmoid_f64((double)x));
}
__device__ inline float tsr_ew_f32_tanh(float x) {
  return (float)tanh((double)x);
}

/* Integer negative and abs in int64, two's complement: the most negative value stays itself. */
__device__ inline int64_t tsr_ew_i64_negative(int64_t x) {
  return (int64_t)(0u - (uint64_t)x);
}
__device__ inline int64_t tsr_ew_i64_abs(int64_t x) {
  return x < 0 ? (int64_t)(0u - (uint64_t)x) : x;
}

/* ---- the binary ops (cpu/binary.c, cpu/compare.c) ----------------------------------------- */

__device__ inline float tsr_ew_f32_add(float a, float b) {
  return __fadd_rn(a, b);
}
__device__ inline float tsr_ew_f32_subtract(float a, float b) {
  return __fsub_rn(a, b);
}
__device__ inline float tsr_ew_f32_multiply(float a, float b) {
  return __fmul_rn(a, b);
}
__device__ inline float tsr_ew_f32_divide(float a, float b) {
  return __fdiv_rn(a, b);
}
/* The first NaN operand when either is NaN. */
__device__ inline float tsr_ew_f32_maximum(float a, float b) {
  return isnan(a) ? a : isnan(b) ? b : a > b ? a : b;
}
__device__ inline float tsr_ew_f32_minimum(float a, float b) {
  return isnan(a) ? a : isnan(b) ? b : a < b ? a : b;
}
/* The CPU calls glibc's powf (within 1 ulp; CUDA's powf is documented within 4): float64 pow
   rounded once is the correctly rounded result but for values next to a rounding midpoint, so
   the two agree except there. Special cases (pow(x, 0) = 1, pow(1, y) = 1, a negative base to a
   non-integer power is NaN, ...) are C99's in both. */
__device__ inline float tsr_ew_f32_power(float a, float b) {
  return (float)pow((double)a, (double)b);
}
__device__ inline float tsr_ew_f32_equal(float a, float b) {
  return a == b ? 1.0f : 0.0f;
}
__device__ inline float tsr_ew_f32_not_equal(float a, float b) {
  return a != b ? 1.0f : 0.0f;
}
__device__ inline float tsr_ew_f32_less(float a, float b) {
  return a < b ? 1.0f : 0.0f;
}
__device__ inline float tsr_ew_f32_less_equal(float a, float b) {
  return a <= b ? 1.0f : 0.0f;
}
__device__ inline float tsr_ew_f32_greater(float a, float b) {
  return a > b ? 1.0f : 0.0f;
}
__device__ inline float tsr_ew_f32_greater_equal(float a, float b) {
  return a >= b ? 1.0f : 0.0f;
}

/* Integer arithmetic wraps (modulo 2^64 here, then to the output's width when stored). */
__device__ inline int64_t tsr_ew_i64_add(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a + (uint64_t)b);
}
__device__ inline int64_t tsr_ew_i64_subtract(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a - (uint64_t)b);
}
__device__ inline int64_t tsr_ew_i64_multiply(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a * (uint64_t)b);
}
__device__ inline int64_t tsr_ew_i64_maximum(int64_t a, int64_t b) {
  return a > b ? a : b;
}
__device__ inline int64_t tsr_ew_i64_minimum(int64_t a, int64_t b) {
  return a < b ? a : b;
}
__device__ inline int64_t tsr_ew_i64_power(int64_t base, int64_t exponent) {
  return tsri_element_i64_power(base, exponent); /* the CPU's rule (base/element.h) */
}
__device__ inline int64_t tsr_ew_i64_equal(int64_t a, int64_t b) {
  return a == b;
}
__device__ inline int64_t tsr_ew_i64_not_equal(int64_t a, int64_t b) {
  return a != b;
}
__device__ inline int64_t tsr_ew_i64_less(int64_t a, int64_t b) {
  return a < b;
}
__device__ inline int64_t tsr_ew_i64_less_equal(int64_t a, int64_t b) {
  return a <= b;
}
__device__ inline int64_t tsr_ew_i64_greater(int64_t a, int64_t b) {
  return a > b;
}
__device__ inline int64_t tsr_ew_i64_greater_equal(int64_t a, int64_t b) {
  return a >= b;
}

/* ---- one output element from its inputs' elements (`in[k]` points at input k's) ----------- */

__device__ inline void tsr_ew_element(const unsigned char *const *in, unsigned char *out) {
#if defined(TSR_EW_UNARY)
  /* Float results compute in float32 (integer inputs converted to nearest); negative and abs of
     integers and bool stay in int64 and wrap. */
#if TSR_EW_IS_FLOAT(TSR_EW_OUT_DTYPE)
  float x = tsri_element_load_f32(in[0], TSR_EW_IN0_DTYPE);
  tsri_element_store_f32(out, TSR_EW_OUT_DTYPE, TSR_KERNEL_CAT(tsr_ew_f32_, TSR_EW_UNARY)(x));
#else
  int64_t x = tsri_element_load_i64(in[0], TSR_EW_IN0_DTYPE);
  tsri_element_store_i64(out, TSR_EW_OUT_DTYPE, TSR_KERNEL_CAT(tsr_ew_i64_, TSR_EW_UNARY)(x));
#endif

#elif defined(TSR_EW_ASTYPE)
  tsri_element_convert(in[0], TSR_EW_IN0_DTYPE, out, TSR_EW_OUT_DTYPE);

#elif defined(TSR_EW_BINARY)
  /* Both operands in the computation dtype: float32 holding the promoted float dtype's values,
     or int64; the result rounded once (or wrapped) to the output's dtype. */
#define TSR_EW_COMPUTE_DTYPE TSR_EW_DTYPE(TSR_EW_COMPUTE)
#if TSR_EW_IS_FLOAT(TSR_EW_COMPUTE_DTYPE)
  float a = tsri_element_load_as_float(in[0], TSR_EW_IN0_DTYPE, TSR_EW_COMPUTE_DTYPE);
  float b = tsri_element_load_as_float(in[1], TSR_EW_IN1_DTYPE, TSR_EW_COMPUTE_DTYPE);
  tsri_element_store_f32(out, TSR_EW_OUT_DTYPE, TSR_KERNEL_CAT(tsr_ew_f32_, TSR_EW_BINARY)(a, b));
#else
  int64_t a = tsri_element_load_i64(in[0], TSR_EW_IN0_DTYPE);
  int64_t b = tsri_element_load_i64(in[1], TSR_EW_IN1_DTYPE);
  tsri_element_store_i64(out, TSR_EW_OUT_DTYPE, TSR_KERNEL_CAT(tsr_ew_i64_, TSR_EW_BINARY)(a, b));
#endif

#elif defined(TSR_EW_WHERE)
  /* cond is true where nonzero (NaN true, -0.0 false); a and b in the output's dtype. */
  bool take_a = tsri_element_load_f32(in[0], TSR_EW_IN0_DTYPE) != 0.0f;
#if TSR_EW_IS_FLOAT(TSR_EW_OUT_DTYPE)
  float a = tsri_element_load_as_float(in[1], TSR_EW_IN1_DTYPE, TSR_EW_OUT_DTYPE);
  float b = tsri_element_load_as_float(in[2], TSR_EW_IN2_DTYPE, TSR_EW_OUT_DTYPE);
  tsri_element_store_f32(out, TSR_EW_OUT_DTYPE, take_a ? a : b);
#else
  int64_t a = tsri_element_load_i64(in[1], TSR_EW_IN1_DTYPE);
  int64_t b = tsri_element_load_i64(in[2], TSR_EW_IN2_DTYPE);
  tsri_element_store_i64(out, TSR_EW_OUT_DTYPE, take_a ? a : b);
#endif
#endif
}

/* Input k's element of output element i, as a byte address. */
#if TSR_EW_FLAT
#define TSR_EW_OFFSET(k) (layout.offset[k] + i * layout.strides[k][0])
#else
#define TSR_EW_OFFSET(k) offsets[k]
#endif

TSR_KERNEL_ENTRY(tsr_elementwise)
(tsr_strided layout, const void *in0, const void *in1, const void *in2, void *out) {
  const int64_t grid_stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < layout.n; i += grid_stride) {
#if !TSR_EW_FLAT
    int64_t offsets[TSR_STRIDED_MAX_OPERANDS];
    tsr_strided_offsets(layout, i, offsets);
#endif
    const unsigned char *at[TSR_EW_NINPUTS];
    at[0] = (const unsigned char *)in0 + TSR_EW_OFFSET(0) * tsri_element_size(TSR_EW_IN0_DTYPE);
#if TSR_EW_NINPUTS >= 2
    at[1] = (const unsigned char *)in1 + TSR_EW_OFFSET(1) * tsri_element_size(TSR_EW_IN1_DTYPE);
#endif
#if TSR_EW_NINPUTS >= 3
    at[2] = (const unsigned char *)in2 + TSR_EW_OFFSET(2) * tsri_element_size(TSR_EW_IN2_DTYPE);
#endif
    tsr_ew_element(at, (unsigned char *)out + i * tsri_element_size(TSR_EW_OUT_DTYPE));
  }
  (void)in1;
  (void)in2;
}
