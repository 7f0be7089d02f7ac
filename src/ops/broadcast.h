/* ops/broadcast.h — NumPy broadcasting of shapes, for the op constructors. */
#ifndef TSR_OPS_BROADCAST_H
#define TSR_OPS_BROADCAST_H

#include "core/array.h"

/* The broadcast shape of a and b, or TSR_ERR_INVALID naming both shapes for `what`. */
tsr_status tsri_broadcast_shapes(const char *what, const tsr_array *a, const tsr_array *b,
                                 int64_t *shape, int *ndim);

#endif
