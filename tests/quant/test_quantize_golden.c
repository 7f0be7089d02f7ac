/* tests/quant/test_quantize_golden.c — tsr_quantize (and tsr_quantize_nvfp4_scaled) against
 * mlx-cpu 0.32.4, bit for bit: every quantize case of tests/data/quant/manifest.json, every row
 * of w_q, scales and biases. Rows MLX leaves undefined (NaN/Inf input) are checked against
 * tessera's rule instead (src/cpu/quant.c): the row must quantize exactly like the same row with
 * each NaN replaced by 0 (which leaves the group's statistics alone: the test checks that) and
 * each +-Inf by the largest finite value of its sign in w's dtype; for fp modes an Inf element's
 * code is the largest of its sign (fp4 7/15, fp8 0x7E/0xFE) instead.
 * Affine rows with a group wider than float32 (max - min overflows, finite input of both signs
 * near +-max of float32 or bfloat16: the "large magnitude" tricky rows) are the other case MLX
 * leaves poisoned: its scale is infinite and the whole group dequantizes to NaN. There the test
 * checks that MLX's row is exactly that, and that tessera's scale and bias are finite (the rule
 * of docs/quant-rules.md; tests/quant/test_quantize_inf.c checks its values).
 * Also: a transposed (non-contiguous) w gives the bits of its contiguous copy, and w[0:1] alone
 * (one row: nvfp4 with 16 mod 32 elements) the bits of the leading rows. */
#include <float.h>
#include <math.h>

#include "golden.h"

typedef struct {
  int cases, rows, undefined_rows, wide_rows, mismatches;
} tally;

/* Mismatches are counted and the first few printed, so one run shows the whole picture. */
#define MISMATCH(t, ...)                         \
  do {                                           \
    if ((t)->mismatches++ < 40) {                \
      fprintf(stderr, "mismatch: " __VA_ARGS__); \
      fputc('\n', stderr);                       \
    }                                            \
  } while (0)

static void quantize_case(tsr_array *w, const cJSON *c, tsr_array **parts) {
  tsr_quant_mode mode = golden_mode(golden_string(c, "mode"));
  float g = 0.0f;
  parts[2] = NULL;
  if (golden_global_scale(c, &g))
    CHECK_OK(tsr_quantize_nvfp4_scaled(&parts[0], &parts[1], w, g, NULL));
  else
    CHECK_OK(tsr_quantize(&parts[0], &parts[1], &parts[2], w, golden_int(c, "group_size"),
                          golden_int(c, "bits"), mode, NULL));
}

/* The bytes of row r of a [rows, n] array of `element`-byte items. */
static bool rows_equal(const void *a, const void *b, int64_t r, int64_t row_bytes) {
  return memcmp((const unsigned char *)a + r * row_bytes, (const unsigned char *)b + r * row_bytes,
                (size_t)row_bytes) == 0;
}

/* Element bits of w as float32, and the rule's replacement: NaN -> 0, Inf -> +-max finite. */
static float element_value(const void *w, tsr_dtype dtype, int64_t i) {
  if (dtype == TSR_FLOAT32) return ((const float *)w)[i];
  uint16_t h = ((const uint16_t *)w)[i];
  return dtype == TSR_FLOAT16 ? tsr_f16_to_f32(h) : tsr_bf16_to_f32(h);
}

static void replace_element(void *w, tsr_dtype dtype, int64_t i) {
  float v = element_value(w, dtype, i);
  bool negative = signbit(v);
  if (dtype == TSR_FLOAT32) {
    uint32_t bits = isnan(v) ? 0u : (negative ? 0xff7fffffu : 0x7f7fffffu);
    memcpy((float *)w + i, &bits, sizeof bits);
  } else {
    uint16_t max_bits = dtype == TSR_FLOAT16 ? 0x7bffu : 0x7f7fu;
    ((uint16_t *)w)[i] = isnan(v) ? 0u : (uint16_t)(max_bits | (negative ? 0x8000u : 0u));
  }
}

/* Checks one undefined row r against the rule: `expected` holds tessera's w_q/scales/biases of
   w with the row's non-finite elements replaced. */
