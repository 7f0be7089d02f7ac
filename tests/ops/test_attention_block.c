/* tests/ops/test_attention_block.c — one attention block built from the public ops, end to end:
 *   x -> rms_norm -> q, k, v projections (matmul with transposed [out, in] weights, as HF stores
 *   them) -> reshape [1, T, H, D] -> transpose to [1, H, T, D] -> rope (q, k) -> causal GQA sdpa
 *   -> transpose / reshape back to [T, Hq*D] -> output projection,
 * against a float64 reference that carries, next to every value, a bound e on how far the
 * library's value may be from it.
 *
 * The bound is derived by propagating first-order error bounds through the chain (u = 2^-24):
 *   rms_norm  e_h = 2 |h| ((S(K) + 3) / 2 + 4) u                        (test_nn.c's derivation)
 *   linear    e_y = sum_k |W_jk| e_h_k + 2 K u sum_k |h_k W_jk|   (inputs' errors carried through
 *             the weights, plus test_matmul.c's rounding bound)
 *   rope      e_y0 = |cos| e_x0 + |sin| e_x1 + 2 (|x0| + |x1|) (alpha + 3u), y1 alike; unrotated
 *             dims keep their error                                  (test_nn.c's derivation)
 *   sdpa      score errors delta_j = |scale| sum_e (|k_je| e_q_e + |q_e| e_k_je)
 *             + |scale| (D + 1) 2u sum_e |q_e k_je|, then test_sdpa.c's bound, plus the values'
 *             own errors sum_j p_j e_v_j
 *   reshape / transpose move values without arithmetic: exact.
 * Storing an op's result in bfloat16 is followed exactly: the reference rounds its value too, and
 * when [v - 2e, v + 2e] holds no bfloat16 rounding boundary both sides round to the same value
 * (rounding is monotonic), so the error becomes 0; otherwise it is the distance to the farthest
 * candidate. Every stage is checked on the way (check_stage). In float32 the bound runs through
 * the whole chain. In bfloat16 a worst case over the chain is useless (one possible flip of a
 * 2^-8 rounding early on, carried without cancellation, gives a bound larger than the outputs),
 * so after each stage the reference continues from the library's own values: each op is held to
 * its own bound inside the composed graph (views, reshapes and layouts between ops included).
 * Products of two error terms are second order; each check allows twice the bound. A guard
 * checks the final bound means something: below 1% of the largest output (a wrong rotation,
 * head mapping or mask moves outputs by order 1). */
#include "nn_data.h"

static const tsr_device cpu = {TSR_CPU, 0};
static const double u = 0x1p-24;

typedef struct {
  int64_t t, hidden, hq, hkv, d;
  int dims;
  bool traditional;
  int64_t offset;
  tsr_dtype dtype;
} block_config;

/* A float64 value per element and a bound on the computed value's distance from it. */
typedef struct {
  double *v, *e;
  int64_t n;
} bounded;

static bounded bounded_new(int64_t n) {
  bounded b = {calloc((size_t)n + 1, 8), calloc((size_t)n + 1, 8), n};
  CHECK(b.v && b.e);
  return b;
}

static void bounded_free(bounded *b) {
  free(b->v);
  free(b->e);
}

static double sum_terms(int64_t n) {
  return (double)(n < 256 ? n : 256) + (double)((n + 255) / 256) + 1.0;
}

static double to_bf16(double x) {
  return (double)tsr_bf16_to_f32(tsr_f32_to_bf16((float)x));
}

/* An op's result stored in the block's dtype (float32: nothing to do; its roundings are in the
 * op's bound). */
static void store_result(const block_config *c, bounded *x) {
  if (c->dtype == TSR_FLOAT32) return;
  for (int64_t i = 0; i < x->n; i++) {
    double low = to_bf16(x->v[i] - 2.0 * x->e[i]), high = to_bf16(x->v[i] + 2.0 * x->e[i]);
    double rounded = to_bf16(x->v[i]);
    x->e[i] = low == high ? 0.0 : fmax(high - rounded, rounded - low);
    x->v[i] = rounded;
  }
}

/* ---- the reference, in token-major [T, H*D] layouts (head h's dim e at column h*D + e) ---- */

