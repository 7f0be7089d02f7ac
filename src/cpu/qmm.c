/* cpu/qmm.c — the CPU kernels of quantized_matmul and gather_qmm: the op-level driver (matrix
 * indices from broadcasting or gathered indices, checked before anything is written; strided
 * and half-precision x turned into contiguous float32; strided weights made contiguous; one
 * rounding to the output dtype) and the scalar reference kernel of each (transpose, mode)
 * (cpu/qmm.h). Not the argument checks (ops/quant_matmul.c) and not the fast paths
 * (cpu/qmm_fast.c, chosen in tsri_qmm_choose_kernel). */
#include "cpu/qmm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "base/quant_format.h"
#include "base/shape.h"
#include "base/status.h"
#include "cpu/context.h"
#include "cpu/gemm.h"
#include "cpu/kernels.h"
#include "cpu/layout.h"
#include "cpu/qmm_fast.h"
#include "cpu/rows.h"
#include "cpu/strided.h"
#include "ops/quant_matmul.h"

/* ---- the reference kernels ------------------------------------------------------------------ */

/* The scale of group g of a packed row whose scales start at entry `first`, in float32 (exact:
   every scale format widens exactly). */
static inline float scale_of(const tsri_qmm_problem *p, int64_t first, int64_t g, int mode) {
  if (mode == TSRI_QF_AFFINE) return tsri_qmm_load_float(p->scales, p->scale_dtype, first + g);
  uint32_t code = ((const uint8_t *)p->scales)[first + g];
  return mode == TSRI_QF_NVFP4 ? tsri_qf_e4m3_decode(code) : tsri_qf_e8m0_decode(code);
}

/* Affine weights of one group, as tsr_dequantize gives them in float32 (cpu/qmm.h). The switch
   is outside the loop so the float32 case stays a plain multiply-add loop. */
static inline void affine_group(const uint32_t *codes, int bits, int64_t begin, int64_t end,
                                float scale, float bias, tsr_dtype scale_dtype, float *dst) {
  switch (scale_dtype) {
    case TSR_FLOAT16:
      for (int64_t i = begin; i < end; i++)
        dst[i] = tsri_qmm_affine_weight(scale, bias, tsri_qf_get_code(codes, i, bits), TSR_FLOAT16);
      break;
    case TSR_BFLOAT16:
      for (int64_t i = begin; i < end; i++)
        dst[i] =
            tsri_qmm_affine_weight(scale, bias, tsri_qf_get_code(codes, i, bits), TSR_BFLOAT16);
      break;
    default:
      for (int64_t i = begin; i < end; i++)
        dst[i] = tsri_qmm_affine_weight(scale, bias, tsri_qf_get_code(codes, i, bits), TSR_FLOAT32);
      break;
  }
}

/* `mode` is a constant at every call, so each caller gets its own specialized loop. */
static inline void dequantize_row(const tsri_qmm_problem *p, int64_t row, float *dst, int mode) {
  const uint32_t *codes = p->w + row * p->w_row_words;
  int64_t first = row * p->scale_row_stride, group_size = p->group_size;
  int bits = p->bits;
  for (int64_t g = 0; g < p->groups; g++) {
    float scale = scale_of(p, first, g, mode);
    int64_t begin = g * group_size, end = begin + group_size;
    if (mode == TSRI_QF_AFFINE) {
      float bias = tsri_qmm_load_float(p->biases, p->scale_dtype, first + g);
      affine_group(codes, bits, begin, end, scale, bias, tsri_qmm_weight_dtype(p), dst);
    } else if (mode == TSRI_QF_MXFP8) {
      for (int64_t i = begin; i < end; i++)
        dst[i] = tsri_qf_e4m3_decode(tsri_qf_get_code(codes, i, bits)) * scale;
    } else { /* mxfp4, nvfp4: E2M1 elements (an Inf scale times a zero code is NaN, as w_hat) */
      for (int64_t i = begin; i < end; i++)
        dst[i] = tsri_qf_fp4_decode(tsri_qf_get_code(codes, i, bits)) * scale;
    }
  }
}

