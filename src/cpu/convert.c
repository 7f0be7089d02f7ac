/* cpu/convert.c — exact dtype conversions (cpu/convert.h): astype's row loop and the operands
 * of a binary op in its float computation type. The element-level rules (rounding from int64
 * and float64 without double rounding, saturating float-to-integer truncation) are
 * base/element.h's, which the CUDA kernels share. */
#include "cpu/convert.h"

#include "base/dtype.h"
#include "base/element.h"
#include "cpu/rows.h"

#define CHUNK 256

float tsri_cpu_round_int(int64_t value, tsr_dtype dtype) {
  return tsri_round_int_to_dtype(value, dtype);
}

void tsri_cpu_store_f64_element(void *dst, tsr_dtype dtype, double value) {
  tsri_element_store_f64(dst, dtype, value);
}

/* A chunk whose source is a float dtype (its values are exact in float32). */
static void convert_float_chunk(float *x, int64_t n, void *dst, tsr_dtype dst_dtype) {
  if (tsri_dtype_is_float(dst_dtype) || dst_dtype == TSR_BOOL) {
    tsri_cpu_store_f32(dst, dst_dtype, n, x);
    return;
  }
  int64_t converted[CHUNK];
  for (int64_t i = 0; i < n; i++)
    converted[i] = tsri_float_to_int_dtype(x[i], dst_dtype);
  tsri_cpu_store_i64(dst, dst_dtype, n, converted);
}

/* A chunk whose source is an integer or bool dtype, held exactly in int64. */
static void convert_int_chunk(int64_t *x, int64_t n, void *dst, tsr_dtype dst_dtype) {
  if (!tsri_dtype_is_float(dst_dtype)) {
    tsri_cpu_store_i64(dst, dst_dtype, n, x); /* wraps; bool is != 0 */
    return;
  }
  float rounded[CHUNK];
  for (int64_t i = 0; i < n; i++)
    rounded[i] = tsri_round_int_to_dtype(x[i], dst_dtype);
  tsri_cpu_store_f32(dst, dst_dtype, n, rounded); /* exact: already at the dtype's precision */
}

void tsri_cpu_convert_row(const void *src, tsr_dtype src_dtype, int64_t stride, int64_t n,
                          void *dst, tsr_dtype dst_dtype) {
  const unsigned char *in = (const unsigned char *)src;
  unsigned char *out = (unsigned char *)dst;
  int64_t in_step = stride * (int64_t)tsr_dtype_size(src_dtype);
  int64_t out_size = (int64_t)tsr_dtype_size(dst_dtype);
  for (int64_t start = 0; start < n; start += CHUNK) {
    int64_t count = n - start < CHUNK ? n - start : CHUNK;
    const unsigned char *from = in + start * in_step;
    unsigned char *to = out + start * out_size;
    if (tsri_dtype_is_float(src_dtype)) {
      float x[CHUNK];
      tsri_cpu_load_f32(from, src_dtype, stride, count, x);
      convert_float_chunk(x, count, to, dst_dtype);
    } else {
      int64_t x[CHUNK];
      tsri_cpu_load_i64(from, src_dtype, stride, count, x);
      if (src_dtype == TSR_BOOL) /* a bool byte other than 0/1 (outside memory) still means 1 */
        for (int64_t i = 0; i < count; i++)
          x[i] = x[i] != 0;
      convert_int_chunk(x, count, to, dst_dtype);
    }
  }
}

void tsri_cpu_load_as_float(const void *base, tsr_dtype dtype, int64_t stride, int64_t n,
                            tsr_dtype compute, float *dst) {
  if (tsri_dtype_is_float(dtype)) {
    /* A float operand's promoted type is float32 or its own: widening is exact. */
    tsri_cpu_load_f32(base, dtype, stride, n, dst);
    return;
  }
  int64_t x[CHUNK];
  const unsigned char *in = (const unsigned char *)base;
  int64_t step = stride * (int64_t)tsr_dtype_size(dtype);
  for (int64_t start = 0; start < n; start += CHUNK) {
    int64_t count = n - start < CHUNK ? n - start : CHUNK;
    tsri_cpu_load_i64(in + start * step, dtype, stride, count, x);
    for (int64_t i = 0; i < count; i++)
      dst[start + i] = tsri_int_to_float_dtype(x[i], dtype == TSR_BOOL, compute);
  }
}
