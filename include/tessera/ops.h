/* tessera/ops.h — op constructors.
 *
 * Every op has one shape: tsr_status tsr_NAME(tsr_array **out, inputs..., params..., stream).
 * It validates its arguments at once (bad input is TSR_ERR_INVALID with the shapes and dtypes in
 * the message, before any graph exists) and returns a lazy array owned by the caller; the work
 * runs on `s` (NULL: the default stream of the default device) when the array is evaluated.
 *
 *   tsr_array *y = NULL;
 *   tsr_status st = tsr_add(&y, a, b, NULL);   // a [2, 3] + b [3] -> y [2, 3]
 *
 * Broadcasting follows NumPy: shapes are aligned at the last axis, and each pair of dimensions
 * must be equal or one of them 1. Type promotion: equal dtypes stay; otherwise the result is the
 * first of float32 > bfloat16 > float16 > int64 > uint32 > int32 > int8 > uint8 > bool that either
 * input has, except where neither type holds the other: float16 with bfloat16 gives float32,
 * uint32 with int8 or int32 gives int64, uint8 with int8 gives int32.
 */
#ifndef TESSERA_OPS_H
#define TESSERA_OPS_H

#include "tessera/array.h"

#ifdef __cplusplus
extern "C" {
#endif

/* a + b, broadcasting, promoted dtype; integers wrap (two's complement), bool is logical or. */
TSR_API tsr_status tsr_add(tsr_array **out, tsr_array *a, tsr_array *b, tsr_stream *s);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_OPS_H */
