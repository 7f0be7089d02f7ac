/* tests/cuda/test_quant_gpu.c — the quantized ops on the GPU (cuda/quant.c, cuda/qmm.c) against the
 * CPU reference and the float64 oracle of tests/quant/qmm_ref.h, over what the conformance
 * harness's few cases leave out: every mode × bits × group size × float dtype of quantize
 * (bits equal to the CPU's, rows with NaN, ±Inf, ties, all-negative, tiny, huge and float32-wide
 * groups, MX scales below 2^-127, a transposed input), of dequantize (every scale and output
 * dtype, every fp scale code, NaN/Inf/huge affine scales, the nvfp4 global scale, a strided w_q),
 * and of quantized_matmul / gather_qmm (both transposes, M on both sides of the decode/tiled
 * threshold 8 and of the 64-row tile, N and K tails including nvfp4's K = 16 mod 32, batch
 * broadcasting, a 1-D x, a strided x, gathered lhs and strided rhs indices, NaN/Inf in x and in a
 * scale; within qmm_ref.h's derived bound) and the index-out-of-range errors (the CPU's status
 * and message). Every GPU output is poisoned first (TSR_DEBUG_POISON=1, set here). Without a
 * usable GPU: one skip line. The randomized sweep is test_qmm_sweep.c. */
#include "cuda/quant_gpu.h"
#include "quant/qmm_ref.h"

static tsr_stream *cpu_stream, *gpu_stream;

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint32_t rnd(void) { /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 32);
}

static double uniform(double lo, double hi) {
  return lo + (hi - lo) * (rnd() / 4294967296.0);
}

/* a's elements, read back (malloc'ed; *bytes set). */
static unsigned char *read_all(tsr_array *a, size_t *bytes) {
  *bytes = (size_t)tsr_array_size(a) * tsr_dtype_size(tsr_array_dtype(a));
  unsigned char *data = malloc(*bytes + 1);
  CHECK(data != NULL);
  CHECK_OK(tsr_array_read(a, data, *bytes));
  return data;
}

/* a and b hold the same bits, any NaN matching any NaN for float dtypes; prints the first
   difference under `what`. */
static bool same_bits(tsr_array *a, tsr_array *b, const char *what) {
  size_t na, nb;
  tsr_dtype dtype = tsr_array_dtype(a);
  CHECK_EQ_INT(dtype, tsr_array_dtype(b));
  unsigned char *x = read_all(a, &na), *y = read_all(b, &nb);
  CHECK_EQ_U64(na, nb);
  size_t element = tsr_dtype_size(dtype);
  bool is_float = dtype == TSR_FLOAT32 || dtype == TSR_FLOAT16 || dtype == TSR_BFLOAT16;
  bool ok = true;
  for (size_t i = 0; ok && i < na / element; i++) {
    if (!memcmp(x + i * element, y + i * element, element)) continue;
    if (is_float && isnan(qr_load_float(x, dtype, (int64_t)i)) &&
        isnan(qr_load_float(y, dtype, (int64_t)i)))
      continue;
    double gv = is_float ? (double)qr_load_float(x, dtype, (int64_t)i) : 0.0;
    double cv = is_float ? (double)qr_load_float(y, dtype, (int64_t)i) : 0.0;
    fprintf(stderr, "FAILED %s: element %zu differs (gpu %.9g, cpu %.9g; bytes %02x.. vs %02x..)\n",
            what, i, gv, cv, x[i * element], y[i * element]);
    ok = false;
  }
  free(x);
  free(y);
  return ok;
}

/* ---- quantize ---------------------------------------------------------------------------- */

