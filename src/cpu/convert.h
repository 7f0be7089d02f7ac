/* cpu/convert.h — exact conversions between dtypes for the CPU kernels: astype's rows, the
 * float64 values of full and arange, and operands converted to a binary op's computation dtype.
 * Not the plain row loaders (cpu/rows.h), which these build on.
 *
 * The rules (tessera/ops.h, tsr_astype):
 *  - to float32/float16/bfloat16: correctly rounded, ties to even, from the exact source value
 *    (an int64 or a float64 is rounded once, never through float32 first, so no double rounding);
 *    overflow gives infinity, NaN stays NaN;
 *  - float to integer: truncation toward zero, NaN gives 0, values outside the target's range
 *    saturate to its minimum or maximum (so -1.5 to uint8 is 0, 1e10 to int32 is 2147483647);
 *  - integer to integer: two's complement wrap, as C's unsigned conversions (ops.h is silent;
 *    this is NumPy's and MLX's behaviour, and what the binary ops' integer results do);
 *  - to bool: != 0 (NaN is true, -0.0 is false); bool is read as 0 or 1 (any nonzero byte is 1).
 * Element by element these rules are base/element.h's, which the CUDA kernels use too.
 */
#ifndef TSR_CPU_CONVERT_H
#define TSR_CPU_CONVERT_H

#include <stdint.h>

#include "tessera/base.h"

/* One float64 as `dtype`, written at `dst` (full, arange). */
void tsri_cpu_store_f64_element(void *dst, tsr_dtype dtype, double value);

/* A strided row of `n` elements of src_dtype converted into a contiguous row of dst_dtype
 * (astype). */
void tsri_cpu_convert_row(const void *src, tsr_dtype src_dtype, int64_t stride, int64_t n,
                          void *dst, tsr_dtype dst_dtype);

/* Element i of a strided row, converted exactly to the float dtype `compute` (rounded to its
 * precision, as astype would) and held in float32: a binary op's operand in its promoted type. */
void tsri_cpu_load_as_float(const void *base, tsr_dtype dtype, int64_t stride, int64_t n,
                            tsr_dtype compute, float *dst);

/* `value` rounded to nearest even at the precision of the float dtype `dtype`, as a float32
 * (infinity when it overflows float16). */
float tsri_cpu_round_int(int64_t value, tsr_dtype dtype);

#endif
