/* cpu/rows.c — per-dtype row conversion loops (cpu/rows.h). Each element goes through
 * base/element.h, the rules the CUDA kernels use too; each case of a switch passes its dtype as
 * a constant, so the element function's own switch folds away and the loop is the plain typed
 * one. */
#include "cpu/rows.h"

#include "base/dtype.h"
#include "base/element.h"

/* One case per dtype (base/dtype.h's list): ROW(dtype) with the dtype as a constant. */
#define ROW_CASE(e, name, bytes, is_float, is_signed) \
  case e:                                             \
    ROW(e);                                           \
    break;

void tsri_cpu_load_f32(const void *base, tsr_dtype dtype, int64_t stride, int64_t n, float *dst) {
  const unsigned char *src = (const unsigned char *)base;
#define ROW(e)                                                                  \
  for (int64_t i = 0; i < n; i++) {                                             \
    dst[i] = tsri_element_load_f32(src + i * stride * tsri_element_size(e), e); \
  }
  switch (dtype) { TSRI_DTYPE_LIST(ROW_CASE) }
#undef ROW
}

void tsri_cpu_load_i64(const void *base, tsr_dtype dtype, int64_t stride, int64_t n, int64_t *dst) {
  const unsigned char *src = (const unsigned char *)base;
#define ROW(e)                                                                  \
  for (int64_t i = 0; i < n; i++) {                                             \
    dst[i] = tsri_element_load_i64(src + i * stride * tsri_element_size(e), e); \
  }
  switch (dtype) { TSRI_DTYPE_LIST(ROW_CASE) }
#undef ROW
}

void tsri_cpu_store_f32(void *base, tsr_dtype dtype, int64_t n, const float *src) {
  unsigned char *out = (unsigned char *)base;
#define ROW(e)                                                         \
  for (int64_t i = 0; i < n; i++) {                                    \
    tsri_element_store_f32(out + i * tsri_element_size(e), e, src[i]); \
  }
  switch (dtype) { TSRI_DTYPE_LIST(ROW_CASE) }
#undef ROW
}

void tsri_cpu_store_i64(void *base, tsr_dtype dtype, int64_t n, const int64_t *src) {
  unsigned char *out = (unsigned char *)base;
#define ROW(e)                                                         \
  for (int64_t i = 0; i < n; i++) {                                    \
    tsri_element_store_i64(out + i * tsri_element_size(e), e, src[i]); \
  }
  switch (dtype) { TSRI_DTYPE_LIST(ROW_CASE) }
#undef ROW
}

int64_t tsri_cpu_view_scalar_i64(const tsri_view *v) {
  int64_t value = 0;
  tsri_cpu_load_i64(tsri_view_at(v, v->offset), v->dtype, 0, 1, &value);
  return value;
}
