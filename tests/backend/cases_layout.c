/* tests/backend/cases_layout.c — conformance cases for creation (full, arange, astype), layout
 * (reshape, transpose, slice, broadcast_to, concatenate, expand_dims/squeeze, contiguous) and
 * indexing (take, take_along_axis, slice_update, slice_update_dynamic). Every case here is exact:
 * these ops move or convert values by rules that leave no room (ops.h), so every backend and layout
 * gives the same bits. */
#include "harness.h"

static tsr_status b_full(tsr_array **o, tsr_array *const *in, const conf_params *p, tsr_stream *s) {
  (void)in;
  return tsr_full(&o[0], p->shape, p->ndim, p->x, p->dtype, s);
}

static tsr_status b_arange(tsr_array **o, tsr_array *const *in, const conf_params *p,
                           tsr_stream *s) {
  (void)in;
  return tsr_arange(&o[0], p->x, p->y, p->z, p->dtype, s);
}

static tsr_status b_astype(tsr_array **o, tsr_array *const *in, const conf_params *p,
                           tsr_stream *s) {
  return tsr_astype(&o[0], in[0], p->dtype, s);
}

static tsr_status b_reshape(tsr_array **o, tsr_array *const *in, const conf_params *p,
                            tsr_stream *s) {
  return tsr_reshape(&o[0], in[0], p->shape, p->ndim, s);
}

/* naxes 0: reverse the axes. */
static tsr_status b_transpose(tsr_array **o, tsr_array *const *in, const conf_params *p,
                              tsr_stream *s) {
  return tsr_transpose(&o[0], in[0], p->naxes ? p->axes : NULL, p->naxes, s);
}

static tsr_status b_slice(tsr_array **o, tsr_array *const *in, const conf_params *p,
                          tsr_stream *s) {
  return tsr_slice(&o[0], in[0], p->start, p->stop, p->step, p->naxes, s);
}

static tsr_status b_broadcast_to(tsr_array **o, tsr_array *const *in, const conf_params *p,
                                 tsr_stream *s) {
  return tsr_broadcast_to(&o[0], in[0], p->shape, p->ndim, s);
}

/* p->k inputs joined along p->axis. */
static tsr_status b_concatenate(tsr_array **o, tsr_array *const *in, const conf_params *p,
                                tsr_stream *s) {
  return tsr_concatenate(&o[0], in, p->k, p->axis, s);
}

/* expand_dims at p->axis, then squeeze that axis again: the view and the original. */
static tsr_status b_expand_squeeze(tsr_array **o, tsr_array *const *in, const conf_params *p,
                                   tsr_stream *s) {
  tsr_status st = tsr_expand_dims(&o[0], in[0], p->axis, s);
  return st == TSR_OK ? tsr_squeeze(&o[1], o[0], &p->axis, 1, s) : st;
}

static tsr_status b_contiguous(tsr_array **o, tsr_array *const *in, const conf_params *p,
                               tsr_stream *s) {
  (void)p;
  return tsr_contiguous(&o[0], in[0], s);
}

static tsr_status b_take(tsr_array **o, tsr_array *const *in, const conf_params *p, tsr_stream *s) {
  return tsr_take(&o[0], in[0], in[1], p->axis, s);
}

static tsr_status b_take_along(tsr_array **o, tsr_array *const *in, const conf_params *p,
                               tsr_stream *s) {
  return tsr_take_along_axis(&o[0], in[0], in[1], p->axis, s);
}

/* p->flag: dst is made here (in0 + in0) and released before evaluation, so slice_update may
   reuse its buffer (the KV-cache path); p->flag2: dst is a transpose of in0, released, whose
   buffer the harness still holds through in0 (the harness checks in0 is left alone); otherwise
   in0 itself, held by the harness, is copied. */
static tsr_status b_slice_update(tsr_array **o, tsr_array *const *in, const conf_params *p,
                                 tsr_stream *s) {
  tsr_array *dst = NULL;
  tsr_status st = p->flag    ? tsr_add(&dst, in[0], in[0], s)
                  : p->flag2 ? tsr_transpose(&dst, in[0], NULL, 0, s)
                             : TSR_OK;
  if (st == TSR_OK)
    st = tsr_slice_update(&o[0], dst ? dst : in[0], in[1], p->start, p->stop, p->step, p->naxes, s);
  tsr_array_release(dst);
  return st;
}

