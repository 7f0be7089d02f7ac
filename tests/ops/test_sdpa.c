/* tests/ops/test_sdpa.c — tsr_sdpa against a float64 reference written here: causal prefill
 * (across the kernel's 64-row query blocks), decode and chunked prefill against a longer cache,
 * non-causal, grouped-query (GQA), multi-query, float16 / bfloat16 / mixed inputs, [B, T, H, D]
 * tensors transposed into [B, H, T, D] views, zero-size axes, and every bad input.
 *
 * Tolerance, per output element o = sum_j p_j v_j (first order, allowed twice over; u = 2^-24):
 *   - a score s_j = scale (q . k_j) is a float32 dot product of D terms, then scaled:
 *     |ds_j| <= delta_j = |scale| (D + 1) 2u sum_e |q_e k_je|;
 *   - scores off by delta_j move the exact softmax by |dp_j| <= p_j (delta_j + delta_max);
 *   - the float32 softmax itself errs by p_j (|s_j - m| + sum_terms(n) + 4) u (test_nn.c's
 *     derivation; n the visible keys);
 *   - O = P V is a float32 product of n terms: 2 n u sum_j p_j |v_j|.
 *   So |o - o_ref| <= sum_j p_j |v_j| (delta_j + delta_max + (|s_j - m| + sum_terms(n) + 4 + 2n)
 * u), plus the stored rounding of a float16 / bfloat16 output. */
#include "nn_data.h"

static const tsr_device cpu = {TSR_CPU, 0};
static const double u = 0x1p-24;

static double sum_terms(int64_t n) {
  return (double)(n < 256 ? n : 256) + (double)((n + 255) / 256) + 1.0;
}

typedef struct {
  int64_t b, hq, hkv, tq, tk, d;
  bool causal;
  tsr_dtype q_dtype, kv_dtype;
  int layout; /* q, k, v as given: 0 contiguous [B, H, T, D]; transposed views of a stored
                 1 [B, T, H, D] (axes 1, 2 swapped: what a reshape of projections gives) or
                 2 [B, H, D, T] (axes 2, 3: rows of D apart, gathered column-wise) */
  double magnitude;
} sdpa_case;

/* One query row: out[d] and tol[d] for query i of head h (kv head g). */
static void attend_row(const sdpa_case *c, const double *q, const double *k, const double *v,
                       int64_t i, double scale, double *out, double *tol) {
  int64_t visible = c->causal ? i + c->tk - c->tq + 1 : c->tk;
  double *s = malloc((size_t)(visible + 1) * 8), *delta = malloc((size_t)(visible + 1) * 8);
  CHECK(s && delta);
  double max = -INFINITY, delta_max = 0.0, sum = 0.0;
  for (int64_t j = 0; j < visible; j++) {
    double dot = 0.0, magnitude = 0.0;
    for (int64_t e = 0; e < c->d; e++) {
      dot += q[e] * k[j * c->d + e];
      magnitude += fabs(q[e] * k[j * c->d + e]);
    }
    s[j] = scale * dot;
    delta[j] = fabs(scale) * (double)(c->d + 1) * 2.0 * u * magnitude;
    max = s[j] > max ? s[j] : max;
    delta_max = delta[j] > delta_max ? delta[j] : delta_max;
  }
  for (int64_t j = 0; j < visible; j++)
    sum += exp(s[j] - max);
  double store = nn_store_unit(c->q_dtype), tiny = nn_tiny(c->q_dtype);
  for (int64_t e = 0; e < c->d; e++) {
    double o = 0.0, bound = 0.0;
    for (int64_t j = 0; j < visible; j++) {
      double p = exp(s[j] - max) / sum, pv = p * fabs(v[j * c->d + e]);
      o += p * v[j * c->d + e];
      bound += pv * (delta[j] + delta_max +
                     (fabs(s[j] - max) + sum_terms(visible) + 4.0 + 2.0 * (double)visible) * u);
    }
    out[e] = o;
    tol[e] = 2.0 * bound + fabs(o) * store + tiny;
  }
  free(s);
  free(delta);
}