void tsri_qmm_dequantize_row(const tsri_qmm_problem *p, int64_t row, float *dst) {
  switch (p->mode) {
    case TSRI_QF_AFFINE:
      dequantize_row(p, row, dst, TSRI_QF_AFFINE);
      break;
    case TSRI_QF_MXFP8:
      dequantize_row(p, row, dst, TSRI_QF_MXFP8);
      break;
    default:
      dequantize_row(p, row, dst, TSRI_QF_MXFP4);
      break;
  }
}

/* Groups along K: each of the N weight rows is dequantized once, then dotted with every x row. */
static inline void reference_transposed(const tsri_qmm_problem *p, int mode) {
  float *w_row = p->scratch;
  for (int64_t j = 0; j < p->n; j++) {
    dequantize_row(p, j, w_row, mode);
    for (int64_t i = 0; i < p->m; i++) {
      const float *x = p->x + i * p->x_row_stride;
      float sum = 0.0f;
      for (int64_t k = 0; k < p->k; k++)
        sum += x[k] * w_row[k];
      p->y[i * p->y_row_stride + j] = sum;
    }
  }
}

/* Groups along N: each of the K weight rows is dequantized once and added, times x[i][k], into
   every output row — the same float32 sum in increasing k as the transposed kernel. */
static inline void reference_plain(const tsri_qmm_problem *p, int mode) {
  float *w_row = p->scratch;
  for (int64_t i = 0; i < p->m; i++)
    for (int64_t j = 0; j < p->n; j++)
      p->y[i * p->y_row_stride + j] = 0.0f;
  for (int64_t k = 0; k < p->k; k++) {
    dequantize_row(p, k, w_row, mode);
    for (int64_t i = 0; i < p->m; i++) {
      float x = p->x[i * p->x_row_stride + k], *y = p->y + i * p->y_row_stride;
      for (int64_t j = 0; j < p->n; j++)
        y[j] += x * w_row[j];
    }
  }
}

#define TSRI_QMM_REFERENCE(name, body, mode)    \
  static void name(const tsri_qmm_problem *p) { \
    body(p, mode);                              \
  }
TSRI_QMM_REFERENCE(reference_t_affine, reference_transposed, TSRI_QF_AFFINE)
TSRI_QMM_REFERENCE(reference_t_mxfp4, reference_transposed, TSRI_QF_MXFP4)
TSRI_QMM_REFERENCE(reference_t_mxfp8, reference_transposed, TSRI_QF_MXFP8)
TSRI_QMM_REFERENCE(reference_t_nvfp4, reference_transposed, TSRI_QF_NVFP4)
TSRI_QMM_REFERENCE(reference_n_affine, reference_plain, TSRI_QF_AFFINE)
TSRI_QMM_REFERENCE(reference_n_mxfp4, reference_plain, TSRI_QF_MXFP4)
TSRI_QMM_REFERENCE(reference_n_mxfp8, reference_plain, TSRI_QF_MXFP8)
TSRI_QMM_REFERENCE(reference_n_nvfp4, reference_plain, TSRI_QF_NVFP4)
#undef TSRI_QMM_REFERENCE

tsri_qmm_kernel tsri_qmm_reference_kernel(bool transpose, int mode) {
  static const tsri_qmm_kernel kernels[2][4] = {
      {reference_n_affine, reference_n_mxfp4, reference_n_mxfp8, reference_n_nvfp4},
      {reference_t_affine, reference_t_mxfp4, reference_t_mxfp8, reference_t_nvfp4},
  };
  return (unsigned)mode < 4u ? kernels[transpose ? 1 : 0][mode] : NULL;
}

tsri_qmm_kernel tsri_qmm_choose_kernel(const tsri_qmm_problem *p) {
  /* The fast paths (cpu/qmm_fast.c: fused qmv for small M, dequantized tiles + sgemm otherwise,
     in the widest ISA the CPU has) take every valid problem; TSR_CPU_ISA=scalar still runs them
     in portable C. The reference stays for what they decline. */
  if (tsri_qmm_fast_accepts(p)) return tsri_qmm_fast;
  return tsri_qmm_reference_kernel(p->transpose, p->mode);
}