static void ref_rms_norm(const block_config *c, const double *x, const double *w, double eps,
                         bounded *h) {
  for (int64_t t = 0; t < c->t; t++) {
    double squares = 0.0;
    for (int64_t i = 0; i < c->hidden; i++)
      squares += x[t * c->hidden + i] * x[t * c->hidden + i];
    double r = 1.0 / sqrt(squares / (double)c->hidden + eps);
    for (int64_t i = 0; i < c->hidden; i++) {
      int64_t at = t * c->hidden + i;
      h->v[at] = x[at] * r * w[i];
      h->e[at] = 2.0 * fabs(h->v[at]) * ((sum_terms(c->hidden) + 3.0) / 2.0 + 4.0) * u;
    }
  }
  store_result(c, h);
}

/* y [T, N] = x [T, K] @ W^T for W stored [N, K]. */
static void ref_linear(const block_config *c, const bounded *x, const double *w, int64_t n,
                       int64_t k, bounded *y) {
  for (int64_t t = 0; t < c->t; t++)
    for (int64_t j = 0; j < n; j++) {
      double sum = 0.0, magnitude = 0.0, carried = 0.0;
      for (int64_t p = 0; p < k; p++) {
        sum += x->v[t * k + p] * w[j * k + p];
        magnitude += fabs(x->v[t * k + p] * w[j * k + p]);
        carried += fabs(w[j * k + p]) * x->e[t * k + p];
      }
      y->v[t * n + j] = sum;
      y->e[t * n + j] = carried + 2.0 * (double)k * u * magnitude;
    }
  store_result(c, y);
}

static void ref_rope(const block_config *c, int64_t heads, bounded *x) {
  double base = 10000.0;
  int half = c->dims / 2;
  for (int64_t t = 0; t < c->t; t++)
    for (int64_t h = 0; h < heads; h++) {
      double *v = x->v + (t * heads + h) * c->d, *e = x->e + (t * heads + h) * c->d;
      for (int i = 0; i < half; i++) {
        double angle = (double)(c->offset + t) * pow(base, -2.0 * i / c->dims);
        double alpha = angle * (log(base) + 4.0) * u, cs = cos(angle), sn = sin(angle);
        int i0 = c->traditional ? 2 * i : i, i1 = c->traditional ? 2 * i + 1 : i + half;
        double x0 = v[i0], x1 = v[i1], e0 = e[i0], e1 = e[i1];
        double rounding = 2.0 * (fabs(x0) + fabs(x1)) * (alpha + 3.0 * u);
        v[i0] = x0 * cs - x1 * sn;
        v[i1] = x1 * cs + x0 * sn;
        e[i0] = fabs(cs) * e0 + fabs(sn) * e1 + rounding;
        e[i1] = fabs(cs) * e1 + fabs(sn) * e0 + rounding;
      }
    }
  store_result(c, x);
}

/* One query row i of head h against kv head g: o's D values and bounds. */
static void ref_attend(const block_config *c, const bounded *q, const bounded *k, const bounded *v,
                       int64_t h, int64_t i, double scale, bounded *o) {
  int64_t g = h / (c->hq / c->hkv), visible = i + 1, d = c->d;
  double s[64], delta[64], max = -INFINITY, delta_max = 0.0, sum = 0.0;
  CHECK(visible <= 64);
  const double *qv = q->v + (i * c->hq + h) * d, *qe = q->e + (i * c->hq + h) * d;
  for (int64_t j = 0; j < visible; j++) {
    const double *kv = k->v + (j * c->hkv + g) * d, *ke = k->e + (j * c->hkv + g) * d;
    double dot = 0.0, magnitude = 0.0, carried = 0.0;
    for (int64_t e = 0; e < d; e++) {
      dot += qv[e] * kv[e];
      magnitude += fabs(qv[e] * kv[e]);
      carried += fabs(kv[e]) * qe[e] + fabs(qv[e]) * ke[e];
    }
    s[j] = scale * dot;
    delta[j] = fabs(scale) * (carried + (double)(d + 1) * 2.0 * u * magnitude);
    max = s[j] > max ? s[j] : max;
    delta_max = delta[j] > delta_max ? delta[j] : delta_max;
  }
  for (int64_t j = 0; j < visible; j++)
    sum += exp(s[j] - max);
  for (int64_t e = 0; e < d; e++) {
    double out = 0.0, bound = 0.0;
    for (int64_t j = 0; j < visible; j++) {
      int64_t at = (j * c->hkv + g) * d + e;
      double p = exp(s[j] - max) / sum;
      double rounding =
          2.0 * (fabs(s[j] - max) + sum_terms(visible) + 4.0 + 2.0 * (double)visible) * u;
      out += p * v->v[at];
      bound += p * v->e[at] + p * fabs(v->v[at]) * (delta[j] + delta_max + rounding);
    }
    o->v[(i * c->hq + h) * d + e] = out;
    o->e[(i * c->hq + h) * d + e] = bound;
  }
}

