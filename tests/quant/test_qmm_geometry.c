/* tests/quant/test_qmm_geometry.c — tsr_quantized_matmul and tsr_gather_qmm over generated
 * geometries (quant-spec.md Part A §5), each against the float64 product of qmm_ref.h with its
 * derived tolerance: every mode × bits × group size, both transposes, M on both sides of every
 * plausible tile or dispatch threshold (1 ... 129), N and K that are no multiple of any tile
 * (K ≡ 16 mod 32 for nvfp4 transposed, N ≡ 16 mod 32 non-transposed), batch broadcasting, a
 * 1-D x, a 2-D w under a batched x, gathered indices, float32/float16/bfloat16 x with every
 * affine scale dtype (promotion), non-contiguous x, w_q, scales and biases (views), NaN/Inf in x
 * and NaN/Inf scales next to clean groups, strided gather indices, and zero-size dimensions.
 *
 * The packed weights are built here from random codes and scales (no quantize involved), with a
 * packer written here. Under TSR_SANITIZED the shapes are scaled down (M <= 33, fewer groups) so
 * the run stays within seconds; the case count is the same. */
#include "formats.h"
#include "qmm_ref.h"

#define CASES_PER_LAYOUT 8

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void) { /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 32);
}

static double uniform(double lo, double hi) {
  return lo + (hi - lo) * (rnd() / 4294967296.0);
}

static int64_t pick(const int64_t *values, int n) {
  return values[rnd() % (uint32_t)n];
}

typedef struct {
  tsr_quant_mode mode;
  int bits, group_size;
  bool transpose, gather;
  tsr_dtype x_dtype, scale_dtype;
  int64_t M, K, N;
  int x_ndim, w_ndim;
  int64_t x_shape[TSR_MAX_NDIM], w_batch[2];
  int layout; /* 0 plain, 1 1-D x, 2 3-D x over 2-D w, 3 batched, 4 broadcast, 5 views,
                 6 NaN/Inf, 7 gather */
  const char *label;
} geo_case;

static void storef(void *dst, tsr_dtype dtype, int64_t i, float v) {
  if (dtype == TSR_FLOAT32)
    ((float *)dst)[i] = v;
  else
    ((uint16_t *)dst)[i] = dtype == TSR_FLOAT16 ? tsr_f32_to_f16(v) : tsr_f32_to_bf16(v);
}

static void put_code(uint32_t *row, int64_t i, int bits, uint32_t code) {
  for (int b = 0; b < bits; b++) {
    int64_t bit = i * bits + b;
    row[bit / 32] |= ((code >> b) & 1u) << (bit % 32);
  }
}

static tsr_array *from_host(const void *data, tsr_dtype dtype, const int64_t *shape, int ndim) {
  tsr_array *a = NULL;
  CHECK_OK(tsr_array_from_data(&a, data, dtype, shape, ndim));
  return a;
}

/* A [rows, cols] (times `matrices`) array whose storage rows are `pad` elements wider: a
   non-contiguous view with the given contents when pad > 0. */
static tsr_array *padded(const void *data, tsr_dtype dtype, int64_t matrices, int64_t rows,
                         int64_t cols, int pad, int batch_ndim, const int64_t *batch) {
  int64_t shape[TSR_MAX_NDIM];
  int ndim = 0;
  for (int i = 0; i < batch_ndim; i++)
    shape[ndim++] = batch[i];
  shape[ndim++] = rows;
  shape[ndim++] = cols;
  if (pad == 0) return from_host(data, dtype, shape, ndim);
  size_t element = tsr_dtype_size(dtype);
  int64_t wide = cols + pad, all_rows = matrices * rows;
  unsigned char *storage = calloc((size_t)(all_rows * wide) + 1, element);
  CHECK(storage != NULL);
  for (int64_t r = 0; r < all_rows; r++)
    memcpy(storage + (size_t)(r * wide) * element,
           (const unsigned char *)data + (size_t)(r * cols) * element, (size_t)cols * element);
  shape[ndim - 1] = wide;
  tsr_array *full = from_host(storage, dtype, shape, ndim), *view = NULL;
  free(storage);
  int64_t start[TSR_MAX_NDIM] = {0}, stop[TSR_MAX_NDIM];
  for (int i = 0; i < ndim; i++)
    stop[i] = shape[i];
  stop[ndim - 1] = cols;
  CHECK_OK(tsr_slice(&view, full, start, stop, NULL, ndim, NULL));
  tsr_array_release(full);
  return view;
}