/* slice_update_dynamic on p->axis at the start conf_position_scalar gives (y). p->flag: dst is
   made here (in0 + in0) and released, so the buffer is reused (one output); otherwise a second
   output is where the result differs from tsr_slice_update at the clamped start on the same
   backend (all false). */
static tsr_status b_slice_update_dynamic(tsr_array **o, tsr_array *const *in, const conf_params *p,
                                         tsr_stream *s) {
  int ndim = tsr_array_ndim(in[0]), axis = p->axis < 0 ? p->axis + ndim : p->axis;
  int64_t n = tsr_array_dim(in[1], axis), last = tsr_array_dim(in[0], axis) - n;
  int64_t clamped = p->y < 0 ? 0 : p->y > (double)last ? last : (int64_t)p->y;
  int64_t start[TSR_MAX_NDIM] = {0}, stop[TSR_MAX_NDIM];
  for (int d = 0; d < ndim; d++)
    stop[d] = tsr_array_dim(in[0], d);
  start[axis] = clamped;
  stop[axis] = clamped + n;
  tsr_array *position = NULL, *dst = NULL, *fixed = NULL;
  tsr_status st = conf_position_scalar(&position, p, s);
  if (st == TSR_OK && p->flag) st = tsr_add(&dst, in[0], in[0], s);
  if (st == TSR_OK)
    st = tsr_slice_update_dynamic(&o[0], dst ? dst : in[0], in[1], position, p->axis, s);
  if (st == TSR_OK && !p->flag)
    st = tsr_slice_update(&fixed, in[0], in[1], start, stop, NULL, ndim, s);
  if (st == TSR_OK && fixed) st = tsr_not_equal(&o[1], o[0], fixed, s);
  tsr_array *made[] = {position, dst, fixed};
  for (int i = 0; i < 3; i++)
    tsr_array_release(made[i]);
  return st;
}

#define F32 TSR_FLOAT32
#define F16 TSR_FLOAT16
#define BF16 TSR_BFLOAT16
#define U CONF_UNIFORM

