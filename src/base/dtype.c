/* base/dtype.c — dtype sizes, names and the promotion rule of tessera/ops.h. */
#include "base/dtype.h"

typedef struct {
  const char *name;
  size_t bytes;
  bool is_float;
  bool is_signed;
} dtype_row;

static const dtype_row dtype_table[TSRI_DTYPE_COUNT] = {
#define TSRI_DTYPE_ROW(e, n, b, f, s) [e] = {n, b, f, s},
    TSRI_DTYPE_LIST(TSRI_DTYPE_ROW)
#undef TSRI_DTYPE_ROW
};

bool tsri_dtype_valid(tsr_dtype t) {
  return (unsigned)t < TSRI_DTYPE_COUNT;
}

size_t tsr_dtype_size(tsr_dtype t) {
  return tsri_dtype_valid(t) ? dtype_table[t].bytes : 0;
}

const char *tsr_dtype_name(tsr_dtype t) {
  return tsri_dtype_valid(t) ? dtype_table[t].name : "unknown";
}

bool tsri_dtype_is_float(tsr_dtype t) {
  return tsri_dtype_valid(t) && dtype_table[t].is_float;
}

/* Rank in the promotion order: the higher rank wins unless neither type holds the other. */
static int promotion_rank(tsr_dtype t) {
  static const int rank[TSRI_DTYPE_COUNT] = {
      [TSR_BOOL] = 0,  [TSR_UINT8] = 1,   [TSR_INT8] = 2,     [TSR_INT32] = 3,   [TSR_UINT32] = 4,
      [TSR_INT64] = 5, [TSR_FLOAT16] = 6, [TSR_BFLOAT16] = 7, [TSR_FLOAT32] = 8,
  };
  return rank[t];
}

static bool is_pair(tsr_dtype a, tsr_dtype b, tsr_dtype x, tsr_dtype y) {
  return (a == x && b == y) || (a == y && b == x);
}

tsr_dtype tsri_dtype_promote(tsr_dtype a, tsr_dtype b) {
  if (a == b) return a;
  if (is_pair(a, b, TSR_FLOAT16, TSR_BFLOAT16)) return TSR_FLOAT32;
  if (is_pair(a, b, TSR_UINT32, TSR_INT8) || is_pair(a, b, TSR_UINT32, TSR_INT32)) return TSR_INT64;
  if (is_pair(a, b, TSR_UINT8, TSR_INT8)) return TSR_INT32;
  return promotion_rank(a) >= promotion_rank(b) ? a : b;
}