/* x of the case's shape from row-major host data; layout 5 gives a transposed view. */
static tsr_array *make_x(const geo_case *gc, const void *data) {
  if (gc->layout != 5) return from_host(data, gc->x_dtype, gc->x_shape, gc->x_ndim);
  /* Store x^T [K, M] and view it transposed: the kernel must read columns. */
  size_t element = tsr_dtype_size(gc->x_dtype);
  unsigned char *t = malloc((size_t)(gc->M * gc->K) * element + 1);
  CHECK(t != NULL);
  for (int64_t i = 0; i < gc->M; i++)
    for (int64_t k = 0; k < gc->K; k++)
      memcpy(t + (size_t)(k * gc->M + i) * element,
             (const unsigned char *)data + (size_t)(i * gc->K + k) * element, element);
  int64_t shape[2] = {gc->K, gc->M};
  tsr_array *stored = from_host(t, gc->x_dtype, shape, 2), *view = NULL;
  free(t);
  CHECK_OK(tsr_transpose(&view, stored, NULL, 0, NULL));
  tsr_array_release(stored);
  return view;
}

static const int64_t M_VALUES[] = {1,  2,  3,  7,  8,  9,  15,  16,  17,
                                   31, 32, 33, 63, 64, 65, 127, 128, 129};
#define M_COUNT ((int)(sizeof M_VALUES / sizeof M_VALUES[0]))

/* The shapes and dtypes of case `index` (combo = mode/bits/group, layout 0..7). */
static void make_case(int index, tsr_quant_mode mode, int bits, int group_size, bool transpose,
                      int layout, bool small, geo_case *gc) {
  static const tsr_dtype dtypes[3] = {TSR_FLOAT32, TSR_FLOAT16, TSR_BFLOAT16};
  memset(gc, 0, sizeof *gc);
  gc->mode = mode;
  gc->bits = bits;
  gc->group_size = group_size;
  gc->transpose = transpose;
  gc->layout = layout;
  gc->x_dtype = dtypes[index % 3];
  gc->scale_dtype = mode == TSR_QUANT_AFFINE ? dtypes[(index / 3 + index) % 3] : TSR_UINT8;
  int64_t m = M_VALUES[(index * 7) % M_COUNT];
  gc->M = small && m > 33 ? M_VALUES[(index * 7) % 12] : m;
  /* Groups along the grouped axis: an odd count, so that axis is no multiple of 2 * group. */
  static const int64_t odd_groups[] = {1, 3, 5, 7, 9};
  int most = group_size >= 128 || small ? 2 : group_size >= 64 ? 3 : 5;
  int64_t grouped = group_size * pick(odd_groups, most);
  static const int64_t free_sizes[] = {1, 3, 7, 13, 33, 67, 71, 100, 131, 257};
  int64_t other = pick(free_sizes, small ? 6 : 10);
  gc->K = transpose ? grouped : other;
  gc->N = transpose ? other : grouped;
  gc->w_ndim = 2;
  gc->x_ndim = 2;
  gc->x_shape[0] = gc->M;
  gc->x_shape[1] = gc->K;
  switch (layout) {
    case 1: /* 1-D x */
      gc->M = 1;
      gc->x_ndim = 1;
      gc->x_shape[0] = gc->K;
      break;
    case 2: /* 3-D x, 2-D w: w applies to every row */
      gc->x_ndim = 3;
      gc->x_shape[0] = 2;
      gc->x_shape[1] = gc->M;
      gc->x_shape[2] = gc->K;
      break;
    case 3: /* batched alike */
    case 4: /* x [2, 1, M, K] with w batch [1, 3]: broadcast to [2, 3] */
    case 7: /* gather: x [3, 1, M, K], w batch [4], rhs [3, 2] */
      gc->gather = layout == 7;
      gc->x_ndim = layout == 3 ? 3 : 4;
      gc->x_shape[0] = layout == 3 ? 3 : layout == 4 ? 2 : 3;
      if (layout != 3) gc->x_shape[1] = 1;
      gc->x_shape[gc->x_ndim - 2] = gc->M;
      gc->x_shape[gc->x_ndim - 1] = gc->K;
      gc->w_ndim = layout == 4 ? 4 : 3;
      gc->w_batch[0] = layout == 3 ? 3 : layout == 4 ? 1 : 4;
      gc->w_batch[1] = 3;
      break;
    default:
      break;
  }
}

typedef struct {
  void *x, *scales, *biases;
  uint32_t *wq;
  int64_t matrices, rows, words, groups, x_size;
  int64_t rhs[6];
} geo_data;