/* ---- the block through tessera -------------------------------------------------------------- */

typedef struct {
  double *x, *w_norm, *wq, *wk, *wv, *wo;
} block_weights;

static tsr_array *weight_transposed(const double *w, tsr_dtype dtype, int64_t rows, int64_t cols,
                                    tsr_array **stored) {
  int64_t shape[2] = {rows, cols};
  *stored = nn_make(w, dtype, shape, 2);
  tsr_array *t = NULL;
  CHECK_OK(tsr_transpose(&t, *stored, NULL, 0, NULL));
  return t;
}

/* [T, H*D] -> [1, H, T, D]: a reshape (*reshaped), then a transposed view of it. */
static tsr_array *to_heads(tsr_array *y, const block_config *c, int64_t heads,
                           tsr_array **reshaped) {
  int64_t shape[4] = {1, c->t, heads, c->d};
  int axes[4] = {0, 2, 1, 3};
  tsr_array *out = NULL;
  CHECK_OK(tsr_reshape(reshaped, y, shape, 4, NULL));
  CHECK_OK(tsr_transpose(&out, *reshaped, axes, 4, NULL));
  return out;
}

enum { KEEP = 32 };

static tsr_array *keep_new(tsr_array **keep, int *n, tsr_array *a) {
  CHECK(*n < KEEP);
  keep[(*n)++] = a;
  return a;
}

/* The op's status and its result (read after the call has set it). */
static tsr_array *op_result(tsr_status status, tsr_array **result, tsr_array **keep, int *n) {
  CHECK_OK(status);
  return keep_new(keep, n, *result);
}

/* The arrays of the block's stages, read back to check each one. */
typedef struct {
  tsr_array *h, *q, *k, *v, *qr, *kr, *o, *out;
} block_stages;

/* The block; every array it makes goes to keep[0 .. *n) for the caller to release. */
static void run_block(const block_config *c, const block_weights *w, float eps, tsr_array **keep,
                      int *n, block_stages *stages) {
  int64_t xs[2] = {c->t, c->hidden}, ws[1] = {c->hidden}, qn = c->hq * c->d, kn = c->hkv * c->d;
  int64_t flat[2] = {c->t, qn};
  int axes[4] = {0, 2, 1, 3};
  tsr_array *x = keep_new(keep, n, nn_make(w->x, c->dtype, xs, 2));
  tsr_array *norm = keep_new(keep, n, nn_make(w->w_norm, c->dtype, ws, 1)), *stored = NULL;
  tsr_array *wq = keep_new(keep, n, weight_transposed(w->wq, c->dtype, qn, c->hidden, &stored));
  keep_new(keep, n, stored);
  tsr_array *wk = keep_new(keep, n, weight_transposed(w->wk, c->dtype, kn, c->hidden, &stored));
  keep_new(keep, n, stored);
  tsr_array *wv = keep_new(keep, n, weight_transposed(w->wv, c->dtype, kn, c->hidden, &stored));
  keep_new(keep, n, stored);
  tsr_array *wo = keep_new(keep, n, weight_transposed(w->wo, c->dtype, c->hidden, qn, &stored));
  keep_new(keep, n, stored);
  tsr_array *h = NULL, *q = NULL, *k = NULL, *v = NULL, *qr = NULL, *kr = NULL, *o = NULL;
  h = op_result(tsr_rms_norm(&h, x, norm, eps, NULL), &h, keep, n);
  q = op_result(tsr_matmul(&q, h, wq, NULL), &q, keep, n);
  k = op_result(tsr_matmul(&k, h, wk, NULL), &k, keep, n);
  v = op_result(tsr_matmul(&v, h, wv, NULL), &v, keep, n);
  tsr_array *reshaped = NULL;
  tsr_array *qh = keep_new(keep, n, to_heads(q, c, c->hq, &reshaped));
  keep_new(keep, n, reshaped);
  tsr_array *kh = keep_new(keep, n, to_heads(k, c, c->hkv, &reshaped));
  keep_new(keep, n, reshaped);
  tsr_array *vh = keep_new(keep, n, to_heads(v, c, c->hkv, &reshaped));
  keep_new(keep, n, reshaped);
  qr = op_result(tsr_rope(&qr, qh, c->dims, c->traditional, 10000.0f, c->offset, NULL), &qr, keep,
                 n);
  kr = op_result(tsr_rope(&kr, kh, c->dims, c->traditional, 10000.0f, c->offset, NULL), &kr, keep,
                 n);
  float scale = 1.0f / sqrtf((float)c->d);
  o = op_result(tsr_sdpa(&o, qr, kr, vh, scale, true, NULL), &o, keep, n);
  tsr_array *ot = NULL, *o2 = NULL, *out = NULL;
  ot = op_result(tsr_transpose(&ot, o, axes, 4, NULL), &ot, keep, n);
  o2 = op_result(tsr_reshape(&o2, ot, flat, 2, NULL), &o2, keep, n);
  out = op_result(tsr_matmul(&out, o2, wo, NULL), &out, keep, n);
  *stages = (block_stages){h, q, k, v, qr, kr, o, out};
}

