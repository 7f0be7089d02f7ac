/* cpu/nn.c — CPU kernels of ops/nn.c: softmax, rms_norm and rope, over any input layout, float32
 * inside; sdpa is in cpu/attention.c. Rows are handled in chunks of CHUNK elements whose partial
 * sums are added in float32, so a float32 row read in place and a strided or float16 row loaded
 * chunk by chunk give the same numbers, and a long row's sum errs like CHUNK + n/CHUNK terms,
 * not n. */
#include "cpu/kernels.h"

#include <math.h>

#include "base/half.h"
#include "cpu/attention.h"
#include "cpu/gemm.h"
#include "cpu/rows.h"
#include "cpu/strided.h"
#include "ops/nn.h"

#define CHUNK 256

/* Writes n float32 values as `dtype` (a float dtype) at `stride` elements apart. */
static void store_f32_strided(void *base, tsr_dtype dtype, int64_t stride, int64_t n,
                              const float *src) {
  if (stride == 1) {
    tsri_cpu_store_f32(base, dtype, n, src);
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    if (dtype == TSR_FLOAT32)
      ((float *)base)[i * stride] = src[i];
    else if (dtype == TSR_FLOAT16)
      ((uint16_t *)base)[i * stride] = tsri_f32_to_f16(src[i]);
    else
      ((uint16_t *)base)[i * stride] = tsri_f32_to_bf16(src[i]);
  }
}

/* The lines of x and out along `axis`: cpu/strided.h's row walker over every other axis, with
 * the axis moved last (the walker's own init takes the output's last axis as the row). Holds the
 * arrays the walker points into, so it stays where it was initialized. */
typedef struct {
  int64_t shape[TSR_MAX_NDIM];
  int64_t strides[2][TSR_MAX_NDIM];
  tsri_row_walker walker;
  int64_t length, x_stride, out_stride; /* along the axis */
} axis_lines;

static void axis_lines_init(axis_lines *lines, const tsri_view *x, const tsri_view *out, int axis) {
  int n = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (int d = 0; d < out->ndim; d++) {
      if ((d == axis) != (pass == 1)) continue;
      lines->shape[n] = out->shape[d];
      lines->strides[0][n] = x->strides[d];
      lines->strides[1][n] = out->strides[d];
      n++;
    }
  }
  tsri_row_walker *w = &lines->walker;
  *w = (tsri_row_walker){.ndim = n, .shape = lines->shape, .noperands = 2};
  w->strides[0] = lines->strides[0];
  w->strides[1] = lines->strides[1];
  w->offset[0] = x->offset;
  w->offset[1] = out->offset;
  lines->length = out->shape[axis];
  lines->x_stride = x->strides[axis];
  lines->out_stride = out->strides[axis];
}

/* ---- row arithmetic ------------------------------------------------------------------------
 * Reductions keep LANES independent accumulators (no loop-carried chain through one register)
 * and every loop runs blocks of a constant LANES elements, which the compiler turns into vector
 * instructions at -O2; the tail is scalar. A chunk's sum is then over at most 32 + 7 terms per
 * lane, plus the 7 that join the lanes: within the CHUNK-term bound the tests assume. */

#define LANES 8

static float max_of(const float *v, int64_t n, float running) {
  float lane[LANES];
  for (int j = 0; j < LANES; j++)
    lane[j] = running;
  int64_t i = 0;
  for (; i + LANES <= n; i += LANES)
    for (int j = 0; j < LANES; j++) /* a NaN is skipped here and poisons the sum */
      lane[j] = v[i + j] > lane[j] ? v[i + j] : lane[j];
  for (; i < n; i++)
    lane[0] = v[i] > lane[0] ? v[i] : lane[0];
  for (int j = 1; j < LANES; j++)
    lane[0] = lane[j] > lane[0] ? lane[j] : lane[0];
  return lane[0];
}

/* sum of v[i] * v[i] when `squares`, else of v[i]. */
static float sum_of(const float *v, int64_t n, bool squares) {
  float lane[LANES] = {0};
  int64_t i = 0;
  if (squares) {
    for (; i + LANES <= n; i += LANES)
      for (int j = 0; j < LANES; j++)
        lane[j] += v[i + j] * v[i + j];
    for (; i < n; i++)
      lane[0] += v[i] * v[i];
  } else {
    for (; i + LANES <= n; i += LANES)
      for (int j = 0; j < LANES; j++)
        lane[j] += v[i + j];
    for (; i < n; i++)
      lane[0] += v[i];
  }
  for (int j = 1; j < LANES; j++)
    lane[0] += lane[j];
  return lane[0];
}

