/* ops/reduce.h — the parameters of the reduction nodes (ops/reduce.c), read back by their kernels
 * (cpu/reduce.c), and the axis checks that the reduction, sort and random ops share. No kernels. */
#ifndef TSR_OPS_REDUCE_H
#define TSR_OPS_REDUCE_H

#include "core/op.h"

/* sum, mean, max, min and argmax: which input axes are reduced (argmax: exactly one). */
typedef struct {
  bool reduced[TSR_MAX_NDIM];
  bool keepdims;
} tsri_reduce_params;

/* Index outputs are int32: TSR_ERR_INVALID when axis `axis` of `a` is longer than that holds. */
tsr_status tsri_int32_index_check(const char *what, const tsr_array *a, int axis);

#endif