const conf_case conf_cases_layout[] = {
    /* ---- creation: values rounded or truncated once by ops.h's rules ---- */
    {CONF_CASE("full_f32", b_full, 0, 1), .p = {CONF_SHAPE(3, 7), .x = 1.25, .dtype = F32}},
    {CONF_CASE("full_bf16_rounds", b_full, 0, 1),
     .p = {CONF_SHAPE(33), .x = 3.14159265, .dtype = BF16}},
    {CONF_CASE("full_int32_truncates", b_full, 0, 1),
     .p = {CONF_SHAPE(7, 1), .x = -7.9, .dtype = TSR_INT32}},
    {CONF_CASE("full_bool", b_full, 0, 1), .p = {CONF_SHAPE(5), .x = 0.5, .dtype = TSR_BOOL}},
    {CONF_CASE("arange_f32", b_arange, 0, 1), .p = {.x = 0.5, .y = 33, .z = 0.75, .dtype = F32}},
    {CONF_CASE("arange_int64", b_arange, 0, 1),
     .p = {.x = -5, .y = 60, .z = 3, .dtype = TSR_INT64}},
    {CONF_CASE("arange_f16_down", b_arange, 0, 1),
     .p = {.x = 2, .y = -2.1, .z = -0.0625, .dtype = F16}},
    {CONF_CASE("astype_f32_f16_overflow", b_astype, 1, 1),
     .in = {CONF_IN(F32, U, -1e5, 1e5, 7, 33)}, .p = {.dtype = F16}},
    {CONF_CASE("astype_f32_bf16", b_astype, 1, 1), .in = {CONF_IN(F32, U, -1e3, 1e3, 33, 7)},
     .p = {.dtype = BF16}},
    {CONF_CASE("astype_f32_int32_saturates", b_astype, 1, 1),
     .in = {CONF_IN(F32, U, -3e9, 3e9, 7, 33)}, .p = {.dtype = TSR_INT32}},
    {CONF_CASE("astype_f32_special_int8", b_astype, 1, 1),
     .in = {CONF_IN(F32, CONF_SPECIAL, -300, 300, 3, 65)}, .p = {.dtype = TSR_INT8}},
    {CONF_CASE("astype_int32_f32_rounds", b_astype, 1, 1),
     .in = {CONF_IN(TSR_INT32, U, -0x1p31, 0x1p31, 7, 33)}, .p = {.dtype = F32}},
    {CONF_CASE("astype_int64_int8_wraps", b_astype, 1, 1),
     .in = {CONF_IN(TSR_INT64, U, -1e6, 1e6, 3, 7, 5)}, .p = {.dtype = TSR_INT8}},
    {CONF_CASE("astype_f16_special_bool", b_astype, 1, 1),
     .in = {CONF_IN(F16, CONF_SPECIAL, -2, 3, 7, 33)}, .p = {.dtype = TSR_BOOL}},
    {CONF_CASE("astype_bf16_f16", b_astype, 1, 1), .in = {CONF_IN(BF16, U, -1e5, 1e5, 33, 7)},
     .p = {.dtype = F16}},
    {CONF_CASE("astype_uint32_bits_f32", b_astype, 1, 1),
     .in = {CONF_IN(TSR_UINT32, CONF_BITS, 0, 0, 7, 33)}, .p = {.dtype = F32}},

    /* ---- layout ---- */
    {CONF_CASE("reshape_f32", b_reshape, 1, 1), .in = {CONF_IN(F32, U, -1, 1, 7, 33)},
     .p = {CONF_SHAPE(33, 7)}},
    {CONF_CASE("reshape_infer_int32", b_reshape, 1, 1),
     .in = {CONF_IN(TSR_INT32, U, -1000, 1000, 3, 5, 7)}, .p = {CONF_SHAPE(7, -1)}},
    {CONF_CASE("transpose_3d_f32", b_transpose, 1, 1), .in = {CONF_IN(F32, U, -1, 1, 3, 7, 5)},
     .p = {.naxes = 3, .axes = {2, 0, 1}}},
    {CONF_CASE("transpose_reverse_bf16", b_transpose, 1, 1),
     .in = {CONF_IN(BF16, U, -1, 1, 33, 65)}},
    {CONF_CASE("slice_step3_f32", b_slice, 1, 1), .in = {CONF_IN(F32, U, -1, 1, 33, 7)},
     .p = {.naxes = 2, .start = {1, 0}, .stop = {30, 7}, .step = {3, 1}}},
    {CONF_CASE("slice_negative_step_int32", b_slice, 1, 1),
     .in = {CONF_IN(TSR_INT32, U, -99, 99, 7, 33)},
     .p = {.naxes = 2, .start = {-1, 30}, .stop = {-8, 2}, .step = {-1, -4}}},
    {CONF_CASE("broadcast_to_f16", b_broadcast_to, 1, 1), .in = {CONF_IN(F16, U, -1, 1, 3, 1)},
     .p = {CONF_SHAPE(5, 3, 7)}},
    {CONF_CASE("concatenate_axis0_f32", b_concatenate, 3, 1),
     .in = {CONF_IN(F32, U, -1, 1, 3, 7), CONF_IN(F32, U, -1, 1, 5, 7),
            CONF_IN(F32, U, -1, 1, 1, 7)},
     .p = {.k = 3, .axis = 0}},
    {CONF_CASE("concatenate_axis1_int8", b_concatenate, 2, 1),
     .in = {CONF_IN(TSR_INT8, U, -128, 128, 5, 3), CONF_IN(TSR_INT8, U, -128, 128, 5, 33)},
     .p = {.k = 2, .axis = 1}},
    {CONF_CASE("expand_dims_squeeze_bf16", b_expand_squeeze, 1, 2),
     .in = {CONF_IN(BF16, U, -1, 1, 7, 33)}, .p = {.axis = 1}},
    {CONF_CASE("contiguous_uint8", b_contiguous, 1, 1),
     .in = {CONF_IN(TSR_UINT8, U, 0, 256, 3, 7, 33)}},

    /* ---- indexing ---- */
    {CONF_CASE("take_axis0_f32", b_take, 2, 1),
     .in = {CONF_IN(F32, U, -1, 1, 33, 7), CONF_IN(TSR_INT32, U, 0, 33, 5)}, .p = {.axis = 0}},
    {CONF_CASE("take_axis1_int64_indices_bf16", b_take, 2, 1),
     .in = {CONF_IN(BF16, U, -1, 1, 7, 33), CONF_IN(TSR_INT64, U, 0, 33, 2, 3)}, .p = {.axis = 1}},
    {CONF_CASE("take_last_axis_uint8_indices", b_take, 2, 1),
     .in = {CONF_IN(TSR_INT32, U, -50, 50, 3, 5, 7), CONF_IN(TSR_UINT8, U, 0, 7, 4)},
     .p = {.axis = -1}},
    {CONF_CASE("take_along_axis1_f32", b_take_along, 2, 1),
     .in = {CONF_IN(F32, U, -1, 1, 7, 33), CONF_IN(TSR_INT32, U, 0, 33, 7, 5)}, .p = {.axis = 1}},
    {CONF_CASE("take_along_axis0_broadcast_f16", b_take_along, 2, 1),
     .in = {CONF_IN(F16, U, -1, 1, 7, 33), CONF_IN(TSR_INT32, U, 0, 7, 3, 1)}, .p = {.axis = 0}},
    {CONF_CASE("slice_update_f32", b_slice_update, 2, 1),
     .in = {CONF_IN(F32, U, -1, 1, 33, 7), CONF_IN(F32, U, -1, 1, 5, 7)},
     .p = {.naxes = 2, .start = {2, 0}, .stop = {12, 7}, .step = {2, 1}}},
    {CONF_CASE("slice_update_broadcast_f16_into_f32", b_slice_update, 2, 1),
     .in = {CONF_IN(F32, U, -1, 1, 7, 33), CONF_IN(F16, U, -1, 1, 1, 3)},
     .p = {.naxes = 2, .start = {1, 30}, .stop = {7, 33}, .step = {3, 1}}},
    {CONF_CASE("slice_update_reused_buffer_bf16", b_slice_update, 2, 1),
     .in = {CONF_IN(BF16, U, -1, 1, 3, 65, 7), CONF_IN(BF16, U, -1, 1, 3, 1, 7)},
     .p = {.flag = true, .naxes = 2, .start = {0, 64}, .stop = {3, 65}, .step = {1, 1}}},
    {CONF_CASE("slice_update_released_view_dst_f32", b_slice_update, 2, 1),
     .in = {CONF_IN(F32, U, -1, 1, 7, 33), CONF_IN(F32, U, -1, 1, 3, 7)},
     .p = {.flag2 = true, .naxes = 2, .start = {5, 0}, .stop = {20, 7}, .step = {5, 1}}},
    {CONF_CASE("slice_update_dynamic_f32_int32", b_slice_update_dynamic, 2, 2),
     .in = {CONF_IN(F32, U, -1, 1, 3, 33, 7), CONF_IN(F32, U, -1, 1, 3, 5, 7)},
     .p = {.axis = 1, .y = 11, .dtype = TSR_INT32, CONF_SHAPE(1)}},
    {CONF_CASE("slice_update_dynamic_clamped_high_f16_into_f32", b_slice_update_dynamic, 2, 2),
     .in = {CONF_IN(F32, U, -1, 1, 7, 33), CONF_IN(F16, U, -1, 1, 7, 3)},
     .p = {.axis = -1, .y = 40, .z = 1, .dtype = TSR_INT64, CONF_SHAPE(1, 1)}},
    {CONF_CASE("slice_update_dynamic_negative_start_int32", b_slice_update_dynamic, 2, 2),
     .in = {CONF_IN(TSR_INT32, U, -99, 99, 9, 5), CONF_IN(TSR_INT32, U, -99, 99, 2, 5)},
     .p = {.axis = 0, .y = -7, .dtype = TSR_INT64, .ndim = 0}},
    {CONF_CASE("slice_update_dynamic_reused_buffer_bf16", b_slice_update_dynamic, 2, 1),
     .in = {CONF_IN(BF16, U, -1, 1, 3, 65, 7), CONF_IN(BF16, U, -1, 1, 3, 1, 7)},
     .p = {.flag = true, .axis = 1, .y = 64, .dtype = TSR_INT32, CONF_SHAPE(1)}},
};
const size_t conf_cases_layout_count = sizeof conf_cases_layout / sizeof conf_cases_layout[0];
