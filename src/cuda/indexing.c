/* cuda/indexing.c — the GPU's take, take_along_axis, slice_update and concatenate
 * (cuda/kernels/indexing.cuh; the same-dtype moves are copy.cuh's strided copy). Not the view
 * primitives, which core runs for every device.
 *
 * Out-of-range indices. The CPU reports the first index outside [0, dim) in the indices'
 * row-major order as TSR_ERR_INVALID naming its value, position and the axis (cpu/indexing.c),
 * even when the output is empty. Here a check kernel over the indices leaves that position in a
 * device flag, the gather (launched behind it, skipping bad indices) runs, and the host reads the
 * flag back through the stream's copy, which waits for the stream: one host synchronization per
 * take. That costs a round trip and drains the stream's queue at every take (a decode step's
 * embedding lookup among them); keeping the flag on the device and reporting it at the next host
 * wait would remove it, but needs an error path core does not have yet. */
#include "cuda/kernels.h"

#include <stdio.h>
#include <string.h>

#include "base/shape.h"
#include "base/status.h"
#include "core/stream.h"
#include "core/views.h"
#include "cuda/launch.h"
#include "cuda/runtime.h"
#include "cuda/strided.h"
#include "memory/buffer.h"
#include "ops/indexing.h"
#include "ops/layout.h"

enum { BLOCK = 256 };

/* ---- layouts -------------------------------------------------------------------------------- */

/* A layout over `shape` with no operand yet. */
static void layout_init(tsri_cuda_strided *s, const int64_t *shape, int ndim) {
  memset(s, 0, sizeof *s);
  s->ndim = ndim;
  s->n = 1;
  for (int d = 0; d < ndim; d++) {
    s->shape[d] = shape[d];
    s->n *= shape[d];
  }
}

/* An operand walked with `strides` (per axis of the layout, 0 where it broadcasts). */
static void layout_add(tsri_cuda_strided *s, const int64_t *strides, int64_t offset) {
  int k = s->noperands++;
  for (int d = 0; d < s->ndim; d++)
    s->strides[k][d] = strides[d];
  s->offset[k] = offset;
}

static tsr_status launch_layout(const tsri_op *op, const char *kernel, const char *options,
                                const tsri_cuda_strided *layout, void **args) {
  return tsri_cuda_launch(op, kernel, options, tsri_dim3(tsri_cuda_blocks_for(layout->n, BLOCK)),
                          tsri_dim3(BLOCK), 0, args);
}

/* copy.cuh over a two-operand layout (0 read from src, 1 written into dst), collapsed first. */
static tsr_status launch_copy(const tsri_op *op, tsri_cuda_strided *layout, const void *src,
                              void *dst, tsr_dtype dtype) {
  tsri_cuda_strided_simplify(layout);
  char options[32];
  snprintf(options, sizeof options, "-DTSR_COPY_BYTES=%zu", tsr_dtype_size(dtype));
  void *args[] = {layout, (void *)&src, &dst};
  return launch_layout(op, "copy", options, layout, args);
}

/* ---- take and take_along_axis ------------------------------------------------------------ */

/* An integer element read back from the device, as int64. */
static int64_t host_int(const unsigned char *bytes, tsr_dtype dtype) {
  uint8_t u8;
  int8_t i8;
  uint32_t u32;
  int32_t i32;
  int64_t i64;
  switch (dtype) {
    case TSR_INT8:
      memcpy(&i8, bytes, 1);
      return i8;
    case TSR_UINT32:
      memcpy(&u32, bytes, 4);
      return u32;
    case TSR_INT32:
      memcpy(&i32, bytes, 4);
      return i32;
    case TSR_INT64:
      memcpy(&i64, bytes, 8);
      return i64;
    default:
      memcpy(&u8, bytes, 1);
      return u8;
  }
}

/* The CPU's message for the index at row-major position `flat` of the indices. */
static tsr_status report_index(const tsri_op *op, int64_t flat, int64_t dim, int axis) {
  const tsri_view *a = &op->in[0], *indices = &op->in[1];
  int64_t index[TSR_MAX_NDIM], offset = indices->offset;
  for (int d = indices->ndim - 1; d >= 0; d--) {
    index[d] = flat % indices->shape[d];
    flat /= indices->shape[d];
    offset += index[d] * indices->strides[d];
  }
  unsigned char bytes[8] = {0};
  tsr_status status = op->stream->iface->copy(op->stream, bytes, tsri_view_at(indices, offset),
                                              tsr_dtype_size(indices->dtype), TSRI_COPY_TO_HOST);
  if (status != TSR_OK) return status;
  char where[160], shape[160];
  tsri_shape_str(index, indices->ndim, where, sizeof where);
  tsri_shape_str(a->shape, a->ndim, shape, sizeof shape);
  return tsri_error(TSR_ERR_INVALID,
                    "index %lld at indices%s is out of range [0, %lld) for axis %d of a %s",
                    (long long)host_int(bytes, indices->dtype), where, (long long)dim, axis, shape);
}

