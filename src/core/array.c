/* core/array.c — array handles: creation from data or external memory, lazy nodes, references
 * (destruction is iterative, so dropping a 10^5-node unevaluated chain cannot overflow the
 * stack), shape helpers and messages. Evaluation itself lives in core/eval.c. */
#include "core/array.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/discovery.h"
#include "base/dtype.h"
#include "base/shape.h"
#include "base/status.h"
#include "core/device.h"
#include "core/placement.h"
#include "core/stream.h"
#include "core/value_range.h"

const char *tsri_array_describe(const tsr_array *a, char *buf, size_t len) {
  char shape[96];
  snprintf(buf, len, "%s %s %s", tsri_primitive_name(a->primitive),
           tsri_shape_str(a->shape, a->ndim, shape, sizeof shape), tsr_dtype_name(a->dtype));
  return buf;
}

tsr_status tsri_shape_check(const char *what, const int64_t *shape, int ndim, tsr_dtype dtype,
                            int64_t *size) {
  if (!tsri_dtype_valid(dtype))
    return tsri_error(TSR_ERR_INVALID, "%s: dtype %d is not a tsr_dtype", what, (int)dtype);
  if (ndim < 0 || ndim > TSR_MAX_NDIM)
    return tsri_error(TSR_ERR_INVALID, "%s: ndim %d outside [0, %d]", what, ndim, TSR_MAX_NDIM);
  if (!shape && ndim > 0)
    return tsri_error(TSR_ERR_INVALID, "%s: shape is NULL with ndim %d", what, ndim);
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0)
      return tsri_error(TSR_ERR_INVALID, "%s: dimension %d is %lld (must be >= 0)", what, i,
                        (long long)shape[i]);
  }
  /* One rule whatever the axis order: the non-zero dimensions' product must fit (base/shape.h),
     so a zero dimension does not let [0, 2^40, 2^40] through while [2^40, 2^40, 0] is refused. */
  if (!tsri_dims_count(shape, ndim, (int64_t)tsr_dtype_size(dtype), size)) {
    char text[200];
    return tsri_error(TSR_ERR_INVALID,
                      "%s: shape %s of %s overflows a 64-bit byte count (the product of its "
                      "non-zero dimensions times %zu bytes passes 2^63 - 1)",
                      what, tsri_shape_str(shape, ndim, text, sizeof text), tsr_dtype_name(dtype),
                      tsr_dtype_size(dtype));
  }
  return TSR_OK;
}

void tsri_view_of(const tsr_array *a, tsri_view *v) {
  v->data = a->buffer ? a->buffer->data : NULL;
  v->dtype = a->dtype;
  v->ndim = a->ndim;
  memcpy(v->shape, a->shape, sizeof v->shape);
  memcpy(v->strides, a->strides, sizeof v->strides);
  v->offset = a->offset;
  v->size = a->size;
  v->range_known = tsri_value_range_valid(a);
  v->range_min = a->range_min;
  v->range_max = a->range_max;
}

