/* tests/model/model_fixture.h — checkpoint folders a model test builds for itself under /tmp:
 * copies of the committed tiny GLM checkpoints (tests/data/glm) with one thing changed, a
 * config.json edited through cJSON or a safetensors file rewritten through tessera's own reader
 * and writer (a tensor dropped, replaced or added), and a child-process runner for what may only
 * happen once per process (a ledger cap). Not a framework: plain helpers that fail the test. */
#ifndef TSR_TESTS_MODEL_FIXTURE_H
#define TSR_TESTS_MODEL_FIXTURE_H

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "glm_golden.h"
#include "rerun.h"

#define FX_MOE_Q4 GLM_DATA "/moe/mlx-q4g64"
#define FX_MOE_HF GLM_DATA "/moe/hf"
#define FX_DENSE_HF GLM_DATA "/dense/hf"

static const tsr_device fx_cpu = {TSR_CPU, 0};

/* `dir`/`name` in a static buffer (one of four, so a call may use a few at once). */
static inline const char *fx_path(const char *dir, const char *name) {
  static char bufs[4][1024];
  static int next;
  char *buf = bufs[next++ % 4];
  snprintf(buf, sizeof bufs[0], "%s/%s", dir, name);
  return buf;
}

/* A fresh folder /tmp/tessera-<tag>-XXXXXX, written into `out` (size 256). */
static inline void fx_make_root(const char *tag, char *out) {
  snprintf(out, 256, "/tmp/tessera-%s-XXXXXX", tag);
  if (!mkdtemp(out)) CHECK_FAIL_("mkdtemp %s failed", out);
}

static inline void fx_write_bytes(const char *path, const void *bytes, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) CHECK_FAIL_("cannot write %s", path);
  CHECK_EQ_U64(fwrite(bytes, 1, n, f), n);
  CHECK_EQ_INT(fclose(f), 0);
}

static inline void fx_write_text(const char *path, const char *text) {
  fx_write_bytes(path, text, strlen(text));
}

/* The whole of a file (NUL-terminated; its length in *n when n is not NULL). */
static inline char *fx_read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) CHECK_FAIL_("cannot open %s", path);
  CHECK_EQ_INT(fseek(f, 0, SEEK_END), 0);
  long size = ftell(f);
  CHECK(size >= 0);
  rewind(f);
  char *bytes = malloc((size_t)size + 1);
  CHECK(bytes != NULL);
  CHECK_EQ_U64(fread(bytes, 1, (size_t)size, f), (uint64_t)size);
  bytes[size] = '\0';
  fclose(f);
  if (n) *n = (size_t)size;
  return bytes;
}

static inline void fx_copy_file(const char *from, const char *to) {
  size_t n = 0;
  char *bytes = fx_read_file(from, &n);
  fx_write_bytes(to, bytes, n);
  free(bytes);
}

/* `root`/`name` made as a copy of checkpoint `src`: config.json, generation_config.json and
 * model.safetensors (without the index, so its tensors may be edited freely). */
static inline void fx_copy_checkpoint(const char *src, const char *root, const char *name,
                                      char *out) {
  snprintf(out, 512, "%s/%s", root, name);
  CHECK_EQ_INT(mkdir(out, 0755), 0);
  static const char *const files[] = {"config.json", "generation_config.json", "model.safetensors"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
    fx_copy_file(fx_path(src, files[i]), fx_path(out, files[i]));
}

/* Removes a folder of plain files and one level of plain subfolders. */
static inline void fx_remove_tree(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char path[1024];
    if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) continue;
    struct stat info;
    if (lstat(path, &info) == 0 && S_ISDIR(info.st_mode))
      fx_remove_tree(path);
    else
      unlink(path);
  }
  closedir(d);
  rmdir(dir);
}

/* ---- config.json through cJSON -------------------------------------------------------------- */

/* The float32 logits [t, vocab] of `tokens` through the checkpoint at `dir` (free() them). */
static inline float *fx_logits(const char *dir, const int32_t *tokens, size_t t, size_t vocab) {
  tsr_model *m = NULL;
  CHECK_OK(tsr_model_load(&m, dir, NULL));
  float *out = malloc(t * vocab * sizeof *out);
  CHECK(out != NULL);
  CHECK_OK(tsr_model_logits(m, tokens, t, out, t * vocab));
  tsr_model_free(m);
  return out;
}

static inline cJSON *fx_config_read(const char *dir) {
  char *text = fx_read_file(fx_path(dir, "config.json"), NULL);
  cJSON *root = cJSON_Parse(text);
  free(text);
  if (!root) CHECK_FAIL_("%s/config.json does not parse", dir);
  return root;
}

static inline void fx_config_write(const char *dir, cJSON *root) {
  char *text = cJSON_Print(root);
  CHECK(text != NULL);
  fx_write_text(fx_path(dir, "config.json"), text);
  free(text);
  cJSON_Delete(root);
}