/* ---- which matrices each product uses ------------------------------------------------------ */

/* Every element of an integer array as int64, in row-major order (free the result). */
static tsr_status load_index_values(const tsri_view *a, int64_t **out) {
  int64_t *values = malloc((size_t)(a->size > 0 ? a->size : 1) * sizeof *values);
  if (!values)
    return tsri_error(TSR_ERR_NOMEM, "out of host memory for %lld indices", (long long)a->size);
  const unsigned char *base = (const unsigned char *)a->data;
  size_t element = tsr_dtype_size(a->dtype);
  for (int64_t flat = 0; flat < a->size; flat++) {
    int64_t rest = flat, offset = a->offset;
    for (int d = a->ndim - 1; d >= 0; d--) {
      offset += (rest % a->shape[d]) * a->strides[d];
      rest /= a->shape[d];
    }
    tsri_cpu_load_i64(base + offset * (int64_t)element, a->dtype, 0, 1, values + flat);
  }
  *out = values;
  return TSR_OK;
}

/* The flat position in `shape` (aligned at the right of the batch shape, size-1 axes broadcast)
   of the batch position `coord`. */
static int64_t flat_position(const int64_t *coord, int batch_ndim, const int64_t *shape, int ndim) {
  int64_t flat = 0;
  for (int i = 0; i < ndim; i++)
    flat = flat * shape[i] + (shape[i] == 1 ? 0 : coord[batch_ndim - ndim + i]);
  return flat;
}

static tsr_status out_of_range(const char *name, int64_t value, int64_t flat, const int64_t *shape,
                               int ndim, int64_t matrices, const char *operand) {
  int64_t position[TSR_MAX_NDIM];
  for (int d = ndim - 1; d >= 0; d--) {
    position[d] = flat % shape[d];
    flat /= shape[d];
  }
  char where[160];
  return tsri_error(TSR_ERR_INVALID,
                    "%s value %lld at %s is out of range [0, %lld) (%s has %lld matrices)", name,
                    (long long)value, tsri_shape_str(position, ndim, where, sizeof where),
                    (long long)matrices, operand, (long long)matrices);
}

/* index[b] = the matrix of one operand that output matrix b uses: the element of `indices` at
   b's position, or (indices NULL) b's flat position in the index shape; each checked against
   [0, matrices). */
static tsr_status matrix_indices(const tsri_qmm_geometry *g, const tsri_view *indices,
                                 const int64_t *shape, int ndim, int64_t matrices, const char *name,
                                 const char *operand, int64_t *index) {
  int64_t *values = NULL;
  if (indices) {
    tsr_status status = load_index_values(indices, &values);
    if (status != TSR_OK) return status;
  }
  int64_t coord[TSR_MAX_NDIM] = {0};
  tsr_status status = TSR_OK;
  for (int64_t b = 0; b < g->batch_count && status == TSR_OK; b++) {
    int64_t flat = flat_position(coord, g->batch_ndim, shape, ndim);
    index[b] = values ? values[flat] : flat;
    if (index[b] < 0 || index[b] >= matrices)
      status = out_of_range(name, index[b], flat, shape, ndim, matrices, operand);
    for (int d = g->batch_ndim - 1; d >= 0 && ++coord[d] == g->batch_shape[d]; d--)
      coord[d] = 0;
  }
  free(values);
  return status;
}

/* ---- the driver ---------------------------------------------------------------------------- */

typedef struct {
  int64_t *x_index, *w_index;
  tsri_buffer *x32, *w_copy, *scales_copy, *biases_copy, *y32, *row;
} qmm_scratch;

static void scratch_free(qmm_scratch *s) {
  free(s->x_index);
  free(s->w_index);
  tsri_buffer_release(s->x32);
  tsri_buffer_release(s->w_copy);
  tsri_buffer_release(s->scales_copy);
  tsri_buffer_release(s->biases_copy);
  tsri_buffer_release(s->y32);
  tsri_buffer_release(s->row);
}