/* y[i] = x[i] * a * (w ? w[i] : 1), in that order of products. */
static void scale_row(const float *x, float a, const float *w, float *y, int64_t n) {
  int64_t i = 0;
  if (w) {
    for (; i + LANES <= n; i += LANES)
      for (int j = 0; j < LANES; j++)
        y[i + j] = x[i + j] * a * w[i + j];
    for (; i < n; i++)
      y[i] = x[i] * a * w[i];
  } else {
    for (; i + LANES <= n; i += LANES)
      for (int j = 0; j < LANES; j++)
        y[i + j] = x[i + j] * a;
    for (; i < n; i++)
      y[i] = x[i] * a;
  }
}

/* ---- softmax ---------------------------------------------------------------------------- */

/* e[i] = exp(v[i] - max); returns their float32 sum. */
static float exp_shifted(const float *v, float *e, int64_t n, float max) {
  for (int64_t i = 0; i < n; i++)
    e[i] = expf(v[i] - max);
  return sum_of(e, n, false);
}

/* A float32 row read and written in place (the common case: the last axis, contiguous; and
 * sdpa's scores). */
void tsri_cpu_softmax_row_f32(const float *x, float *y, int64_t n) {
  float max = -INFINITY, sum = 0.0f;
  max = max_of(x, n, max);
  for (int64_t start = 0; start < n; start += CHUNK)
    sum += exp_shifted(x + start, y + start, n - start < CHUNK ? n - start : CHUNK, max);
  scale_row(y, 1.0f / sum, NULL, y, n);
}

/* Any dtype and strides: three passes over chunks loaded to float32 (max, sum, write). */
static void softmax_row_any(const unsigned char *x, tsr_dtype x_dtype, int64_t x_stride,
                            unsigned char *y, tsr_dtype y_dtype, int64_t y_stride, int64_t n) {
  float chunk[CHUNK], e[CHUNK], max = -INFINITY, sum = 0.0f;
  int64_t x_step = x_stride * (int64_t)tsr_dtype_size(x_dtype);
  int64_t y_step = y_stride * (int64_t)tsr_dtype_size(y_dtype);
  for (int64_t start = 0; start < n; start += CHUNK) {
    int64_t len = n - start < CHUNK ? n - start : CHUNK;
    tsri_cpu_load_f32(x + start * x_step, x_dtype, x_stride, len, chunk);
    max = max_of(chunk, len, max);
  }
  for (int64_t start = 0; start < n; start += CHUNK) {
    int64_t len = n - start < CHUNK ? n - start : CHUNK;
    tsri_cpu_load_f32(x + start * x_step, x_dtype, x_stride, len, chunk);
    sum += exp_shifted(chunk, e, len, max);
  }
  float inverse = 1.0f / sum;
  for (int64_t start = 0; start < n; start += CHUNK) {
    int64_t len = n - start < CHUNK ? n - start : CHUNK;
    tsri_cpu_load_f32(x + start * x_step, x_dtype, x_stride, len, chunk);
    exp_shifted(chunk, e, len, max);
    scale_row(e, inverse, NULL, e, len);
    store_f32_strided(y + start * y_step, y_dtype, y_stride, len, e);
  }
}

static tsr_status cpu_softmax(const tsri_op *op) {
  if (op->out.size == 0) return TSR_OK;
  const tsri_view *x = &op->in[0], *y = &op->out;
  axis_lines lines;
  axis_lines_init(&lines, x, y, TSRI_PARAMS(op, tsri_softmax_params)->axis);
  bool in_place = x->dtype == TSR_FLOAT32 && y->dtype == TSR_FLOAT32 && lines.x_stride == 1 &&
                  lines.out_stride == 1;
  size_t x_size = tsr_dtype_size(x->dtype), out_size = tsr_dtype_size(y->dtype);
  const unsigned char *x_data = (const unsigned char *)x->data;
  unsigned char *out_data = (unsigned char *)y->data;
  do {
    const unsigned char *row = x_data + lines.walker.offset[0] * (int64_t)x_size;
    unsigned char *out = out_data + lines.walker.offset[1] * (int64_t)out_size;
    if (in_place)
      tsri_cpu_softmax_row_f32((const float *)(const void *)row, (float *)(void *)out,
                               lines.length);
    else
      softmax_row_any(row, x->dtype, lines.x_stride, out, y->dtype, lines.out_stride, lines.length);
  } while (tsri_row_walker_next(&lines.walker));
  return TSR_OK;
}