/* A scale for one group: affine s (either sign) and b; fp modes a code near 2^0, now and then a
   negative or subnormal E4M3 (nvfp4) or the smallest E8M0, 2^-127 (MX). */
static void random_scale(const geo_case *gc, geo_data *d, int64_t at) {
  uint32_t r = rnd();
  if (gc->mode == TSR_QUANT_AFFINE) {
    storef(d->scales, gc->scale_dtype, at, (float)(uniform(0.01, 0.1) * (r & 1 ? 1 : -1)));
    storef(d->biases, gc->scale_dtype, at, (float)uniform(-0.5, 0.5));
  } else if (gc->mode == TSR_QUANT_NVFP4) {
    uint32_t code = r % 16 == 0 ? 1 + r / 16 % 7 : 0x20 + r / 16 % 0x40; /* 2^-9.. or 2^-3..15 */
    ((uint8_t *)d->scales)[at] = (uint8_t)(code | (r % 4 == 1 ? 0x80u : 0u));
  } else {
    ((uint8_t *)d->scales)[at] = (uint8_t)(r % 16 == 0 ? 0 : 121 + r / 16 % 10); /* 2^-6..2^3 */
  }
}

/* Poisons one group's scale (affine NaN, MX code 255 = +Inf, nvfp4 0x7F = NaN), one x element
   with NaN and one with +Inf: the layout-6 case. */
static void poison(const geo_case *gc, geo_data *d) {
  int64_t at = (d->rows / 2) * d->groups + d->groups / 2;
  if (gc->mode == TSR_QUANT_AFFINE)
    storef(d->scales, gc->scale_dtype, at, NAN);
  else
    ((uint8_t *)d->scales)[at] = gc->mode == TSR_QUANT_NVFP4 ? 0x7f : 255;
  storef(d->x, gc->x_dtype, (gc->M > 1 ? gc->K : 0) + gc->K / 2, NAN);
  if (gc->M > 2) storef(d->x, gc->x_dtype, 2 * gc->K, INFINITY);
}

static void generate(const geo_case *gc, geo_data *d) {
  memset(d, 0, sizeof *d);
  d->matrices = gc->w_ndim == 2 ? 1 : gc->w_batch[0] * (gc->w_ndim == 4 ? gc->w_batch[1] : 1);
  d->rows = gc->transpose ? gc->N : gc->K;
  int64_t per_row = gc->transpose ? gc->K : gc->N;
  d->words = per_row * gc->bits / 32;
  d->groups = per_row / gc->group_size;
  d->x_size = 1;
  for (int i = 0; i < gc->x_ndim; i++)
    d->x_size *= gc->x_shape[i];
  size_t scale_element = tsr_dtype_size(gc->scale_dtype);
  d->x = malloc((size_t)d->x_size * tsr_dtype_size(gc->x_dtype) + 1);
  d->wq = calloc((size_t)(d->matrices * d->rows * d->words) + 1, sizeof *d->wq);
  d->scales = malloc((size_t)(d->matrices * d->rows * d->groups) * scale_element + 1);
  d->biases = malloc((size_t)(d->matrices * d->rows * d->groups) * scale_element + 1);
  CHECK(d->x && d->wq && d->scales && d->biases);
  for (int64_t i = 0; i < d->x_size; i++)
    storef(d->x, gc->x_dtype, i, (float)uniform(-1.0, 1.0));
  for (int64_t r = 0; r < d->matrices * d->rows; r++) {
    for (int64_t i = 0; i < per_row; i++) {
      uint32_t code = rnd() & ((1u << gc->bits) - 1u);
      if (gc->mode == TSR_QUANT_MXFP8 && (code & 0x7fu) == 0x7fu) code -= 1u; /* not NaN */
      put_code(d->wq + r * d->words, i, gc->bits, code);
    }
    for (int64_t g = 0; g < d->groups; g++)
      random_scale(gc, d, r * d->groups + g);
  }
  for (int i = 0; i < 6; i++)
    d->rhs[i] = rnd() % 4;
  if (gc->layout == 6) poison(gc, d);
}

static void free_data(geo_data *d) {
  free(d->x);
  free(d->wq);
  free(d->scales);
  free(d->biases);
}

static tsr_dtype expected_dtype(const geo_case *gc) {
  if (gc->mode != TSR_QUANT_AFFINE || gc->x_dtype == gc->scale_dtype) return gc->x_dtype;
  return TSR_FLOAT32; /* float32 wins; float16 with bfloat16 is float32 */
}

