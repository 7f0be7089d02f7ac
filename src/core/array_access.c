/* core/array_access.c — getting at an evaluated array's bytes: tsr_array_read (copies out,
 * row-major, whatever the layout), tsr_array_data (the backing pointer, for the execution SPI)
 * and tsr_array_record_stream (keeps the buffer alive for raw work on another stream). */
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "core/array.h"
#include "core/lock.h"
#include "core/placement.h"
#include "core/stream.h"
#include "tessera/spi.h"

static const unsigned char *element_base(const tsr_array *a) {
  return (const unsigned char *)a->buffer->data + a->offset * (int64_t)tsr_dtype_size(a->dtype);
}

/* Row-major copy of a strided view: an odometer over the indices. */
static void gather_strided(const tsr_array *a, unsigned char *dst) {
  size_t element = tsr_dtype_size(a->dtype);
  const unsigned char *base = (const unsigned char *)a->buffer->data;
  int64_t index[TSR_MAX_NDIM] = {0};
  for (int64_t i = 0; i < a->size; i++) {
    int64_t offset = a->offset;
    for (int d = 0; d < a->ndim; d++)
      offset += index[d] * a->strides[d];
    memcpy(dst + (size_t)i * element, base + offset * (int64_t)element, element);
    for (int d = a->ndim - 1; d >= 0 && ++index[d] == a->shape[d]; d--)
      index[d] = 0;
  }
}

static tsr_status eval_one(tsr_array *a) {
  return tsr_eval(&a, 1);
}

/* Device memory: packed on the device first when it is a view, then one copy to the host through
   the stream that made it (or the device's default stream). */
static tsr_status read_from_device(tsr_array *a, void *dst, size_t bytes) {
  tsr_array *packed = NULL;
  tsr_status status = tsri_packed_on_home(a, &packed);
  if (status == TSR_OK) status = eval_one(packed);
  tsri_stream *mover = NULL;
  if (status == TSR_OK) status = tsri_stream_acquire(packed->stream->handle, "array_read", &mover);
  if (status == TSR_OK) {
    status = mover->iface->copy(mover, dst, element_base(packed), bytes, TSRI_COPY_TO_HOST);
    tsri_stream_release(mover);
  }
  tsr_array_release(packed);
  return status;
}

tsr_status tsr_array_read(tsr_array *a, void *dst, size_t dst_bytes) {
  if (!a) return tsri_error(TSR_ERR_INVALID, "array_read: array is NULL");
  size_t bytes = (size_t)a->size * tsr_dtype_size(a->dtype);
  if (dst_bytes != bytes)
    return tsri_error(TSR_ERR_INVALID,
                      "array_read: dst_bytes %zu, but the array holds %zu bytes (%lld x %s)",
                      dst_bytes, bytes, (long long)a->size, tsr_dtype_name(a->dtype));
  if (!dst && bytes > 0) return tsri_error(TSR_ERR_INVALID, "array_read: dst is NULL");
  tsr_status status = eval_one(a);
  if (status != TSR_OK || bytes == 0) return status;
  if (a->device.type != TSR_CPU) return read_from_device(a, dst, bytes);
  if (tsri_array_is_contiguous(a))
    memcpy(dst, element_base(a), bytes);
  else
    gather_strided(a, dst);
  return TSR_OK;
}

tsr_status tsr_array_data(tsr_array *a, void **ptr) {
  if (!a || !ptr) return tsri_error(TSR_ERR_INVALID, "array_data: %s is NULL", a ? "ptr" : "array");
  tsr_status status = eval_one(a);
  if (status != TSR_OK) return status;
  if (!tsri_array_is_contiguous(a))
    return tsri_error(TSR_ERR_INVALID, "array_data: the array is a non-contiguous view");
  *ptr = a->buffer && a->buffer->data ? (void *)element_base(a) : NULL;
  /* Outside code may write through it (a raw collective's result): inferred ranges stop here. */
  if (a->buffer) atomic_store(&a->buffer->exposed, true);
  return TSR_OK;
}

static void release_buffer_later(void *ctx) {
  tsri_buffer_release(ctx);
}

tsr_status tsr_array_record_stream(tsr_array *a, tsr_stream *s) {
  if (!a) return tsri_error(TSR_ERR_INVALID, "array_record_stream: array is NULL");
  tsr_status status = eval_one(a);
  if (status != TSR_OK || !a->buffer) return status;
  /* The stream's own reference to the buffer, dropped once s has passed this point (through the
     stream's after_current, never inside a device callback: the drop may free device memory):
     a later allocation cannot reuse the block before. */
  tsri_stream *stream = NULL;
  status = tsri_stream_acquire(s, "array_record_stream", &stream);
  if (status != TSR_OK) return status;
  tsri_eval_lock();
  if (atomic_load(&stream->closed)) {
    status = tsri_error(TSR_ERR_STATE, "array_record_stream: the stream was freed");
  } else {
    stream->iface->after_current(stream, release_buffer_later, tsri_buffer_retain(a->buffer));
    if (stream->iface->flush) stream->iface->flush(stream);
  }
  tsri_eval_unlock();
  tsri_stream_release(stream);
  return status;
}
