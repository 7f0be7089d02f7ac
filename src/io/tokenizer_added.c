/* io/tokenizer_added.c — tokenizer.json's added_tokens: their ids checked against the ones the
 * `tokenizers` library assigns (the vocabulary's id for a string it has, else the next id
 * after the vocabulary, in file order; the library ignores the file's ids), their flags (the
 * defaults GLM uses; others refused naming the flag), and the table encode uses to cut them out
 * of text leftmost-longest. Not the cutting itself: tokenizer_encode.c. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/status.h"
#include "io/tokenizer.h"

/* single_word, lstrip, rstrip and normalized change where a token matches; GLM's are all false
 * (normalized true would only reorder matching here, as there is no normalizer, but it is
 * refused rather than approximated). */
static tsr_status check_flags(const cJSON *token, size_t index, const char *content,
                              const char *path) {
  static const char *const flags[] = {"single_word", "lstrip", "rstrip", "normalized", "special"};
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
    const cJSON *flag = cJSON_GetObjectItemCaseSensitive(token, flags[i]);
    if (!flag) continue;
    if (!cJSON_IsBool(flag))
      return tsri_error(TSR_ERR_IO, "tokenizer %s: added_tokens[%zu].%s is not true or false", path,
                        index, flags[i]);
    if (cJSON_IsTrue(flag) && strcmp(flags[i], "special") != 0)
      return tsri_error(TSR_ERR_UNSUPPORTED,
                        "tokenizer %s: added_tokens[%zu] \"%s\": %s true is not supported", path,
                        index, content, flags[i]);
  }
  return TSR_OK;
}

/* The id the library gives `content`: an added token's id, else the vocabulary's, else the
 * next new id. */
static int32_t library_id(const tsr_tokenizer *t, const char *content, int32_t *next_id) {
  size_t len = strlen(content);
  int32_t id = tsri_strmap_get(&t->added, content, len);
  if (id < 0) id = tsri_strmap_get(&t->vocab, content, len);
  return id >= 0 ? id : (*next_id)++;
}

static tsr_status add_one(tsr_tokenizer *t, const cJSON *token, size_t index, int32_t *next_id,
                          const char *path) {
  const cJSON *content = cJSON_GetObjectItemCaseSensitive(token, "content");
  const cJSON *id_item = cJSON_GetObjectItemCaseSensitive(token, "id");
  int32_t id;
  if (!cJSON_IsObject(token) || !cJSON_IsString(content) || !content->valuestring[0])
    return tsri_error(TSR_ERR_IO, "tokenizer %s: added_tokens[%zu] has no content string", path,
                      index);
  const char *text = content->valuestring;
  if (!cJSON_IsNumber(id_item) || id_item->valuedouble < 0 || id_item->valuedouble > INT32_MAX ||
      id_item->valuedouble != (double)(int32_t)id_item->valuedouble)
    return tsri_error(TSR_ERR_IO, "tokenizer %s: added_tokens[%zu] \"%s\" has no id 0..%d", path,
                      index, text, INT32_MAX);
  id = (int32_t)id_item->valuedouble;
  tsr_status status = check_flags(token, index, text, path);
  if (status != TSR_OK) return status;
  bool repeated = tsri_strmap_get(&t->added, text, strlen(text)) >= 0;
  bool in_vocab = tsri_strmap_get(&t->vocab, text, strlen(text)) >= 0;
  int32_t expected = library_id(t, text, next_id);
  if (id != expected)
    return tsri_error(TSR_ERR_IO,
                      "tokenizer %s: added_tokens[%zu] \"%s\" has id %d, but the tokenizers "
                      "library gives it %d (the vocabulary's id, or the next after it in order)",
                      path, index, text, (int)id, (int)expected);
  if (repeated) return TSR_OK;
  if (!in_vocab && tsri_tok_decoded_has(t, id))
    return tsri_error(TSR_ERR_IO,
                      "tokenizer %s: added_tokens[%zu] \"%s\" takes id %d, which model.vocab "
                      "gives another token",
                      path, index, text, (int)id);
  if (id > t->id_limit)
    return tsri_error(TSR_ERR_UNSUPPORTED,
                      "tokenizer %s: added_tokens[%zu] has id %d, beyond %lld: sparse ids are "
                      "not supported",
                      path, index, (int)id, (long long)t->id_limit);
  if (tsri_strmap_insert(&t->added, text, strlen(text), id, NULL) < 0 ||
      (!in_vocab && !tsri_tok_decoded_put(t, id, text, strlen(text))))
    return tsri_error(TSR_ERR_NOMEM, "tokenizer %s: no memory for added_tokens", path);
  return TSR_OK;
}

static int by_first_byte_longest(const void *a, const void *b) {
  const tsri_added_token *x = a, *y = b;
  if (x->first != y->first) return x->first < y->first ? -1 : 1;
  return x->len != y->len ? (x->len > y->len ? -1 : 1) : 0;
}

/* Every added string, whether new or also in the vocabulary, is cut out of text. */
static tsr_status build_cut_table(tsr_tokenizer *t, const char *path) {
  t->cut_count = t->added.count;
  t->cut = malloc((t->cut_count ? t->cut_count : 1) * sizeof *t->cut);
  if (!t->cut) return tsri_error(TSR_ERR_NOMEM, "tokenizer %s: no memory for added_tokens", path);
  for (size_t e = 0; e < t->cut_count; e++) {
    const tsri_strmap_entry *entry = &t->added.entries[e];
    t->cut[e] = (tsri_added_token){entry->offset, entry->len, entry->value,
                                   (unsigned char)tsri_strmap_key(&t->added, e)[0]};
  }
  qsort(t->cut, t->cut_count, sizeof *t->cut, by_first_byte_longest);
  memset(t->cut_start, 0, sizeof t->cut_start);
  for (size_t k = 0; k < t->cut_count; k++)
    t->cut_start[t->cut[k].first + 1]++;
  for (int b = 0; b < 256; b++)
    t->cut_start[b + 1] += t->cut_start[b];
  return TSR_OK;
}

tsr_status tsri_tok_load_added(tsr_tokenizer *t, const cJSON *root, const char *path) {
  const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
  if (added && !cJSON_IsNull(added) && !cJSON_IsArray(added))
    return tsri_error(TSR_ERR_IO, "tokenizer %s: added_tokens is not an array", path);
  if (!tsri_strmap_init(&t->added, (size_t)cJSON_GetArraySize(added)))
    return tsri_error(TSR_ERR_NOMEM, "tokenizer %s: no memory for added_tokens", path);
  int32_t next_id = (int32_t)t->vocab.count;
  size_t index = 0;
  for (const cJSON *token = cJSON_IsArray(added) ? added->child : NULL; token;
       token = token->next, index++) {
    tsr_status status = add_one(t, token, index, &next_id, path);
    if (status != TSR_OK) return status;
  }
  return build_cut_table(t, path);
}
