/* cpu/rows.h — moving strided rows of any dtype in and out of float32 or int64 scratch, so an
 * elementwise kernel is written once per arithmetic kind, not once per dtype. */
#ifndef TSR_CPU_ROWS_H
#define TSR_CPU_ROWS_H

#include <stdint.h>

#include "core/op.h"
#include "tessera/base.h"

/* dst[i] = element i of a row at `base` with `stride` (elements), as float32 (exact for every
 * dtype but int32/int64/uint32 beyond 2^24, which round to nearest). */
void tsri_cpu_load_f32(const void *base, tsr_dtype dtype, int64_t stride, int64_t n, float *dst);
/* A contiguous row of float32 written as `dtype` (float16/bfloat16 round to nearest even). */
void tsri_cpu_store_f32(void *base, tsr_dtype dtype, int64_t n, const float *src);
/* The same through int64, for integer and bool arithmetic; stores wrap (two's complement) and
 * bool stores v != 0. */
void tsri_cpu_load_i64(const void *base, tsr_dtype dtype, int64_t stride, int64_t n, int64_t *dst);
void tsri_cpu_store_i64(void *base, tsr_dtype dtype, int64_t n, const int64_t *src);

/* The one element of a size-1 integer view (a dynamic op's position scalar) as int64. */
int64_t tsri_cpu_view_scalar_i64(const tsri_view *v);

#endif
