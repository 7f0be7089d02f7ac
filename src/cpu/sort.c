/* cpu/sort.c — CPU kernels of ops/sort.c: cumsum, argsort, argpartition and the top-k indices,
 * one 1-d line along the axis at a time, over an input of any layout. Not the reductions
 * (cpu/reduce.c).
 *
 * Every element becomes a (key, index) pair whose unsigned key orders like the value (floats by
 * their bits with -0 = +0 and every NaN last and equal; integers with the sign bit flipped).
 * Ordering the pairs by (key, index) is a total order, so any sort is stable and a selection is
 * deterministic: argpartition puts at kth exactly what argsort puts there, and topk (keys
 * complemented, so the largest come first) breaks ties toward the lower index. topk selects
 * in one pass through a k-heap when k is small against the line (a decode step's top-k of a
 * vocabulary), else by quickselect (linear on average, a full sort only past a depth limit), and
 * then orders just its k winners, largest first — an order ops.h leaves free. */
#include "cpu/kernels.h"

#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "base/half.h"
#include "base/status.h"
#include "cpu/rows.h"
#include "ops/sort.h"

typedef struct {
  uint64_t key;
  int64_t index;
} sort_pair;

/* The lines of an input along one axis, with the matching lines of the output. */
typedef struct {
  int ndim; /* the other axes */
  int64_t shape[TSR_MAX_NDIM], in_strides[TSR_MAX_NDIM], out_strides[TSR_MAX_NDIM];
  int64_t index[TSR_MAX_NDIM];
  int64_t in_offset, out_offset; /* elements, of the current line's start */
} line_walker;

static void line_walker_init(line_walker *w, const tsri_view *in, const tsri_view *out, int axis) {
  w->ndim = 0;
  for (int d = 0; d < in->ndim; d++) {
    if (d == axis) continue;
    w->shape[w->ndim] = in->shape[d];
    w->in_strides[w->ndim] = in->strides[d];
    w->out_strides[w->ndim] = out->strides[d];
    w->index[w->ndim++] = 0;
  }
  w->in_offset = in->offset;
  w->out_offset = out->offset;
}

static bool line_walker_next(line_walker *w) {
  for (int d = w->ndim - 1; d >= 0; d--) {
    w->in_offset += w->in_strides[d];
    w->out_offset += w->out_strides[d];
    if (++w->index[d] < w->shape[d]) return true;
    w->in_offset -= w->shape[d] * w->in_strides[d];
    w->out_offset -= w->shape[d] * w->out_strides[d];
    w->index[d] = 0;
  }
  return false;
}