/* ---- rms_norm ----------------------------------------------------------------------------- */

typedef struct {
  const unsigned char *x, *weight; /* weight NULL: 1 */
  unsigned char *out;
  int64_t x_stride, weight_stride, n;
  tsr_dtype x_dtype, weight_dtype, out_dtype;
  float eps;
} norm_row;

static float inverse_rms(float sum_squares, int64_t n, float eps) {
  return 1.0f / sqrtf(sum_squares / (float)n + eps);
}

/* float32 row, weight and output, unit strides: in place. */
static void rms_norm_row_f32(const norm_row *row) {
  const float *x = (const float *)(const void *)row->x;
  const float *w = (const float *)(const void *)row->weight;
  float *y = (float *)(void *)row->out, sum = 0.0f;
  for (int64_t start = 0; start < row->n; start += CHUNK)
    sum += sum_of(x + start, row->n - start < CHUNK ? row->n - start : CHUNK, true);
  float r = inverse_rms(sum, row->n, row->eps);
  scale_row(x, r, w, y, row->n);
}

static void rms_norm_row_any(const norm_row *row) {
  float chunk[CHUNK], w[CHUNK], sum = 0.0f;
  int64_t x_step = row->x_stride * (int64_t)tsr_dtype_size(row->x_dtype);
  int64_t w_step = row->weight_stride * (int64_t)tsr_dtype_size(row->weight_dtype);
  int64_t out_size = (int64_t)tsr_dtype_size(row->out_dtype);
  for (int64_t start = 0; start < row->n; start += CHUNK) {
    int64_t len = row->n - start < CHUNK ? row->n - start : CHUNK;
    tsri_cpu_load_f32(row->x + start * x_step, row->x_dtype, row->x_stride, len, chunk);
    sum += sum_of(chunk, len, true);
  }
  float r = inverse_rms(sum, row->n, row->eps);
  for (int64_t start = 0; start < row->n; start += CHUNK) {
    int64_t len = row->n - start < CHUNK ? row->n - start : CHUNK;
    tsri_cpu_load_f32(row->x + start * x_step, row->x_dtype, row->x_stride, len, chunk);
    if (row->weight)
      tsri_cpu_load_f32(row->weight + start * w_step, row->weight_dtype, row->weight_stride, len,
                        w);
    scale_row(chunk, r, row->weight ? w : NULL, chunk, len);
    tsri_cpu_store_f32(row->out + start * out_size, row->out_dtype, len, chunk);
  }
}

static tsr_status cpu_rms_norm(const tsri_op *op) {
  if (op->out.size == 0) return TSR_OK;
  const tsri_rms_norm_params *params = TSRI_PARAMS(op, tsri_rms_norm_params);
  const tsri_view *x = &op->in[0], *weight = params->has_weight ? &op->in[1] : NULL;
  const tsri_view *y = &op->out;
  int64_t weight_strides[TSR_MAX_NDIM] = {0};
  if (weight) tsri_broadcast_strides(weight, y, weight_strides);
  const int64_t *strides[3] = {x->strides, y->strides, weight_strides};
  int64_t offsets[3] = {x->offset, y->offset, weight ? weight->offset : 0};
  tsri_row_walker walker;
  tsri_row_walker_init(&walker, y, weight ? 3 : 2, strides, offsets);
  int last = y->ndim - 1;
  norm_row row = {.x_stride = x->strides[last],
                  .weight_stride = weight_strides[last],
                  .n = y->shape[last],
                  .x_dtype = x->dtype,
                  .weight_dtype = weight ? weight->dtype : TSR_FLOAT32,
                  .out_dtype = y->dtype,
                  .eps = params->eps};
  bool in_place = x->dtype == TSR_FLOAT32 && y->dtype == TSR_FLOAT32 && row.x_stride == 1 &&
                  (!weight || (weight->dtype == TSR_FLOAT32 && row.weight_stride == 1));
  size_t x_size = tsr_dtype_size(x->dtype), out_size = tsr_dtype_size(y->dtype);
  do {
    row.x = (const unsigned char *)x->data + walker.offset[0] * (int64_t)x_size;
    row.out = (unsigned char *)y->data + walker.offset[1] * (int64_t)out_size;
    row.weight = weight ? (const unsigned char *)weight->data +
                              walker.offset[2] * (int64_t)tsr_dtype_size(weight->dtype)
                        : NULL;
    if (in_place)
      rms_norm_row_f32(&row);
    else
      rms_norm_row_any(&row);
  } while (tsri_row_walker_next(&walker));
  return TSR_OK;
}

