/* tests/io/test_tokenizer.c — tessera/tokenizer.h against the `tokenizers` library: the GLM-style
 * tokenizer it built (tests/data/tokenizer/, made by tools/gen_tokenizer_golden.py), in both
 * merge spellings, encodes every corpus text and every invalid UTF-8 input to the library's ids
 * and decodes every id sequence (cut inside characters too) and every id alone to the
 * library's text; valid text round-trips; ~1 MiB of text gives the library's ids (timed);
 * encode runs on several threads at once; and the argument errors name what is wrong. The
 * malformed files are test_tokenizer_files.c's, the Unicode classes test_tokenizer_unicode.c's. */
#include <pthread.h>

#include "test_tokenizer_util.h"

static void check_named_ids(const tsr_tokenizer *tok, const cJSON *golden) {
  CHECK_EQ_INT(tsr_tokenizer_vocab_size(tok), tok_key(golden, "vocab_size")->valuedouble);
  for (const cJSON *c = tok_key(golden, "token_ids")->child; c; c = c->next) {
    char *token = tok_unhex(tok_key(c, "token")->valuestring, NULL);
    int32_t id = tsr_tokenizer_token_id(tok, token);
    if (id != (int32_t)tok_key(c, "id")->valuedouble)
      CHECK_FAIL_("token_id(\"%s\") = %d, library %d", token, (int)id,
                  (int)tok_key(c, "id")->valuedouble);
    free(token);
  }
}

/* Every corpus text encodes to the library's ids and decodes back to itself (the library's
 * decode of these ids gives the text too; the generator checks that). */
static void check_encode_cases(const tsr_tokenizer *tok, const cJSON *golden) {
  size_t k = 0;
  for (const cJSON *c = tok_key(golden, "encode")->child; c; c = c->next, k++) {
    size_t len, n;
    char *text = tok_unhex(tok_key(c, "text")->valuestring, &len);
    int32_t *want = tok_ids_of(tok_key(c, "ids"), &n);
    char what[64];
    snprintf(what, sizeof what, "encode case %zu", k);
    tok_check_encode(tok, text, want, n, what);
    char *back = NULL;
    CHECK_OK(tsr_tokenizer_decode(tok, want, n, &back));
    if (strcmp(back, text) != 0)
      CHECK_FAIL_("%s: decode gives \"%s\", not \"%s\"", what, back, text);
    free(back);
    free(want);
    free(text);
  }
  CHECK(k >= 60);
}

/* Invalid UTF-8 encodes as its lossy decoding (one U+FFFD per maximal invalid subsequence). */
static void check_invalid_utf8(const tsr_tokenizer *tok, const cJSON *golden) {
  size_t k = 0;
  for (const cJSON *c = tok_key(golden, "invalid_utf8")->child; c; c = c->next, k++) {
    size_t n;
    char *bytes = tok_unhex(tok_key(c, "bytes")->valuestring, NULL);
    int32_t *want = tok_ids_of(tok_key(c, "ids"), &n);
    char what[64];
    snprintf(what, sizeof what, "invalid UTF-8 case %zu", k);
    tok_check_encode(tok, bytes, want, n, what);
    free(want);
    free(bytes);
  }
}

static void check_decode(const tsr_tokenizer *tok, const int32_t *ids, size_t n,
                         const char *want_hex, const char *what) {
  size_t want_len;
  char *want = tok_unhex(want_hex, &want_len);
  char *got = NULL;
  CHECK_OK(tsr_tokenizer_decode(tok, ids, n, &got));
  /* A decoded NUL byte ends the C string: compare up to the first one, as the caller sees. */
  if (strcmp(got, want) != 0) {
    tok_print_ids("ids", ids, n);
    CHECK_FAIL_("%s: decode gives \"%s\", the library \"%s\"", what, got, want);
  }
  free(got);
  free(want);
}