/* Runs the op on the case's arrays; returns its output (the caller releases it). */
static tsr_array *run_op(const geo_case *gc, const geo_data *d, int64_t *rhs_shape) {
  int pad = gc->layout == 5 ? 3 : 0;
  int batch_ndim = gc->w_ndim - 2;
  tsr_array *x = make_x(gc, d->x);
  tsr_array *wq =
      padded(d->wq, TSR_UINT32, d->matrices, d->rows, d->words, pad, batch_ndim, gc->w_batch);
  tsr_array *scales = padded(d->scales, gc->scale_dtype, d->matrices, d->rows, d->groups, pad,
                             batch_ndim, gc->w_batch);
  tsr_array *biases = gc->mode != TSR_QUANT_AFFINE
                          ? NULL
                          : padded(d->biases, gc->scale_dtype, d->matrices, d->rows, d->groups, pad,
                                   batch_ndim, gc->w_batch);
  tsr_array *out = NULL, *rhs = NULL;
  if (gc->gather) {
    /* rhs [3, 2] as a transposed view of its [2, 3] transpose: strided indices. */
    int32_t values[6];
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 2; j++)
        values[j * 3 + i] = (int32_t)d->rhs[i * 2 + j];
    int64_t stored_shape[2] = {rhs_shape[1], rhs_shape[0]};
    tsr_array *stored = from_host(values, TSR_INT32, stored_shape, 2);
    CHECK_OK(tsr_transpose(&rhs, stored, NULL, 0, NULL));
    tsr_array_release(stored);
    CHECK_OK(tsr_gather_qmm(&out, x, wq, scales, biases, NULL, rhs, gc->transpose, gc->group_size,
                            gc->bits, gc->mode, false, NULL));
  } else {
    CHECK_OK(tsr_quantized_matmul(&out, x, wq, scales, biases, gc->transpose, gc->group_size,
                                  gc->bits, gc->mode, NULL));
  }
  tsr_array *all[] = {x, wq, scales, biases, rhs};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    tsr_array_release(all[i]);
  return out;
}

/* Output shape: broadcast batch, then [M, N] ([N] for a 1-D x). */
static int expected_shape(const geo_case *gc, const int64_t *rhs_shape, int64_t *shape) {
  int n = 0;
  if (gc->gather) {
    shape[n++] = rhs_shape[0];
    shape[n++] = rhs_shape[1];
  } else if (gc->x_ndim > 2 && gc->w_ndim > 2) {
    int xb = gc->x_ndim - 2, wb = gc->w_ndim - 2, b = xb > wb ? xb : wb;
    for (int i = 0; i < b; i++) {
      int ix = xb - b + i, iw = wb - b + i;
      int64_t dx = ix >= 0 ? gc->x_shape[ix] : 1, dw = iw >= 0 ? gc->w_batch[iw] : 1;
      shape[n++] = dx == 1 ? dw : dx;
    }
  } else {
    for (int i = 0; i < gc->x_ndim - 2; i++)
      shape[n++] = gc->x_shape[i];
  }
  if (gc->x_ndim >= 2) shape[n++] = gc->M;
  shape[n++] = gc->N;
  return n;
}