/* All of x as contiguous float32 (exact: every float dtype widens exactly). */
static tsr_status x_as_float32(const tsri_view *x, tsr_device device, tsri_buffer **out) {
  tsr_status status = tsri_cpu_scratch(device, x->size, out);
  if (status != TSR_OK) return status;
  const int64_t *strides[1] = {x->strides};
  int64_t offsets[1] = {x->offset}, row = 0;
  int64_t n = x->shape[x->ndim - 1], stride = x->strides[x->ndim - 1];
  size_t element = tsr_dtype_size(x->dtype);
  float *dst = (float *)(*out)->data;
  tsri_row_walker walker;
  tsri_row_walker_init(&walker, x, 1, strides, offsets);
  do {
    tsri_cpu_load_f32((const unsigned char *)x->data + walker.offset[0] * (int64_t)element,
                      x->dtype, stride, n, dst + row * n);
    row++;
  } while (tsri_row_walker_next(&walker));
  return TSR_OK;
}

/* a's elements, row-major: in place when a is contiguous, else copied into *copy. */
static tsr_status contiguous_data(const tsri_view *a, tsr_device device, tsri_buffer **copy,
                                  const void **data) {
  size_t element = tsr_dtype_size(a->dtype);
  if (tsri_view_is_contiguous(a)) {
    *data = (const unsigned char *)a->data + a->offset * (int64_t)element;
    return TSR_OK;
  }
  uint64_t bytes = (uint64_t)a->size * element;
  tsr_status status = tsri_buffer_alloc(device, bytes, copy);
  if (status != TSR_OK) {
    char message[TSR_ERROR_MAX];
    snprintf(message, sizeof message, "scratch of %llu bytes: %s", (unsigned long long)bytes,
             tsr_last_error());
    return tsri_error_copy(status, message);
  }
  int64_t strides[TSR_MAX_NDIM];
  tsri_contiguous_strides(a->shape, a->ndim, strides);
  tsri_cpu_block dst = {(unsigned char *)(*copy)->data, 0, strides};
  tsri_cpu_block src = {(unsigned char *)a->data, a->offset, a->strides};
  tsri_cpu_copy_block(&dst, &src, a->shape, a->ndim, element);
  *data = (*copy)->data;
  return TSR_OK;
}

/* Which matrices of x and w each product uses, checked before anything is computed. */
static tsr_status prepare_indices(const tsri_qmm_operands *o, const tsri_qmm_geometry *g,
                                  qmm_scratch *s) {
  size_t count = (size_t)(g->batch_count > 0 ? g->batch_count : 1);
  s->x_index = malloc(count * sizeof *s->x_index);
  s->w_index = malloc(count * sizeof *s->w_index);
  if (!s->x_index || !s->w_index)
    return tsri_error(TSR_ERR_NOMEM, "out of host memory for %lld matrix indices",
                      (long long)g->batch_count);
  tsr_status status = matrix_indices(g, o->lhs, g->lhs_shape, g->lhs_ndim, g->x_matrices,
                                     "lhs_indices", "x", s->x_index);
  if (status != TSR_OK) return status;
  return matrix_indices(g, o->rhs, g->rhs_shape, g->rhs_ndim, g->w_matrices, "rhs_indices", "w_q",
                        s->w_index);
}

/* Everything the products read, in the layout tsri_qmm_problem describes; `base` gets the parts
   that do not change from one product to the next. Called with a non-empty output and K > 0, so
   every operand has elements. */
