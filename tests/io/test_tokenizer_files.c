/* tests/io/test_tokenizer_files.c — tokenizer.json files other than the golden one, written to a
 * temporary folder as glm_style.json with one thing changed. The variants the library can run
 * (GPT-2's lone ByteLevel regex, ByteLevel without a regex, ignore_merges false, added tokens that
 * overlap GLM's) give the library's ids (golden.json "variants"); every malformed file is
 * TSR_ERR_IO and every configuration this implementation does not do TSR_ERR_UNSUPPORTED, each
 * with a message naming the file and the key or value. */
#include <unistd.h>

#include "test_tokenizer_util.h"

static char tmp_dir[64];

static const char *tmp_path(void) {
  static char path[128];
  snprintf(path, sizeof path, "%s/tokenizer.json", tmp_dir);
  return path;
}

static void write_text(const char *text) {
  FILE *f = fopen(tmp_path(), "wb");
  if (!f) CHECK_FAIL_("cannot create %s", tmp_path());
  CHECK_EQ_U64(fwrite(text, 1, strlen(text), f), strlen(text));
  fclose(f);
}

static void write_json(const cJSON *root) {
  char *text = cJSON_PrintUnformatted(root);
  CHECK(text != NULL);
  write_text(text);
  cJSON_free(text);
}

static cJSON *glm_json(void) {
  char *text = tok_read_file(tok_data("glm_style.json"), NULL);
  cJSON *root = cJSON_Parse(text);
  CHECK(root != NULL);
  free(text);
  return root;
}

static cJSON *model_of(cJSON *root) {
  return cJSON_GetObjectItemCaseSensitive(root, "model");
}

/* ---- variants ------------------------------------------------------------------------------ */

static void apply_variant(cJSON *root, const cJSON *spec) {
  const cJSON *pre = cJSON_GetObjectItemCaseSensitive(spec, "pre_tokenizer");
  if (pre) CHECK(cJSON_ReplaceItemInObject(root, "pre_tokenizer", cJSON_Duplicate(pre, true)));
  const cJSON *ignore = cJSON_GetObjectItemCaseSensitive(spec, "ignore_merges");
  if (ignore)
    CHECK(cJSON_ReplaceItemInObject(model_of(root), "ignore_merges",
                                    cJSON_CreateBool(cJSON_IsTrue(ignore))));
  const cJSON *added = cJSON_GetObjectItemCaseSensitive(spec, "added");
  for (const cJSON *a = added ? added->child : NULL; a; a = a->next) {
    cJSON *token = cJSON_CreateObject();
    cJSON_AddNumberToObject(token, "id", tok_key(a, "id")->valuedouble);
    cJSON_AddStringToObject(token, "content", tok_key(a, "content")->valuestring);
    cJSON_AddBoolToObject(token, "special", true);
    cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(root, "added_tokens"), token);
  }
}

static void test_variants(const cJSON *golden) {
  const cJSON *texts = tok_key(golden, "variant_texts");
  for (const cJSON *spec = tok_key(golden, "variants")->child; spec; spec = spec->next) {
    cJSON *root = glm_json();
    apply_variant(root, spec);
    write_json(root);
    cJSON_Delete(root);
    tsr_tokenizer *tok = NULL;
    CHECK_OK(tsr_tokenizer_load(&tok, tmp_path()));
    const cJSON *text = texts->child;
    size_t k = 0;
    for (const cJSON *ids = tok_key(spec, "ids")->child; ids; ids = ids->next, k++) {
      size_t n;
      char *bytes = tok_unhex(text->valuestring, NULL);
      int32_t *want = tok_ids_of(ids, &n);
      char what[96];
      snprintf(what, sizeof what, "variant %s, text %zu", tok_key(spec, "name")->valuestring, k);
      tok_check_encode(tok, bytes, want, n, what);
      free(want);
      free(bytes);
      text = text->next;
    }
    CHECK_EQ_INT(k, cJSON_GetArraySize(texts));
    tsr_tokenizer_free(tok);
  }
  remove(tmp_path());
}

/* ---- malformed and unsupported ------------------------------------------------------------- */

/* Loads the temporary file: `status`, and a message naming the file and each needle. */
static void expect_failure(tsr_status status, const char *needle1, const char *needle2) {
  tsr_tokenizer *tok = (tsr_tokenizer *)1;
  CHECK_STATUS(tsr_tokenizer_load(&tok, tmp_path()), status);
  CHECK(tok == NULL);
  CHECK_MESSAGE(tmp_path());
  CHECK_MESSAGE(needle1);
  if (needle2) CHECK_MESSAGE(needle2);
  remove(tmp_path());
}

