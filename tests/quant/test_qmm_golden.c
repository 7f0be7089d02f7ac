/* tests/quant/test_qmm_golden.c — tsr_quantized_matmul and tsr_gather_qmm on every
 * quantized_matmul and gather_qmm case of tests/data/quant/manifest.json (mlx-cpu 0.32.4): the
 * output shape and dtype exactly, each element against MLX's output and against a float64
 * product of the dequantized weights, with the tolerances derived in qmm_ref.h. The weights are
 * decoded here independently (qmm_ref.h) and must equal tsr_dequantize(..., float32) bit for
 * bit, so the float64 product is the one of the golden dequantized weights. NaN (from NaN
 * or Inf in x, NaN or Inf scales, E4M3 0x7F scale codes) must be exactly where the float64
 * product has it; the elements next to it are checked like any other. Where the manifest lists
 * mlx_nan_positions_differ (MLX's transposed fp kernel factors an Inf scale out of a group of
 * zero codes and gives +-Inf where x @ w_hat.T is NaN: tools/README.md item 8), tessera follows
 * the float64 product and the test counts MLX's +-Inf there against the manifest's number.
 * Batch mapping (broadcast, 1-D x, MLX's "2-D x with 3-D w uses w[0]", gathered and default
 * indices) is worked out in qmm_ref.h independently of the library. */
#include <cjson/cJSON.h>

#include "golden.h"
#include "qmm_ref.h"

typedef struct {
  tsr_array *array;
  void *host;
  tsr_dtype dtype;
  int ndim;
  int64_t shape[TSR_MAX_NDIM], size;
} loaded;

static const char *string_of(const cJSON *o, const char *key) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsString(item)) CHECK_FAIL_("manifest: %s is not a string", key);
  return item->valuestring;
}

static double number_of(const cJSON *o, const char *key) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(item)) CHECK_FAIL_("manifest: %s is not a number", key);
  return item->valuedouble;
}

/* arrays[key] with its logical dtype and shape checked, and its elements on the host; false when
   the case has no such array. */
static bool load(const cJSON *c, const char *key, loaded *l) {
  memset(l, 0, sizeof *l);
  const cJSON *entry =
      cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c, "arrays"), key);
  if (!entry) return false;
  l->dtype = golden_dtype(string_of(entry, "dtype"));
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", GOLDEN_DIR, string_of(entry, "file"));
  if (l->dtype == TSR_BFLOAT16)
    CHECK_OK(tsr_npy_load_as(&l->array, path, TSR_BFLOAT16));
  else
    CHECK_OK(tsr_npy_load(&l->array, path));
  CHECK_EQ_INT(tsr_array_dtype(l->array), l->dtype);
  const cJSON *shape = cJSON_GetObjectItemCaseSensitive(entry, "shape");
  l->ndim = tsr_array_ndim(l->array);
  CHECK_EQ_INT(l->ndim, cJSON_GetArraySize(shape));
  for (int d = 0; d < l->ndim; d++) {
    l->shape[d] = tsr_array_dim(l->array, d);
    CHECK_EQ_INT(l->shape[d], cJSON_GetArrayItem(shape, d)->valueint);
  }
  l->size = tsr_array_size(l->array);
  size_t bytes = (size_t)l->size * tsr_dtype_size(l->dtype);
  l->host = malloc(bytes ? bytes : 1);
  CHECK(l->host != NULL);
  CHECK_OK(tsr_array_read(l->array, l->host, bytes));
  return true;
}

static void unload(loaded *l) {
  tsr_array_release(l->array);
  free(l->host);
}

/* An indices array's values as int64 (NULL when absent; the caller frees). */
static int64_t *index_values(const loaded *indices) {
  if (!indices->array) return NULL;
  int64_t *values = malloc((size_t)(indices->size + 1) * sizeof *values);
  CHECK(values != NULL);
  for (int64_t i = 0; i < indices->size; i++)
    values[i] = indices->dtype == TSR_INT64 ? ((const int64_t *)indices->host)[i]
                                            : ((const int32_t *)indices->host)[i];
  return values;
}