static uint64_t float_key(float f) {
  if (f != f) return UINT64_MAX;
  uint32_t bits = tsri_f32_bits(f == 0.0f ? 0.0f : f);
  return (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
}

/* One line of `n` elements into `scratch` (n int64): as floats for float dtypes, else int64. */
static void load_line(const tsri_view *in, int64_t offset, int64_t stride, int64_t n,
                      void *scratch) {
  const void *base = (const unsigned char *)in->data + offset * (int64_t)tsr_dtype_size(in->dtype);
  if (tsri_dtype_is_float(in->dtype))
    tsri_cpu_load_f32(base, in->dtype, stride, n, scratch);
  else
    tsri_cpu_load_i64(base, in->dtype, stride, n, scratch);
}

/* The key of element i of a loaded line; `flip` all ones puts the largest first. */
static inline uint64_t key_at(bool is_float, const void *values, int64_t i, uint64_t flip) {
  if (is_float) return float_key(((const float *)values)[i]) ^ flip;
  return ((uint64_t)((const int64_t *)values)[i] ^ 0x8000000000000000u) ^ flip;
}

static void make_pairs(bool is_float, const void *values, int64_t n, uint64_t flip,
                       sort_pair *pairs) {
  for (int64_t i = 0; i < n; i++)
    pairs[i] = (sort_pair){key_at(is_float, values, i, flip), i};
}

static inline bool pair_less(const sort_pair *a, const sort_pair *b) {
  return a->key < b->key || (a->key == b->key && a->index < b->index);
}

static inline void swap_pairs(sort_pair *pairs, int64_t i, int64_t j) {
  sort_pair t = pairs[i];
  pairs[i] = pairs[j];
  pairs[j] = t;
}

static int pair_compare(const void *a, const void *b) {
  return pair_less(a, b) ? -1 : pair_less(b, a) ? 1 : 0;
}

static void sort_pairs(sort_pair *pairs, int64_t n) {
  qsort(pairs, (size_t)n, sizeof *pairs, pair_compare);
}

/* Reorders pairs so that pairs[nth] is the one a full sort puts there, none after it smaller
 * and none before it larger (Hoare's selection with a median-of-three pivot). */
static void select_nth(sort_pair *pairs, int64_t n, int64_t nth) {
  int64_t lo = 0, hi = n - 1;
  int depth_left = 64; /* then sort what is left: bounded worst case on adversarial input */
  while (hi - lo > 16) {
    if (depth_left-- == 0) break;
    int64_t mid = lo + (hi - lo) / 2;
    if (pair_less(&pairs[mid], &pairs[lo])) swap_pairs(pairs, mid, lo);
    if (pair_less(&pairs[hi], &pairs[lo])) swap_pairs(pairs, hi, lo);
    if (pair_less(&pairs[hi], &pairs[mid])) swap_pairs(pairs, hi, mid);
    sort_pair pivot = pairs[mid];
    int64_t i = lo, j = hi;
    while (i <= j) {
      while (pair_less(&pairs[i], &pivot))
        i++;
      while (pair_less(&pivot, &pairs[j]))
        j--;
      if (i <= j) {
        swap_pairs(pairs, i, j);
        i++;
        j--;
      }
    }
    if (nth <= j)
      hi = j;
    else if (nth >= i)
      lo = i;
    else
      return; /* pairs[j+1 .. i-1] equal the pivot: nth is in place */
  }
  sort_pairs(pairs + lo, hi - lo + 1);
}

/* Restores the max-heap order (by pair_less) below `at`. */
static void sift_down(sort_pair *heap, int64_t count, int64_t at) {
  for (;;) {
    int64_t left = 2 * at + 1, right = left + 1, top = at;
    if (left < count && pair_less(&heap[top], &heap[left])) top = left;
    if (right < count && pair_less(&heap[top], &heap[right])) top = right;
    if (top == at) return;
    swap_pairs(heap, at, top);
    at = top;
  }
}

/* The k smallest pairs of a line in one pass, for k small against n (the top-k of a vocabulary):
 * a max-heap of the best k so far whose root, the worst kept, gives way to anything better. The
 * indices only grow, so an equal key never displaces a kept one: ties keep the lower index, as
 * the (key, index) order says. */
static void select_k_streaming(bool is_float, const void *values, int64_t n, int64_t k,
                               uint64_t flip, sort_pair *heap) {
  make_pairs(is_float, values, k, flip, heap);
  for (int64_t at = k / 2 - 1; at >= 0; at--)
    sift_down(heap, k, at);
  for (int64_t i = k; i < n; i++) {
    uint64_t key = key_at(is_float, values, i, flip);
    if (key < heap[0].key) {
      heap[0] = (sort_pair){key, i};
      sift_down(heap, k, 0);
    }
  }
}

/* Per-kernel scratch: one line's pairs and loaded values. */
typedef struct {
  sort_pair *pairs;
  void *values;
} line_scratch;

static tsr_status scratch_alloc(line_scratch *sc, int64_t n) {
  size_t count = n > 0 ? (size_t)n : 1;
  sc->pairs = malloc(count * sizeof *sc->pairs);
  sc->values = malloc(count * sizeof(int64_t));
  if (sc->pairs && sc->values) return TSR_OK;
  free(sc->pairs);
  free(sc->values);
  return tsri_error(TSR_ERR_NOMEM, "out of host memory for a line of %lld elements", (long long)n);
}

static void scratch_free(line_scratch *sc) {
  free(sc->pairs);
  free(sc->values);
}

/* Orders or selects one loaded line's pairs as the op's primitive asks; the first
 * op->out.shape[axis] pairs are then its answer. */
static void order_line(const tsri_op *op, bool is_float, int64_t n, const line_scratch *sc) {
  const tsri_sort_params *params = TSRI_PARAMS(op, tsri_sort_params);
  if (op->primitive == TSRI_PRIM_TOPK) {
    int64_t k = params->kth;
    if (k * 8 <= n) {
      select_k_streaming(is_float, sc->values, n, k, UINT64_MAX, sc->pairs);
    } else {
      make_pairs(is_float, sc->values, n, UINT64_MAX, sc->pairs);
      select_nth(sc->pairs, n, k - 1);
    }
    sort_pairs(sc->pairs, k); /* largest first: free to do for k winners */
    return;
  }
  make_pairs(is_float, sc->values, n, 0, sc->pairs);
  if (op->primitive == TSRI_PRIM_ARGSORT)
    sort_pairs(sc->pairs, n);
  else
    select_nth(sc->pairs, n, params->kth);
}

/* argsort, argpartition and topk: per line, load, order or select, write the indices out. */
static tsr_status cpu_index_kernel(const tsri_op *op) {
  if (op->out.size == 0) return TSR_OK;
  const tsri_view *in = &op->in[0];
  int axis = TSRI_PARAMS(op, tsri_sort_params)->axis;
  int64_t n = in->shape[axis], written = op->out.shape[axis];
  line_scratch sc;
  tsr_status status = scratch_alloc(&sc, n);
  if (status != TSR_OK) return status;
  bool is_float = tsri_dtype_is_float(in->dtype);
  line_walker w;
  line_walker_init(&w, in, &op->out, axis);
  int32_t *out = (int32_t *)op->out.data;
  do {
    load_line(in, w.in_offset, in->strides[axis], n, sc.values);
    order_line(op, is_float, n, &sc);
    for (int64_t j = 0; j < written; j++)
      out[w.out_offset + j * op->out.strides[axis]] = (int32_t)sc.pairs[j].index;
  } while (line_walker_next(&w));
  scratch_free(&sc);
  return TSR_OK;
}

/* One line's running sum, in place over `sums` (float64) or `ints` (int64, wrapping). */
static void running_sum(const tsri_cumsum_params *p, int64_t n, double *sums, int64_t *ints) {
  double total = 0.0;
  uint64_t total_i = 0;
  for (int64_t step = 0; step < n; step++) {
    int64_t i = p->reverse ? n - 1 - step : step;
    if (sums) {
      double x = sums[i];
      sums[i] = p->inclusive ? total + x : total;
      total += x;
    } else {
      uint64_t x = (uint64_t)ints[i];
      ints[i] = (int64_t)(p->inclusive ? total_i + x : total_i);
      total_i += x;
    }
  }
}

static void cumsum_line(const tsri_op *op, const line_walker *w, const line_scratch *sc) {
  const tsri_view *in = &op->in[0], *out = &op->out;
  const tsri_cumsum_params *p = TSRI_PARAMS(op, tsri_cumsum_params);
  int64_t n = in->shape[p->axis], in_stride = in->strides[p->axis];
  int64_t out_stride = out->strides[p->axis], element = (int64_t)tsr_dtype_size(out->dtype);
  const unsigned char *src =
      (const unsigned char *)in->data + w->in_offset * (int64_t)tsr_dtype_size(in->dtype);
  unsigned char *dst = (unsigned char *)out->data + w->out_offset * element;
  if (tsri_dtype_is_float(out->dtype)) {
    float *floats = sc->values;
    double *sums = (double *)(void *)sc->pairs; /* a sort_pair holds a double */
    tsri_cpu_load_f32(src, in->dtype, in_stride, n, floats);
    for (int64_t i = 0; i < n; i++)
      sums[i] = (double)floats[i];
    running_sum(p, n, sums, NULL);
    for (int64_t i = 0; i < n; i++) {
      float v = (float)sums[i];
      tsri_cpu_store_f32(dst + i * out_stride * element, out->dtype, 1, &v);
    }
  } else {
    int64_t *ints = sc->values;
    tsri_cpu_load_i64(src, in->dtype, in_stride, n, ints);
    running_sum(p, n, NULL, ints);
    for (int64_t i = 0; i < n; i++)
      tsri_cpu_store_i64(dst + i * out_stride * element, out->dtype, 1, &ints[i]);
  }
}

/* Float running sums accumulate in float64 (prefix j is within j * 2^-53 * sum|x_i| of exact
 * before its one rounding to the output dtype); integer ones in int64, wrapping. */
static tsr_status cpu_cumsum(const tsri_op *op) {
  if (op->out.size == 0) return TSR_OK;
  const tsri_view *in = &op->in[0];
  int axis = TSRI_PARAMS(op, tsri_cumsum_params)->axis;
  line_scratch sc;
  tsr_status status = scratch_alloc(&sc, in->shape[axis]);
  if (status != TSR_OK) return status;
  line_walker w;
  line_walker_init(&w, in, &op->out, axis);
  do
    cumsum_line(op, &w, &sc);
  while (line_walker_next(&w));
  scratch_free(&sc);
  return TSR_OK;
}

void tsri_cpu_register_sort(tsri_kernel_fn *table) {
  table[TSRI_PRIM_CUMSUM] = cpu_cumsum;
  table[TSRI_PRIM_ARGSORT] = cpu_index_kernel;
  table[TSRI_PRIM_ARGPARTITION] = cpu_index_kernel;
  table[TSRI_PRIM_TOPK] = cpu_index_kernel;
}
