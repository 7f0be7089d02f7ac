/* io/tokenizer_load.c — reading tokenizer.json: the file, the BPE model (vocab, merges, flags)
 * and added_tokens, with the ids the `tokenizers` library would give them. A malformed file is
 * TSR_ERR_IO naming the file and the key; a model or flag this implementation does not do is
 * TSR_ERR_UNSUPPORTED naming it. The components around the model are tokenizer_config.c's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/status.h"
#include "io/tokenizer.h"

static bool absent(const cJSON *item) {
  return !item || cJSON_IsNull(item);
}

/* A JSON number that is a whole id 0..INT32_MAX. */
static bool get_id(const cJSON *item, int32_t *id) {
  if (!cJSON_IsNumber(item)) return false;
  double v = item->valuedouble;
  if (!(v >= 0 && v <= INT32_MAX) || v != (double)(int32_t)v) return false;
  *id = (int32_t)v;
  return true;
}

static tsr_status nomem(const char *path, const char *what) {
  return tsri_error(TSR_ERR_NOMEM, "tokenizer %s: no memory for %s", path, what);
}

/* An id past the limit would make the dense decode table huge: refused. */
static tsr_status check_id(const tsr_tokenizer *t, int32_t id, const char *path, const char *key,
                           const char *token) {
  if (id <= t->id_limit) return TSR_OK;
  return tsri_error(TSR_ERR_UNSUPPORTED,
                    "tokenizer %s: %s \"%s\" has id %d, beyond %lld (4 per token in the file "
                    "plus 1024): sparse ids are not supported",
                    path, key, token, (int)id, (long long)t->id_limit);
}

static tsr_status load_vocab(tsr_tokenizer *t, const cJSON *vocab, const char *path) {
  if (!cJSON_IsObject(vocab))
    return tsri_error(TSR_ERR_IO, "tokenizer %s: model.vocab is missing or not an object", path);
  if (!tsri_strmap_init(&t->vocab, (size_t)cJSON_GetArraySize(vocab)))
    return nomem(path, "model.vocab");
  for (const cJSON *item = vocab->child; item; item = item->next) {
    int32_t id, other;
    if (!get_id(item, &id))
      return tsri_error(TSR_ERR_IO, "tokenizer %s: model.vocab[\"%s\"] is not an id 0..%d", path,
                        item->string, INT32_MAX);
    tsr_status status = check_id(t, id, path, "model.vocab", item->string);
    if (status != TSR_OK) return status;
    int added = tsri_strmap_insert(&t->vocab, item->string, strlen(item->string), id, &other);
    if (added < 0) return nomem(path, "model.vocab");
    if (added == 0)
      return tsri_error(TSR_ERR_IO, "tokenizer %s: model.vocab has \"%s\" twice (ids %d and %d)",
                        path, item->string, (int)other, (int)id);
    if (tsri_tok_decoded_has(t, id))
      return tsri_error(TSR_ERR_IO, "tokenizer %s: model.vocab gives id %d to two tokens (\"%s\")",
                        path, (int)id, item->string);
    if (!tsri_tok_decoded_put(t, id, item->string, strlen(item->string)))
      return nomem(path, "the decode table");
  }
  return TSR_OK;
}

/* The two sides of merges[index]: "a b" (exactly one space, as the library splits it) or
 * ["a", "b"]. 0 with *left, *right set; 1 for a "#version" line the library skips; -1 when
 * malformed. `buf` holds the split string. */
static int merge_sides(const cJSON *item, char *buf, size_t cap, const char **left,
                       const char **right) {
  if (cJSON_IsString(item)) {
    const char *s = item->valuestring, *space = strchr(s, ' ');
    if (strncmp(s, "#version", 8) == 0) return 1;
    if (!space || strchr(space + 1, ' ') || strlen(s) >= cap) return -1;
    memcpy(buf, s, strlen(s) + 1);
    buf[space - s] = '\0';
    *left = buf;
    *right = buf + (space - s) + 1;
    return 0;
  }
  if (!cJSON_IsArray(item) || cJSON_GetArraySize(item) != 2) return -1;
  const cJSON *a = cJSON_GetArrayItem(item, 0), *b = cJSON_GetArrayItem(item, 1);
  if (!cJSON_IsString(a) || !cJSON_IsString(b)) return -1;
  *left = a->valuestring;
  *right = b->valuestring;
  return 0;
}