static void sdpa_reference(const sdpa_case *c, const double *q, const double *k, const double *v,
                           double scale, double *out, double *tol) {
  int64_t group = c->hq / c->hkv;
  for (int64_t b = 0; b < c->b; b++)
    for (int64_t h = 0; h < c->hq; h++) {
      int64_t kv = (b * c->hkv + h / group) * c->tk * c->d;
      for (int64_t i = 0; i < c->tq; i++) {
        int64_t at = ((b * c->hq + h) * c->tq + i) * c->d;
        attend_row(c, q + at, k + kv, v + kv, i, scale, out + at, tol + at);
      }
    }
}

/* logical [B, H, T, D] values -> stored with axes a and b swapped */
static void swap_axes(const int64_t *s, const double *bhtd, int a, int b, double *out) {
  int64_t swapped[4] = {s[0], s[1], s[2], s[3]}, index[4];
  swapped[a] = s[b];
  swapped[b] = s[a];
  for (index[0] = 0; index[0] < s[0]; index[0]++)
    for (index[1] = 0; index[1] < s[1]; index[1]++)
      for (index[2] = 0; index[2] < s[2]; index[2]++)
        for (index[3] = 0; index[3] < s[3]; index[3]++) {
          int64_t j[4] = {index[0], index[1], index[2], index[3]};
          j[a] = index[b];
          j[b] = index[a];
          int64_t from = ((index[0] * s[1] + index[1]) * s[2] + index[2]) * s[3] + index[3];
          out[((j[0] * swapped[1] + j[1]) * swapped[2] + j[2]) * swapped[3] + j[3]] = bhtd[from];
        }
}

/* The array for logical [B, H, T, D] values in the case's layout (the stored array behind a
 * view in *base). */
static tsr_array *make_heads(const double *v, tsr_dtype dtype, const int64_t *shape, int layout,
                             tsr_array **base) {
  *base = NULL;
  if (layout == 0) return nn_make(v, dtype, shape, 4);
  int a = layout == 1 ? 1 : 2, b = a + 1, axes[4] = {0, 1, 2, 3};
  int64_t n = nn_count(shape, 4), stored_shape[4] = {shape[0], shape[1], shape[2], shape[3]};
  stored_shape[a] = shape[b];
  stored_shape[b] = shape[a];
  axes[a] = b;
  axes[b] = a;
  double *stored = malloc((size_t)(n + 1) * 8);
  CHECK(stored);
  swap_axes(shape, v, a, b, stored);
  *base = nn_make(stored, dtype, stored_shape, 4);
  free(stored);
  tsr_array *view = NULL;
  CHECK_OK(tsr_transpose(&view, *base, axes, 4, NULL));
  return view;
}

static void sdpa_case_run(sdpa_case c) {
  int64_t qs[4] = {c.b, c.hq, c.tq, c.d}, ks[4] = {c.b, c.hkv, c.tk, c.d};
  int64_t nq = nn_count(qs, 4), nk = nn_count(ks, 4);
  double *q = malloc((size_t)(nq + 1) * 8), *k = malloc((size_t)(nk + 1) * 8);
  double *v = malloc((size_t)(nk + 1) * 8), *want = malloc((size_t)(nq + 1) * 8);
  double *tol = malloc((size_t)(nq + 1) * 8), *got = malloc((size_t)(nq + 1) * 8);
  CHECK(q && k && v && want && tol && got);
  nn_random(q, nq, c.q_dtype, c.magnitude);
  nn_random(k, nk, c.kv_dtype, c.magnitude);
  nn_random(v, nk, c.kv_dtype, 1.0);
  tsr_array *bases[3], *qa = make_heads(q, c.q_dtype, qs, c.layout, &bases[0]);
  tsr_array *ka = make_heads(k, c.kv_dtype, ks, c.layout, &bases[1]);
  tsr_array *va = make_heads(v, c.kv_dtype, ks, c.layout, &bases[2]), *o = NULL;
  float scale = c.d > 0 ? 1.0f / sqrtf((float)c.d) : 1.0f;
  CHECK_OK(tsr_sdpa(&o, qa, ka, va, scale, c.causal, NULL));
  CHECK_EQ_INT(tsr_array_dtype(o), c.q_dtype);
  CHECK_EQ_INT(tsr_array_ndim(o), 4);
  for (int i = 0; i < 4; i++)
    CHECK_EQ_INT(tsr_array_dim(o, i), qs[i]);
  if (c.hkv > 0) sdpa_reference(&c, q, k, v, (double)scale, want, tol);
  nn_read(o, got);
  nn_expect_close(c.causal ? "sdpa (causal)" : "sdpa", got, want, tol, nq);
  tsr_array *arrays[] = {o, qa, ka, va, bases[0], bases[1], bases[2]};
  nn_release_all(arrays, 7);
  double *buffers[] = {q, k, v, want, tol, got};
  for (int i = 0; i < 6; i++)
    free(buffers[i]);
}