static tsr_status prepare_operands(const tsri_op *op, const tsri_qmm_operands *o,
                                   const tsri_qmm_params *p, const tsri_qmm_geometry *g,
                                   qmm_scratch *s, tsri_qmm_problem *base) {
  const void *w = NULL, *scales = NULL, *biases = NULL;
  const tsri_cpu_context *cpu = NULL;
  tsr_status status = tsri_cpu_context_get(op->device, &cpu);
  if (status == TSR_OK) status = x_as_float32(o->x, op->device, &s->x32);
  if (status == TSR_OK) status = contiguous_data(o->w_q, op->device, &s->w_copy, &w);
  if (status == TSR_OK) status = contiguous_data(o->scales, op->device, &s->scales_copy, &scales);
  if (status == TSR_OK && o->biases)
    status = contiguous_data(o->biases, op->device, &s->biases_copy, &biases);
  if (status == TSR_OK && op->out.dtype != TSR_FLOAT32)
    status = tsri_cpu_scratch(op->device, g->m * g->n, &s->y32);
  if (status == TSR_OK) status = tsri_cpu_scratch(op->device, g->k > g->n ? g->k : g->n, &s->row);
  if (status != TSR_OK) return status;
  *base = (tsri_qmm_problem){.mode = p->mode,
                             .group_size = p->group_size,
                             .bits = p->bits,
                             .transpose = p->transpose,
                             .m = g->m,
                             .n = g->n,
                             .k = g->k,
                             .x_row_stride = g->k,
                             .w = w,
                             .w_row_words = g->w_words,
                             .scales = scales,
                             .biases = biases,
                             .groups = g->groups,
                             .scale_row_stride = g->groups,
                             .scale_dtype = o->scales->dtype,
                             .y_row_stride = g->n,
                             .scratch = (float *)s->row->data,
                             .device = op->device,
                             .cpu = cpu};
  return TSR_OK;
}

/* Runs every product of the op: output matrix b from x's matrix x_index[b] and w's
   w_index[b], through the chosen kernel, rounded once into the output. */
static void run_products(const tsri_op *op, const tsri_qmm_geometry *g, const qmm_scratch *s,
                         const tsri_qmm_problem *base) {
  int64_t mn = g->m * g->n, w_matrix_rows = g->w_rows;
  size_t scale_element = tsr_dtype_size(base->scale_dtype);
  size_t out_element = tsr_dtype_size(op->out.dtype);
  for (int64_t b = 0; b < g->batch_count; b++) {
    tsri_qmm_problem problem = *base;
    int64_t w_matrix = s->w_index[b];
    problem.x = (const float *)s->x32->data + s->x_index[b] * g->m * g->k;
    problem.w = base->w + w_matrix * w_matrix_rows * g->w_words;
    int64_t scale_offset = w_matrix * w_matrix_rows * g->groups * (int64_t)scale_element;
    problem.scales = (const unsigned char *)base->scales + scale_offset;
    if (base->biases) problem.biases = (const unsigned char *)base->biases + scale_offset;
    unsigned char *out = (unsigned char *)op->out.data + b * mn * (int64_t)out_element;
    problem.y = s->y32 ? (float *)s->y32->data : (float *)(void *)out;
    tsri_qmm_choose_kernel (&problem)(&problem);
    if (s->y32) tsri_cpu_store_f32(out, op->out.dtype, mn, problem.y);
  }
}

static tsr_status cpu_qmm(const tsri_op *op) {
  if (op->out.size == 0) return TSR_OK;
  const tsri_qmm_params *p = TSRI_PARAMS(op, tsri_qmm_params);
  const tsri_qmm_geometry *g = &p->g;
  tsri_qmm_operands o = tsri_qmm_operands_of(op);
  qmm_scratch scratch = {0};
  tsr_status status = prepare_indices(&o, g, &scratch);
  if (status == TSR_OK && g->k == 0) /* empty sums: zeros (all-zero bits in every float dtype) */
    memset(op->out.data, 0, (size_t)op->out.size * tsr_dtype_size(op->out.dtype));
  tsri_qmm_problem base = {0};
  if (status == TSR_OK && g->k > 0) {
    status = prepare_operands(op, &o, p, g, &scratch, &base);
    if (status == TSR_OK) run_products(op, g, &scratch, &base);
  }
  scratch_free(&scratch);
  return status;
}

void tsri_cpu_register_qmm(tsri_kernel_fn *table) {
  table[TSRI_PRIM_QUANTIZED_MATMUL] = cpu_qmm;
  table[TSRI_PRIM_GATHER_QMM] = cpu_qmm;
}
