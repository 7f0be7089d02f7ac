/* core/value_range.h — what an integer array's values are known to lie in, from host data or
 * through ops that move values without changing them. A kernel whose indices are known to be in
 * range can skip its bounds check, which on the GPU is a read back of a device flag, i.e. a
 * stream synchronization per call (the embedding's take and every MoE gather_qmm of a decode
 * step). Sound by the API's rule that an evaluated array is immutable, with two exceptions
 * handled here: memory wrapped by tsr_array_from_external stays its caller's (no range), and a
 * buffer handed out by tsr_array_data may be written by outside code (its arrays' ranges, and
 * those of copies made from them afterwards, are dropped at dispatch). Kernels see the range in
 * their input views (core/op.h: tsri_view_values_within). */
#ifndef TSR_CORE_VALUE_RANGE_H
#define TSR_CORE_VALUE_RANGE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/array.h"

/* Arrays of at most this many elements made from host data are scanned for their range (index
   arrays are small; a checkpoint's packed weights are not, and a scan would cost ~5x the copy). */
#define TSRI_VALUE_RANGE_MAX_SCAN ((int64_t)1 << 16)

/* An array made from `data` (host memory, a's dtype and size): the smallest and largest value for
   an integer dtype (not bool) and up to TSRI_VALUE_RANGE_MAX_SCAN elements; else nothing. */
void tsri_value_range_from_host(tsr_array *a, const void *data);

/* A new node: its input's range when its values are the input's (views, copies) or an integer
   conversion that keeps every value in the range. Called by tsri_node_new. */
void tsri_value_range_inherit(tsr_array *node);

/* At dispatch (inputs evaluated): a node that inherited its range drops it when its input's no
   longer holds (the input's buffer was handed out by tsr_array_data since). */
void tsri_value_range_revalidate(tsr_array *node);

/* Whether a's range is known and still holds. */
bool tsri_value_range_valid(const tsr_array *a);

#endif