/* Row r of a [rows, K] weight: a different kind of group per row. */
static float special_value(int row, int64_t i, tsr_dtype dtype) {
  float big = dtype == TSR_FLOAT16 ? 65504.0f : dtype == TSR_BFLOAT16 ? 3.38e38f : 3.4e38f;
  switch (row % 10) {
    case 0:
      return (float)uniform(-1.0, 1.0);
    case 1: /* tiny range around 1 */
      return 1.0f + (float)uniform(0.0, 1e-3);
    case 2: /* all negative */
      return (float)uniform(-2.0, -1.0);
    case 3: /* NaN and infinities next to ordinary values */
      return i % 7 == 3    ? NAN
             : i % 11 == 5 ? INFINITY
             : i % 13 == 6 ? -INFINITY
                           : (float)uniform(-3, 3);
    case 4: /* dyadic values: rint and encoder ties */
      return (float)((int)(rnd() % 33) - 16) * 0.25f;
    case 5: /* both signs near the largest value: a group wider than float32 */
      return (i % 2 ? -1.0f : 1.0f) * big * (float)uniform(0.5, 1.0);
    case 6:
      return 0.0f;
    case 7: /* MX scales below 2^-127 (the code wraps); float16 flushes to its subnormals */
      return (float)uniform(-1.0, 1.0) * 0x1p-128f;
    case 8: /* all NaN, except sometimes one value */
      return i % 17 == 0 ? 2.0f : NAN;
    default:
      return (float)uniform(-1e4, 1e4);
  }
}

static int check_quantize(int f, tsr_dtype dtype, bool scaled, bool transposed) {
  const int rows = 10, gs = FORMATS[f].group_size;
  const int64_t k = (int64_t)gs * 3;
  void *w = malloc((size_t)(rows * k) * 4 + 4);
  CHECK(w != NULL);
  for (int r = 0; r < rows; r++)
    for (int64_t i = 0; i < k; i++) {
      int64_t at = transposed ? i * rows + r : r * k + i; /* stored [K, rows] when transposed */
      storef(w, dtype, at, special_value(r, i, dtype));
    }
  int64_t shape[2] = {rows, k}, stored[2] = {k, rows};
  tsr_array *a = NULL;
  if (transposed) {
    tsr_array *t = host_array(w, dtype, stored, 2);
    CHECK_OK(tsr_transpose(&a, t, NULL, 0, NULL));
    tsr_array_release(t);
  } else {
    a = host_array(w, dtype, shape, 2);
  }
  free(w);
  tsr_array *out[2][3] = {{NULL}};
  tsr_stream *streams[2] = {gpu_stream, cpu_stream};
  for (int s = 0; s < 2; s++) {
    if (scaled)
      CHECK_OK(tsr_quantize_nvfp4_scaled(&out[s][0], &out[s][1], a, 0.37f, streams[s]));
    else
      CHECK_OK(tsr_quantize(&out[s][0], &out[s][1], &out[s][2], a, gs, FORMATS[f].bits,
                            FORMATS[f].mode, streams[s]));
  }
  char what[160];
  snprintf(what, sizeof what, "quantize %s bits %d group %d %s%s%s", MODE_NAMES[FORMATS[f].mode],
           FORMATS[f].bits, gs, tsr_dtype_name(dtype), scaled ? " global scale" : "",
           transposed ? " transposed" : "");
  bool ok = true;
  for (int p = 0; p < 3; p++)
    if (out[0][p]) ok = same_bits(out[0][p], out[1][p], what) && ok;
  for (int s = 0; s < 2; s++)
    for (int p = 0; p < 3; p++)
      tsr_array_release(out[s][p]);
  tsr_array_release(a);
  return ok ? 0 : 1;
}

/* ---- dequantize -------------------------------------------------------------------------- */