static double representable(double x, tsr_dtype dtype) {
  return dtype == TSR_BFLOAT16 ? (double)tsr_bf16_to_f32(tsr_f32_to_bf16((float)x))
                               : (double)(float)x;
}

static block_weights weights_new(const block_config *c) {
  int64_t qn = c->hq * c->d, kn = c->hkv * c->d;
  block_weights w = {malloc((size_t)(c->t * c->hidden) * 8), malloc((size_t)c->hidden * 8),
                     malloc((size_t)(qn * c->hidden) * 8),   malloc((size_t)(kn * c->hidden) * 8),
                     malloc((size_t)(kn * c->hidden) * 8),   malloc((size_t)(qn * c->hidden) * 8)};
  CHECK(w.x && w.w_norm && w.wq && w.wk && w.wv && w.wo);
  nn_random(w.x, c->t * c->hidden, c->dtype, 2.0);
  for (int64_t i = 0; i < c->hidden; i++)
    w.w_norm[i] = representable(1.0 + 0.25 * nn_uniform(), c->dtype);
  double scale = 1.5 / sqrt((double)c->hidden);
  nn_random(w.wq, qn * c->hidden, c->dtype, scale);
  nn_random(w.wk, kn * c->hidden, c->dtype, scale);
  nn_random(w.wv, kn * c->hidden, c->dtype, scale);
  nn_random(w.wo, qn * c->hidden, c->dtype, 1.5 / sqrt((double)qn));
  return w;
}

/* One stage of the block: the library's array (token-major [T, N], or [1, H, T, D] when heads
 * > 0) within twice the reference's bound. In bfloat16 the reference then continues from the
 * library's values (exact inputs, error 0): each op is checked with its own bound inside the
 * composed graph, instead of a worst case over every rounding the chain could have flipped. */
static void check_stage(const char *what, const block_config *c, tsr_array *lib, int64_t heads,
                        bounded *ref) {
  double *got = malloc((size_t)ref->n * 8 + 8), *token_major = malloc((size_t)ref->n * 8 + 8);
  double *tolerance = malloc((size_t)ref->n * 8 + 8);
  CHECK(got && token_major && tolerance);
  CHECK_EQ_INT(tsr_array_size(lib), ref->n);
  nn_read(lib, got);
  for (int64_t i = 0; i < ref->n; i++) {
    int64_t at = i;
    if (heads > 0) { /* [1, H, T, D] element i -> token-major (t * H + h) * D + e */
      int64_t e = i % c->d, t = (i / c->d) % c->t, h = i / (c->d * c->t);
      at = (t * heads + h) * c->d + e;
    }
    token_major[at] = got[i];
  }
  for (int64_t i = 0; i < ref->n; i++)
    tolerance[i] = 2.0 * ref->e[i]; /* room for the second-order terms */
  nn_expect_close(what, token_major, ref->v, tolerance, ref->n);
  if (c->dtype != TSR_FLOAT32) {
    for (int64_t i = 0; i < ref->n; i++) {
      ref->v[i] = token_major[i];
      ref->e[i] = 0.0;
    }
  }
  free(got);
  free(token_major);
  free(tolerance);
}

/* The reference of the block, each stage checked against the library's on the way; returns the
 * output with its bound (not yet checked). */
