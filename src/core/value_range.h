/* core/value_range.h — what an integer array's values are known to lie in, at construction, from
 * host data or through ops that move values without changing them. An indexing op whose indices
 * are known to be in range can skip its bounds check, which on the GPU is a read back of a device
 * flag, i.e. a stream synchronization per call (the embedding's take and every MoE gather_qmm
 * of a decode step). Sound by the API's rule that an evaluated array is immutable; memory wrapped
 * with tsr_array_from_external stays its caller's and gets no range. */
#ifndef TSR_CORE_VALUE_RANGE_H
#define TSR_CORE_VALUE_RANGE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/array.h"

/* An array made from `data` (host memory, a's dtype and size): the smallest and largest value for
   an integer dtype (not bool); nothing for other dtypes or no elements. */
void tsri_value_range_from_host(tsr_array *a, const void *data);

/* A new node: its input's range when its values are the input's (views, copies) or an integer
   conversion that keeps every value in the range. Called by tsri_node_new. */
void tsri_value_range_inherit(tsr_array *node);

/* Whether every value of `a` is known to lie in [low, high). */
bool tsri_value_range_within(const tsr_array *a, int64_t low, int64_t high);

#endif