/* The output gathered (a_strides and idx_strides per output axis); an out-of-range index's
   element is skipped, so a bad index never reads outside a. */
static tsr_status launch_gather(const tsri_op *op, const int64_t *a_strides,
                                const int64_t *idx_strides) {
  const tsri_view *a = &op->in[0], *indices = &op->in[1], *out = &op->out;
  if (out->size == 0) return TSR_OK;
  int axis = TSRI_PARAMS(op, tsri_take_params)->axis, index_dtype = (int)indices->dtype;
  int64_t dim = a->shape[axis], axis_stride = a->strides[axis];
  tsri_cuda_strided gather;
  layout_init(&gather, out->shape, out->ndim);
  layout_add(&gather, a_strides, a->offset);
  layout_add(&gather, idx_strides, indices->offset);
  tsri_cuda_strided_simplify(&gather);
  char options[64];
  snprintf(options, sizeof options, "-DTSR_INDEXING_KIND=2 -DTSR_INDEXING_BYTES=%zu",
           tsr_dtype_size(out->dtype));
  void *args[] = {&gather, (void *)&a->data,  (void *)&indices->data, &index_dtype, &axis_stride,
                  &dim,    (void *)&out->data};
  return launch_layout(op, "indexing", options, &gather, args);
}

/* Checks every index (into a device flag), gathers the output, then reads the flag back,
   waiting for the stream. Indices proven in range at construction (core/value_range.h) skip the
   check and its synchronization. */
static tsr_status take_run(const tsri_op *op, const int64_t *a_strides,
                           const int64_t *idx_strides) {
  const tsri_take_params *params = TSRI_PARAMS(op, tsri_take_params);
  const tsri_view *a = &op->in[0], *indices = &op->in[1];
  if (indices->size == 0) return TSR_OK; /* then the output is empty too */
  int axis = params->axis, index_dtype = (int)indices->dtype;
  int64_t dim = a->shape[axis];
  if (tsri_view_values_within(indices, 0, dim)) return launch_gather(op, a_strides, idx_strides);
  tsri_buffer *flag = NULL;
  tsr_status status = tsri_buffer_alloc(op->device, sizeof(unsigned long long), &flag);
  if (status != TSR_OK) return status;
  status = tsri_cuda_status(
      cudaMemsetAsync(flag->data, 0xff, sizeof(unsigned long long), tsri_cuda_op_stream(op)),
      "take: clearing the index flag");
  if (status == TSR_OK) {
    tsri_cuda_strided check;
    layout_init(&check, indices->shape, indices->ndim);
    layout_add(&check, indices->strides, indices->offset);
    tsri_cuda_strided_simplify(&check);
    void *args[] = {&check, (void *)&indices->data, &index_dtype, &dim, &flag->data};
    status = launch_layout(op, "indexing", "-DTSR_INDEXING_KIND=1", &check, args);
  }
  if (status == TSR_OK) status = launch_gather(op, a_strides, idx_strides);
  unsigned long long first_bad = 0;
  if (status == TSR_OK) {
    status = op->stream->iface->copy(op->stream, &first_bad, flag->data, sizeof first_bad,
                                     TSRI_COPY_TO_HOST);
  } else { /* a launch failed: what was launched before it may still write the flag */
    cudaStreamSynchronize(tsri_cuda_op_stream(op));
    (void)cudaGetLastError();
  }
  tsri_buffer_release(flag); /* the stream is past every kernel that used it */
  if (status == TSR_OK && first_bad != ~0ull)
    status = report_index(op, (int64_t)first_bad, dim, axis);
  return status;
}

/* Output axes: a's before `axis`, then the indices', then a's after. */
static tsr_status cuda_take(const tsri_op *op) {
  const tsri_view *a = &op->in[0], *indices = &op->in[1];
  int axis = TSRI_PARAMS(op, tsri_take_params)->axis, q = indices->ndim;
  int64_t a_strides[TSR_MAX_NDIM], idx_strides[TSR_MAX_NDIM];
  for (int k = 0; k < op->out.ndim; k++) {
    bool in_indices = k >= axis && k < axis + q;
    a_strides[k] = k < axis ? a->strides[k] : in_indices ? 0 : a->strides[k - q + 1];
    idx_strides[k] = in_indices ? indices->strides[k - axis] : 0;
  }
  return take_run(op, a_strides, idx_strides);
}

/* Both broadcast over the output; along `axis` the index, not a's stride, moves. */
static tsr_status cuda_take_along_axis(const tsri_op *op) {
  const tsri_view *a = &op->in[0], *indices = &op->in[1];
  int axis = TSRI_PARAMS(op, tsri_take_params)->axis;
  int64_t a_strides[TSR_MAX_NDIM], idx_strides[TSR_MAX_NDIM];
  for (int k = 0; k < op->out.ndim; k++) {
    a_strides[k] = (k == axis || a->shape[k] == 1) ? 0 : a->strides[k];
    idx_strides[k] = indices->shape[k] == 1 ? 0 : indices->strides[k];
  }
  return take_run(op, a_strides, idx_strides);
}

