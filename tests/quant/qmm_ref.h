/* tests/quant/qmm_ref.h — the float64 oracle of the quantized-matmul tests (test_qmm_golden.c,
 * test_qmm_geometry.c): a decoder of MLX's packed formats written here from quant-spec.md (bit by
 * bit, tables spelled out, no library code but the public f16/bf16 widenings), naive float64
 * products, and the error bound each output must meet. Not a model of tessera's kernels.
 *
 * `hat` is each element's weight as MLX's dequantize to float32 gives it (docs/quant-rules.md),
 * which tsr_dequantize reproduces bit for bit: affine T(T(s * q) + b) in the scales' dtype T,
 * computed here in float32 and rounded to T (which equals T arithmetic: float32 has more than
 * 2p + 2 bits for p = 11 and 8, so the double rounding is innocuous); fp modes value(code) *
 * scale, exact. `rule` is what tessera's matmul is measured against: for fp modes the same; for
 * affine the exact s * q + b (float64; s * q is exact, the sum within 2^-53 of it), because the
 * decode kernels take the factored form quant-spec Part A §4 allows (s * sum x q + b * sum x per
 * group, in float32, weights never rounded to T) while the GEMM, tiles and reference kernels
 * still use the exact weights hat. sum_diff = sum_k |x_k| |rule_k - hat_k| covers the gap; each
 * |rule_k - hat_k| <= u_T |s q| + u_T |T(s q) + b| <= u_T (2 + u_T) |s q| + u_T |b| (two
 * roundings to T; u_T = 2^-24, 2^-11, 2^-8; plus T's subnormal half-spacing twice for float16).
 *
 * Affine tolerance (qr_tolerance with an affine mode), derived for the factored form and holding
 * for the exact-weight kernels too. The factored kernel evaluates, in float32, an expression of
 * + and * (fma counting once) whose expansion is sum_k s x_k q_k + sum_k b x_k: 2K monomials, x
 * and the stored s, b, q exact in float32. Each monomial reaches the result through at most 2
 * multiplications (s * q or x * q; s * A or b * xsum) and at most 2K - 1 additions (any binary
 * summation tree of 2K leaves, whatever the order, chains, lanes or groups), so (Higham, 3.1,
 * one relative error per operation on its path) |y - sum_j T_j| <= gamma_{2K+1} sum_j |T_j| =
 * gamma_{2K+1} sum_k |x_k| (|s q_k| + |b|) = gamma_{2K+1} sum_terms, gamma_n = n u / (1 - n u),
 * u = 2^-24; plus, for products that underflow (up to 3 multiplications per monomial, each off
 * by at most 2^-150 absolutely, additions exact there), 2K * 3 * 2^-150 <= 4K * 2^-149. Then
 * |y - ref| <= that, |y - ref_hat| <= that + sum_diff. An exact-weight kernel has |y - ref_hat|
 * <= gamma_K sum_k |x_k| |hat_k| <= gamma_K (sum_terms + sum_diff) (|rule_k| <= |s q_k| + |b|),
 * and |y - ref| <= that + sum_diff. So one tolerance for both, against ref and against ref_hat:
 *   tol = gamma_{2K+1} sum_terms + (1 + gamma_K) sum_diff + 4K 2^-149,
 * then one rounding to the output dtype (half an ulp, below). Where x, s or b is not finite the
 * factored form gives a non-finite result without x @ hat's exact NaN/Inf pattern (an Inf x
 * meets q = 0 as Inf * 0 = NaN, s = Inf meets it likewise), so for affine qr_close asks only
 * that y be non-finite exactly where ref is (every weight finite: ref finite iff x, s, b are).
 *
 * Tolerance of tessera's output against ref = sum_k x_k * rule_k (float64), fp modes, per
 * element:
 *   tessera sums K float32 products x_k * w_k in float32: Higham's bound (Accuracy and
 *   Stability, 3.1) |sum32 - ref| <= gamma_K * sum_k |x_k| |w_k|, gamma_K = K u / (1 - K u),
 *   u = 2^-24, whatever the order and whether products are fused; plus K * 2^-149 for products
 *   that underflow; plus 2u * sum_k |x_k| (|s q_k| + |b|) for a kernel that forms s * q + b with
 *   one rounding (fused) instead of two with float32 scales — the weight then differs from the
 *   rule by at most two float32 roundings of terms of that size;
 *   then one rounding to the output dtype: half an ulp of |ref| + the above.
 * Against MLX: |ours - mlx| <= |ours - ref| + |ref - ref_hat| + |ref_hat - mlx|, where
 *   |ref - ref_hat| <= sum_k |x_k| |rule_k - hat_k| (computed here) and
 *   |ref_hat - mlx| <= E * sum_k |x_k| |hat_k|, E = the manifest's mlx_max_abs_err_vs_f64 (MLX's
 *   measured maximum of exactly that ratio over the case's finite outputs; its CPU accumulates
 *   float16/bfloat16 in that dtype, so E is about K * 2^-11 or K * 2^-8 there).
 */