typedef struct {
  const char *id;
  int64_t M, K, N, batch_count;
  int batch_ndim;
  int64_t batch_shape[TSR_MAX_NDIM];
  double mlx_error;       /* E: mlx_max_abs_err_vs_f64 */
  bool nan_may_differ;    /* listed in mlx_nan_positions_differ */
  int64_t mlx_inf_at_nan; /* MLX +-Inf where the float64 product is NaN */
  int64_t failures;
} case_info;

/* Compares output element `at` of ours and MLX with its expectation. */
static void check_element(case_info *ci, tsr_quant_mode mode, const qr_expect *e, double ours,
                          double mlx, tsr_dtype out_dtype, int64_t at, qr_stats *stats) {
  double tol = qr_tolerance(e, ci->K, out_dtype, mode);
  int slot = qr_dtype_slot(out_dtype);
  stats->elements[slot]++;
  bool ok_ref = qr_close(ours, e->ref, tol, mode);
  /* The float64 product of MLX's own dequantized weights: same NaN/Inf pattern (for affine: not
     finite at the same places), and the rule weights differ from w_hat by sum_diff at most (for
     affine tol already has it: qmm_ref.h). */
  bool ok_hat = qr_close(ours, e->ref_hat, tol + e->sum_diff, mode);
  double tol_mlx = tol + e->sum_diff + ci->mlx_error * e->sum_abs_hat * (1.0 + 1e-9);
  bool ok_mlx = qr_close(ours, mlx, tol_mlx, mode);
  if (!ok_mlx && ci->nan_may_differ && isnan(ours) && isnan(e->ref) && isinf(mlx)) {
    ci->mlx_inf_at_nan++;
    ok_mlx = true;
  }
  if (isfinite(ours) && isfinite(e->ref)) {
    double d = fabs(ours - e->ref), dm = fabs(ours - mlx);
    qr_note(&stats->max_abs_ref[slot], d);
    qr_note(&stats->max_abs_mlx[slot], dm);
    if (e->sum_abs >= QR_REL_FLOOR) qr_note(&stats->max_rel_ref[slot], d / e->sum_abs);
    if (e->sum_abs_hat >= QR_REL_FLOOR) qr_note(&stats->max_rel_mlx[slot], dm / e->sum_abs_hat);
    if (tol > 0) qr_note(&stats->max_tol_used[slot], d / tol);
  }
  if (ok_ref && ok_hat && ok_mlx) return;
  if (ci->failures++ < 8)
    fprintf(stderr,
            "%s output %lld: ours %.9g, f64 %.9g (tol %.3g), f64 of w_hat %.9g, mlx %.9g "
            "(tol %.3g)%s%s%s\n",
            ci->id, (long long)at, ours, e->ref, tol, e->ref_hat, mlx, tol_mlx,
            ok_ref ? "" : " [vs f64]", ok_hat ? "" : " [vs f64 of w_hat]",
            ok_mlx ? "" : " [vs mlx]");
}

/* The float64 expectation of every output element, compared with ours and MLX's. */
static void compare(case_info *ci, const loaded *x, const qr_weights *w, const qr_batching *bt,
                    const void *ours, const loaded *mlx, qr_stats *stats) {
  int64_t M = ci->M, K = ci->K, N = ci->N;
  size_t kn = (size_t)(K * N > 0 ? K * N : 1);
  double *rule = malloc(kn * sizeof *rule), *hat = malloc(kn * sizeof *hat);
  double *terms = malloc(kn * sizeof *terms), *xrow = malloc((size_t)(K + 1) * sizeof *xrow);
  qr_expect *row = malloc((size_t)(N + 1) * sizeof *row);
  CHECK(rule && hat && terms && xrow && row);
  int64_t decoded = -1;
  for (int64_t b = 0; b < ci->batch_count; b++) {
    int64_t xm, wm;
    qr_matrices(bt, b, &xm, &wm);
    if (wm != decoded) qr_dequantize(w, wm, K, N, rule, hat, terms);
    decoded = wm;
    for (int64_t i = 0; i < M; i++) {
      for (int64_t k = 0; k < K; k++)
        xrow[k] = qr_value(x->host, x->dtype, (xm * M + i) * K + k);
      qr_expect_row(xrow, rule, hat, terms, K, N, row);
      for (int64_t n = 0; n < N; n++) {
        int64_t at = (b * M + i) * N + n;
        check_element(ci, w->mode, &row[n], qr_value(ours, mlx->dtype, at),
                      qr_value(mlx->host, mlx->dtype, at), mlx->dtype, at, stats);
      }
    }
  }
  free(rule);
  free(hat);
  free(terms);
  free(xrow);
  free(row);
}