static void check_decode_cases(const tsr_tokenizer *tok, const cJSON *golden) {
  size_t k = 0, n;
  for (const cJSON *c = tok_key(golden, "decode")->child; c; c = c->next, k++) {
    int32_t *ids = tok_ids_of(tok_key(c, "ids"), &n);
    char what[64];
    snprintf(what, sizeof what, "decode case %zu", k);
    check_decode(tok, ids, n, tok_key(c, "text")->valuestring, what);
    free(ids);
  }
  int32_t id = 0;
  for (const cJSON *c = tok_key(golden, "decode_each")->child; c; c = c->next, id++) {
    char what[64];
    snprintf(what, sizeof what, "decode of id %d alone", (int)id);
    check_decode(tok, &id, 1, c->valuestring, what);
  }
  CHECK_EQ_INT(id, tsr_tokenizer_vocab_size(tok));
}

/* The encode texts joined by newlines and repeated to ~1 MiB: the library's count and hash. */
static char *big_text(const cJSON *golden, size_t *len) {
  const cJSON *big = tok_key(golden, "big");
  size_t total = 0, cap = 1 << 16;
  char *joined = malloc(cap);
  CHECK(joined != NULL);
  for (const cJSON *c = tok_key(golden, "encode")->child; c; c = c->next) {
    size_t n;
    char *text = tok_unhex(tok_key(c, "text")->valuestring, &n);
    if (total + n + 2 > cap) CHECK((joined = realloc(joined, cap *= 4)) != NULL);
    memcpy(joined + total, text, n);
    total += n;
    if (c->next) joined[total++] = '\n';
    free(text);
  }
  size_t repeat = (size_t)tok_key(big, "repeat")->valuedouble;
  char *out = malloc(total * repeat + 1);
  CHECK(out != NULL);
  for (size_t r = 0; r < repeat; r++)
    memcpy(out + r * total, joined, total);
  out[total * repeat] = '\0';
  free(joined);
  *len = total * repeat;
  return out;
}

static void check_big(const tsr_tokenizer *tok, const cJSON *golden, const char *name) {
  size_t len, n;
  char *text = big_text(golden, &len);
  int32_t *ids = NULL;
  double start = tok_seconds();
  CHECK_OK(tsr_tokenizer_encode(tok, text, &ids, &n));
  double seconds = tok_seconds() - start;
  const cJSON *big = tok_key(golden, "big");
  CHECK_EQ_U64(n, (uint64_t)tok_key(big, "count")->valuedouble);
  char hash[17];
  snprintf(hash, sizeof hash, "%016llx", (unsigned long long)tok_fnv1a64(TOK_FNV_START, ids, n));
  if (strcmp(hash, tok_key(big, "fnv1a64")->valuestring) != 0)
    CHECK_FAIL_("1 MiB text: ids hash %s, library %s", hash, tok_key(big, "fnv1a64")->valuestring);
  printf("  %s: encode %.2f MiB -> %zu ids in %.3f s (%.1f MiB/s)\n", name, (double)len / 1048576.0,
         n, seconds, (double)len / 1048576.0 / seconds);
  free(ids);
  free(text);
}

static void test_golden(const char *file, const cJSON *golden) {
  tsr_tokenizer *tok = NULL;
  double start = tok_seconds();
  CHECK_OK(tsr_tokenizer_load(&tok, tok_data(file)));
  printf("  %s: loaded in %.1f ms\n", file, (tok_seconds() - start) * 1e3);
  check_named_ids(tok, golden);
  check_encode_cases(tok, golden);
  check_invalid_utf8(tok, golden);
  check_decode_cases(tok, golden);
  check_big(tok, golden, file);
  tsr_tokenizer_free(tok);
}

/* ---- threads ---------------------------------------------------------------------------- */

typedef struct {
  const tsr_tokenizer *tok;
  const cJSON *golden;
  int failures;
} thread_job;

static void *encode_all(void *arg) {
  thread_job *job = arg;
  for (int round = 0; round < 3; round++) {
    for (const cJSON *c = tok_key(job->golden, "encode")->child; c; c = c->next) {
      size_t n, ngot;
      char *text = tok_unhex(tok_key(c, "text")->valuestring, NULL);
      int32_t *want = tok_ids_of(tok_key(c, "ids"), &n), *got = NULL;
      if (tsr_tokenizer_encode(job->tok, text, &got, &ngot) != TSR_OK || ngot != n ||
          (n && memcmp(got, want, n * sizeof *got) != 0))
        job->failures++;
      free(got);
      free(want);
      free(text);
    }
  }
  return NULL;
}