/* Every output element against the float64 product; returns the failures. */
static int64_t compare(const geo_case *gc, const geo_data *d, const void *ours, tsr_dtype dtype,
                       const int64_t *out_shape, int out_ndim, const int64_t *rhs_shape,
                       qr_stats *stats) {
  int64_t M = gc->M, K = gc->K, N = gc->N, batch_count = 1;
  int batch_ndim = out_ndim - (gc->x_ndim >= 2 ? 2 : 1);
  for (int i = 0; i < batch_ndim; i++)
    batch_count *= out_shape[i];
  int64_t w_shape[4] = {gc->w_batch[0], gc->w_batch[1], 0, 0};
  w_shape[gc->w_ndim - 2] = d->rows;
  w_shape[gc->w_ndim - 1] = d->words;
  qr_weights w = {gc->mode,  gc->bits, gc->group_size,  gc->transpose, d->rows,  d->words,
                  d->groups, d->wq,    gc->scale_dtype, d->scales,     d->biases};
  qr_batching bt = {.batch_ndim = batch_ndim,
                    .batch_shape = out_shape,
                    .x_ndim = gc->x_ndim,
                    .w_ndim = gc->w_ndim,
                    .x_shape = gc->x_shape,
                    .w_shape = w_shape,
                    .gather = gc->gather,
                    .rhs = d->rhs,
                    .rhs_ndim = 2,
                    .rhs_shape = rhs_shape};
  size_t kn = (size_t)(K * N) + 1;
  double *rule = malloc(kn * sizeof *rule), *hat = malloc(kn * sizeof *hat);
  double *terms = malloc(kn * sizeof *terms), *xrow = malloc((size_t)(K + 1) * sizeof *xrow);
  qr_expect *row = malloc((size_t)(N + 1) * sizeof *row);
  CHECK(rule && hat && terms && xrow && row);
  int64_t failures = 0, slot = qr_dtype_slot(dtype);
  for (int64_t b = 0; b < batch_count; b++) {
    int64_t xm, wm;
    qr_matrices(&bt, b, &xm, &wm);
    qr_dequantize(&w, wm, K, N, rule, hat, terms);
    for (int64_t i = 0; i < M; i++) {
      for (int64_t k = 0; k < K; k++)
        xrow[k] = qr_value(d->x, gc->x_dtype, (xm * M + i) * K + k);
      qr_expect_row(xrow, rule, hat, terms, K, N, row);
      for (int64_t n = 0; n < N; n++) {
        double got = qr_value(ours, dtype, (b * M + i) * N + n);
        double tol = qr_tolerance(&row[n], K, dtype, gc->mode);
        stats->elements[slot]++;
        if (isfinite(got) && isfinite(row[n].ref_hat)) {
          double diff = fabs(got - row[n].ref_hat);
          qr_note(&stats->max_abs_ref[slot], diff);
          if (row[n].sum_abs >= QR_REL_FLOOR)
            qr_note(&stats->max_rel_ref[slot], diff / row[n].sum_abs);
          if (tol > 0) qr_note(&stats->max_tol_used[slot], diff / tol);
        }
        /* Against the float64 product of x and dequantize(w) (quant-spec Part A §4); affine's
           tol holds against it too (qmm_ref.h). */
        if (qr_close(got, row[n].ref_hat, tol, gc->mode)) continue;
        if (failures++ < 4)
          fprintf(stderr, "  [%lld][%lld][%lld]: got %.9g, f64 %.9g, tol %.3g\n", (long long)b,
                  (long long)i, (long long)n, got, row[n].ref_hat, tol);
      }
    }
  }
  free(rule);
  free(hat);
  free(terms);
  free(xrow);
  free(row);
  return failures;
}

static const char *const MODE_NAMES[] = {"affine", "mxfp4", "mxfp8", "nvfp4"};

/* One generated case; returns whether it passed. */
static bool run_case(const geo_case *gc, qr_stats *stats) {
  geo_data d;
  generate(gc, &d);
  int64_t rhs_shape[2] = {3, 2};
  tsr_array *out = run_op(gc, &d, rhs_shape);
  int64_t shape[TSR_MAX_NDIM];
  int ndim = expected_shape(gc, rhs_shape, shape);
  tsr_dtype dtype = expected_dtype(gc);
  CHECK_EQ_INT(tsr_array_dtype(out), dtype);
  CHECK_EQ_INT(tsr_array_ndim(out), ndim);
  for (int i = 0; i < ndim; i++)
    CHECK_EQ_INT(tsr_array_dim(out, i), shape[i]);
  size_t bytes = (size_t)tsr_array_size(out) * tsr_dtype_size(dtype);
  void *ours = malloc(bytes + 1);
  CHECK(ours != NULL);
  CHECK_OK(tsr_array_read(out, ours, bytes));
  int64_t failures = compare(gc, &d, ours, dtype, shape, ndim, rhs_shape, stats);
  if (failures)
    fprintf(stderr,
            "FAILED %s bits %d group %d transpose %d layout %d x %s scales %s M %lld "
            "K %lld N %lld: %lld outputs\n",
            MODE_NAMES[gc->mode], gc->bits, gc->group_size, gc->transpose, gc->layout,
            tsr_dtype_name(gc->x_dtype), tsr_dtype_name(gc->scale_dtype), (long long)gc->M,
            (long long)gc->K, (long long)gc->N, (long long)failures);
  free(ours);
  tsr_array_release(out);
  free_data(&d);
  return failures == 0;
}