/* The ids of a merge's two sides and of their concatenation; the name the vocabulary lacks. */
static const char *merge_ids(const tsr_tokenizer *t, const char *left, const char *right,
                             char *joined, size_t cap, int32_t ids[3]) {
  size_t nl = strlen(left), nr = strlen(right);
  ids[0] = tsri_strmap_get(&t->vocab, left, nl);
  if (ids[0] < 0) return left;
  ids[1] = tsri_strmap_get(&t->vocab, right, nr);
  if (ids[1] < 0) return right;
  if (nl + nr >= cap) return left; /* longer than any vocabulary string */
  memcpy(joined, left, nl);
  memcpy(joined + nl, right, nr + 1);
  ids[2] = tsri_strmap_get(&t->vocab, joined, nl + nr);
  return ids[2] < 0 ? joined : NULL;
}

static tsr_status load_merges(tsr_tokenizer *t, const cJSON *merges, const char *path) {
  if (!cJSON_IsArray(merges))
    return tsri_error(TSR_ERR_IO, "tokenizer %s: model.merges is missing or not an array", path);
  tsr_status status = TSR_OK;
  size_t cap = 2 * t->vocab.max_key_len + 2, index = 0;
  uint32_t rank = 0;
  char *buf = malloc(2 * cap);
  if (!buf || !tsri_pairmap_init(&t->merges, (size_t)cJSON_GetArraySize(merges))) {
    status = nomem(path, "model.merges");
    goto done;
  }
  for (const cJSON *item = merges->child; item; item = item->next, index++) {
    const char *left, *right, *missing;
    int32_t ids[3];
    int form = merge_sides(item, buf, cap, &left, &right);
    if (form == 1) continue;
    if (form < 0) {
      status = tsri_error(TSR_ERR_IO,
                          "tokenizer %s: model.merges[%zu] is neither \"a b\" nor [\"a\", \"b\"]",
                          path, index);
      goto done;
    }
    if ((missing = merge_ids(t, left, right, buf + cap, cap, ids)) != NULL) {
      status = tsri_error(TSR_ERR_IO,
                          "tokenizer %s: model.merges[%zu] (\"%s\" \"%s\") names \"%s\", which "
                          "model.vocab lacks",
                          path, index, left, right, missing);
      goto done;
    }
    if (!tsri_pairmap_put(&t->merges, ids[0], ids[1], rank++, ids[2])) {
      status = nomem(path, "model.merges");
      goto done;
    }
  }
done:
  free(buf);
  return status;
}

/* A model key that must be null, absent, `allowed` (a JSON value that changes nothing). */
static tsr_status refuse_set(const cJSON *model, const char *key, const char *path) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(model, key);
  if (absent(item) || cJSON_IsFalse(item)) return TSR_OK;
  if (cJSON_IsString(item) && item->valuestring[0] == '\0') return TSR_OK;
  if (cJSON_IsNumber(item) && item->valuedouble == 0) return TSR_OK;
  char *text = cJSON_PrintUnformatted(item);
  tsr_status status = tsri_error(TSR_ERR_UNSUPPORTED, "tokenizer %s: model.%s %s is not supported",
                                 path, key, text ? text : "(set)");
  cJSON_free(text);
  return status;
}

static tsr_status check_model_type(const cJSON *model, const char *path) {
  if (!cJSON_IsObject(model))
    return tsri_error(TSR_ERR_IO, "tokenizer %s: model is missing or not an object", path);
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(model, "type");
  if (!cJSON_IsString(type))
    return tsri_error(TSR_ERR_IO, "tokenizer %s: model.type is missing or not a string", path);
  if (strcmp(type->valuestring, "BPE") != 0)
    return tsri_error(TSR_ERR_UNSUPPORTED,
                      "tokenizer %s: model.type \"%s\" is not supported (only BPE)", path,
                      type->valuestring);
  static const char *const unsupported[] = {"dropout", "unk_token", "continuing_subword_prefix",
                                            "end_of_word_suffix", "byte_fallback"};
  for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++) {
    tsr_status status = refuse_set(model, unsupported[i], path);
    if (status != TSR_OK) return status;
  }
  return TSR_OK;
}