static void check_rule_row(const cJSON *c, const void *w, tsr_dtype dtype, int64_t r, int64_t k,
                           void *const *got, void *const *expected, const int64_t *row_bytes,
                           int nparts) {
  const char *id = golden_string(c, "id");
  int bits = golden_int(c, "bits"), group_size = golden_int(c, "group_size");
  bool affine = strcmp(golden_string(c, "mode"), "affine") == 0;
  for (int p = 1; p < nparts; p++)
    if (!rows_equal(got[p], expected[p], r, row_bytes[p]))
      CHECK_FAIL_("%s row %lld: part %d differs from the row with NaN/Inf replaced", id,
                  (long long)r, p);
  const uint32_t *got_row = (const uint32_t *)got[0] + r * (row_bytes[0] / 4);
  const uint32_t *want_row = (const uint32_t *)expected[0] + r * (row_bytes[0] / 4);
  for (int64_t i = 0; i < k; i++) {
    uint32_t mask = (1u << bits) - 1u;
    int64_t bit = i * bits;
    uint64_t got_pair =
        got_row[bit / 32] | ((bit % 32 + bits > 32) ? (uint64_t)got_row[bit / 32 + 1] << 32 : 0);
    uint64_t want_pair =
        want_row[bit / 32] | ((bit % 32 + bits > 32) ? (uint64_t)want_row[bit / 32 + 1] << 32 : 0);
    uint32_t got_code = (uint32_t)(got_pair >> (bit % 32)) & mask;
    uint32_t want_code = (uint32_t)(want_pair >> (bit % 32)) & mask;
    float v = element_value(w, dtype, r * k + i);
    if (isinf(v) && !affine) /* the largest code of its sign */
      want_code = bits == 4 ? (v < 0 ? 15u : 7u) : (v < 0 ? 0xfeu : 0x7eu);
    if (isnan(v) && affine) { /* 0 replaces NaN without moving the group's min/max */
      float lo = INFINITY, hi = -INFINITY;
      int64_t g0 = i / group_size * group_size;
      for (int64_t j = g0; j < g0 + group_size; j++) {
        float u = element_value(w, dtype, r * k + j);
        if (!isnan(u)) lo = fminf(lo, u), hi = fmaxf(hi, u);
      }
      CHECK(lo <= 0.0f && hi >= 0.0f);
    }
    if (got_code != want_code)
      CHECK_FAIL_("%s row %lld element %lld (%g): code %u, the rule gives %u", id, (long long)r,
                  (long long)i, (double)v, got_code, want_code);
  }
}

/* Quantizes `variant` (a view or part of the case's w, released here) and checks its parts'
   bytes are the leading bytes of w's. */
static void check_variant(const cJSON *c, tsr_array *variant, void *const *got_data, int nparts,
                          const char *what) {
  tsr_array *parts[3];
  quantize_case(variant, c, parts);
  for (int p = 0; p < nparts; p++) {
    size_t bytes = 0;
    void *data = golden_read(parts[p], &bytes);
    if (memcmp(data, got_data[p], bytes) != 0)
      CHECK_FAIL_("%s: part %d of %s differs from w's", golden_string(c, "id"), p, what);
    free(data);
    tsr_array_release(parts[p]);
  }
  tsr_array_release(variant);
}

/* The rule's reference: w with every NaN/Inf replaced, quantized by tessera; its parts' bytes. */
static void rule_reference(const cJSON *c, tsr_array *w, const void *w_data, size_t w_bytes,
                           int nparts, void **rule_data) {
  tsr_dtype dtype = tsr_array_dtype(w);
  void *replaced = malloc(w_bytes ? w_bytes : 1);
  CHECK(replaced != NULL);
  memcpy(replaced, w_data, w_bytes);
  for (int64_t i = 0; i < tsr_array_size(w); i++)
    if (!isfinite(element_value(w_data, dtype, i))) replace_element(replaced, dtype, i);
  int64_t shape[8];
  for (int d = 0; d < tsr_array_ndim(w); d++)
    shape[d] = tsr_array_dim(w, d);
  tsr_array *w_replaced = NULL, *rule[3];
  CHECK_OK(tsr_array_from_data(&w_replaced, replaced, dtype, shape, tsr_array_ndim(w)));
  quantize_case(w_replaced, c, rule);
  for (int p = 0; p < nparts; p++) {
    rule_data[p] = golden_read(rule[p], NULL);
    tsr_array_release(rule[p]);
  }
  tsr_array_release(w_replaced);
  free(replaced);
}

/* An affine row with a group whose float32 range overflows (NaN skipped, Inf as max finite). */
static bool affine_row_wide(const cJSON *c, const void *w, tsr_dtype dtype, int64_t r, int64_t k) {
  if (strcmp(golden_string(c, "mode"), "affine") != 0) return false;
  int64_t group_size = golden_int(c, "group_size");
  float limit = dtype == TSR_FLOAT16    ? 65504.0f
                : dtype == TSR_BFLOAT16 ? tsr_bf16_to_f32(0x7f7f)
                                        : FLT_MAX;
  for (int64_t g0 = 0; g0 < k; g0 += group_size) {
    float lo = INFINITY, hi = -INFINITY;
    for (int64_t j = g0; j < g0 + group_size; j++) {
      float u = element_value(w, dtype, r * k + j);
      if (isnan(u)) continue;
      u = u > limit ? limit : u < -limit ? -limit : u;
      lo = fminf(lo, u), hi = fmaxf(hi, u);
    }
    if (isinf(hi - lo)) return true;
  }
  return false;
}