#ifndef TSR_TESTS_QUANT_QMM_REF_H
#define TSR_TESTS_QUANT_QMM_REF_H

#include <math.h>

#include "check.h"

/* One stack of packed weight matrices, as stored: [matrices, rows, words] codes and
   [matrices, rows, groups] scales (and biases), row-major. */
typedef struct {
  tsr_quant_mode mode;
  int bits, group_size;
  bool transpose;
  int64_t rows, words, groups;
  const uint32_t *wq;
  tsr_dtype scale_dtype;
  const void *scales, *biases;
} qr_weights;

/* Element i of a packed row, one stream bit at a time (LSB first, bit j in word j / 32). */
static inline uint32_t qr_code(const uint32_t *row, int64_t i, int bits) {
  uint32_t code = 0;
  for (int b = 0; b < bits; b++) {
    int64_t bit = i * bits + b;
    code |= ((row[bit / 32] >> (bit % 32)) & 1u) << b;
  }
  return code;
}

static inline double qr_fp4(uint32_t code) {
  static const double table[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
  double v = table[code & 7u];
  return (code & 8u) ? -v : v;
}

/* E4M3, bias 7; 0x7F/0xFF are NaN (mlx-cpu 0.32.4). */
static inline double qr_e4m3(uint32_t code) {
  if ((code & 0x7fu) == 0x7fu) return (double)NAN;
  int e = (int)((code >> 3) & 15u), m = (int)(code & 7u);
  double v = e == 0 ? ldexp(m, -9) : ldexp(8 + m, e - 10);
  return (code & 0x80u) ? -v : v;
}

static inline double qr_e8m0(uint32_t code) {
  return code == 255u ? (double)INFINITY : ldexp(1.0, (int)code - 127);
}

static inline float qr_load_float(const void *base, tsr_dtype dtype, int64_t i) {
  if (dtype == TSR_FLOAT32) return ((const float *)base)[i];
  uint16_t h = ((const uint16_t *)base)[i];
  return dtype == TSR_FLOAT16 ? tsr_f16_to_f32(h) : tsr_bf16_to_f32(h);
}

static inline float qr_round_to(float v, tsr_dtype dtype) {
  if (dtype == TSR_FLOAT16) return tsr_f16_to_f32(tsr_f32_to_f16(v));
  if (dtype == TSR_BFLOAT16) return tsr_bf16_to_f32(tsr_f32_to_bf16(v));
  return v;
}

/* Packed element i of row r of matrix `matrix`: the rule weight, w_hat, and the size of the
   terms the weight is formed from (|s q| + |b| for affine, |w| otherwise). */
static inline void qr_weight(const qr_weights *w, int64_t matrix, int64_t r, int64_t i,
                             double *rule, double *hat, double *terms) {
  int64_t row = matrix * w->rows + r;
  uint32_t code = qr_code(w->wq + row * w->words, i, w->bits);
  int64_t s_index = row * w->groups + i / w->group_size;
  if (w->mode == TSR_QUANT_AFFINE) {
    float s = qr_load_float(w->scales, w->scale_dtype, s_index);
    float b = qr_load_float(w->biases, w->scale_dtype, s_index);
    float sq = s * (float)code;
    *hat = (double)qr_round_to(qr_round_to(sq, w->scale_dtype) + b, w->scale_dtype);
    *rule = (double)s * code + (double)b;
    *terms = fabs((double)s * code) + fabs((double)b);
    return;
  }
  uint32_t scale_code = ((const uint8_t *)w->scales)[s_index];
  double scale = w->mode == TSR_QUANT_NVFP4 ? qr_e4m3(scale_code) : qr_e8m0(scale_code);
  double value = w->mode == TSR_QUANT_MXFP8 ? qr_e4m3(code) : qr_fp4(code);
  *rule = *hat = (double)(float)(value * scale); /* 0 * Inf is NaN here as in float32 */
  *terms = fabs(*rule);
}

/* The logical [K, N] weight matrix `matrix` (element [k][n] at k * N + n), three ways. */
static inline void qr_dequantize(const qr_weights *w, int64_t matrix, int64_t K, int64_t N,
                                 double *rule, double *hat, double *terms) {
  for (int64_t k = 0; k < K; k++)
    for (int64_t n = 0; n < N; n++) {
      int64_t r = w->transpose ? n : k, i = w->transpose ? k : n;
      qr_weight(w, matrix, r, i, rule + k * N + n, hat + k * N + n, terms + k * N + n);
    }
}

/* What one output element should be, in float64. */
typedef struct {
  double ref, sum_abs, sum_terms; /* rule weights */
  double ref_hat, sum_abs_hat, sum_diff;
} qr_expect;

/* Row x[K] times the [K, N] weights: out[N]. */
static inline void qr_expect_row(const double *x, const double *rule, const double *hat,
                                 const double *terms, int64_t K, int64_t N, qr_expect *out) {
  for (int64_t n = 0; n < N; n++) {
    qr_expect e = {0, 0, 0, 0, 0, 0};
    for (int64_t k = 0; k < K; k++) {
      double w = rule[k * N + n], h = hat[k * N + n];
      e.ref += x[k] * w;
      e.ref_hat += x[k] * h;
      e.sum_abs += fabs(x[k] * w);
      e.sum_abs_hat += fabs(x[k] * h);
      e.sum_terms += fabs(x[k]) * terms[k * N + n];
      e.sum_diff += fabs(x[k]) * fabs(w - h);
    }
    out[n] = e;
  }
}

/* Half an ulp of |v| in dtype (its subnormal spacing below the normal range). */
static inline double qr_half_ulp(double v, tsr_dtype dtype) {
  int precision = dtype == TSR_FLOAT32 ? 24 : dtype == TSR_FLOAT16 ? 11 : 8;
  int min_exponent = dtype == TSR_FLOAT16 ? -14 : -126;
  int e = 0;
  frexp(fabs(v), &e); /* |v| = f 2^e, f in [0.5, 1): floor(log2 |v|) = e - 1 */
  int exponent = (v == 0.0 || e - 1 < min_exponent) ? min_exponent : e - 1;
  return ldexp(1.0, exponent - precision);
}

static inline double qr_gamma(double n) {
  double u = ldexp(1.0, -24);
  return n * u / (1.0 - n * u);
}

/* The bound on |tessera - ref| (see the top of this file: affine's is derived there for the
   factored form and also bounds |tessera - ref_hat|). */
static inline double qr_tolerance(const qr_expect *e, int64_t K, tsr_dtype out_dtype,
                                  tsr_quant_mode mode) {
  double accumulated;
  if (mode == TSR_QUANT_AFFINE)
    accumulated = qr_gamma(2.0 * (double)K + 1.0) * e->sum_terms +
                  (1.0 + qr_gamma((double)K)) * e->sum_diff + 4.0 * (double)K * ldexp(1.0, -149);
  else
    accumulated = qr_gamma((double)K) * e->sum_abs + 2.0 * ldexp(1.0, -24) * e->sum_terms +
                  (double)K * ldexp(1.0, -149);
  return accumulated + qr_half_ulp(fabs(e->ref) + accumulated, out_dtype);
}

/* got within tol of want. fp modes: NaN exactly where want is NaN, an infinity only where want is
   the same infinity; affine (the factored form): not finite exactly where want is not. */
static inline bool qr_close(double got, double want, double tol, tsr_quant_mode mode) {
  if (mode == TSR_QUANT_AFFINE && !isfinite(want)) return !isfinite(got);
  if (isnan(want)) return isnan(got);
  if (isinf(want)) return got == want;
  return isfinite(got) && fabs(got - want) <= tol;
}

/* Element i of a float array of any float dtype, as double. */
static inline double qr_value(const void *data, tsr_dtype dtype, int64_t i) {
  return (double)qr_load_float(data, dtype, i);
}

/* The flat position in `shape` (right-aligned in a batch of batch_ndim axes, size-1 axes
   broadcast) of batch coordinates `coord`. */
static inline int64_t qr_broadcast_flat(const int64_t *coord, int batch_ndim, const int64_t *shape,
                                        int ndim) {
  int64_t flat = 0;
  for (int i = 0; i < ndim; i++)
    flat = flat * shape[i] + (shape[i] == 1 ? 0 : coord[batch_ndim - ndim + i]);
  return flat;
}

/* Which matrices of x and w each output matrix uses (MLX's rules, quant-spec.md Part B §4.1,
   §4.2): the output's batch axes; x's and w's shapes; for gather_qmm the index values
   (row-major int64, NULL = MLX's default arange over that operand's batch axes). */
typedef struct {
  int batch_ndim;
  const int64_t *batch_shape;
  int x_ndim, w_ndim;
  const int64_t *x_shape, *w_shape;
  bool gather;
  const int64_t *lhs, *rhs;
  int lhs_ndim, rhs_ndim;
  const int64_t *lhs_shape, *rhs_shape;
} qr_batching;

static inline void qr_matrices(const qr_batching *bt, int64_t b, int64_t *xm, int64_t *wm) {
  int64_t coord[TSR_MAX_NDIM] = {0}, rest = b;
  for (int d = bt->batch_ndim - 1; d >= 0; d--) {
    coord[d] = rest % bt->batch_shape[d];
    rest /= bt->batch_shape[d];
  }
  int x_batch = bt->x_ndim > 2 ? bt->x_ndim - 2 : 0, w_batch = bt->w_ndim - 2;
  if (bt->gather && bt->lhs)
    *xm = bt->lhs[qr_broadcast_flat(coord, bt->batch_ndim, bt->lhs_shape, bt->lhs_ndim)];
  else
    *xm = qr_broadcast_flat(coord, bt->batch_ndim, bt->x_shape, x_batch);
  if (bt->gather && bt->rhs)
    *wm = bt->rhs[qr_broadcast_flat(coord, bt->batch_ndim, bt->rhs_shape, bt->rhs_ndim)];
  else if (bt->gather || (x_batch > 0 && w_batch > 0))
    *wm = qr_broadcast_flat(coord, bt->batch_ndim, bt->w_shape, w_batch);
  else
    *wm = 0; /* MLX: a 1-D or 2-D x with batched w (or any x with 2-D w) uses w's first matrix */
}

/* The maximum errors seen, per output dtype (0 float32, 1 float16, 2 bfloat16): absolute, and
   relative to sum |x| |w| where that is at least QR_REL_FLOOR (below it the output dtype's
   absolute spacing, not the sum, sets the error, and the ratio says nothing). */
#define QR_REL_FLOOR 1e-3
typedef struct {
  int64_t elements[3];
  double max_rel_ref[3], max_rel_mlx[3], max_abs_ref[3], max_abs_mlx[3];
  double max_tol_used[3]; /* max |ours - ref| / tolerance */
} qr_stats;

static inline int qr_dtype_slot(tsr_dtype dtype) {
  return dtype == TSR_FLOAT32 ? 0 : dtype == TSR_FLOAT16 ? 1 : 2;
}

static inline void qr_note(double *max, double v) {
  if (v > *max) *max = v;
}

static inline void qr_print_stats(const qr_stats *s, const char *what) {
  static const char *const names[3] = {"float32", "float16", "bfloat16"};
  for (int d = 0; d < 3; d++) {
    if (!s->elements[d]) continue;
    printf("%s %-8s %7lld outputs: vs f64 max |d| %.3g (%.3g of sum|x||w|, %.3g of the bound)",
           what, names[d], (long long)s->elements[d], s->max_abs_ref[d], s->max_rel_ref[d],
           s->max_tol_used[d]);
    if (s->max_abs_mlx[d] > 0 || s->max_rel_mlx[d] > 0)
      printf("; vs MLX max |d| %.3g (%.3g of sum|x||w|)", s->max_abs_mlx[d], s->max_rel_mlx[d]);
    printf("\n");
  }
}

#endif