static int check_dequantize(int f, tsr_dtype scale_dtype, tsr_dtype out_dtype, bool scaled,
                            bool strided) {
  const int rows = 9, gs = FORMATS[f].group_size, bits = FORMATS[f].bits;
  const tsr_quant_mode mode = FORMATS[f].mode;
  const int64_t k = (int64_t)gs * 3, words = k * bits / 32, groups = 3;
  const int64_t row_step = strided ? 2 : 1; /* a step-2 slice of twice the rows */
  uint32_t *wq = malloc((size_t)(rows * row_step * words) * 4 + 4);
  void *scales = malloc((size_t)(rows * groups) * 4 + 4),
       *biases = malloc((size_t)(rows * groups) * 4 + 4);
  CHECK(wq && scales && biases);
  for (int64_t i = 0; i < rows * row_step * words; i++)
    wq[i] = rnd();
  for (int64_t g = 0; g < rows * groups; g++) {
    if (mode == TSR_QUANT_AFFINE) {
      float s = (float)uniform(-0.2, 0.2), b = (float)uniform(-1, 1);
      if (g == 4) s = NAN;
      if (g == 7) b = INFINITY;
      if (g == 10) s = 3e38f; /* s * q overflows float16/bfloat16 or float32 */
      storef(scales, scale_dtype, g, s);
      storef(biases, scale_dtype, g, b);
    } else {
      ((uint8_t *)scales)[g] = (uint8_t)(g * 29 + 3); /* every code over the runs */
    }
  }
  int64_t wq_shape[2] = {rows * row_step, words}, s_shape[2] = {rows, groups};
  tsr_array *w_arr = host_array(wq, TSR_UINT32, wq_shape, 2);
  if (strided) {
    int64_t start[2] = {0, 0}, stop[2] = {rows * row_step, words}, step[2] = {2, 1};
    tsr_array *view = NULL;
    CHECK_OK(tsr_slice(&view, w_arr, start, stop, step, 2, NULL));
    tsr_array_release(w_arr);
    w_arr = view;
  }
  tsr_array *s_arr = host_array(scales, scale_dtype, s_shape, 2);
  tsr_array *b_arr = mode == TSR_QUANT_AFFINE ? host_array(biases, scale_dtype, s_shape, 2) : NULL;
  free(wq);
  free(scales);
  free(biases);
  tsr_array *out[2] = {NULL, NULL};
  tsr_stream *streams[2] = {gpu_stream, cpu_stream};
  for (int s = 0; s < 2; s++) {
    if (scaled)
      CHECK_OK(tsr_dequantize_nvfp4_scaled(&out[s], w_arr, s_arr, 3.5f, out_dtype, streams[s]));
    else
      CHECK_OK(tsr_dequantize(&out[s], w_arr, s_arr, b_arr, gs, bits, mode, out_dtype, streams[s]));
  }
  char what[192];
  snprintf(what, sizeof what, "dequantize %s bits %d group %d scales %s out %s%s%s",
           MODE_NAMES[mode], bits, gs, tsr_dtype_name(scale_dtype), tsr_dtype_name(out_dtype),
           scaled ? " global scale" : "", strided ? " strided" : "");
  bool ok = same_bits(out[0], out[1], what);
  tsr_array *all[] = {out[0], out[1], w_arr, s_arr, b_arr};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    tsr_array_release(all[i]);
  return ok ? 0 : 1;
}

/* ---- quantized_matmul and gather_qmm ---------------------------------------------------- */

typedef struct {
  int f;
  bool transpose;
  tsr_dtype x_dtype, scale_dtype;
  int64_t M, K, N;
  int layout; /* 0 plain, 1 1-D x, 2 batched broadcast, 3 strided x, 4 NaN/Inf, 5 gather */
} mm_case;

typedef struct {
  void *x, *scales, *biases;
  uint32_t *wq;
  int64_t matrices, rows, words, groups, x_size;
  int64_t x_shape[4], w_shape[3], lhs[6], rhs[6];
  int x_ndim, w_ndim;
} mm_data;

static void put_code(uint32_t *row, int64_t i, int bits, uint32_t code) {
  for (int b = 0; b < bits; b++) {
    int64_t bit = i * bits + b;
    row[bit / 32] |= ((code >> b) & 1u) << (bit % 32);
  }
}