static void test_sdpa(void) {
  const tsr_dtype f32 = TSR_FLOAT32;
  /* b, hq, hkv, tq, tk, d, causal, q dtype, kv dtype, layout, magnitude */
  sdpa_case_run((sdpa_case){2, 4, 2, 70, 70, 16, true, f32, f32, 0, 1.0}); /* prefill */
  sdpa_case_run((sdpa_case){1, 6, 2, 1, 37, 16, true, f32, f32, 0, 1.0});  /* decode */
  /* decode runs a kv head's query heads as one block's rows: views, half precision, two batches,
     and a group wider than the 64-row block (split in two) */
  sdpa_case_run((sdpa_case){2, 8, 2, 1, 45, 16, true, TSR_BFLOAT16, TSR_BFLOAT16, 1, 1.0});
  sdpa_case_run((sdpa_case){1, 8, 2, 1, 33, 16, false, f32, f32, 2, 1.0});
  sdpa_case_run((sdpa_case){1, 130, 1, 1, 20, 8, true, f32, f32, 0, 1.0});
  sdpa_case_run((sdpa_case){1, 130, 2, 1, 20, 8, false, TSR_FLOAT16, f32, 1, 2.0});
  sdpa_case_run((sdpa_case){1, 4, 2, 3, 10, 8, true, f32, f32, 0, 2.0}); /* chunk */
  sdpa_case_run((sdpa_case){2, 3, 3, 5, 9, 8, false, f32, f32, 0, 3.0}); /* MHA */
  sdpa_case_run((sdpa_case){1, 4, 1, 6, 6, 8, true, f32, f32, 0, 1.0});  /* MQA */
  sdpa_case_run((sdpa_case){1, 4, 2, 130, 150, 32, true, f32, f32, 0, 2.0});
  sdpa_case_run((sdpa_case){1, 4, 2, 7, 7, 16, true, TSR_FLOAT16, TSR_FLOAT16, 0, 1.0});
  sdpa_case_run((sdpa_case){1, 4, 2, 7, 9, 16, true, TSR_BFLOAT16, TSR_BFLOAT16, 1, 1.0});
  sdpa_case_run((sdpa_case){1, 2, 1, 4, 4, 16, false, f32, TSR_BFLOAT16, 0, 1.0});
  sdpa_case_run((sdpa_case){2, 4, 2, 9, 9, 16, true, f32, f32, 1, 1.0}); /* views */
  sdpa_case_run((sdpa_case){1, 2, 2, 1, 12, 16, true, f32, f32, 1, 1.0});
  sdpa_case_run((sdpa_case){1, 2, 1, 70, 75, 16, true, f32, f32, 2, 1.0});          /* CblasTrans */
  sdpa_case_run((sdpa_case){1, 2, 1, 70, 75, 16, true, TSR_BFLOAT16, f32, 2, 1.0}); /* gathered */
  /* zero sizes: no keys (non-causal) gives zeros; no queries, batches, heads or dims: empty */
  sdpa_case_run((sdpa_case){1, 2, 1, 3, 0, 4, false, f32, f32, 0, 1.0});
  sdpa_case_run((sdpa_case){1, 2, 1, 0, 5, 4, true, f32, f32, 0, 1.0});
  sdpa_case_run((sdpa_case){0, 2, 1, 3, 3, 4, true, f32, f32, 0, 1.0});
  sdpa_case_run((sdpa_case){1, 0, 0, 3, 3, 4, true, f32, f32, 0, 1.0});
  sdpa_case_run((sdpa_case){1, 2, 1, 3, 3, 0, true, f32, f32, 0, 1.0});
}

