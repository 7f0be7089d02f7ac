/* tests/quant/golden.h — reading tests/data/quant/ (manifest.json and its .npy files, written by
 * tools/gen_quant_golden.py from mlx-cpu 0.32.4) for the quantize/dequantize golden tests. Only
 * the public API and cJSON; no comparison logic here. */
#ifndef TSR_TESTS_QUANT_GOLDEN_H
#define TSR_TESTS_QUANT_GOLDEN_H

#include <cjson/cJSON.h>

#include "check.h"

#define GOLDEN_DIR TSR_TEST_DATA_DIR "/quant"

static inline cJSON *golden_manifest(void) {
  FILE *f = fopen(GOLDEN_DIR "/manifest.json", "rb");
  if (!f) CHECK_FAIL_("cannot open %s", GOLDEN_DIR "/manifest.json");
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)n + 1);
  CHECK(text && fread(text, 1, (size_t)n, f) == (size_t)n);
  text[n] = '\0';
  fclose(f);
  cJSON *root = cJSON_Parse(text);
  free(text);
  if (!root) CHECK_FAIL_("manifest.json does not parse");
  return root;
}

static inline tsr_dtype golden_dtype(const char *name) {
  static const struct {
    const char *name;
    tsr_dtype dtype;
  } names[] = {{"float32", TSR_FLOAT32}, {"float16", TSR_FLOAT16}, {"bfloat16", TSR_BFLOAT16},
               {"uint32", TSR_UINT32},   {"uint8", TSR_UINT8},     {"int32", TSR_INT32},
               {"int64", TSR_INT64}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (name && strcmp(name, names[i].name) == 0) return names[i].dtype;
  CHECK_FAIL_("unknown dtype name %s", name ? name : "(null)");
}

static inline const char *golden_string(const cJSON *object, const char *key) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, key);
  return cJSON_IsString(item) ? item->valuestring : NULL;
}

static inline int golden_int(const cJSON *object, const char *key) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, key);
  if (!cJSON_IsNumber(item)) CHECK_FAIL_("manifest: %s is not a number", key);
  return item->valueint;
}

/* The case's global_scale, or false when it is null. */
static inline bool golden_global_scale(const cJSON *c, float *g) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(c, "global_scale");
  if (!cJSON_IsNumber(item)) return false;
  *g = (float)item->valuedouble;
  return true;
}

static inline tsr_quant_mode golden_mode(const char *name) {
  if (strcmp(name, "affine") == 0) return TSR_QUANT_AFFINE;
  if (strcmp(name, "mxfp4") == 0) return TSR_QUANT_MXFP4;
  if (strcmp(name, "mxfp8") == 0) return TSR_QUANT_MXFP8;
  if (strcmp(name, "nvfp4") == 0) return TSR_QUANT_NVFP4;
  CHECK_FAIL_("unknown mode %s", name);
}

/* arrays[key] loaded with its logical dtype (bfloat16 from '<u2' bits), or NULL when absent. */
static inline tsr_array *golden_array(const cJSON *c, const char *key) {
  const cJSON *entry =
      cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c, "arrays"), key);
  if (!entry) return NULL;
  tsr_dtype dtype = golden_dtype(golden_string(entry, "dtype"));
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", GOLDEN_DIR, golden_string(entry, "file"));
  tsr_array *a = NULL;
  if (dtype == TSR_BFLOAT16)
    CHECK_OK(tsr_npy_load_as(&a, path, TSR_BFLOAT16));
  else
    CHECK_OK(tsr_npy_load(&a, path));
  CHECK_EQ_INT(tsr_array_dtype(a), dtype);
  const cJSON *shape = cJSON_GetObjectItemCaseSensitive(entry, "shape");
  CHECK_EQ_INT(tsr_array_ndim(a), cJSON_GetArraySize(shape));
  for (int d = 0; d < tsr_array_ndim(a); d++)
    CHECK_EQ_INT(tsr_array_dim(a, d), cJSON_GetArrayItem(shape, d)->valueint);
  return a;
}

/* Every element of `a`, row-major, in a new buffer the caller frees. */
static inline void *golden_read(tsr_array *a, size_t *bytes) {
  size_t n = (size_t)tsr_array_size(a) * tsr_dtype_size(tsr_array_dtype(a));
  void *data = malloc(n ? n : 1);
  CHECK(data != NULL);
  CHECK_OK(tsr_array_read(a, data, n));
  if (bytes) *bytes = n;
  return data;
}

/* Whether `row` is listed in the case's undefined_rows. */
static inline bool golden_row_undefined(const cJSON *c, int64_t row) {
  const cJSON *rows = cJSON_GetObjectItemCaseSensitive(c, "undefined_rows");
  const cJSON *item = NULL;
  cJSON_ArrayForEach(item, rows) {
    if (item->valueint == row) return true;
  }
  return false;
}

/* Rows of an array: the product of every axis but the last. */
static inline int64_t golden_rows(tsr_array *a) {
  int64_t rows = 1;
  for (int d = 0; d < tsr_array_ndim(a) - 1; d++)
    rows *= tsr_array_dim(a, d);
  return rows;
}

/* A transposed view of a transposed copy: the same values through non-unit strides. */
static inline tsr_array *golden_strided_copy(tsr_array *a) {
  int n = tsr_array_ndim(a);
  int axes[8];
  for (int d = 0; d < n; d++)
    axes[d] = d;
  axes[n - 2] = n - 1;
  axes[n - 1] = n - 2;
  tsr_array *t = NULL, *tc = NULL, *back = NULL;
  CHECK_OK(tsr_transpose(&t, a, axes, n, NULL));
  CHECK_OK(tsr_contiguous(&tc, t, NULL));
  CHECK_OK(tsr_transpose(&back, tc, axes, n, NULL));
  tsr_array_release(t);
  tsr_array_release(tc);
  return back;
}

#endif