static void mm_generate(const mm_case *c, mm_data *d) {
  const tsr_quant_mode mode = FORMATS[c->f].mode;
  const int bits = FORMATS[c->f].bits, gs = FORMATS[c->f].group_size;
  memset(d, 0, sizeof *d);
  d->x_ndim = c->layout == 1 ? 1 : c->layout == 2 ? 3 : c->layout == 5 ? 4 : 2;
  d->w_ndim = c->layout == 2 ? 3 : c->layout == 5 ? 3 : 2;
  d->matrices = c->layout == 2 ? 1 : c->layout == 5 ? 4 : 1; /* layout 2: w [1, R, W] broadcast */
  if (c->layout == 1) {
    d->x_shape[0] = c->K;
  } else if (c->layout == 2) { /* x [3, M, K] against w [1, R, W] */
    d->x_shape[0] = 3, d->x_shape[1] = c->M, d->x_shape[2] = c->K;
  } else if (c->layout == 5) { /* x [2, 1, M, K], lhs [3, 2] over x's 2 matrices, rhs [3, 2] */
    d->x_shape[0] = 2, d->x_shape[1] = 1, d->x_shape[2] = c->M, d->x_shape[3] = c->K;
  } else {
    d->x_shape[0] = c->M, d->x_shape[1] = c->K;
  }
  d->rows = c->transpose ? c->N : c->K;
  int64_t per_row = c->transpose ? c->K : c->N;
  d->words = per_row * bits / 32;
  d->groups = per_row / gs;
  d->w_shape[0] = d->matrices;
  d->x_size = 1;
  for (int i = 0; i < d->x_ndim; i++)
    d->x_size *= d->x_shape[i];
  size_t se = tsr_dtype_size(c->scale_dtype);
  d->x = malloc((size_t)d->x_size * 4 + 4);
  d->wq = calloc((size_t)(d->matrices * d->rows * d->words) + 1, 4);
  d->scales = malloc((size_t)(d->matrices * d->rows * d->groups) * se + 4);
  d->biases = malloc((size_t)(d->matrices * d->rows * d->groups) * se + 4);
  CHECK(d->x && d->wq && d->scales && d->biases);
  for (int64_t i = 0; i < d->x_size; i++)
    storef(d->x, c->x_dtype, i, (float)uniform(-1.0, 1.0));
  for (int64_t r = 0; r < d->matrices * d->rows; r++) {
    for (int64_t i = 0; i < per_row; i++) {
      uint32_t code = rnd() & ((1u << bits) - 1u);
      if (mode == TSR_QUANT_MXFP8 && (code & 0x7fu) == 0x7fu) code -= 1u; /* not NaN */
      put_code(d->wq + r * d->words, i, bits, code);
    }
    for (int64_t g = 0; g < d->groups; g++) {
      int64_t at = r * d->groups + g;
      uint32_t u = rnd();
      if (mode == TSR_QUANT_AFFINE) {
        storef(d->scales, c->scale_dtype, at, (float)(uniform(0.01, 0.1) * (u & 1 ? 1 : -1)));
        storef(d->biases, c->scale_dtype, at, (float)uniform(-0.5, 0.5));
      } else if (mode == TSR_QUANT_NVFP4) {
        ((uint8_t *)d->scales)[at] = (uint8_t)((0x20 + u % 0x40) | (u % 4 == 1 ? 0x80u : 0u));
      } else {
        ((uint8_t *)d->scales)[at] = (uint8_t)(u % 16 == 0 ? 0 : 121 + u / 16 % 10);
      }
    }
  }
  if (c->layout == 4) { /* a NaN scale, and NaN / +Inf in x */
    int64_t at = (d->rows / 2) * d->groups + d->groups / 2;
    if (mode == TSR_QUANT_AFFINE)
      storef(d->scales, c->scale_dtype, at, NAN);
    else
      ((uint8_t *)d->scales)[at] = mode == TSR_QUANT_NVFP4 ? 0x7f : 255;
    storef(d->x, c->x_dtype, c->K / 2, NAN);
    if (c->M > 1) storef(d->x, c->x_dtype, c->K + c->K / 3, INFINITY);
  }
  for (int i = 0; i < 6; i++) {
    d->lhs[i] = rnd() % 2;
    d->rhs[i] = rnd() % 4;
  }
}

static void mm_free(mm_data *d) {
  free(d->x);
  free(d->wq);
  free(d->scales);
  free(d->biases);
}

/* x [M, K] as a transposed view of its stored transpose. */
static tsr_array *strided_x(const mm_case *c, const mm_data *d) {
  size_t e = tsr_dtype_size(c->x_dtype);
  unsigned char *t = malloc((size_t)(c->M * c->K) * e + 1);
  CHECK(t != NULL);
  for (int64_t i = 0; i < c->M; i++)
    for (int64_t k = 0; k < c->K; k++)
      memcpy(t + (size_t)(k * c->M + i) * e,
             (const unsigned char *)d->x + (size_t)(i * c->K + k) * e, e);
  int64_t shape[2] = {c->K, c->M};
  tsr_array *stored = host_array(t, c->x_dtype, shape, 2), *view = NULL;
  free(t);
  CHECK_OK(tsr_transpose(&view, stored, NULL, 0, NULL));
  tsr_array_release(stored);
  return view;
}