/* glm_style.json with `key` of `object` replaced by the JSON `value` (NULL: removed). */
static void expect_changed(cJSON *root, cJSON *object, const char *key, const char *value,
                           tsr_status status, const char *needle1, const char *needle2) {
  if (value) {
    cJSON *item = cJSON_Parse(value);
    CHECK(item != NULL);
    if (cJSON_GetObjectItemCaseSensitive(object, key))
      CHECK(cJSON_ReplaceItemInObjectCaseSensitive(object, key, item));
    else
      CHECK(cJSON_AddItemToObject(object, key, item));
  } else {
    cJSON_DeleteItemFromObjectCaseSensitive(object, key);
  }
  write_json(root);
  cJSON_Delete(root);
  expect_failure(status, needle1, needle2);
}

static cJSON *first_added(cJSON *root) {
  return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "added_tokens"), 0);
}

static cJSON *split_of(cJSON *root) {
  cJSON *pre = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer");
  return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(pre, "pretokenizers"), 0);
}

static void test_malformed(void) {
  write_text("{\"model\": {\"type\": \"BPE\", ");
  expect_failure(TSR_ERR_IO, "not a JSON object", "malformed");
  write_text("[1, 2]");
  expect_failure(TSR_ERR_IO, "not a JSON object", NULL);
  tsr_tokenizer *tok = NULL;
  CHECK_STATUS(tsr_tokenizer_load(&tok, tmp_path()), TSR_ERR_IO); /* no such file */
  CHECK_MESSAGE("cannot open");
  CHECK_MESSAGE(tmp_path());
  cJSON *r = glm_json();
  expect_changed(r, r, "model", NULL, TSR_ERR_IO, "model is missing", NULL);
  r = glm_json();
  expect_changed(r, model_of(r), "type", NULL, TSR_ERR_IO, "model.type is missing", NULL);
  r = glm_json();
  expect_changed(r, model_of(r), "vocab", "[1, 2]", TSR_ERR_IO, "model.vocab", "not an object");
  r = glm_json();
  expect_changed(r, model_of(r), "merges", "{}", TSR_ERR_IO, "model.merges", "not an array");
  r = glm_json();
  expect_changed(r, model_of(r), "merges", "[[\"Ġ\", \"Ġ\"], [\"Ġ\", \"zz\"]]", TSR_ERR_IO,
                 "model.merges[1]", "names \"zz\", which model.vocab lacks");
  r = glm_json();
  expect_changed(r, model_of(r), "merges", "[\"Ġ Ġ\", \"q z\"]", TSR_ERR_IO, "model.merges[1]",
                 "names \"qz\", which model.vocab lacks"); /* the merged token is missing */
  r = glm_json();
  expect_changed(r, model_of(r), "merges", "[\"Ġ Ġ\", \"Ġ  Ġ\"]", TSR_ERR_IO,
                 "model.merges[1] is neither", NULL);
  r = glm_json();
  expect_changed(r, model_of(r), "merges", "[[\"Ġ\", 7]]", TSR_ERR_IO, "model.merges[0] is neither",
                 NULL);
  r = glm_json();
  expect_changed(r, model_of(r), "ignore_merges", "\"yes\"", TSR_ERR_IO, "model.ignore_merges",
                 NULL);
  r = glm_json();
  expect_changed(r, cJSON_GetObjectItemCaseSensitive(model_of(r), "vocab"), "Ġ", "1.5", TSR_ERR_IO,
                 "model.vocab[\"Ġ\"] is not an id", NULL);
  r = glm_json();
  expect_changed(r, cJSON_GetObjectItemCaseSensitive(model_of(r), "vocab"), "Ġ", "64", TSR_ERR_IO,
                 "model.vocab gives id 64 to two tokens", NULL);
  r = glm_json();
  expect_changed(r, r, "added_tokens", "{}", TSR_ERR_IO, "added_tokens is not an array", NULL);
  r = glm_json();
  expect_changed(r, first_added(r), "id", NULL, TSR_ERR_IO, "added_tokens[0] \"<|endoftext|>\"",
                 "has no id");
  r = glm_json();
  expect_changed(r, first_added(r), "content", NULL, TSR_ERR_IO, "added_tokens[0] has no content",
                 NULL);
  r = glm_json();
  expect_changed(r, first_added(r), "id", "64", TSR_ERR_IO,
                 "added_tokens[0] \"<|endoftext|>\" has "
                 "id 64",
                 "library gives it 2191");
  r = glm_json();
  expect_changed(r, first_added(r), "id", "9999", TSR_ERR_IO, "has id 9999", NULL);
}

/* Two keys that cJSON keeps both of: the raw text is written by hand. */
static void test_duplicate_vocab_key(void) {
  write_text(
      "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"a\": 2}, \"merges\": "
      "[]}, \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false}, "
      "\"decoder\": {\"type\": \"ByteLevel\"}}");
  expect_failure(TSR_ERR_IO, "model.vocab has \"a\" twice", "ids 0 and 2");
}

