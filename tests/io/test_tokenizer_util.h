/* tests/io/test_tokenizer_util.h — what the tokenizer tests share: the golden data folder
 * (tests/data/tokenizer/, written by tools/gen_tokenizer_golden.py), golden.json read with
 * cJSON, hex texts, id checks that print both sides, and the ids' FNV-1a hash. */
#ifndef TSR_TESTS_IO_TOKENIZER_UTIL_H
#define TSR_TESTS_IO_TOKENIZER_UTIL_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "tessera/tokenizer.h"

#ifndef TSR_TEST_DATA_DIR
#define TSR_TEST_DATA_DIR "tests/data"
#endif

static inline const char *tok_data(const char *name) {
  static char path[4096];
  snprintf(path, sizeof path, "%s/tokenizer/%s", TSR_TEST_DATA_DIR, name);
  return path;
}

static inline char *tok_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) CHECK_FAIL_("cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)n + 1);
  CHECK(text != NULL);
  CHECK_EQ_U64(fread(text, 1, (size_t)n, f), (uint64_t)n);
  fclose(f);
  text[n] = '\0';
  if (len) *len = (size_t)n;
  return text;
}

static inline cJSON *tok_golden(void) {
  char *text = tok_read_file(tok_data("golden.json"), NULL);
  cJSON *root = cJSON_Parse(text);
  free(text);
  if (!root) CHECK_FAIL_("golden.json is not JSON");
  return root;
}

static inline cJSON *tok_key(const cJSON *object, const char *key) {
  cJSON *item = cJSON_GetObjectItemCaseSensitive(object, key);
  if (!item) CHECK_FAIL_("golden.json: no \"%s\"", key);
  return item;
}

/* The bytes of a hex string, malloc'd and NUL-terminated; *len gets their count. */
static inline char *tok_unhex(const char *hex, size_t *len) {
  size_t n = strlen(hex) / 2;
  char *out = malloc(n + 1);
  CHECK(out != NULL);
  for (size_t i = 0; i < n; i++) {
    unsigned byte;
    if (sscanf(hex + 2 * i, "%2x", &byte) != 1) CHECK_FAIL_("bad hex %s", hex);
    out[i] = (char)byte;
  }
  out[n] = '\0';
  if (len) *len = n;
  return out;
}

/* The golden ids of a JSON array, malloc'd. */
static inline int32_t *tok_ids_of(const cJSON *array, size_t *n) {
  *n = (size_t)cJSON_GetArraySize(array);
  int32_t *ids = malloc((*n ? *n : 1) * sizeof *ids);
  CHECK(ids != NULL);
  size_t i = 0;
  for (const cJSON *item = array->child; item; item = item->next)
    ids[i++] = (int32_t)item->valuedouble;
  return ids;
}

static inline void tok_print_ids(const char *label, const int32_t *ids, size_t n) {
  fprintf(stderr, "  %s (%zu):", label, n);
  for (size_t i = 0; i < n && i < 64; i++)
    fprintf(stderr, " %d", (int)ids[i]);
  fprintf(stderr, n > 64 ? " ...\n" : "\n");
}

/* Encodes `text` and compares with the golden ids; `what` names the case. */
static inline void tok_check_encode(const tsr_tokenizer *tok, const char *text, const int32_t *want,
                                    size_t nwant, const char *what) {
  int32_t *got = NULL;
  size_t ngot = 0;
  CHECK_OK(tsr_tokenizer_encode(tok, text, &got, &ngot));
  if (ngot != nwant || (nwant && memcmp(got, want, nwant * sizeof *got) != 0)) {
    fprintf(stderr, "encode differs from the tokenizers library for %s\n", what);
    tok_print_ids("tessera", got, ngot);
    tok_print_ids("library", want, nwant);
    CHECK_FAIL_("ids differ");
  }
  free(got);
}

static inline uint64_t tok_fnv1a64(uint64_t h, const int32_t *ids, size_t n) {
  for (size_t i = 0; i < n; i++)
    h = (h ^ (uint64_t)(uint32_t)ids[i]) * 0x100000001b3u;
  return h;
}

#define TOK_FNV_START 0xcbf29ce484222325u

static inline double tok_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
