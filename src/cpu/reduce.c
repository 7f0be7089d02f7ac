/* cpu/reduce.c — CPU kernels of ops/reduce.c: sum, mean, max, min, argmax over any set of axes of
 * an input of any layout. Not the cumulative or sorting ops (cpu/sort.c).
 *
 * One pass over the input in its logical row-major order folds each element into the
 * accumulator of its output element (the reduced axes have accumulator stride 0), so any axes
 * set and any strides take the same path. Float values (and the mean of integers) accumulate in
 * float64: a sum of K terms is then within (K - 1) * 2^-53 * sum|x_i| of the exact sum before
 * the one rounding to the output dtype, whatever the order, which makes the result independent of
 * layout and a tight reference for other backends. Integer sums and integer max/min/argmax run
 * in int64 (sums wrap). */
#include "cpu/kernels.h"

#include <math.h>
#include <stdlib.h>

#include "base/dtype.h"
#include "base/status.h"
#include "cpu/rows.h"
#include "cpu/strided.h"
#include "ops/reduce.h"

#define CHUNK 256

typedef struct {
  tsri_primitive op;
  bool as_float;  /* accumulate in acc_f (float64), else in acc_i (int64) */
  double *acc_f;  /* one per output element */
  int64_t *acc_i; /* one per output element */
  int32_t *arg;   /* argmax: the index of the best element so far */
  int arg_axis;   /* argmax: the reduced axis */
} reduce_state;

/* One chunk of a row: `n` values whose accumulators start at `acc` and step by `acc_stride`
 * (0 when the row's axis is reduced); `position` is the first value's index along the argmax
 * axis and `position_step` how it moves along the row (1 or 0). */
typedef struct {
  int64_t n, acc, acc_stride, position, position_step;
} chunk_target;

static void fold_float(reduce_state *st, const double *x, const chunk_target *t) {
  double *acc = st->acc_f + t->acc;
  int64_t step = t->acc_stride;
  switch (st->op) {
    case TSRI_PRIM_SUM:
    case TSRI_PRIM_MEAN:
      for (int64_t i = 0; i < t->n; i++)
        acc[i * step] += x[i];
      break;
    case TSRI_PRIM_MAX: /* a NaN, once in, stays: nothing compares greater than it */
      for (int64_t i = 0; i < t->n; i++)
        if (x[i] > acc[i * step] || isnan(x[i])) acc[i * step] = x[i];
      break;
    case TSRI_PRIM_MIN:
      for (int64_t i = 0; i < t->n; i++)
        if (x[i] < acc[i * step] || isnan(x[i])) acc[i * step] = x[i];
      break;
    case TSRI_PRIM_ARGMAX: { /* the first maximum; the first NaN beats everything */
      int32_t *arg = st->arg + t->acc;
      for (int64_t i = 0; i < t->n; i++) {
        double best = acc[i * step];
        if (!isnan(best) && (x[i] > best || isnan(x[i]))) {
          acc[i * step] = x[i];
          arg[i * step] = (int32_t)(t->position + i * t->position_step);
        }
      }
      break;
    }
    default:
      break;
  }
}

static void fold_int(reduce_state *st, const int64_t *x, const chunk_target *t) {
  int64_t *acc = st->acc_i + t->acc;
  int64_t step = t->acc_stride;
  switch (st->op) {
    case TSRI_PRIM_SUM: /* wrap like two's complement hardware, without signed overflow */
      for (int64_t i = 0; i < t->n; i++)
        acc[i * step] = (int64_t)((uint64_t)acc[i * step] + (uint64_t)x[i]);
      break;
    case TSRI_PRIM_MAX:
      for (int64_t i = 0; i < t->n; i++)
        if (x[i] > acc[i * step]) acc[i * step] = x[i];
      break;
    case TSRI_PRIM_MIN:
      for (int64_t i = 0; i < t->n; i++)
        if (x[i] < acc[i * step]) acc[i * step] = x[i];
      break;
    case TSRI_PRIM_ARGMAX: {
      int32_t *arg = st->arg + t->acc;
      for (int64_t i = 0; i < t->n; i++)
        if (x[i] > acc[i * step]) {
          acc[i * step] = x[i];
          arg[i * step] = (int32_t)(t->position + i * t->position_step);
        }
      break;
    }
    default:
      break;
  }
}

/* Loads `n` elements of a strided row and folds them in. */
static void fold_chunk(reduce_state *st, const void *base, tsr_dtype dtype, int64_t stride,
                       const chunk_target *t) {
  int64_t ints[CHUNK];
  if (!st->as_float) {
    tsri_cpu_load_i64(base, dtype, stride, t->n, ints);
    fold_int(st, ints, t);
    return;
  }
  double values[CHUNK];
  if (tsri_dtype_is_float(dtype)) { /* exact: every float dtype widens exactly to float32 */
    float floats[CHUNK];
    tsri_cpu_load_f32(base, dtype, stride, t->n, floats);
    for (int64_t i = 0; i < t->n; i++)
      values[i] = (double)floats[i];
  } else { /* the mean of integers: through int64, so int32/int64 keep 53 bits */
    tsri_cpu_load_i64(base, dtype, stride, t->n, ints);
    for (int64_t i = 0; i < t->n; i++)
      values[i] = (double)ints[i];
  }
  fold_float(st, values, t);
}

