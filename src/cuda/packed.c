/* cuda/packed.c — packed operands and stream-ordered scratch for GPU kernels (cuda/packed.h). */
#include "cuda/packed.h"

#include <stdio.h>

#include "base/shape.h"
#include "base/status.h"
#include "core/stream.h"
#include "cuda/launch.h"
#include "cuda/strided.h"

static void release_buffer(void *buffer) {
  tsri_buffer_release(buffer);
}

tsr_status tsri_cuda_scratch_alloc(const tsri_op *op, uint64_t bytes, const char *what,
                                   tsri_buffer **out) {
  tsr_status status = tsri_buffer_alloc(op->device, bytes, out);
  if (status == TSR_OK) return TSR_OK;
  char message[TSR_ERROR_MAX];
  snprintf(message, sizeof message, "%s: scratch of %llu bytes: %s", what,
           (unsigned long long)bytes, tsr_last_error());
  return tsri_error_copy(status, message);
}

void tsri_cuda_scratch_done(const tsri_op *op, tsri_buffer *scratch) {
  if (scratch) op->stream->iface->after_current(op->stream, release_buffer, scratch);
}

tsr_status tsri_cuda_packed_get(const tsri_op *op, const tsri_view *v, const char *what,
                                tsri_cuda_packed *out) {
  out->data = NULL;
  out->scratch = NULL;
  if (v->size == 0) return TSR_OK;
  if (tsri_view_is_contiguous(v)) {
    out->data = tsri_view_at(v, v->offset);
    return TSR_OK;
  }
  size_t element = tsr_dtype_size(v->dtype);
  tsri_buffer *scratch = NULL;
  tsr_status status = tsri_cuda_scratch_alloc(op, (uint64_t)v->size * element, what, &scratch);
  if (status != TSR_OK) return status;
  tsri_view dst = *v;
  dst.data = scratch->data;
  dst.offset = 0;
  tsri_contiguous_strides(v->shape, v->ndim, dst.strides);
  tsri_cuda_strided layout;
  tsri_cuda_strided_init(&layout, &dst);
  tsri_cuda_strided_add(&layout, v);
  tsri_cuda_strided_add(&layout, &dst);
  char options[32];
  snprintf(options, sizeof options, "-DTSR_COPY_BYTES=%zu", element);
  void *args[] = {&layout, (void *)&v->data, &dst.data};
  unsigned block = 256;
  status = tsri_cuda_launch(op, "copy", options, tsri_dim3(tsri_cuda_blocks_for(v->size, block)),
                            tsri_dim3(block), 0, args);
  out->scratch = scratch; /* released by tsri_cuda_packed_done, whatever the launch gave */
  out->data = scratch->data;
  return status;
}

void tsri_cuda_packed_done(const tsri_op *op, tsri_cuda_packed *p) {
  tsri_cuda_scratch_done(op, p->scratch);
  p->scratch = NULL;
  p->data = NULL;
}
