/* cpu/rows.c — per-dtype row conversion loops (cpu/rows.h). */
#include "cpu/rows.h"

#include "base/half.h"

#define LOAD_ROW(type, convert)           \
  do {                                    \
    const type *src = (const type *)base; \
    for (int64_t i = 0; i < n; i++)       \
      dst[i] = convert(src[i * stride]);  \
  } while (0)

#define AS_FLOAT(v) ((float)(v))
#define AS_INT64(v) ((int64_t)(v))

/* Float to int64 truncating toward zero, NaN to 0 and saturating, as tsr_astype does: a plain
   cast is undefined outside the range. */
static int64_t float_to_i64(float v) {
  if (v != v) return 0;
  if (v >= 0x1p63f) return INT64_MAX;
  if (v < -0x1p63f) return INT64_MIN;
  return (int64_t)v;
}
static int64_t f16_to_i64(uint16_t h) {
  return float_to_i64(tsri_f16_to_f32(h));
}
static int64_t bf16_to_i64(uint16_t b) {
  return float_to_i64(tsri_bf16_to_f32(b));
}

void tsri_cpu_load_f32(const void *base, tsr_dtype dtype, int64_t stride, int64_t n, float *dst) {
  switch (dtype) {
    case TSR_BOOL:
      LOAD_ROW(uint8_t, AS_FLOAT);
      break;
    case TSR_UINT8:
      LOAD_ROW(uint8_t, AS_FLOAT);
      break;
    case TSR_UINT32:
      LOAD_ROW(uint32_t, AS_FLOAT);
      break;
    case TSR_INT8:
      LOAD_ROW(int8_t, AS_FLOAT);
      break;
    case TSR_INT32:
      LOAD_ROW(int32_t, AS_FLOAT);
      break;
    case TSR_INT64:
      LOAD_ROW(int64_t, AS_FLOAT);
      break;
    case TSR_FLOAT16:
      LOAD_ROW(uint16_t, tsri_f16_to_f32);
      break;
    case TSR_BFLOAT16:
      LOAD_ROW(uint16_t, tsri_bf16_to_f32);
      break;
    case TSR_FLOAT32:
      LOAD_ROW(float, AS_FLOAT);
      break;
  }
}

void tsri_cpu_load_i64(const void *base, tsr_dtype dtype, int64_t stride, int64_t n, int64_t *dst) {
  switch (dtype) {
    case TSR_BOOL:
      LOAD_ROW(uint8_t, AS_INT64);
      break;
    case TSR_UINT8:
      LOAD_ROW(uint8_t, AS_INT64);
      break;
    case TSR_UINT32:
      LOAD_ROW(uint32_t, AS_INT64);
      break;
    case TSR_INT8:
      LOAD_ROW(int8_t, AS_INT64);
      break;
    case TSR_INT32:
      LOAD_ROW(int32_t, AS_INT64);
      break;
    case TSR_INT64:
      LOAD_ROW(int64_t, AS_INT64);
      break;
    case TSR_FLOAT16:
      LOAD_ROW(uint16_t, f16_to_i64);
      break;
    case TSR_BFLOAT16:
      LOAD_ROW(uint16_t, bf16_to_i64);
      break;
    case TSR_FLOAT32:
      LOAD_ROW(float, float_to_i64);
      break;
  }
}

#define STORE_ROW(type, convert)    \
  do {                              \
    type *out = (type *)base;       \
    for (int64_t i = 0; i < n; i++) \
      out[i] = convert(src[i]);     \
  } while (0)

#define TO_BOOL(v) ((uint8_t)((v) != 0))
#define TO_U8(v) ((uint8_t)(v))
#define TO_U32(v) ((uint32_t)(v))
#define TO_I8(v) ((int8_t)(uint8_t)(v))
#define TO_I32(v) ((int32_t)(uint32_t)(v))
#define TO_I64(v) ((int64_t)(v))
#define TO_F32(v) ((float)(v))

void tsri_cpu_store_f32(void *base, tsr_dtype dtype, int64_t n, const float *src) {
  switch (dtype) {
    case TSR_FLOAT16:
      STORE_ROW(uint16_t, tsri_f32_to_f16);
      break;
    case TSR_BFLOAT16:
      STORE_ROW(uint16_t, tsri_f32_to_bf16);
      break;
    case TSR_FLOAT32:
      STORE_ROW(float, TO_F32);
      break;
    case TSR_BOOL:
      STORE_ROW(uint8_t, TO_BOOL);
      break;
    default: /* float results are only stored to float dtypes (and bool, by comparison) */
      break;
  }
}

void tsri_cpu_store_i64(void *base, tsr_dtype dtype, int64_t n, const int64_t *src) {
  switch (dtype) {
    case TSR_BOOL:
      STORE_ROW(uint8_t, TO_BOOL);
      break;
    case TSR_UINT8:
      STORE_ROW(uint8_t, TO_U8);
      break;
    case TSR_UINT32:
      STORE_ROW(uint32_t, TO_U32);
      break;
    case TSR_INT8:
      STORE_ROW(int8_t, TO_I8);
      break;
    case TSR_INT32:
      STORE_ROW(int32_t, TO_I32);
      break;
    case TSR_INT64:
      STORE_ROW(int64_t, TO_I64);
      break;
    default: /* integer results are only stored to integer and bool dtypes */
      break;
  }
}