static void test_sdpa_bad_inputs(void) {
  int64_t q_shape[4] = {1, 4, 5, 16}, kv_shape[4] = {1, 2, 5, 16}, short_kv[4] = {1, 2, 3, 16};
  int64_t three[3] = {4, 5, 16}, d8[4] = {1, 2, 5, 8}, b2[4] = {2, 2, 5, 16}, h3[4] = {1, 3, 5, 16};
  double zeros[640] = {0};
  tsr_array *q = nn_make(zeros, TSR_FLOAT32, q_shape, 4),
            *k = nn_make(zeros, TSR_FLOAT32, kv_shape, 4);
  tsr_array *v = nn_make(zeros, TSR_FLOAT32, kv_shape, 4),
            *q3 = nn_make(zeros, TSR_FLOAT32, three, 3);
  tsr_array *k8 = nn_make(zeros, TSR_FLOAT32, d8, 4), *kb2 = nn_make(zeros, TSR_FLOAT32, b2, 4);
  tsr_array *k3 = nn_make(zeros, TSR_FLOAT32, h3, 4),
            *ks = nn_make(zeros, TSR_FLOAT32, short_kv, 4);
  tsr_array *qi = nn_make(zeros, TSR_INT32, q_shape, 4);
  tsr_array *sentinel = (tsr_array *)0x1, *out = sentinel;
  CHECK_STATUS(tsr_sdpa(NULL, q, k, v, 0.25f, true, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("out is NULL");
  CHECK_STATUS(tsr_sdpa(&out, q, NULL, v, 0.25f, true, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("k is NULL");
  CHECK_STATUS(tsr_sdpa(&out, q, k, NULL, 0.25f, true, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("v is NULL");
  CHECK_STATUS(tsr_sdpa(&out, q3, k, v, 0.25f, true, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("4-d");
  CHECK_MESSAGE("q [4, 5, 16]");
  CHECK_STATUS(tsr_sdpa(&out, q, k, k8, 0.25f, true, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("k and v shapes differ");
  CHECK_MESSAGE("v [1, 2, 5, 8]");
  CHECK_STATUS(tsr_sdpa(&out, q, k8, k8, 0.25f, true, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("head dim D of q and k differ");
  CHECK_STATUS(tsr_sdpa(&out, q, kb2, kb2, 0.25f, true, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("batch B");
  CHECK_STATUS(tsr_sdpa(&out, q, k3, k3, 0.25f, true, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("Hq 4 is not a multiple of Hkv 3");
  CHECK_STATUS(tsr_sdpa(&out, q, ks, ks, 0.25f, true, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("causal needs Tk >= Tq (Tq 5, Tk 3");
  CHECK_OK(tsr_sdpa(&out, q, ks, ks, 0.25f, false, NULL)); /* fine without the mask */
  tsr_array_release(out);
  out = sentinel;
  CHECK_STATUS(tsr_sdpa(&out, qi, k, v, 0.25f, true, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("q [1, 4, 5, 16] has dtype int32");
  CHECK_STATUS(tsr_sdpa(&out, q, k, v, NAN, true, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("scale nan");
  CHECK_STATUS(tsr_sdpa(&out, q, k, v, INFINITY, false, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("scale inf");
  /* Tk = 2^31 (a lazy broadcast, never evaluated): beyond a 32-bit BLAS int */
  int64_t one_key[4] = {1, 2, 1, 16}, huge[4] = {1, 2, 1ll << 31, 16};
  tsr_array *key = nn_make(zeros, TSR_FLOAT32, one_key, 4), *long_kv = NULL;
  CHECK_OK(tsr_broadcast_to(&long_kv, key, huge, 4, NULL));
  CHECK_STATUS(tsr_sdpa(&out, q, long_kv, long_kv, 0.25f, true, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("exceeds 2^31 - 1");
  CHECK_MESSAGE("k [1, 2, 2147483648, 16]");
  CHECK(out == sentinel);
  tsr_array *arrays[] = {q, k, v, q3, k8, kb2, k3, ks, qi, key, long_kv};
  nn_release_all(arrays, 11);
}

int main(void) {
  test_sdpa();
  test_sdpa_bad_inputs();
  tsr_memory_clear_cache(cpu);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
