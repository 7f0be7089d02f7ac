/* tests/model/glm_golden.h — reading the committed GLM goldens (tests/data/glm/, written by
 * tools/gen_glm_golden.py from transformers and mlx-lm): .npy files of float32, float64 and
 * int32 into plain C arrays, and the folder names. */
#ifndef TSR_TESTS_GLM_GOLDEN_H
#define TSR_TESTS_GLM_GOLDEN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define GLM_DATA TSR_TEST_DATA_DIR "/glm"

/* The whole data of a version-1 .npy file of `descr` ("<f4", "<f8", "<i4") with `count`
 * elements: the header is checked for the descr and skipped. */
static inline void *golden_npy(const char *path, const char *descr, size_t elem, size_t count) {
  FILE *f = fopen(path, "rb");
  if (!f) CHECK_FAIL_("cannot open %s", path);
  unsigned char pre[10];
  if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY\x01", 7) != 0)
    CHECK_FAIL_("%s: not a version 1 .npy", path);
  size_t header_len = (size_t)pre[8] | ((size_t)pre[9] << 8);
  char *header = calloc(1, header_len + 1);
  if (!header || fread(header, 1, header_len, f) != header_len)
    CHECK_FAIL_("%s: short header", path);
  if (!strstr(header, descr)) CHECK_FAIL_("%s: header %s lacks %s", path, header, descr);
  free(header);
  void *data = malloc(elem * count + 1);
  if (!data || fread(data, elem, count, f) != count)
    CHECK_FAIL_("%s: want %zu elements", path, count);
  fclose(f);
  return data;
}

static inline float *golden_f32(const char *dir, const char *name, size_t count) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return golden_npy(path, "<f4", 4, count);
}

static inline double *golden_f64(const char *dir, const char *name, size_t count) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return golden_npy(path, "<f8", 8, count);
}

static inline int32_t *golden_i32(const char *dir, const char *name, size_t count) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return golden_npy(path, "<i4", 4, count);
}

static inline bool golden_exists(const char *dir, const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  if (f) fclose(f);
  return f != NULL;
}

/* The gap between the largest and second largest of row[0..n). */
static inline double top2_margin(const float *row, size_t n) {
  double first = -1e300, second = -1e300;
  for (size_t i = 0; i < n; i++) {
    double v = row[i];
    if (v > first)
      second = first, first = v;
    else if (v > second)
      second = v;
  }
  return first - second;
}

#endif
