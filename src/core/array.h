/* core/array.h — the array handle, which is also the graph node (MLX's array/primitive pair
 * folded into one refcounted object).
 *
 * A node is born either ready (from data: it owns a buffer) or lazy (it names a primitive, its
 * inputs and its stream). Evaluation submits it (state SUBMITTED, a sequence number on its
 * stream), its stream's worker runs it and then drops its inputs, so a long chain only holds the
 * buffers still needed. Fields below `state` are written under the evaluation lock before
 * submission and read by the worker after; `state` is the atomic that publishes them.
 */
#ifndef TSR_CORE_ARRAY_H
#define TSR_CORE_ARRAY_H

#include <stdatomic.h>

#include "base/shape.h"
#include "core/op.h"
#include "memory/buffer.h"
#include "tessera/array.h"

typedef enum {
  TSRI_NODE_LAZY = 0,  /* built, not submitted */
  TSRI_NODE_SUBMITTED, /* queued on its stream */
  TSRI_NODE_READY,     /* evaluated: buffer valid, immutable */
  TSRI_NODE_FAILED     /* evaluated with an error: status + message */
} tsri_node_state;

/* A unit of work in a stream's FIFO: a node to run, or a host function. */
typedef struct tsri_task {
  struct tsri_task *next;
  uint64_t seq;
  struct tsr_array *node; /* NULL for a host function */
  void (*host_fn)(void *ctx);
  void *host_ctx;
} tsri_task;

struct tsr_array {
  atomic_int refs;
  tsr_dtype dtype;
  int ndim;
  int64_t shape[TSR_MAX_NDIM];
  int64_t strides[TSR_MAX_NDIM]; /* in elements */
  int64_t offset;                /* in elements, from buffer->data */
  int64_t size;
  tsr_device device;

  atomic_int state; /* tsri_node_state */
  tsr_status status;
  char *message; /* when FAILED: the first error of the graph, op and sizes named */
  tsri_buffer *buffer;

  tsri_primitive primitive;
  void *params; /* the op's parameter struct (TSRI_PARAMS), a copy owned by the node */
  size_t params_size;
  int ninputs;
  struct tsr_array *inputs[TSRI_MAX_INPUTS]; /* held until the node has run */
  struct tsri_stream *stream;                /* held for the node's life once set */
  uint64_t visit_epoch;                      /* graph walk bookkeeping (evaluation lock) */
  tsri_task task;                 /* task.seq: the node's place on `stream` once submitted */
  struct tsr_array *release_next; /* iterative destruction: no recursion on long chains */
  /* Integer arrays: every value lies in [range_min, range_max] when range_known (set at
     construction: core/value_range.h). */
  bool range_known;
  int64_t range_min, range_max;
  /* Set while a step's first run evaluates the node (core/step.h): its run is recorded there. */
  struct tsri_step_recording *recording;
};

/* A lazy node: shape/dtype given, the op's parameter struct copied (params_size bytes, any size;
 * NULL/0 for none), inputs retained, stream retained (NULL = default stream of the default
 * device). TSR_ERR_STATE for a freed stream, TSR_ERR_NOMEM. The caller owns the result. */
tsr_status tsri_node_new(tsr_array **out, tsri_primitive primitive, const void *params,
                         size_t params_size, tsr_dtype dtype, const int64_t *shape, int ndim,
                         tsr_array *const *inputs, int ninputs, tsr_stream *stream);
/* The node's evaluated layout as a kernel sees it (core/op.h). */
void tsri_view_of(const tsr_array *a, tsri_view *v);
/* Row-major contiguous from `offset` (strides are the packed ones). */
bool tsri_array_is_contiguous(const tsr_array *a);
/* "add [4, 3] float32", for messages. */
const char *tsri_array_describe(const tsr_array *a, char *buf, size_t len);
/* Validates a shape for `what` (ndim range, non-negative dims, and the product of the non-zero
 * dims times the item size within int64: base/shape.h's rule, the same in any axis order) and
 * gives the element count. TSR_ERR_INVALID naming the values. */
tsr_status tsri_shape_check(const char *what, const int64_t *shape, int ndim, tsr_dtype dtype,
                            int64_t *size);

#endif