/* Sets (or, with value NULL, removes) a top-level key of dir/config.json; value is owned. */
static inline void fx_config_set(const char *dir, const char *key, cJSON *value) {
  cJSON *root = fx_config_read(dir);
  cJSON_DeleteItemFromObjectCaseSensitive(root, key);
  if (value) cJSON_AddItemToObject(root, key, value);
  fx_config_write(dir, root);
}

/* ---- safetensors files as editable lists ---------------------------------------------------- */

typedef struct {
  char *names[256];
  tsr_array *arrays[256];
  size_t n;
} fx_tensors;

static inline void fx_tensors_read(fx_tensors *t, const char *file) {
  tsr_safetensors *st = NULL;
  CHECK_OK(tsr_safetensors_open(&st, file));
  t->n = 0;
  for (size_t i = 0; i < tsr_safetensors_count(st); i++) {
    tsr_tensor_info info;
    CHECK_OK(tsr_safetensors_info(st, i, &info));
    CHECK(t->n < 256);
    t->names[t->n] = strdup(info.name);
    CHECK_OK(tsr_safetensors_load(&t->arrays[t->n], st, info.name, fx_cpu));
    t->n++;
  }
  tsr_safetensors_close(st);
}

static inline size_t fx_tensors_index(const fx_tensors *t, const char *name) {
  for (size_t i = 0; i < t->n; i++)
    if (strcmp(t->names[i], name) == 0) return i;
  CHECK_FAIL_("no tensor '%s' in the list", name);
}

static inline tsr_array *fx_tensors_get(const fx_tensors *t, const char *name) {
  return t->arrays[fx_tensors_index(t, name)];
}

static inline void fx_tensors_drop(fx_tensors *t, const char *name) {
  size_t i = fx_tensors_index(t, name);
  free(t->names[i]);
  tsr_array_release(t->arrays[i]);
  t->names[i] = t->names[t->n - 1];
  t->arrays[i] = t->arrays[t->n - 1];
  t->n--;
}

/* Adds `a` (owned) as `name`, replacing a tensor of that name if there is one. */
static inline void fx_tensors_put(fx_tensors *t, const char *name, tsr_array *a) {
  CHECK(a != NULL);
  for (size_t i = 0; i < t->n; i++)
    if (strcmp(t->names[i], name) == 0) {
      tsr_array_release(t->arrays[i]);
      t->arrays[i] = a;
      return;
    }
  CHECK(t->n < 256);
  t->names[t->n] = strdup(name);
  t->arrays[t->n++] = a;
}

/* Replaces `name` by zeros of `shape` and `dtype`. */
static inline void fx_tensors_zeros(fx_tensors *t, const char *name, const int64_t *shape, int ndim,
                                    tsr_dtype dtype) {
  tsr_array *a = NULL;
  CHECK_OK(tsr_zeros(&a, shape, ndim, dtype, NULL));
  fx_tensors_put(t, name, a);
}

/* Replaces `name` by itself converted to `dtype`. */
static inline void fx_tensors_astype(fx_tensors *t, const char *name, tsr_dtype dtype) {
  tsr_array *a = NULL;
  CHECK_OK(tsr_astype(&a, fx_tensors_get(t, name), dtype, NULL));
  fx_tensors_put(t, name, a);
}

static inline void fx_tensors_save(const fx_tensors *t, const char *file) {
  CHECK_OK(
      tsr_safetensors_save(file, (const char *const *)t->names, t->arrays, t->n, NULL, NULL, 0));
}

static inline void fx_tensors_free(fx_tensors *t) {
  for (size_t i = 0; i < t->n; i++) {
    free(t->names[i]);
    tsr_array_release(t->arrays[i]);
  }
  t->n = 0;
}

/* ---- one case: a fresh copy, a load that must fail ------------------------------------------ */

static char fx_root[256]; /* the test's folder under /tmp */
static int fx_cases;      /* failing loads checked so far */

/* A fresh copy of checkpoint `src` under fx_root (a static buffer, valid until the next call). */
static inline const char *fx_fresh(const char *src) {
  static char dir[512];
  char name[32];
  snprintf(name, sizeof name, "case%02d", fx_cases + 1);
  fx_copy_checkpoint(src, fx_root, name, dir);
  return dir;
}

/* The load fails with `want`, the message holds both needles (NULL: none), *out is untouched and
 * the ledger is empty. */
static inline void fx_expect_fail(const char *what, const char *dir, tsr_status want,
                                  const char *needle, const char *needle2) {
  tsr_model *m = NULL;
  tsr_status got = tsr_model_load(&m, dir, NULL);
  if (got != want)
    CHECK_FAIL_("%s: got %s, want %s", what, tsr_status_name(got), tsr_status_name(want));
  if (m != NULL) CHECK_FAIL_("%s: *out was set on failure", what);
  const char *needles[2] = {needle, needle2};
  for (int i = 0; i < 2; i++)
    if (needles[i] && !strstr(tsr_last_error(), needles[i]))
      CHECK_FAIL_("%s: the message should contain \"%s\"", what, needles[i]);
  CHECK_NO_LEAKS();
  fx_cases++;
  printf("  %-44s %s: %s\n", what, tsr_status_name(got), tsr_last_error());
}

#endif