static void test_unsupported(void) {
  cJSON *r = glm_json();
  expect_changed(r, model_of(r), "type", "\"WordPiece\"", TSR_ERR_UNSUPPORTED,
                 "model.type \"WordPiece\" is not supported", NULL);
  r = glm_json();
  expect_changed(r, model_of(r), "type", "\"Unigram\"", TSR_ERR_UNSUPPORTED, "\"Unigram\"", NULL);
  r = glm_json();
  expect_changed(r, model_of(r), "byte_fallback", "true", TSR_ERR_UNSUPPORTED,
                 "model.byte_fallback true", NULL);
  r = glm_json();
  expect_changed(r, model_of(r), "unk_token", "\"<unk>\"", TSR_ERR_UNSUPPORTED,
                 "model.unk_token \"<unk>\"", NULL);
  r = glm_json();
  expect_changed(r, model_of(r), "dropout", "0.1", TSR_ERR_UNSUPPORTED, "model.dropout 0.1", NULL);
  r = glm_json();
  expect_changed(r, model_of(r), "continuing_subword_prefix", "\"##\"", TSR_ERR_UNSUPPORTED,
                 "model.continuing_subword_prefix \"##\"", NULL);
  r = glm_json();
  expect_changed(r, r, "normalizer", "{\"type\": \"NFC\"}", TSR_ERR_UNSUPPORTED, "normalizer",
                 "\"NFC\"");
  r = glm_json();
  expect_changed(r, r, "truncation", "{\"max_length\": 8}", TSR_ERR_UNSUPPORTED, "truncation",
                 NULL);
  r = glm_json();
  expect_changed(r, r, "pre_tokenizer", "{\"type\": \"Metaspace\"}", TSR_ERR_UNSUPPORTED,
                 "pre_tokenizer", "\"Metaspace\"");
  r = glm_json();
  expect_changed(r, r, "pre_tokenizer", "null", TSR_ERR_UNSUPPORTED, "pre_tokenizer null", NULL);
  r = glm_json();
  expect_changed(r, r, "pre_tokenizer", "{\"type\": \"ByteLevel\", \"add_prefix_space\": true}",
                 TSR_ERR_UNSUPPORTED, "pre_tokenizer.add_prefix_space true", NULL);
  r = glm_json();
  expect_changed(r, split_of(r), "behavior", "\"Removed\"", TSR_ERR_UNSUPPORTED,
                 "Split behavior \"Removed\"", NULL);
  r = glm_json();
  expect_changed(r, split_of(r), "invert", "true", TSR_ERR_UNSUPPORTED, "invert true", NULL);
  r = glm_json();
  expect_changed(r, split_of(r), "pattern", "{\"String\": \" \"}", TSR_ERR_UNSUPPORTED,
                 "Split pattern {\"String\":\" \"}", NULL);
  r = glm_json();
  expect_changed(r, split_of(r), "pattern", "{\"Regex\": \"a(?<\"}", TSR_ERR_UNSUPPORTED,
                 "does not compile with PCRE2", NULL);
  r = glm_json();
  expect_changed(r, split_of(r), "pattern", "{\"Regex\": \"[\\\\S]+\"}", TSR_ERR_UNSUPPORTED,
                 "\\S inside a class", NULL);
  r = glm_json();
  expect_changed(r, r, "decoder", "null", TSR_ERR_UNSUPPORTED, "decoder null", NULL);
  r = glm_json();
  expect_changed(r, r, "decoder", "{\"type\": \"WordPiece\"}", TSR_ERR_UNSUPPORTED, "decoder",
                 "\"WordPiece\"");
  r = glm_json();
  expect_changed(r, r, "post_processor", "{\"type\": \"TemplateProcessing\"}", TSR_ERR_UNSUPPORTED,
                 "post_processor", "TemplateProcessing");
}

/* Added-token flags other than GLM's, and ids too sparse for the dense decode table. */
static void test_unsupported_tokens(void) {
  cJSON *r;
  static const char *const flags[] = {"single_word", "lstrip", "rstrip", "normalized"};
  for (size_t i = 0; i < 4; i++) {
    r = glm_json();
    char needle[64];
    snprintf(needle, sizeof needle, "\"<|endoftext|>\": %s true", flags[i]);
    expect_changed(r, first_added(r), flags[i], "true", TSR_ERR_UNSUPPORTED, needle, NULL);
  }
  r = glm_json();
  expect_changed(r, cJSON_GetObjectItemCaseSensitive(model_of(r), "vocab"), "Ġ", "1000000000",
                 TSR_ERR_UNSUPPORTED, "id 1000000000", "sparse ids");
}

int main(void) {
  snprintf(tmp_dir, sizeof tmp_dir, "/tmp/tsr_test_tokenizer_XXXXXX");
  if (!mkdtemp(tmp_dir)) CHECK_FAIL_("mkdtemp failed");
  cJSON *golden = tok_golden();
  test_variants(golden);
  cJSON_Delete(golden);
  test_malformed();
  test_duplicate_vocab_key();
  test_unsupported();
  test_unsupported_tokens();
  CHECK_EQ_INT(rmdir(tmp_dir), 0);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  printf("test_tokenizer_files: ok\n");
  return 0;
}