/* Evaluates a zero-size or K = 0 product and checks its shape (and zeros for K = 0). */
static void expect_empty(tsr_array *x, tsr_array *wq, tsr_array *scales, tsr_array *biases,
                         tsr_array *rhs, bool transpose, const int64_t *shape, int ndim) {
  tsr_array *out = NULL;
  if (rhs)
    CHECK_OK(tsr_gather_qmm(&out, x, wq, scales, biases, NULL, rhs, transpose, 32, 4,
                            TSR_QUANT_AFFINE, false, NULL));
  else
    CHECK_OK(tsr_quantized_matmul(&out, x, wq, scales, biases, transpose, 32, 4, TSR_QUANT_AFFINE,
                                  NULL));
  CHECK_EQ_INT(tsr_array_ndim(out), ndim);
  for (int i = 0; i < ndim; i++)
    CHECK_EQ_INT(tsr_array_dim(out, i), shape[i]);
  int64_t size = tsr_array_size(out);
  float *values = malloc((size_t)size * sizeof *values + 1);
  CHECK(values != NULL);
  CHECK_OK(tsr_array_read(out, values, (size_t)size * sizeof *values));
  for (int64_t i = 0; i < size; i++)
    CHECK(values[i] == 0.0f && !signbit(values[i])); /* an empty sum is +0 */
  free(values);
  tsr_array_release(out);
}

static tsr_array *zeros(tsr_dtype dtype, const int64_t *shape, int ndim) {
  int64_t size = 1;
  for (int i = 0; i < ndim; i++)
    size *= shape[i];
  void *data = calloc((size_t)size + 1, tsr_dtype_size(dtype));
  CHECK(data != NULL);
  tsr_array *a = from_host(data, dtype, shape, ndim);
  free(data);
  return a;
}

/* Zero-size M, N, batch and indices, and K = 0 (zeros), affine 4-bit group 32 float32. */
static void zero_size_cases(void) {
  const struct {
    int64_t x[3], w[2], s[2];
    int x_ndim;
    bool transpose, gather;
    int64_t out[3];
    int out_ndim;
  } cases[] = {
      {{0, 64}, {5, 8}, {5, 2}, 2, true, false, {0, 5}, 2},       /* M = 0 */
      {{3, 64}, {0, 8}, {0, 2}, 2, true, false, {3, 0}, 2},       /* N = 0 */
      {{3, 0}, {5, 0}, {5, 0}, 2, true, false, {3, 5}, 2},        /* K = 0: zeros */
      {{3, 0}, {0, 8}, {0, 2}, 2, false, false, {3, 64}, 2},      /* K = 0, plain: zeros */
      {{0, 3, 64}, {5, 8}, {5, 2}, 3, true, false, {0, 3, 5}, 3}, /* empty batch */
      {{1, 3, 64}, {5, 8}, {5, 2}, 3, true, true, {0, 3, 5}, 3},  /* empty indices */
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    tsr_array *x = zeros(TSR_FLOAT32, cases[c].x, cases[c].x_ndim);
    tsr_array *wq = zeros(TSR_UINT32, cases[c].w, 2);
    tsr_array *scales = zeros(TSR_FLOAT32, cases[c].s, 2),
              *biases = zeros(TSR_FLOAT32, cases[c].s, 2);
    int64_t none[1] = {0};
    tsr_array *rhs = cases[c].gather ? zeros(TSR_INT32, none, 1) : NULL;
    expect_empty(x, wq, scales, biases, rhs, cases[c].transpose, cases[c].out, cases[c].out_ndim);
    tsr_array *all[] = {x, wq, scales, biases, rhs};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
      tsr_array_release(all[i]);
  }
}

int main(void) {
  bool small = getenv("TSR_SANITIZED") != NULL;
  if (small)
    printf(
        "TSR_SANITIZED: shapes scaled down (M <= 33, at most 3 groups on the grouped axis, "
        "free axis <= 67); the case count is unchanged\n");
  int index = 0, passed = 0;
  qr_stats stats = {0};
  for (int c = 0; c < FORMAT_COUNT; c++)
    for (int t = 0; t < 2; t++)
      for (int layout = 0; layout < CASES_PER_LAYOUT; layout++) {
        geo_case gc;
        make_case(index++, FORMATS[c].mode, FORMATS[c].bits, FORMATS[c].group_size, t == 0, layout,
                  small, &gc);
        passed += run_case(&gc, &stats);
      }
  printf("%d of %d generated geometry cases pass\n", passed, index);
  qr_print_stats(&stats, "geometry");
  CHECK(index >= 272);
  CHECK_EQ_INT(passed, index);
  zero_size_cases();
  tsr_memory_clear_cache((tsr_device){TSR_CPU, 0});
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