static void test_threads(const cJSON *golden) {
  tsr_tokenizer *tok = NULL;
  CHECK_OK(tsr_tokenizer_load(&tok, tok_data("glm_style.json")));
  pthread_t threads[4];
  thread_job jobs[4];
  for (int i = 0; i < 4; i++) {
    jobs[i] = (thread_job){tok, golden, 0};
    CHECK_EQ_INT(pthread_create(&threads[i], NULL, encode_all, &jobs[i]), 0);
  }
  for (int i = 0; i < 4; i++) {
    CHECK_EQ_INT(pthread_join(threads[i], NULL), 0);
    CHECK_EQ_INT(jobs[i].failures, 0);
  }
  tsr_tokenizer_free(tok);
}

/* ---- arguments ---------------------------------------------------------------------------- */

static void test_bad_arguments(void) {
  tsr_tokenizer *tok = (tsr_tokenizer *)1;
  CHECK_STATUS(tsr_tokenizer_load(NULL, tok_data("glm_style.json")), TSR_ERR_INVALID);
  CHECK_MESSAGE("out is NULL");
  CHECK_STATUS(tsr_tokenizer_load(&tok, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("path is NULL");
  CHECK(tok == NULL);
  CHECK_OK(tsr_tokenizer_load(&tok, tok_data("glm_style.json")));
  int32_t *ids = (int32_t *)1;
  size_t n = 7;
  CHECK_STATUS(tsr_tokenizer_encode(tok, NULL, &ids, &n), TSR_ERR_INVALID);
  CHECK_MESSAGE("text is NULL");
  CHECK(ids == NULL && n == 0);
  CHECK_STATUS(tsr_tokenizer_encode(NULL, "x", &ids, &n), TSR_ERR_INVALID);
  CHECK_MESSAGE("tokenizer is NULL");
  CHECK_STATUS(tsr_tokenizer_encode(tok, "x", NULL, &n), TSR_ERR_INVALID);
  CHECK_MESSAGE("ids or n is NULL");
  CHECK_OK(tsr_tokenizer_encode(tok, "", &ids, &n));
  CHECK_EQ_U64(n, 0);
  free(ids);

  char *text = (char *)1;
  int64_t size = tsr_tokenizer_vocab_size(tok);
  int32_t bad[3] = {5, (int32_t)size, 6};
  CHECK_STATUS(tsr_tokenizer_decode(tok, bad, 3, &text), TSR_ERR_INVALID);
  char message[64];
  snprintf(message, sizeof message, "id %lld (ids[1])", (long long)size);
  CHECK_MESSAGE(message);
  snprintf(message, sizeof message, "vocabulary size %lld", (long long)size);
  CHECK_MESSAGE(message);
  CHECK(text == NULL);
  bad[1] = -3;
  CHECK_STATUS(tsr_tokenizer_decode(tok, bad, 3, &text), TSR_ERR_INVALID);
  CHECK_MESSAGE("id -3 (ids[1])");
  CHECK_STATUS(tsr_tokenizer_decode(tok, NULL, 2, &text), TSR_ERR_INVALID);
  CHECK_MESSAGE("ids is NULL");
  CHECK_STATUS(tsr_tokenizer_decode(tok, bad, 1, NULL), TSR_ERR_INVALID);
  CHECK_MESSAGE("text is NULL");
  CHECK_OK(tsr_tokenizer_decode(tok, NULL, 0, &text));
  CHECK(strcmp(text, "") == 0);
  free(text);

  CHECK_EQ_INT(tsr_tokenizer_token_id(tok, "not a token"), -1);
  CHECK_EQ_INT(tsr_tokenizer_token_id(tok, NULL), -1);
  CHECK_EQ_INT(tsr_tokenizer_token_id(NULL, "a"), -1);
  CHECK_EQ_INT(tsr_tokenizer_vocab_size(NULL), 0);
  tsr_tokenizer_free(tok);
  tsr_tokenizer_free(NULL);
}

int main(void) {
  cJSON *golden = tok_golden();
  printf("golden ids from tokenizers %s\n", tok_key(golden, "tokenizers_version")->valuestring);
  test_golden("glm_style.json", golden);
  test_golden("glm_style_legacy.json", golden);
  test_threads(golden);
  test_bad_arguments();
  cJSON_Delete(golden);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  printf("test_tokenizer: ok\n");
  return 0;
}
