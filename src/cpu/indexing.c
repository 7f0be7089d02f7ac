/* cpu/indexing.c — CPU kernels of ops/indexing.c: take and take_along_axis (indices loaded as
 * int64 and checked before anything is written) and slice_update, static or with a start read
 * here (writing in place when core donated dst's buffer as the output). Not the index checks of
 * shapes, which the ops did. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "core/views.h"
#include "cpu/convert.h"
#include "cpu/kernels.h"
#include "cpu/layout.h"
#include "cpu/rows.h"
#include "cpu/strided.h"
#include "ops/indexing.h"

#define CHUNK 256

static inline void copy_element(unsigned char *dst, const unsigned char *src, size_t element) {
  switch (element) { /* fixed sizes: each memcpy becomes one move */
    case 1:
      *dst = *src;
      break;
    case 2:
      memcpy(dst, src, 2);
      break;
    case 4:
      memcpy(dst, src, 4);
      break;
    default:
      memcpy(dst, src, 8);
      break;
  }
}

/* ---- indices ------------------------------------------------------------------------------- */

/* "[1, 2]": the multi-index of flat position `flat` in `shape`, for messages. */
static const char *position_str(int64_t flat, const int64_t *shape, int ndim, char *buf,
                                size_t len) {
  int64_t index[TSR_MAX_NDIM];
  for (int d = ndim - 1; d >= 0; d--) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return tsri_shape_str(index, ndim, buf, len);
}

/* Every index of `indices` as int64, row-major in a new array (free it), each checked against
 * [0, dim): TSR_ERR_INVALID naming the first one outside, its position and the dim. */
static tsr_status load_indices(const tsri_view *indices, int64_t dim, int axis, const tsri_view *a,
                               int64_t **out) {
  int64_t *values = malloc((size_t)(indices->size > 0 ? indices->size : 1) * sizeof *values);
  if (!values)
    return tsri_error(TSR_ERR_NOMEM, "out of host memory for %lld indices",
                      (long long)indices->size);
  if (indices->size > 0) {
    const int64_t *strides[1] = {indices->strides};
    int64_t offsets[1] = {indices->offset}, row = 0;
    tsri_row_walker walker;
    tsri_row_walker_init(&walker, indices, 1, strides, offsets);
    int last = indices->ndim - 1;
    int64_t n = last >= 0 ? indices->shape[last] : 1, stride = last >= 0 ? strides[0][last] : 0;
    size_t element = tsr_dtype_size(indices->dtype);
    do {
      tsri_cpu_load_i64((const unsigned char *)indices->data + walker.offset[0] * (int64_t)element,
                        indices->dtype, stride, n, values + row * n);
      row++;
    } while (tsri_row_walker_next(&walker));
  }
  for (int64_t i = 0; i < indices->size; i++) {
    if (values[i] >= 0 && values[i] < dim) continue;
    char where[160], shape[160];
    position_str(i, indices->shape, indices->ndim, where, sizeof where);
    tsri_shape_str(a->shape, a->ndim, shape, sizeof shape);
    long long value = (long long)values[i];
    free(values);
    return tsri_error(TSR_ERR_INVALID,
                      "index %lld at indices%s is out of range [0, %lld) for axis %d of a %s",
                      value, where, (long long)dim, axis, shape);
  }
  *out = values;
  return TSR_OK;
}

/* Gathers the output's elements: per output row, element i comes from a at
   a_offset + i * a_step + index * axis_stride, with index = values[idx_offset + i * idx_step]. */
static void gather_rows(const tsri_op *op, const tsri_view *a, const int64_t *values,
                        const int64_t *a_strides, const int64_t *idx_strides) {
  size_t element = tsr_dtype_size(op->out.dtype);
  int axis = TSRI_PARAMS(op, tsri_take_params)->axis;
  int64_t axis_stride = a->strides[axis];
  const int64_t *strides[3] = {a_strides, idx_strides, op->out.strides};
  int64_t offsets[3] = {a->offset, 0, op->out.offset};
  tsri_row_walker walker;
  tsri_row_walker_init(&walker, &op->out, 3, strides, offsets);
  int last = op->out.ndim - 1;
  int64_t n = last >= 0 ? op->out.shape[last] : 1;
  int64_t a_step = last >= 0 ? a_strides[last] : 0, idx_step = last >= 0 ? idx_strides[last] : 0;
  const unsigned char *src = (const unsigned char *)a->data;
  unsigned char *dst = (unsigned char *)op->out.data;
  do {
    const int64_t *row_values = values + walker.offset[1];
    unsigned char *out = dst + walker.offset[2] * (int64_t)element;
    if (a_step == 1 && idx_step == 0) { /* a contiguous row of a, as in an embedding lookup */
      memcpy(out, src + (walker.offset[0] + row_values[0] * axis_stride) * (int64_t)element,
             (size_t)n * element);
      continue;
    }
    for (int64_t i = 0; i < n; i++) {
      int64_t at = walker.offset[0] + i * a_step + row_values[i * idx_step] * axis_stride;
      copy_element(out + i * (int64_t)element, src + at * (int64_t)element, element);
    }
  } while (tsri_row_walker_next(&walker));
}