/* ---- rope --------------------------------------------------------------------------------- */

/* cos and sin of every (row t, frequency i): table[t * dims + i] = cos, [t * dims + half + i] =
 * sin. As HF computes them: inv_freq = 1 / base^(2i / dims) by a float32 pow, the angle the
 * float32 product of float32(position) and inv_freq, then float32 cos and sin. */
static void rope_table(const tsri_rope_params *p, int64_t offset, int64_t rows, float *table) {
  int half = p->dims / 2;
  for (int i = 0; i < half; i++) {
    float inv_freq = 1.0f / powf(p->base, (float)(2 * i) / (float)p->dims);
    for (int64_t t = 0; t < rows; t++) {
      /* A dynamic offset may be anything: the position wraps in int64 rather than overflow. */
      float angle = (float)(int64_t)((uint64_t)offset + (uint64_t)t) * inv_freq;
      table[t * p->dims + i] = cosf(angle);
      table[t * p->dims + half + i] = sinf(angle);
    }
  }
}

static void rotate(float *v, const float *cos_sin, int dims, bool traditional) {
  int half = dims / 2;
  for (int i = 0; i < half; i++) {
    int i0 = traditional ? 2 * i : i, i1 = traditional ? 2 * i + 1 : i + half;
    float c = cos_sin[i], s = cos_sin[half + i], x0 = v[i0], x1 = v[i1];
    v[i0] = x0 * c - x1 * s;
    v[i1] = x1 * c + x0 * s;
  }
}

static tsr_status cpu_rope(const tsri_op *op) {
  if (op->out.size == 0) return TSR_OK;
  const tsri_rope_params *p = TSRI_PARAMS(op, tsri_rope_params);
  const tsri_view *x = &op->in[0], *y = &op->out;
  int last = y->ndim - 1;
  int64_t rows = y->shape[last - 1], d = y->shape[last];
  tsri_buffer *scratch = NULL; /* the cos/sin table, then one row */
  tsr_status status = tsri_cpu_scratch(op->device, rows * p->dims + d, &scratch);
  if (status != TSR_OK) return status;
  float *table = (float *)scratch->data, *row = table + rows * p->dims;
  rope_table(p, p->dynamic_offset ? tsri_cpu_view_scalar_i64(&op->in[1]) : p->offset, rows, table);
  const int64_t *strides[2] = {x->strides, y->strides};
  int64_t offsets[2] = {x->offset, y->offset};
  tsri_row_walker walker;
  tsri_row_walker_init(&walker, y, 2, strides, offsets);
  size_t x_size = tsr_dtype_size(x->dtype), out_size = tsr_dtype_size(y->dtype);
  do {
    int64_t t = walker.index[last - 1];
    tsri_cpu_load_f32((const unsigned char *)x->data + walker.offset[0] * (int64_t)x_size, x->dtype,
                      x->strides[last], d, row);
    rotate(row, table + t * p->dims, p->dims, p->traditional);
    tsri_cpu_store_f32((unsigned char *)y->data + walker.offset[1] * (int64_t)out_size, y->dtype, d,
                       row);
  } while (tsri_row_walker_next(&walker));
  tsri_buffer_release(scratch);
  return TSR_OK;
}

void tsri_cpu_register_nn(tsri_kernel_fn *table) {
  table[TSRI_PRIM_SOFTMAX] = cpu_softmax;
  table[TSRI_PRIM_RMS_NORM] = cpu_rms_norm;
  table[TSRI_PRIM_ROPE] = cpu_rope;
  table[TSRI_PRIM_SDPA] = tsri_cpu_sdpa;
}