/* indices [3, 2] int32, stored as [2, 3] and transposed (strided) when `transposed`. */
static tsr_array *indices_array(const int64_t *values, bool transposed) {
  int32_t v[6];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 2; j++)
      v[transposed ? j * 3 + i : i * 2 + j] = (int32_t)values[i * 2 + j];
  int64_t shape[2] = {3, 2}, stored[2] = {2, 3};
  tsr_array *a = host_array(v, TSR_INT32, transposed ? stored : shape, 2);
  if (!transposed) return a;
  tsr_array *view = NULL;
  CHECK_OK(tsr_transpose(&view, a, NULL, 0, NULL));
  tsr_array_release(a);
  return view;
}

static tsr_array *mm_run(const mm_case *c, const mm_data *d, tsr_stream *s) {
  const tsr_quant_mode mode = FORMATS[c->f].mode;
  tsr_array *x =
      c->layout == 3 ? strided_x(c, d) : host_array(d->x, c->x_dtype, d->x_shape, d->x_ndim);
  int64_t wshape[3] = {d->matrices, d->rows, d->words},
          sshape[3] = {d->matrices, d->rows, d->groups};
  int off = d->w_ndim == 3 ? 0 : 1;
  tsr_array *wq = host_array(d->wq, TSR_UINT32, wshape + off, d->w_ndim);
  tsr_array *scales = host_array(d->scales, c->scale_dtype, sshape + off, d->w_ndim);
  tsr_array *biases = mode == TSR_QUANT_AFFINE
                          ? host_array(d->biases, c->scale_dtype, sshape + off, d->w_ndim)
                          : NULL;
  tsr_array *out = NULL, *lhs = NULL, *rhs = NULL;
  if (c->layout == 5) {
    lhs = indices_array(d->lhs, false);
    rhs = indices_array(d->rhs, true);
    CHECK_OK(tsr_gather_qmm(&out, x, wq, scales, biases, lhs, rhs, c->transpose,
                            FORMATS[c->f].group_size, FORMATS[c->f].bits, mode, false, s));
  } else {
    CHECK_OK(tsr_quantized_matmul(&out, x, wq, scales, biases, c->transpose,
                                  FORMATS[c->f].group_size, FORMATS[c->f].bits, mode, s));
  }
  tsr_array *all[] = {x, wq, scales, biases, lhs, rhs};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    tsr_array_release(all[i]);
  return out;
}

