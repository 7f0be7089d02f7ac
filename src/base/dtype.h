/* base/dtype.h — the one list of dtypes and what the rest of the library asks of them. */
#ifndef TSR_BASE_DTYPE_H
#define TSR_BASE_DTYPE_H

#include "tessera/base.h"

/* X(enum, name, bytes, is_float, is_signed) */
#define TSRI_DTYPE_LIST(X)                   \
  X(TSR_BOOL, "bool", 1, false, false)       \
  X(TSR_UINT8, "uint8", 1, false, false)     \
  X(TSR_UINT32, "uint32", 4, false, false)   \
  X(TSR_INT8, "int8", 1, false, true)        \
  X(TSR_INT32, "int32", 4, false, true)      \
  X(TSR_INT64, "int64", 8, false, true)      \
  X(TSR_FLOAT16, "float16", 2, true, true)   \
  X(TSR_BFLOAT16, "bfloat16", 2, true, true) \
  X(TSR_FLOAT32, "float32", 4, true, true)

/* The count comes from the list, and the list must cover the public enum (tessera/base.h). */
#define TSRI_DTYPE_ONE(e, n, b, f, s) +1
#define TSRI_DTYPE_COUNT (0 TSRI_DTYPE_LIST(TSRI_DTYPE_ONE))
_Static_assert(TSRI_DTYPE_COUNT == TSR_FLOAT32 + 1,
               "TSRI_DTYPE_LIST and tsr_dtype (tessera/base.h) disagree");

bool tsri_dtype_valid(tsr_dtype t);
bool tsri_dtype_is_float(tsr_dtype t);
/* The dtype two operands of a binary op compute and return in (tessera/ops.h gives the rule). */
tsr_dtype tsri_dtype_promote(tsr_dtype a, tsr_dtype b);

#endif