static tsr_status cpu_take(const tsri_op *op) {
  const tsri_view *a = &op->in[0], *indices = &op->in[1];
  int axis = TSRI_PARAMS(op, tsri_take_params)->axis;
  int64_t *values = NULL;
  tsr_status status = load_indices(indices, a->shape[axis], axis, a, &values);
  if (status == TSR_OK && op->out.size > 0) {
    /* Output axes: a's before `axis`, then the indices' (read through `values`), then a's after. */
    int64_t a_strides[TSR_MAX_NDIM], idx_strides[TSR_MAX_NDIM], packed[TSR_MAX_NDIM];
    tsri_contiguous_strides(indices->shape, indices->ndim, packed);
    int q = indices->ndim;
    for (int k = 0; k < op->out.ndim; k++) {
      bool in_indices = k >= axis && k < axis + q;
      a_strides[k] = k < axis ? a->strides[k] : in_indices ? 0 : a->strides[k - q + 1];
      idx_strides[k] = in_indices ? packed[k - axis] : 0;
    }
    gather_rows(op, a, values, a_strides, idx_strides);
  }
  free(values);
  return status;
}

static tsr_status cpu_take_along_axis(const tsri_op *op) {
  const tsri_view *a = &op->in[0], *indices = &op->in[1];
  int axis = TSRI_PARAMS(op, tsri_take_params)->axis;
  int64_t *values = NULL;
  tsr_status status = load_indices(indices, a->shape[axis], axis, a, &values);
  if (status == TSR_OK && op->out.size > 0) {
    /* Both broadcast over the output; along `axis` the index, not a's stride, moves. */
    int64_t a_strides[TSR_MAX_NDIM], idx_strides[TSR_MAX_NDIM];
    tsri_contiguous_strides(indices->shape, indices->ndim, idx_strides);
    for (int k = 0; k < op->out.ndim; k++) {
      a_strides[k] = (k == axis || a->shape[k] == 1) ? 0 : a->strides[k];
      if (indices->shape[k] == 1) idx_strides[k] = 0;
    }
    gather_rows(op, a, values, a_strides, idx_strides);
  }
  free(values);
  return status;
}

/* ---- slice_update -------------------------------------------------------------------------- */

/* Writes update (its dtype) into the strided region of the output (`dtype`, the output's), row
   by row. */
static void write_converted(const tsri_cpu_block *region, tsr_dtype dtype,
                            const tsri_view *update) {
  size_t out_size = tsr_dtype_size(dtype), in_size = tsr_dtype_size(update->dtype);
  const int64_t *strides[2] = {update->strides, region->strides};
  int64_t offsets[2] = {update->offset, region->offset};
  tsri_row_walker walker;
  tsri_row_walker_init(&walker, update, 2, strides, offsets);
  int last = update->ndim - 1;
  int64_t n = last >= 0 ? update->shape[last] : 1;
  int64_t in_step = last >= 0 ? update->strides[last] : 0;
  int64_t out_step = last >= 0 ? region->strides[last] : 0;
  const unsigned char *src = (const unsigned char *)update->data;
  int64_t scratch[CHUNK]; /* 8-byte aligned room for CHUNK elements of any dtype */
  do {
    for (int64_t first = 0; first < n; first += CHUNK) {
      int64_t count = n - first < CHUNK ? n - first : CHUNK;
      const unsigned char *in = src + (walker.offset[0] + first * in_step) * (int64_t)in_size;
      unsigned char *out = region->base + (walker.offset[1] + first * out_step) * (int64_t)out_size;
      if (out_step == 1) {
        tsri_cpu_convert_row(in, update->dtype, in_step, count, out, dtype);
        continue;
      }
      tsri_cpu_convert_row(in, update->dtype, in_step, count, scratch, dtype);
      for (int64_t i = 0; i < count; i++)
        copy_element(out + i * out_step * (int64_t)out_size,
                     (const unsigned char *)scratch + i * (int64_t)out_size, out_size);
    }
  } while (tsri_row_walker_next(&walker));
}

/* When core donated dst's buffer (op->out_is_in0: nothing else can ever read it), the output
   already holds dst's values in dst's layout and only the region is written; otherwise the fresh
   output gets dst's values first. */
static tsr_status cpu_slice_update(const tsri_op *op) {
  const tsri_view *dst = &op->in[0], *update = &op->in[1], *out = &op->out;
  size_t element = tsr_dtype_size(out->dtype);
  if (!op->out_is_in0 && out->size > 0) {
    tsri_cpu_block to = {out->data, out->offset, out->strides};
    tsri_cpu_block from = {dst->data, dst->offset, dst->strides};
    tsri_cpu_copy_block(&to, &from, dst->shape, dst->ndim, element);
  }
  if (update->size == 0) return TSR_OK;
  const tsri_slice_update_params *p = TSRI_PARAMS(op, tsri_slice_update_params);
  int64_t region_strides[TSR_MAX_NDIM], region_offset = out->offset;
  for (int d = 0; d < out->ndim; d++) {
    region_offset += p->slice.start[d] * out->strides[d];
    region_strides[d] = out->strides[d] * p->slice.step[d];
  }
  if (p->dynamic_axis >= 0) { /* the start read now, clamped so the write stays inside dst */
    int axis = p->dynamic_axis;
    int64_t start = tsri_cpu_view_scalar_i64(&op->in[2]),
            last = out->shape[axis] - update->shape[axis];
    region_offset += (start < 0 ? 0 : start > last ? last : start) * out->strides[axis];
  }
  tsri_cpu_block region = {out->data, region_offset, region_strides};
  if (update->dtype == out->dtype) {
    tsri_cpu_block from = {update->data, update->offset, update->strides};
    tsri_cpu_copy_block(&region, &from, update->shape, update->ndim, element);
  } else {
    write_converted(&region, out->dtype, update);
  }
  return TSR_OK;
}

void tsri_cpu_register_indexing(tsri_kernel_fn *table) {
  table[TSRI_PRIM_TAKE] = cpu_take;
  table[TSRI_PRIM_TAKE_ALONG_AXIS] = cpu_take_along_axis;
  table[TSRI_PRIM_SLICE_UPDATE] = cpu_slice_update;
}
