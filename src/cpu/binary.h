/* cpu/binary.h — the row machinery the elementwise binary kernels share (cpu/binary.c for the
 * arithmetic ops, cpu/compare.c for comparisons and where). An op is a pair of row functions;
 * the runner walks the broadcast operands, converts them to the op's computation type and stores
 * the result in the output's dtype. Not the kernels themselves. */
#ifndef TSR_CPU_BINARY_H
#define TSR_CPU_BINARY_H

#include "core/backend.h"

/* out[i] = op(x[i * stride_x], y[i * stride_y]); out may be x (strides 1). */
typedef void (*tsri_binary_f32_fn)(float *out, const float *x, int64_t stride_x, const float *y,
                                   int64_t stride_y, int64_t n);
/* out[i] = op(x[i], y[i]) on contiguous scratch; out may be x. */
typedef void (*tsri_binary_i64_fn)(int64_t *out, const int64_t *x, const int64_t *y, int64_t n);

/* How one op computes: in float32 when the operands' promoted dtype is a float (float16 and
 * bfloat16 too), else in int64; `i64` NULL means integer operands are computed as float32
 * (divide). Comparisons return 1 or 0 and the output's bool dtype stores != 0. */
typedef struct {
  tsri_binary_f32_fn f32;
  tsri_binary_i64_fn i64;
} tsri_binary_fns;

/* Defines a tsri_binary_f32_fn `name` from an expression in the floats `a` and `b`. Unit-stride
 * rows and rows against one broadcast value (x * scalar) get loops the compiler can vectorize;
 * any other stride takes the general loop. */
#define TSRI_BINARY_F32(name, expr)                                                                \
  static void name(float *out, const float *x, int64_t stride_x, const float *y, int64_t stride_y, \
                   int64_t n) {                                                                    \
    if (stride_x == 1 && stride_y == 1) {                                                          \
      for (int64_t i = 0; i < n; i++) {                                                            \
        float a = x[i], b = y[i];                                                                  \
        out[i] = (expr);                                                                           \
      }                                                                                            \
    } else if (stride_x == 1 && stride_y == 0) {                                                   \
      const float b = y[0];                                                                        \
      for (int64_t i = 0; i < n; i++) {                                                            \
        float a = x[i];                                                                            \
        out[i] = (expr);                                                                           \
      }                                                                                            \
    } else if (stride_x == 0 && stride_y == 1) {                                                   \
      const float a = x[0];                                                                        \
      for (int64_t i = 0; i < n; i++) {                                                            \
        float b = y[i];                                                                            \
        out[i] = (expr);                                                                           \
      }                                                                                            \
    } else {                                                                                       \
      for (int64_t i = 0; i < n; i++) {                                                            \
        float a = x[i * stride_x], b = y[i * stride_y];                                            \
        out[i] = (expr);                                                                           \
      }                                                                                            \
    }                                                                                              \
  }

/* Defines a tsri_binary_i64_fn `name` from an expression in the int64s `a` and `b`. */
#define TSRI_BINARY_I64(name, expr)                                               \
  static void name(int64_t *out, const int64_t *x, const int64_t *y, int64_t n) { \
    for (int64_t i = 0; i < n; i++) {                                             \
      int64_t a = x[i], b = y[i];                                                 \
      out[i] = (expr);                                                            \
    }                                                                             \
  }

/* Runs `fns` over the op's two inputs (broadcast to the output's shape, any layout) into its
 * output. TSR_OK. */
tsr_status tsri_cpu_binary_run(const tsri_op *op, const tsri_binary_fns *fns);

/* Loads element i of a strided row of `dtype` as the computation type of a binary op: as float32
 * when `compute` is a float dtype (rounded to compute's precision), else as int64. */
void tsri_cpu_load_operand(const void *base, tsr_dtype dtype, int64_t stride, int64_t n,
                           tsr_dtype compute, void *dst);

void tsri_cpu_register_compare(tsri_kernel_fn *table); /* cpu/compare.c: comparisons, where */

#endif
