/* ops/sort.h — the parameters of the cumsum, argsort, argpartition and top-k nodes (ops/sort.c),
 * read back by their kernels (cpu/sort.c). No kernels. */
#ifndef TSR_OPS_SORT_H
#define TSR_OPS_SORT_H

#include "core/op.h"

typedef struct {
  int axis; /* in [0, ndim) */
  bool reverse, inclusive;
} tsri_cumsum_params;

/* argsort (kth unused), argpartition (kth in [0, n)) and topk (kth = k, in [1, n]). */
typedef struct {
  int axis; /* in [0, ndim) */
  int64_t kth;
} tsri_sort_params;

#endif
