/* tests/model/convert_fixture.h — what the convert tests share: converting into a fresh folder
 * under the test's root, and comparing two checkpoint folders tensor by tensor (name, dtype,
 * shape and bytes). Built on model_fixture.h. */
#ifndef TSR_TESTS_CONVERT_FIXTURE_H
#define TSR_TESTS_CONVERT_FIXTURE_H

#include "model_fixture.h"

/* fx_root/<name> in a buffer of its own (one of sixteen, so it survives fx_path calls). */
static inline const char *cv_out(const char *name) {
  static char bufs[16][512];
  static int next;
  char *buf = bufs[next++ % 16];
  snprintf(buf, sizeof bufs[0], "%s/%s", fx_root, name);
  return buf;
}

/* The bytes of tensor `name` of an open checkpoint (free() them); its info in *info. */
static inline void *cv_tensor_bytes(tsr_safetensors *st, const char *name, tsr_tensor_info *info) {
  CHECK_OK(tsr_safetensors_find(st, name, info));
  tsr_array *a = NULL;
  CHECK_OK(tsr_safetensors_load(&a, st, name, fx_cpu));
  void *bytes = malloc(info->nbytes + 1);
  CHECK(bytes != NULL);
  CHECK_OK(tsr_array_read(a, bytes, info->nbytes));
  tsr_array_release(a);
  return bytes;
}

/* Checkpoints `a` and `b` hold the same tensor names, and each tensor has the same dtype, shape
 * and bytes. Returns the number of tensors. */
static inline size_t cv_same_tensors(const char *a, const char *b) {
  tsr_safetensors *sa = NULL, *sb = NULL;
  CHECK_OK(tsr_safetensors_open(&sa, a));
  CHECK_OK(tsr_safetensors_open(&sb, b));
  size_t n = tsr_safetensors_count(sa);
  if (n != tsr_safetensors_count(sb))
    CHECK_FAIL_("%s has %zu tensors, %s has %zu", a, n, b, tsr_safetensors_count(sb));
  for (size_t i = 0; i < n; i++) {
    tsr_tensor_info ia, ib;
    CHECK_OK(tsr_safetensors_info(sa, i, &ia));
    if (!tsr_safetensors_has(sb, ia.name)) CHECK_FAIL_("%s lacks '%s'", b, ia.name);
    void *da = cv_tensor_bytes(sa, ia.name, &ia), *db = cv_tensor_bytes(sb, ia.name, &ib);
    bool same = ia.dtype == ib.dtype && ia.ndim == ib.ndim && ia.nbytes == ib.nbytes &&
                memcmp(ia.shape, ib.shape, sizeof(int64_t) * (size_t)ia.ndim) == 0 &&
                memcmp(da, db, ia.nbytes) == 0;
    if (!same)
      CHECK_FAIL_("tensor '%s' differs: %s %s [%lld, ...] vs %s [%lld, ...]", ia.name, a,
                  tsr_dtype_name(ia.dtype), (long long)ia.shape[0], tsr_dtype_name(ib.dtype),
                  (long long)ib.shape[0]);
    free(da);
    free(db);
  }
  tsr_safetensors_close(sa);
  tsr_safetensors_close(sb);
  return n;
}

/* Whether `dir` holds an entry whose name starts with `prefix`. */
static inline bool cv_has_entry(const char *dir, const char *prefix) {
  DIR *d = opendir(dir);
  CHECK(d != NULL);
  bool found = false;
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    found |= strncmp(e->d_name, prefix, strlen(prefix)) == 0;
  closedir(d);
  return found;
}

/* Whether `dir` holds a temporary output folder (a name with ".partial-" in it). */
static inline bool cv_has_partial(const char *dir) {
  DIR *d = opendir(dir);
  CHECK(d != NULL);
  bool found = false;
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    found |= strstr(e->d_name, ".partial-") != NULL;
  closedir(d);
  return found;
}

#endif