static bool packed(const int64_t *shape, const int64_t *strides, int ndim, int64_t size) {
  if (size == 0) return true; /* no element to be out of place */
  int64_t expected = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

bool tsri_view_is_contiguous(const tsri_view *v) {
  return packed(v->shape, v->strides, v->ndim, v->size);
}

bool tsri_array_is_contiguous(const tsr_array *a) {
  return packed(a->shape, a->strides, a->ndim, a->size);
}

/* A node with its shape filled and one reference; no buffer, no inputs. */
static tsr_array *node_alloc(tsr_dtype dtype, const int64_t *shape, int ndim, int64_t size,
                             tsr_device device) {
  tsr_array *a = calloc(1, sizeof *a);
  if (!a) return NULL;
  atomic_init(&a->refs, 1);
  a->dtype = dtype;
  a->ndim = ndim;
  if (ndim > 0) memcpy(a->shape, shape, (size_t)ndim * sizeof *shape);
  tsri_contiguous_strides(a->shape, ndim, a->strides);
  a->size = size;
  a->device = device;
  return a;
}

tsr_status tsri_node_new(tsr_array **out, tsri_primitive primitive, const void *params,
                         size_t params_size, tsr_dtype dtype, const int64_t *shape, int ndim,
                         tsr_array *const *inputs, int ninputs, tsr_stream *stream) {
  const char *what = tsri_primitive_name(primitive);
  int64_t size = 0;
  tsr_status status = tsri_shape_check(what, shape, ndim, dtype, &size);
  if (status != TSR_OK) return status;
  tsri_stream *s = NULL; /* a freed or stale handle is TSR_ERR_STATE here, never dereferenced */
  status = tsri_stream_acquire(stream, what, &s);
  if (status != TSR_OK) return status;
  if (atomic_load(&s->closed)) { /* freed by another thread since: the same answer */
    tsri_stream_release(s);
    return tsri_error(TSR_ERR_STATE, "%s: the stream was freed", what);
  }
  tsr_array *a = node_alloc(dtype, shape, ndim, size, s->device);
  void *params_copy = params && params_size > 0 ? malloc(params_size) : NULL;
  if (!a || (params && params_size > 0 && !params_copy)) {
    free(a);
    free(params_copy);
    tsri_stream_release(s);
    return tsri_error(TSR_ERR_NOMEM, "%s: out of host memory for a graph node", what);
  }
  a->primitive = primitive;
  if (params_copy) memcpy(params_copy, params, params_size);
  a->params = params_copy;
  a->params_size = params_copy ? params_size : 0;
  a->ninputs = ninputs;
  for (int i = 0; i < ninputs; i++)
    a->inputs[i] = tsr_array_retain(inputs[i]);
  a->stream = s; /* acquire's reference */
  tsri_value_range_inherit(a);
  status = tsri_placement_check(a);
  if (status == TSR_OK) status = tsri_placement_copy_inputs(a);
  if (status != TSR_OK) {
    tsr_array_release(a);
    return status;
  }
  *out = a;
  return TSR_OK;
}

static tsr_status check_new_array(const char *what, tsr_array **out, const void *data,
                                  tsr_dtype dtype, const int64_t *shape, int ndim, tsr_device d,
                                  int64_t *size) {
  if (!out) return tsri_error(TSR_ERR_INVALID, "%s: out is NULL", what);
  tsr_status status = tsri_shape_check(what, shape, ndim, dtype, size);
  if (status != TSR_OK) return status;
  if (!data && *size > 0)
    return tsri_error(TSR_ERR_INVALID, "%s: data is NULL for %lld elements", what,
                      (long long)*size);
  status = tsri_device_check(d, what);
  if (status != TSR_OK) return status;
  if (!tsri_device_usable(d)) {
    char name[16];
    return tsri_error(TSR_ERR_UNSUPPORTED, "%s: %s has no backend in this build", what,
                      tsri_device_str(d, name));
  }
  return TSR_OK;
}

/* A ready array around `buffer` (taken over). */
static tsr_status ready_array(const char *what, tsri_buffer *buffer, tsr_dtype dtype,
                              const int64_t *shape, int ndim, int64_t size, tsr_device d,
                              tsr_array **out) {
  tsr_array *a = node_alloc(dtype, shape, ndim, size, d);
  if (!a) {
    /* A failed call leaves wrapped memory to its caller: the deleter runs only for an array. */
    buffer->deleter = NULL;
    tsri_buffer_release(buffer);
    return tsri_error(TSR_ERR_NOMEM, "%s: out of host memory for an array", what);
  }
  a->primitive = TSRI_PRIM_DATA;
  a->buffer = buffer;
  atomic_store(&a->state, TSRI_NODE_READY);
  *out = a;
  return TSR_OK;
}

/* Host bytes into a new buffer of d: memcpy on the CPU, the default stream's copy elsewhere. */
static tsr_status fill_from_host(tsri_buffer *buffer, const void *data, uint64_t bytes,
                                 tsr_device d) {
  if (bytes == 0) return TSR_OK;
  if (d.type == TSR_CPU) {
    memcpy(buffer->data, data, bytes);
    return TSR_OK;
  }
  tsri_stream *s = NULL;
  tsr_status status = tsri_stream_acquire(tsr_default_stream(d), "copy", &s);
  if (status != TSR_OK) return status;
  status = s->iface->copy(s, buffer->data, data, bytes, TSRI_COPY_FROM_HOST);
  tsri_stream_release(s);
  return status;
}

tsr_status tsr_array_from_data_on(tsr_array **out, const void *data, tsr_dtype dtype,
                                  const int64_t *shape, int ndim, tsr_device d) {
  const char *what = "array_from_data";
  int64_t size = 0;
  tsr_status status = check_new_array(what, out, data, dtype, shape, ndim, d, &size);
  if (status != TSR_OK) return status;
  uint64_t bytes = (uint64_t)size * tsr_dtype_size(dtype);
  tsri_buffer *buffer = NULL;
  status = tsri_buffer_alloc(d, bytes, &buffer);
  if (status != TSR_OK) {
    char message[TSR_ERROR_MAX];
    snprintf(message, sizeof message, "%s: %s", what, tsr_last_error());
    return tsri_error_copy(status, message);
  }
  status = fill_from_host(buffer, data, bytes, d);
  if (status != TSR_OK) {
    char message[TSR_ERROR_MAX];
    snprintf(message, sizeof message, "%s: %s", what, tsr_last_error());
    tsri_buffer_release(buffer);
    return tsri_error_copy(status, message);
  }
  status = ready_array(what, buffer, dtype, shape, ndim, size, d, out);
  if (status == TSR_OK) tsri_value_range_from_host(*out, data); /* a copy: immutable from now */
  return status;
}

tsr_status tsr_array_from_data(tsr_array **out, const void *data, tsr_dtype dtype,
                               const int64_t *shape, int ndim) {
  return tsr_array_from_data_on(out, data, dtype, shape, ndim, tsr_default_device());
}

tsr_status tsr_array_from_external(tsr_array **out, void *data, tsr_dtype dtype,
                                   const int64_t *shape, int ndim, tsr_device d,
                                   void (*deleter)(void *ctx), void *ctx) {
  const char *what = "array_from_external";
  int64_t size = 0;
  tsr_status status = check_new_array(what, out, data, dtype, shape, ndim, d, &size);
  if (status != TSR_OK) return status;
  tsri_buffer *buffer = NULL;
  status = tsri_buffer_wrap(d, data, (uint64_t)size * tsr_dtype_size(dtype), deleter, ctx, &buffer);
  if (status != TSR_OK) {
    char message[TSR_ERROR_MAX];
    snprintf(message, sizeof message, "%s: %s", what, tsr_last_error());
    return tsri_error_copy(status, message);
  }
  return ready_array(what, buffer, dtype, shape, ndim, size, d, out);
}

tsr_array *tsr_array_retain(tsr_array *a) {
  if (a) atomic_fetch_add(&a->refs, 1);
  return a;
}

static void node_free(tsr_array *a) {
  free(a->params);
  tsri_buffer_release(a->buffer);
  tsri_stream_release(a->stream);
  free(a->message);
  free(a);
}

void tsr_array_release(tsr_array *a) {
  if (!a || atomic_fetch_sub(&a->refs, 1) != 1) return;
  /* A worklist threaded through the nodes themselves: no recursion, no allocation. */
  a->release_next = NULL;
  while (a) {
    tsr_array *next = a->release_next;
    for (int i = 0; i < a->ninputs; i++) {
      tsr_array *input = a->inputs[i];
      if (atomic_fetch_sub(&input->refs, 1) == 1) {
        input->release_next = next;
        next = input;
      }
    }
    node_free(a);
    a = next;
  }
}

tsr_device tsr_array_device(const tsr_array *a) {
  tsr_device cpu = {TSR_CPU, 0};
  return a ? a->device : cpu;
}

int tsr_array_ndim(const tsr_array *a) {
  return a ? a->ndim : -1;
}

int64_t tsr_array_dim(const tsr_array *a, int axis) {
  if (!a) return -1;
  if (axis < 0) axis += a->ndim;
  return (axis >= 0 && axis < a->ndim) ? a->shape[axis] : -1;
}

int64_t tsr_array_size(const tsr_array *a) {
  return a ? a->size : -1;
}

tsr_dtype tsr_array_dtype(const tsr_array *a) {
  if (!a) {
    tsri_error(TSR_ERR_INVALID, "array_dtype: array is NULL");
    return (tsr_dtype)-1;
  }
  return a->dtype;
}