/* Builds and evaluates the case's op; returns ours (the caller frees). */
static void *run_op(const cJSON *c, bool gather, const loaded *x, const loaded *wq,
                    const loaded *scales, const loaded *biases, const loaded *lhs,
                    const loaded *rhs, const loaded *mlx) {
  tsr_quant_mode mode = golden_mode(string_of(c, "mode"));
  bool transpose = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "transpose"));
  int group_size = (int)number_of(c, "group_size"), bits = (int)number_of(c, "bits");
  tsr_array *out = NULL;
  if (gather)
    CHECK_OK(tsr_gather_qmm(&out, x->array, wq->array, scales->array, biases->array, lhs->array,
                            rhs->array, transpose, group_size, bits, mode,
                            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "sorted_indices")),
                            NULL));
  else
    CHECK_OK(tsr_quantized_matmul(&out, x->array, wq->array, scales->array, biases->array,
                                  transpose, group_size, bits, mode, NULL));
  CHECK_EQ_INT(tsr_array_dtype(out), mlx->dtype);
  CHECK_EQ_INT(tsr_array_ndim(out), mlx->ndim);
  for (int d = 0; d < mlx->ndim; d++)
    CHECK_EQ_INT(tsr_array_dim(out, d), mlx->shape[d]);
  size_t bytes = (size_t)mlx->size * tsr_dtype_size(mlx->dtype);
  void *ours = malloc(bytes ? bytes : 1);
  CHECK(ours != NULL);
  CHECK_OK(tsr_array_read(out, ours, bytes));
  tsr_array_release(out);
  return ours;
}

static void setup_case(case_info *ci, const cJSON *c, const loaded *mlx) {
  memset(ci, 0, sizeof *ci);
  ci->id = string_of(c, "id");
  ci->M = (int64_t)number_of(c, "M");
  ci->K = (int64_t)number_of(c, "K");
  ci->N = (int64_t)number_of(c, "N");
  ci->mlx_error = number_of(c, "mlx_max_abs_err_vs_f64");
  ci->nan_may_differ = cJSON_GetObjectItemCaseSensitive(c, "mlx_nan_positions_differ") != NULL;
  /* Output: batch axes, then [M, N] ([N] alone for a 1-D x). */
  int trailing = mlx->ndim >= 2 ? 2 : 1;
  ci->batch_ndim = mlx->ndim - trailing;
  ci->batch_count = 1;
  for (int d = 0; d < ci->batch_ndim; d++) {
    ci->batch_shape[d] = mlx->shape[d];
    ci->batch_count *= mlx->shape[d];
  }
}

/* tsr_dequantize(w, float32) — MLX's w_hat as tessera computes it (tests/quant's dequantize
   golden test holds it to MLX bit for bit) — must equal this file's independent decoder on every
   weight, so the float64 reference below is the product with the golden dequantized weights.
   Returns the mismatches. */
static int64_t check_dequantize_agrees(const case_info *ci, const loaded *wq, const loaded *scales,
                                       const loaded *biases, const qr_weights *w) {
  tsr_array *dq = NULL;
  CHECK_OK(tsr_dequantize(&dq, wq->array, scales->array, biases->array, w->group_size, w->bits,
                          w->mode, TSR_FLOAT32, NULL));
  int64_t size = tsr_array_size(dq), per_row = w->groups * w->group_size, mismatches = 0;
  float *values = malloc((size_t)size * sizeof *values + 1);
  CHECK(values != NULL);
  CHECK_OK(tsr_array_read(dq, values, (size_t)size * sizeof *values));
  for (int64_t at = 0; at < size; at++) {
    int64_t i = at % per_row, row = at / per_row;
    double rule, hat, terms;
    qr_weight(w, row / w->rows, row % w->rows, i, &rule, &hat, &terms);
    double got = (double)values[at];
    if (got == hat || (isnan(got) && isnan(hat))) continue;
    if (mismatches++ < 4)
      fprintf(stderr, "%s: dequantize weight %lld is %.9g, this test decodes %.9g\n", ci->id,
              (long long)at, got, hat);
  }
  free(values);
  tsr_array_release(dq);
  return mismatches;
}