tsr_status tsri_tok_load_model(tsr_tokenizer *t, const cJSON *root, const char *path) {
  const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
  tsr_status status = check_model_type(model, path);
  if (status != TSR_OK) return status;
  const cJSON *ignore = cJSON_GetObjectItemCaseSensitive(model, "ignore_merges");
  if (!absent(ignore) && !cJSON_IsBool(ignore))
    return tsri_error(TSR_ERR_IO, "tokenizer %s: model.ignore_merges is not true or false", path);
  t->ignore_merges = cJSON_IsTrue(ignore);
  const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
  const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
  t->id_limit = 4 * ((int64_t)cJSON_GetArraySize(vocab) + cJSON_GetArraySize(added)) + 1024;
  status = load_vocab(t, vocab, path);
  if (status == TSR_OK)
    status = load_merges(t, cJSON_GetObjectItemCaseSensitive(model, "merges"), path);
  return status;
}

/* ---- the file ------------------------------------------------------------------------------ */

static tsr_status read_text(const char *path, char **text, size_t *len) {
  *text = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return tsri_error(TSR_ERR_IO, "tokenizer %s: cannot open (%s)", path, strerror(errno));
  tsr_status status = TSR_OK;
  long n = -1;
  if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
  if (n < 0 || fseek(f, 0, SEEK_SET) != 0) {
    status = tsri_error(TSR_ERR_IO, "tokenizer %s: cannot read (%s)", path, strerror(errno));
  } else if (!(*text = malloc((size_t)n + 1))) {
    status = tsri_error(TSR_ERR_NOMEM, "tokenizer %s: no memory for %ld bytes", path, n);
  } else if (fread(*text, 1, (size_t)n, f) != (size_t)n) {
    status = tsri_error(TSR_ERR_IO, "tokenizer %s: cannot read %ld bytes", path, n);
  } else {
    (*text)[n] = '\0';
    *len = (size_t)n;
  }
  fclose(f);
  if (status != TSR_OK) {
    free(*text);
    *text = NULL;
  }
  return status;
}

/* Each byte's one-symbol token, for BPE's starting symbols and the whole-piece lookup. */
static void index_bytes(tsr_tokenizer *t) {
  for (unsigned b = 0; b < 256; b++) {
    char utf8[4];
    size_t n = tsri_utf8_put(tsri_tok_byte_symbol((uint8_t)b), utf8);
    memcpy(t->symbol_utf8[b], utf8, n);
    t->symbol_utf8[b][2] = (unsigned char)n;
    t->byte_id[b] = tsri_strmap_get(&t->vocab, utf8, n);
  }
}

tsr_status tsr_tokenizer_load(tsr_tokenizer **out, const char *path) {
  if (!out) return tsri_error(TSR_ERR_INVALID, "tokenizer load: out is NULL");
  *out = NULL;
  if (!path) return tsri_error(TSR_ERR_INVALID, "tokenizer load: path is NULL");
  char *text = NULL;
  size_t len = 0;
  cJSON *root = NULL;
  tsr_tokenizer *t = NULL;
  tsr_status status = read_text(path, &text, &len);
  if (status != TSR_OK) goto done;
  const char *end = NULL;
  root = cJSON_ParseWithLengthOpts(text, len, &end, false);
  if (!cJSON_IsObject(root)) {
    status = tsri_error(TSR_ERR_IO, "tokenizer %s: not a JSON object (%s near byte %zu)", path,
                        root ? "a JSON value that is not an object" : "malformed",
                        root || !end ? (size_t)0 : (size_t)(end - text));
    goto done;
  }
  if (!(t = calloc(1, sizeof *t))) {
    status = tsri_error(TSR_ERR_NOMEM, "tokenizer %s: no memory", path);
    goto done;
  }
  status = tsri_tok_load_model(t, root, path);
  if (status == TSR_OK) status = tsri_tok_load_config(t, root, path);
  if (status == TSR_OK) status = tsri_tok_load_added(t, root, path);
  if (status != TSR_OK) goto done;
  index_bytes(t);
  *out = t;
  t = NULL;
done:
  tsr_tokenizer_free(t);
  cJSON_Delete(root);
  free(text);
  return status;
}

void tsr_tokenizer_free(tsr_tokenizer *t) {
  if (!t) return;
  tsri_strmap_free(&t->vocab);
  tsri_pairmap_free(&t->merges);
  tsri_strmap_free(&t->added);
  free(t->cut);
  pcre2_code_free(t->split);
  free(t->decoded_bytes.bytes);
  free(t->decoded);
  free(t);
}