/* The GPU's output against the float64 product, element by element. */
static int check_matmul(const mm_case *c, qr_stats *stats) {
  mm_data d;
  mm_generate(c, &d);
  tsr_array *out = mm_run(c, &d, gpu_stream);
  size_t bytes;
  tsr_dtype dtype = tsr_array_dtype(out);
  unsigned char *ours = read_all(out, &bytes);
  const tsr_quant_mode mode = FORMATS[c->f].mode;
  qr_weights w = {mode,
                  FORMATS[c->f].bits,
                  FORMATS[c->f].group_size,
                  c->transpose,
                  d.rows,
                  d.words,
                  d.groups,
                  d.wq,
                  c->scale_dtype,
                  d.scales,
                  d.biases};
  int64_t batch_shape[2] = {3, 2}, w_shape[3] = {d.matrices, d.rows, d.words}, ishape[2] = {3, 2};
  int batch_ndim = c->layout == 2 ? 1 : c->layout == 5 ? 2 : 0;
  if (c->layout == 2) batch_shape[0] = 3;
  qr_batching bt = {.batch_ndim = batch_ndim,
                    .batch_shape = batch_shape,
                    .x_ndim = d.x_ndim,
                    .w_ndim = d.w_ndim,
                    .x_shape = d.x_shape,
                    .w_shape = d.w_ndim == 3 ? w_shape : w_shape + 1,
                    .gather = c->layout == 5,
                    .lhs = d.lhs,
                    .rhs = d.rhs,
                    .lhs_ndim = 2,
                    .rhs_ndim = 2,
                    .lhs_shape = ishape,
                    .rhs_shape = ishape};
  int64_t K = c->K, N = c->N, M = c->layout == 1 ? 1 : c->M, batch_count = 1;
  for (int i = 0; i < batch_ndim; i++)
    batch_count *= batch_shape[i];
  CHECK_EQ_U64(bytes, (uint64_t)(batch_count * M * N) * tsr_dtype_size(dtype));
  size_t kn = (size_t)(K * N) + 1;
  double *rule = malloc(kn * 8), *hat = malloc(kn * 8), *terms = malloc(kn * 8);
  double *xrow = malloc((size_t)(K + 1) * 8);
  qr_expect *row = malloc((size_t)(N + 1) * sizeof *row);
  CHECK(rule && hat && terms && xrow && row);
  int64_t failures = 0, slot = qr_dtype_slot(dtype);
  for (int64_t b = 0; b < batch_count; b++) {
    int64_t xm, wm;
    qr_matrices(&bt, b, &xm, &wm);
    qr_dequantize(&w, wm, K, N, rule, hat, terms);
    for (int64_t i = 0; i < M; i++) {
      for (int64_t k = 0; k < K; k++)
        xrow[k] = qr_value(d.x, c->x_dtype, (xm * M + i) * K + k);
      qr_expect_row(xrow, rule, hat, terms, K, N, row);
      for (int64_t n = 0; n < N; n++) {
        double got = qr_value(ours, dtype, (b * M + i) * N + n);
        double tol = qr_tolerance(&row[n], K, dtype, mode);
        stats->elements[slot]++;
        if (isfinite(got) && isfinite(row[n].ref_hat) && tol > 0)
          qr_note(&stats->max_tol_used[slot], fabs(got - row[n].ref_hat) / tol);
        if (qr_close(got, row[n].ref_hat, tol, mode)) continue;
        if (failures++ < 4)
          fprintf(stderr, "  [%lld][%lld][%lld]: gpu %.9g, f64 %.9g, tol %.3g\n", (long long)b,
                  (long long)i, (long long)n, got, row[n].ref_hat, tol);
      }
    }
  }
  if (failures)
    fprintf(stderr,
            "FAILED qmm %s bits %d group %d transpose %d layout %d x %s scales %s M %lld K %lld "
            "N %lld: %lld outputs\n",
            MODE_NAMES[mode], FORMATS[c->f].bits, FORMATS[c->f].group_size, c->transpose, c->layout,
            tsr_dtype_name(c->x_dtype), tsr_dtype_name(c->scale_dtype), (long long)c->M,
            (long long)K, (long long)N, (long long)failures);
  free(rule);
  free(hat);
  free(terms);
  free(xrow);
  free(row);
  free(ours);
  tsr_array_release(out);
  mm_free(&d);
  return failures ? 1 : 0;
}

static const int64_t M_VALUES[] = {1, 2, 3, 5, 8, 9, 16, 33, 64, 65, 130};
#define M_COUNT ((int)(sizeof M_VALUES / sizeof M_VALUES[0]))

static int matmul_cases(qr_stats *stats, int *count) {
  int failed = 0, index = 0;
  static const int64_t free_sizes[] = {1, 7, 17, 64, 65, 100, 131, 257};
  for (int f = 0; f < FORMAT_COUNT; f++)
    for (int t = 0; t < 2; t++)
      for (int layout = 0; layout < 6; layout++) {
        mm_case c = {.f = f, .transpose = t == 0, .layout = layout};
        int gs = FORMATS[f].group_size;
        c.x_dtype = FLOATS[index % 3];
        c.scale_dtype =
            FORMATS[f].mode == TSR_QUANT_AFFINE ? FLOATS[(index / 3 + index) % 3] : TSR_UINT8;
        c.M = M_VALUES[(index * 5 + layout) % M_COUNT];
        if (layout == 4 && c.M < 2) c.M = 3;
        /* The grouped axis: an odd number of groups (nvfp4: K = 16 mod 32), sometimes long
           enough for two qmv tiles of x. */
        int64_t groups = (index % 7 == 0) ? (9000 / gs) | 1 : 1 + 2 * (index % 3);
        int64_t grouped = gs * groups, other = free_sizes[index % 8];
        c.K = c.transpose ? grouped : other;
        c.N = c.transpose ? other : grouped;
        index++;
        failed += check_matmul(&c, stats);
      }
  *count = index;
  return failed;
}

