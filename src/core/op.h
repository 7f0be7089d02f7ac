/* core/op.h — what a kernel receives: a resolved descriptor of one node, never the node itself.
 *
 * Core builds it when the node runs: each input's evaluated layout as a view (data pointer on the
 * op's device, dtype, shape, strides, offset), the output view core has already allocated
 * (packed row-major, offset 0, unless the op donated its first input's buffer), and the op's
 * parameter struct, of any size, with whatever geometry the op derived at construction. A backend
 * includes the parameter structs (src/ops/<op>.h, core/views.h) and this header; it never
 * includes the ops' validation code and never touches graph nodes or buffers' refcounts. */
#ifndef TSR_CORE_OP_H
#define TSR_CORE_OP_H

#include <stddef.h>
#include <stdint.h>

#include "core/primitive.h"
#include "tessera/array.h"

#define TSRI_MAX_INPUTS 8

/* One operand's layout: element (i0, i1, ...) lies at data + (offset + Σ i_d·strides[d]) ·
 * itemsize. `data` is the buffer's first byte on the op's device (NULL when the buffer is empty);
 * strides may be 0 (broadcast) and need not be packed for inputs. */
typedef struct {
  void *data;
  tsr_dtype dtype;
  int ndim;
  int64_t shape[TSR_MAX_NDIM];
  int64_t strides[TSR_MAX_NDIM]; /* in elements */
  int64_t offset;                /* in elements, from data */
  int64_t size;                  /* element count */
  /* An integer input's values lie in [range_min, range_max] when range_known (known at
     construction and still valid at dispatch: core/value_range.h). Lets a kernel skip a bounds
     check, never memory safety. */
  bool range_known;
  int64_t range_min, range_max;
} tsri_view;

typedef struct tsri_op {
  tsri_primitive primitive;
  const void *params; /* the op's parameter struct (TSRI_PARAMS), params_size bytes; may be NULL */
  size_t params_size;
  int ninputs;
  tsri_view in[TSRI_MAX_INPUTS];
  tsri_view out;
  /* The output is input 0's buffer, given up to this op (slice_update when nothing else can read
     it): out has input 0's layout and already holds its values. */
  bool out_is_in0;
  tsr_device device;
  struct tsri_stream *stream; /* the stream it runs on; its backend context is stream->ctx */
} tsri_op;

/* Whether every value of v is known to lie in [low, high). */
static inline bool tsri_view_values_within(const tsri_view *v, int64_t low, int64_t high) {
  return v->range_known && v->range_min >= low && v->range_max < high;
}

/* A view's element count and the byte address of its element at `index` (elements from data). */
static inline unsigned char *tsri_view_at(const tsri_view *v, int64_t index) {
  return (unsigned char *)v->data + index * (int64_t)tsr_dtype_size(v->dtype);
}

/* Row-major packed with its offset: its elements are size consecutive items from data+offset. */
bool tsri_view_is_contiguous(const tsri_view *v);

/* The parameters of a node or an op as the op's struct. */
#define TSRI_PARAMS(x, type) ((const type *)(x)->params)

/* Runs one op: fills op->out (and nothing else) and returns TSR_OK, or returns the status with
 * the thread's message set (tsri_error); core records both on the node and releases the output. */
typedef tsr_status (*tsri_kernel_fn)(const tsri_op *op);

#endif