/* Walks every input element in row-major order, folding it into its output's accumulator. */
static void fold_input(reduce_state *st, const tsri_view *in, const bool *reduced) {
  int64_t acc_strides[TSR_MAX_NDIM], stride = 1;
  for (int d = in->ndim - 1; d >= 0; d--) {
    acc_strides[d] = reduced[d] ? 0 : stride;
    if (!reduced[d]) stride *= in->shape[d];
  }
  const int64_t *strides[2] = {in->strides, acc_strides};
  int64_t offsets[2] = {in->offset, 0};
  tsri_row_walker walker;
  tsri_row_walker_init(&walker, in, 2, strides, offsets);
  int last = in->ndim - 1;
  int64_t n = last >= 0 ? in->shape[last] : 1, in_stride = last >= 0 ? in->strides[last] : 0;
  int64_t acc_stride = last >= 0 ? acc_strides[last] : 0;
  int64_t element = (int64_t)tsr_dtype_size(in->dtype);
  const unsigned char *data = (const unsigned char *)in->data;
  do {
    for (int64_t start = 0; start < n; start += CHUNK) {
      chunk_target t = {.n = n - start < CHUNK ? n - start : CHUNK,
                        .acc = walker.offset[1] + start * acc_stride,
                        .acc_stride = acc_stride};
      if (st->op == TSRI_PRIM_ARGMAX) {
        bool along_row = st->arg_axis == last;
        t.position = along_row ? start : walker.index[st->arg_axis];
        t.position_step = along_row ? 1 : 0;
      }
      fold_chunk(st, data + (walker.offset[0] + start * in_stride) * element, in->dtype, in_stride,
                 &t);
    }
  } while (tsri_row_walker_next(&walker));
}

static bool state_init(reduce_state *st, const tsri_op *op, const bool *reduced) {
  const tsri_view *in = &op->in[0];
  st->op = op->primitive;
  st->as_float = tsri_dtype_is_float(in->dtype) || st->op == TSRI_PRIM_MEAN;
  st->arg_axis = 0;
  for (int d = 0; d < in->ndim; d++)
    if (reduced[d]) st->arg_axis = d;
  size_t n = (size_t)op->out.size;
  st->acc_f = st->as_float ? malloc(n * sizeof *st->acc_f) : NULL;
  st->acc_i = st->as_float ? NULL : malloc(n * sizeof *st->acc_i);
  st->arg = st->op == TSRI_PRIM_ARGMAX ? calloc(n, sizeof *st->arg) : NULL;
  if ((!st->acc_f && !st->acc_i) || (st->op == TSRI_PRIM_ARGMAX && !st->arg)) return false;
  /* The identity of each fold: argmax starts below everything at index 0, so an all -inf or
     all INT64_MIN line gives 0, its first maximum. */
  double start_f = 0.0;
  int64_t start_i = 0;
  if (st->op == TSRI_PRIM_MIN) {
    start_f = HUGE_VAL;
    start_i = INT64_MAX;
  } else if (st->op == TSRI_PRIM_MAX || st->op == TSRI_PRIM_ARGMAX) {
    start_f = -HUGE_VAL;
    start_i = INT64_MIN;
  }
  for (size_t i = 0; i < n; i++) {
    if (st->as_float)
      st->acc_f[i] = start_f;
    else
      st->acc_i[i] = start_i;
  }
  return true;
}

/* Writes the accumulators out in the output dtype (the mean divides by the count first). */
static void state_store(const reduce_state *st, const tsri_view *dst, int64_t count) {
  int64_t element = (int64_t)tsr_dtype_size(dst->dtype);
  unsigned char *out = (unsigned char *)dst->data;
  if (st->op == TSRI_PRIM_ARGMAX) {
    int32_t *indices = (int32_t *)(void *)out;
    for (int64_t i = 0; i < dst->size; i++)
      indices[i] = st->arg[i];
    return;
  }
  for (int64_t start = 0; start < dst->size; start += CHUNK) {
    int64_t n = dst->size - start < CHUNK ? dst->size - start : CHUNK;
    if (!st->as_float) {
      tsri_cpu_store_i64(out + start * element, dst->dtype, n, st->acc_i + start);
      continue;
    }
    float values[CHUNK];
    for (int64_t i = 0; i < n; i++) {
      double v = st->acc_f[start + i];
      if (st->op == TSRI_PRIM_MEAN) v = count > 0 ? v / (double)count : (double)NAN;
      values[i] = (float)v;
    }
    tsri_cpu_store_f32(out + start * element, dst->dtype, n, values);
  }
}

static tsr_status cpu_reduce(const tsri_op *op) {
  if (op->out.size == 0) return TSR_OK;
  tsr_status status = TSR_OK;
  const tsri_view *in = &op->in[0];
  const tsri_reduce_params *params = TSRI_PARAMS(op, tsri_reduce_params);
  int64_t count = 1;
  for (int d = 0; d < in->ndim; d++)
    if (params->reduced[d]) count *= in->shape[d];
  reduce_state st;
  if (state_init(&st, op, params->reduced)) {
    if (in->size > 0) fold_input(&st, in, params->reduced);
    state_store(&st, &op->out, count);
  } else {
    status = tsri_error(TSR_ERR_NOMEM, "out of host memory for %lld accumulators",
                        (long long)op->out.size);
  }
  free(st.acc_f);
  free(st.acc_i);
  free(st.arg);
  return status;
}

void tsri_cpu_register_reduce(tsri_kernel_fn *table) {
  table[TSRI_PRIM_SUM] = cpu_reduce;
  table[TSRI_PRIM_MEAN] = cpu_reduce;
  table[TSRI_PRIM_MAX] = cpu_reduce;
  table[TSRI_PRIM_MIN] = cpu_reduce;
  table[TSRI_PRIM_ARGMAX] = cpu_reduce;
}