/* A gather whose index is out of range fails on the GPU with the CPU's status and message. */
static int index_errors(void) {
  int failed = 0;
  for (int side = 0; side < 2; side++) {
    float x[2 * 64] = {0};
    uint32_t wq[3 * 8 * 8] = {0};
    float scales[3 * 8 * 1] = {0}, biases[3 * 8] = {0};
    int64_t xs[3] = {2, 1, 64}, ws[3] = {3, 8, 8}, ss[3] = {3, 8, 1}, is[1] = {4};
    int32_t lhs_v[4] = {0, 1, side == 0 ? 2 : 1, 0}, rhs_v[4] = {2, 0, 1, side == 1 ? -1 : 2};
    const char *message[2] = {NULL, NULL};
    char saved[2][512];
    tsr_status status[2];
    tsr_stream *streams[2] = {gpu_stream, cpu_stream};
    for (int s = 0; s < 2; s++) {
      tsr_array *xa = host_array(x, TSR_FLOAT32, xs, 3), *wa = host_array(wq, TSR_UINT32, ws, 3);
      tsr_array *sa = host_array(scales, TSR_FLOAT32, ss, 3),
                *ba = host_array(biases, TSR_FLOAT32, ss, 3);
      tsr_array *la = host_array(lhs_v, TSR_INT32, is, 1),
                *ra = host_array(rhs_v, TSR_INT32, is, 1);
      tsr_array *out = NULL;
      CHECK_OK(tsr_gather_qmm(&out, xa, wa, sa, ba, la, ra, true, 64, 4, TSR_QUANT_AFFINE, false,
                              streams[s]));
      status[s] = tsr_eval(&out, 1);
      snprintf(saved[s], sizeof saved[s], "%s", tsr_last_error());
      message[s] = saved[s];
      tsr_array *all[] = {xa, wa, sa, ba, la, ra, out};
      for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tsr_array_release(all[i]);
    }
    if (status[0] != status[1] || status[1] != TSR_ERR_INVALID ||
        !strstr(message[0], "out of range") ||
        !strstr(message[0],
                side == 0 ? "lhs_indices value 2 at [2]" : "rhs_indices value -1 at [3]")) {
      fprintf(stderr, "FAILED index error (%s): gpu %s \"%s\", cpu %s \"%s\"\n",
              side == 0 ? "lhs" : "rhs", tsr_status_name(status[0]), message[0],
              tsr_status_name(status[1]), message[1]);
      failed++;
    }
  }
  return failed;
}

int main(void) {
  /* Before the library reads its knobs: every GPU output starts as NaN (0xFF bytes), so an element
     a kernel leaves unwritten fails the comparisons below instead of reading a stale value. */
  setenv("TSR_DEBUG_POISON", "1", 1);
  if (tsr_device_count(TSR_GPU) < 1) {
    printf("skip: no usable GPU\n");
    return 0;
  }
  cpu_stream = tsr_default_stream(cpu);
  gpu_stream = tsr_default_stream(gpu);
  int failed = 0, quantize_count = 0, dequantize_count = 0, matmul_count = 0;
  for (int f = 0; f < FORMAT_COUNT; f++)
    for (int d = 0; d < 3; d++) {
      failed += check_quantize(f, FLOATS[d], false, d == 1);
      quantize_count++;
      if (FORMATS[f].mode == TSR_QUANT_NVFP4) {
        failed += check_quantize(f, FLOATS[d], true, false);
        quantize_count++;
      }
    }
  for (int f = 0; f < FORMAT_COUNT; f++)
    for (int s = 0; s < 3; s++)
      for (int o = 0; o < 3; o++) {
        bool affine = FORMATS[f].mode == TSR_QUANT_AFFINE;
        if (!affine && s > 0) continue;
        failed += check_dequantize(f, affine ? FLOATS[s] : TSR_UINT8, FLOATS[o], false, o == 2);
        dequantize_count++;
        if (FORMATS[f].mode == TSR_QUANT_NVFP4) {
          failed += check_dequantize(f, TSR_UINT8, FLOATS[o], true, false);
          dequantize_count++;
        }
      }
  qr_stats stats = {0};
  failed += matmul_cases(&stats, &matmul_count);
  qr_print_stats(&stats, "gpu qmm");
  failed += index_errors();
  printf("%d quantize, %d dequantize, %d matmul cases and 2 index errors; %d failed\n",
         quantize_count, dequantize_count, matmul_count, failed);
  CHECK_EQ_INT(failed, 0);
  tsr_shutdown();
  printf("ok\n");
  return 0;
}