/* One manifest case; returns whether it passed. */
static bool run_case(const cJSON *c, qr_stats *stats) {
  bool gather = strcmp(string_of(c, "kind"), "gather_qmm") == 0;
  loaded x, wq, scales, biases, lhs, rhs, mlx;
  CHECK(load(c, "x", &x) && load(c, "w_q", &wq) && load(c, "scales", &scales));
  load(c, "biases", &biases);
  load(c, "lhs_indices", &lhs);
  load(c, "rhs_indices", &rhs);
  CHECK(load(c, "out", &mlx));
  case_info ci;
  setup_case(&ci, c, &mlx);
  void *ours = run_op(c, gather, &x, &wq, &scales, &biases, &lhs, &rhs, &mlx);
  qr_weights w = {.mode = golden_mode(string_of(c, "mode")),
                  .bits = (int)number_of(c, "bits"),
                  .group_size = (int)number_of(c, "group_size"),
                  .transpose = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "transpose")),
                  .rows = wq.shape[wq.ndim - 2],
                  .words = wq.shape[wq.ndim - 1],
                  .groups = scales.shape[scales.ndim - 1],
                  .wq = wq.host,
                  .scale_dtype = scales.dtype,
                  .scales = scales.host,
                  .biases = biases.host};
  int64_t *lhs_values = index_values(&lhs), *rhs_values = index_values(&rhs);
  qr_batching bt = {.batch_ndim = ci.batch_ndim,
                    .batch_shape = ci.batch_shape,
                    .x_ndim = x.ndim,
                    .w_ndim = wq.ndim,
                    .x_shape = x.shape,
                    .w_shape = wq.shape,
                    .gather = gather,
                    .lhs = lhs_values,
                    .rhs = rhs_values,
                    .lhs_ndim = lhs.ndim,
                    .rhs_ndim = rhs.ndim,
                    .lhs_shape = lhs.shape,
                    .rhs_shape = rhs.shape};
  ci.failures += check_dequantize_agrees(&ci, &wq, &scales, &biases, &w);
  compare(&ci, &x, &w, &bt, ours, &mlx, stats);
  free(lhs_values);
  free(rhs_values);
  if (ci.nan_may_differ) {
    int64_t expected = (int64_t)number_of(c, "mlx_nan_positions_differ");
    if (ci.mlx_inf_at_nan != expected) {
      fprintf(stderr,
              "%s: MLX has +-Inf at %lld NaN outputs of the float64 product, manifest "
              "says %lld\n",
              ci.id, (long long)ci.mlx_inf_at_nan, (long long)expected);
      ci.failures++;
    }
  }
  free(ours);
  loaded *all[] = {&x, &wq, &scales, &biases, &lhs, &rhs, &mlx};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    unload(all[i]);
  return ci.failures == 0;
}

int main(void) {
  cJSON *manifest = golden_manifest();
  const cJSON *c = NULL;
  int cases[2] = {0, 0}, passed[2] = {0, 0};
  qr_stats stats = {0};
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(manifest, "cases")) {
    const char *kind = string_of(c, "kind");
    int slot = strcmp(kind, "quantized_matmul") == 0 ? 0 : strcmp(kind, "gather_qmm") == 0 ? 1 : -1;
    if (slot < 0) continue;
    cases[slot]++;
    passed[slot] += run_case(c, &stats);
  }
  printf("quantized_matmul: %d of %d golden cases pass; gather_qmm: %d of %d\n", passed[0],
         cases[0], passed[1], cases[1]);
  qr_print_stats(&stats, "golden");
  const cJSON *counts = cJSON_GetObjectItemCaseSensitive(manifest, "counts");
  CHECK_EQ_INT(cases[0], (int)number_of(counts, "quantized_matmul"));
  CHECK_EQ_INT(cases[1], (int)number_of(counts, "gather_qmm"));
  CHECK_EQ_INT(passed[0], cases[0]);
  CHECK_EQ_INT(passed[1], cases[1]);
  cJSON_Delete(manifest);
  tsr_memory_clear_cache((tsr_device){TSR_CPU, 0});
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
