/* core/placement.h — placement decided when a node is built: whether the node's device can run it,
 * and copies for inputs that live on another device. So CUDA can land op by op: an op a device
 * has no kernel for is TSR_ERR_UNSUPPORTED at construction, never at evaluation. */
#ifndef TSR_CORE_PLACEMENT_H
#define TSR_CORE_PLACEMENT_H

#include "core/array.h"

/* TSR_OK when the node's device runs its primitive (views run in core for every device);
 * otherwise TSR_ERR_UNSUPPORTED naming the op, its shape and the device. */
tsr_status tsri_placement_check(const tsr_array *node);
/* Replaces each input that lives on another device by a copy of it onto the node's stream, made
 * packed on its own device first (a lazy copy: its bytes are backed on the node's device's ledger
 * when it runs). A copy node's own input is only made packed. TSR_OK, or the status of building
 * the copies (nothing replaced then). */
tsr_status tsri_placement_copy_inputs(tsr_array *node);

/* `a` packed row-major on its own device, lazily: a reshape to its own shape, on a's stream (its
 * device's default stream for an array from data), which aliases a packed layout and copies any
 * other (core/views.c). */
tsr_status tsri_packed_on_home(tsr_array *a, tsr_array **out);

#endif
