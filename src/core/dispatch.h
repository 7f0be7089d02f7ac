/* core/dispatch.h — running one node on its stream: the view primitives resolved by core
 * (core/views.c), every other primitive through its device's kernel with a resolved descriptor
 * (core/op.h) whose output core has allocated, or donated from input 0 where the op allows it. */
#ifndef TSR_CORE_DISPATCH_H
#define TSR_CORE_DISPATCH_H

#include "core/array.h"

/* Runs the node (its inputs have run and succeeded): sets node->buffer/offset/strides, or returns
 * the status with the thread's message set and no buffer left on the node. */
tsr_status tsri_node_dispatch(tsr_array *node);
/* Allocates a packed buffer for op->out of this dtype and shape on op->device (through the
 * ledger) and fills op->out; the caller owns *buffer (NULL on failure). */
tsr_status tsri_op_alloc_out(tsri_op *op, tsr_dtype dtype, const int64_t *shape, int ndim,
                             tsri_buffer **buffer);
/* Calls op->device's kernel for op->primitive: TSR_ERR_UNSUPPORTED when the build has none. */
tsr_status tsri_kernel_call(const tsri_op *op);

#endif