/* MLX's row holds an infinite scale (and a zero bias) for such a group; tessera's is finite. */
static void check_wide_row(const cJSON *c, void *const *got, void *const *want, tsr_dtype dtype,
                           int64_t r, int64_t k) {
  const char *id = golden_string(c, "id");
  int64_t groups = k / golden_int(c, "group_size");
  bool mlx_poisoned = false;
  for (int64_t g = 0; g < groups; g++) {
    int64_t i = r * groups + g;
    float mlx_scale = element_value(want[1], dtype, i), mlx_bias = element_value(want[2], dtype, i);
    float scale = element_value(got[1], dtype, i), bias = element_value(got[2], dtype, i);
    mlx_poisoned |= isinf(mlx_scale) && mlx_bias == 0.0f;
    if (!isfinite(scale) || !isfinite(bias) || scale == 0.0f)
      CHECK_FAIL_("%s row %lld group %lld: scale %g, bias %g (finite, non-zero scale wanted)", id,
                  (long long)r, (long long)g, (double)scale, (double)bias);
  }
  if (!mlx_poisoned)
    CHECK_FAIL_("%s row %lld: a group wider than float32 where MLX's scale is finite", id,
                (long long)r);
}

static void compare_rows(const cJSON *c, tally *t, tsr_array *w, void *const *got_data,
                         void *const *want_data, const int64_t *row_bytes, int nparts) {
  static const char *const part_names[3] = {"w_q", "scales", "biases"};
  size_t w_bytes = 0;
  void *w_data = golden_read(w, &w_bytes), *rule_data[3] = {0};
  rule_reference(c, w, w_data, w_bytes, nparts, rule_data);
  int64_t rows = golden_rows(w), k = tsr_array_dim(w, tsr_array_ndim(w) - 1);
  for (int64_t r = 0; r < rows; r++) {
    if (golden_row_undefined(c, r)) {
      check_rule_row(c, w_data, tsr_array_dtype(w), r, k, got_data, rule_data, row_bytes, nparts);
      t->undefined_rows++;
      continue;
    }
    if (affine_row_wide(c, w_data, tsr_array_dtype(w), r, k)) {
      check_wide_row(c, got_data, want_data, tsr_array_dtype(w), r, k);
      t->wide_rows++;
      continue;
    }
    bool equal = true;
    for (int p = 0; p < nparts; p++)
      if (!rows_equal(got_data[p], want_data[p], r, row_bytes[p])) {
        MISMATCH(t, "%s row %lld: %s differs from MLX", golden_string(c, "id"), (long long)r,
                 part_names[p]);
        equal = false;
      }
    t->rows += equal;
  }
  for (int p = 0; p < nparts; p++)
    free(rule_data[p]);
  free(w_data);
}

static void run_case(const cJSON *c, tally *t) {
  tsr_array *w = golden_array(c, "w");
  tsr_array *want[3] = {golden_array(c, "w_q"), golden_array(c, "scales"),
                        golden_array(c, "biases")};
  int nparts = want[2] ? 3 : 2;
  tsr_array *got[3];
  quantize_case(w, c, got);
  CHECK((got[2] != NULL) == (nparts == 3));
  void *got_data[3] = {0}, *want_data[3] = {0};
  int64_t rows = golden_rows(w), row_bytes[3];
  for (int p = 0; p < nparts; p++) {
    CHECK_EQ_INT(tsr_array_dtype(got[p]), tsr_array_dtype(want[p]));
    CHECK_EQ_INT(tsr_array_ndim(got[p]), tsr_array_ndim(want[p]));
    for (int d = 0; d < tsr_array_ndim(want[p]); d++)
      CHECK_EQ_INT(tsr_array_dim(got[p], d), tsr_array_dim(want[p], d));
    size_t bytes = 0;
    got_data[p] = golden_read(got[p], &bytes);
    want_data[p] = golden_read(want[p], NULL);
    row_bytes[p] = (int64_t)bytes / (rows ? rows : 1);
  }
  compare_rows(c, t, w, got_data, want_data, row_bytes, nparts);
  /* A non-contiguous w gives the same bits; so does w[0:1] alone (one row of a 2-D w: nvfp4
     then has 16 mod 32 elements, where MLX's CPU fails) for the leading rows. */
  check_variant(c, golden_strided_copy(w), got_data, nparts, "a strided w");
  const int64_t start[1] = {0}, stop[1] = {1};
  tsr_array *w_first = NULL;
  CHECK_OK(tsr_slice(&w_first, w, start, stop, NULL, 1, NULL));
  check_variant(c, w_first, got_data, nparts, "w[0:1]");
  t->cases++;
  for (int p = 0; p < nparts; p++) {
    free(got_data[p]);
    free(want_data[p]);
    tsr_array_release(got[p]);
    tsr_array_release(want[p]);
  }
  tsr_array_release(w);
}

int main(void) {
  cJSON *root = golden_manifest();
  tally t = {0, 0, 0, 0, 0};
  const cJSON *c = NULL;
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(root, "cases")) {
    if (strcmp(golden_string(c, "kind"), "quantize") == 0) run_case(c, &t);
  }
  printf(
      "quantize golden: %d cases, %d rows bit for bit with MLX, %d undefined rows by the rule, "
      "%d rows wider than float32 by the rule\n",
      t.cases, t.rows, t.undefined_rows, t.wide_rows);
  CHECK_EQ_INT(t.mismatches, 0);
  CHECK_EQ_INT(t.cases, 149);
  cJSON_Delete(root);
  tsr_memory_clear_cache((tsr_device){TSR_CPU, 0});
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