static bounded reference_block(const block_config *c, const block_weights *w, double eps,
                               const block_stages *lib) {
  int64_t qn = c->hq * c->d, kn = c->hkv * c->d;
  bounded h = bounded_new(c->t * c->hidden), q = bounded_new(c->t * qn), k = bounded_new(c->t * kn);
  bounded v = bounded_new(c->t * kn), o = bounded_new(c->t * qn);
  bounded out = bounded_new(c->t * c->hidden);
  ref_rms_norm(c, w->x, w->w_norm, eps, &h);
  check_stage("rms_norm", c, lib->h, 0, &h);
  ref_linear(c, &h, w->wq, qn, c->hidden, &q);
  check_stage("q projection", c, lib->q, 0, &q);
  ref_linear(c, &h, w->wk, kn, c->hidden, &k);
  check_stage("k projection", c, lib->k, 0, &k);
  ref_linear(c, &h, w->wv, kn, c->hidden, &v);
  check_stage("v projection", c, lib->v, 0, &v);
  ref_rope(c, c->hq, &q);
  check_stage("rope q", c, lib->qr, c->hq, &q);
  ref_rope(c, c->hkv, &k);
  check_stage("rope k", c, lib->kr, c->hkv, &k);
  double scale = (double)(1.0f / sqrtf((float)c->d));
  for (int64_t head = 0; head < c->hq; head++)
    for (int64_t i = 0; i < c->t; i++)
      ref_attend(c, &q, &k, &v, head, i, scale, &o);
  store_result(c, &o);
  check_stage("sdpa", c, lib->o, c->hq, &o);
  ref_linear(c, &o, w->wo, c->hidden, qn, &out);
  bounded *parts[] = {&h, &q, &k, &v, &o};
  for (int i = 0; i < 5; i++)
    bounded_free(parts[i]);
  return out;
}

static void run_case(block_config c) {
  const float eps = 1e-5f;
  block_weights w = weights_new(&c);
  tsr_array *keep[KEEP];
  int n = 0;
  block_stages stages;
  run_block(&c, &w, eps, keep, &n, &stages);
  tsr_array *out = stages.out;
  CHECK_EQ_INT(tsr_array_ndim(out), 2);
  CHECK_EQ_INT(tsr_array_dim(out, 0), c.t);
  CHECK_EQ_INT(tsr_array_dim(out, 1), c.hidden);
  CHECK_EQ_INT(tsr_array_dtype(out), c.dtype);
  CHECK_OK(tsr_eval(&out, 1)); /* the whole graph at once, before the stages are read */
  bounded want = reference_block(&c, &w, (double)eps, &stages);
  double *got = malloc((size_t)want.n * 8), largest = 0.0, widest = 0.0, observed = 0.0;
  CHECK(got);
  nn_read(out, got);
  for (int64_t i = 0; i < want.n; i++) {
    want.e[i] *= 2.0; /* room for the second-order terms */
    largest = fabs(want.v[i]) > largest ? fabs(want.v[i]) : largest;
    widest = want.e[i] > widest ? want.e[i] : widest;
    observed = fabs(got[i] - want.v[i]) > observed ? fabs(got[i] - want.v[i]) : observed;
  }
  nn_expect_close("attention block", got, want.v, want.e, want.n);
  printf("attention block %s, T %lld: max |error| %.3g, bound up to %.3g, outputs up to %.3g\n",
         tsr_dtype_name(c.dtype), (long long)c.t, observed, widest, largest);
  /* Worst-case propagation is loose (the carried terms assume no cancellation), yet it must stay
     far below what a wrong rotation, head mapping or mask would change (order 1). */
  if (!(widest < 1e-2 * largest))
    CHECK_FAIL_("the bound %.3g is too loose to mean anything next to outputs of %.3g", widest,
                largest);
  nn_release_all(keep, (size_t)n);
  bounded_free(&want);
  free(got);
  double *buffers[] = {w.x, w.w_norm, w.wq, w.wk, w.wv, w.wo};
  for (int i = 0; i < 6; i++)
    free(buffers[i]);
}

int main(void) {
  /* t, hidden, hq, hkv, d, dims, traditional, offset, dtype */
  run_case((block_config){9, 48, 4, 2, 16, 8, true, 0, TSR_FLOAT32});  /* GLM-4 dense style */
  run_case((block_config){9, 48, 4, 2, 16, 8, false, 3, TSR_FLOAT32}); /* GLM-4.5 MoE style */
  run_case((block_config){9, 48, 4, 2, 16, 8, true, 3, TSR_BFLOAT16});
  run_case((block_config){40, 64, 4, 1, 16, 16, true, 0, TSR_FLOAT32}); /* MQA, full rotary */
  tsr_memory_clear_cache(cpu);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