/* ---- slice_update and concatenate ---------------------------------------------------------- */

/* tsr_slice_update_dynamic's write: the region at start 0 on the dynamic axis (the others whole),
   moved by the kernel once it has read the start on the device (indexing.cuh, kind 4). */
static tsr_status launch_dynamic_update(const tsri_op *op, tsri_cuda_strided *layout) {
  const tsri_view *update = &op->in[1], *out = &op->out;
  int axis = TSRI_PARAMS(op, tsri_slice_update_params)->dynamic_axis;
  tsri_cuda_strided_simplify(layout);
  int update_dtype = (int)update->dtype, out_dtype = (int)out->dtype;
  tsri_cuda_position start = tsri_cuda_position_of(&op->in[2]);
  int64_t last = out->shape[axis] - update->shape[axis], axis_stride = out->strides[axis];
  void *args[] = {layout,    (void *)&update->data, &update_dtype, (void *)&out->data, &out_dtype,
                  &start.at, &start.bytes,          &last,         &axis_stride};
  return launch_layout(op, "indexing", "-DTSR_INDEXING_KIND=4", layout, args);
}

/* When core donated dst's buffer (op->out_is_in0) the output already holds dst's values in dst's
   layout; otherwise dst is copied into the fresh output first. Then the update goes into the
   region start + i * step of the output: copied when the dtypes agree, else converted by the
   CPU's rules (indexing.cuh, kind 3); a dynamic start is placed by the kernel (kind 4). */
static tsr_status cuda_slice_update(const tsri_op *op) {
  const tsri_view *dst = &op->in[0], *update = &op->in[1], *out = &op->out;
  tsr_status status = TSR_OK;
  if (!op->out_is_in0 && out->size > 0) {
    tsri_cuda_strided layout;
    layout_init(&layout, dst->shape, dst->ndim);
    layout_add(&layout, dst->strides, dst->offset);
    layout_add(&layout, out->strides, out->offset);
    status = launch_copy(op, &layout, dst->data, out->data, out->dtype);
  }
  if (status != TSR_OK || update->size == 0) return status;
  const tsri_slice_update_params *p = TSRI_PARAMS(op, tsri_slice_update_params);
  int64_t region_strides[TSR_MAX_NDIM], region_offset = out->offset;
  for (int d = 0; d < out->ndim; d++) {
    region_offset += p->slice.start[d] * out->strides[d];
    region_strides[d] = out->strides[d] * p->slice.step[d];
  }
  tsri_cuda_strided layout;
  layout_init(&layout, update->shape, update->ndim);
  layout_add(&layout, update->strides, update->offset);
  layout_add(&layout, region_strides, region_offset);
  if (p->dynamic_axis >= 0) return launch_dynamic_update(op, &layout);
  if (update->dtype == out->dtype)
    return launch_copy(op, &layout, update->data, out->data, out->dtype);
  tsri_cuda_strided_simplify(&layout);
  int update_dtype = (int)update->dtype, out_dtype = (int)out->dtype;
  void *args[] = {&layout, (void *)&update->data, &update_dtype, (void *)&out->data, &out_dtype};
  return launch_layout(op, "indexing", "-DTSR_INDEXING_KIND=3", &layout, args);
}

/* Each piece copied into its place along the axis of the packed output. */
static tsr_status cuda_concatenate(const tsri_op *op) {
  const tsri_view *out = &op->out;
  if (out->size == 0) return TSR_OK;
  int axis = TSRI_PARAMS(op, tsri_concatenate_params)->axis;
  int64_t offset = out->offset;
  tsr_status status = TSR_OK;
  for (int i = 0; i < op->ninputs && status == TSR_OK; i++) {
    const tsri_view *in = &op->in[i];
    if (in->size > 0) {
      tsri_cuda_strided layout;
      layout_init(&layout, in->shape, in->ndim);
      layout_add(&layout, in->strides, in->offset);
      layout_add(&layout, out->strides, offset);
      status = launch_copy(op, &layout, in->data, out->data, out->dtype);
    }
    offset += in->shape[axis] * out->strides[axis];
  }
  return status;
}

void tsri_cuda_register_indexing(tsri_kernel_fn *table, tsri_cuda_supports_fn *supports) {
  (void)supports; /* every dtype and layout */
  table[TSRI_PRIM_TAKE] = cuda_take;
  table[TSRI_PRIM_TAKE_ALONG_AXIS] = cuda_take_along_axis;
  table[TSRI_PRIM_SLICE_UPDATE] = cuda_slice_update;
  table[TSRI_PRIM_CONCATENATE] = cuda_concatenate;
}
