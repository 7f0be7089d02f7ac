/* io/tokenizer_config.c — the parts of tokenizer.json around the model: normalizer (none),
 * pre_tokenizer (GLM's Sequence of a Split regex and a ByteLevel without its regex, or a lone
 * ByteLevel with or without GPT-2's regex), decoder (ByteLevel), post_processor (ByteLevel or
 * none), truncation and padding (none). Anything else is TSR_ERR_UNSUPPORTED naming the key
 * and its value. Not the model: tokenizer_load.c. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/status.h"
#include "io/tokenizer.h"

/* The pattern a ByteLevel pre-tokenizer with use_regex true splits by (GPT-2's). */
static const char gpt2_pattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static tsr_status unsupported(const cJSON *value, const char *key, const char *path) {
  char *text = cJSON_PrintUnformatted(value);
  tsr_status status = tsri_error(TSR_ERR_UNSUPPORTED, "tokenizer %s: %s %s is not supported", path,
                                 key, text ? text : "(value)");
  cJSON_free(text);
  return status;
}

/* The component's "type" string, or NULL. */
static const char *type_of(const cJSON *component) {
  const cJSON *type = cJSON_GetObjectItemCaseSensitive(component, "type");
  return cJSON_IsString(type) ? type->valuestring : NULL;
}

static bool is_type(const cJSON *component, const char *type) {
  const char *got = type_of(component);
  return got && strcmp(got, type) == 0;
}

/* A boolean field that must hold `want` (absent counts as the library's default `dflt`). */
static tsr_status want_bool(const cJSON *component, const char *field, bool dflt, bool want,
                            const char *key, const char *path) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(component, field);
  bool value = item ? cJSON_IsTrue(item) : dflt;
  if (item && !cJSON_IsBool(item))
    return tsri_error(TSR_ERR_IO, "tokenizer %s: %s.%s is not true or false", path, key, field);
  if (value == want) return TSR_OK;
  return tsri_error(TSR_ERR_UNSUPPORTED, "tokenizer %s: %s.%s %s is not supported", path, key,
                    field, value ? "true" : "false");
}

static tsr_status load_split(tsr_tokenizer *t, const cJSON *split, const char *path) {
  const char *key = "pre_tokenizer.pretokenizers[0]";
  const cJSON *pattern = cJSON_GetObjectItemCaseSensitive(split, "pattern");
  const cJSON *regex = cJSON_GetObjectItemCaseSensitive(pattern, "Regex");
  const cJSON *behavior = cJSON_GetObjectItemCaseSensitive(split, "behavior");
  if (!cJSON_IsObject(pattern) || !cJSON_IsString(behavior))
    return tsri_error(TSR_ERR_IO, "tokenizer %s: %s (Split) lacks pattern or behavior", path, key);
  if (!cJSON_IsString(regex)) return unsupported(pattern, "pre_tokenizer Split pattern", path);
  if (strcmp(behavior->valuestring, "Isolated") != 0)
    return unsupported(behavior, "pre_tokenizer Split behavior", path);
  tsr_status status = want_bool(split, "invert", false, false, key, path);
  if (status != TSR_OK) return status;
  return tsri_tok_regex_compile(&t->split, regex->valuestring, path,
                                "the pre_tokenizer's Split regex");
}

/* ByteLevel as a pre-tokenizer: no prefix space; its own GPT-2 regex only where allowed. */
static tsr_status check_byte_level(const cJSON *byte_level, bool regex_allowed, bool *use_regex,
                                   const char *key, const char *path) {
  tsr_status status = want_bool(byte_level, "add_prefix_space", true, false, key, path);
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(byte_level, "use_regex");
  *use_regex = !item || cJSON_IsTrue(item);
  if (status == TSR_OK && !regex_allowed)
    status = want_bool(byte_level, "use_regex", true, false, key, path);
  return status;
}

static tsr_status load_pre_tokenizer(tsr_tokenizer *t, const cJSON *pre, const char *path) {
  bool use_regex;
  if (is_type(pre, "ByteLevel")) {
    tsr_status status = check_byte_level(pre, true, &use_regex, "pre_tokenizer", path);
    if (status != TSR_OK || !use_regex) return status;
    return tsri_tok_regex_compile(&t->split, gpt2_pattern, path, "GPT-2's ByteLevel regex");
  }
  const cJSON *list = cJSON_GetObjectItemCaseSensitive(pre, "pretokenizers");
  if (!is_type(pre, "Sequence") || !cJSON_IsArray(list) || cJSON_GetArraySize(list) != 2 ||
      !is_type(cJSON_GetArrayItem(list, 0), "Split") ||
      !is_type(cJSON_GetArrayItem(list, 1), "ByteLevel"))
    return pre ? unsupported(pre, "pre_tokenizer", path)
               : tsri_error(TSR_ERR_UNSUPPORTED,
                            "tokenizer %s: pre_tokenizer null is not "
                            "supported (byte-level BPE needs ByteLevel)",
                            path);
  tsr_status status = check_byte_level(cJSON_GetArrayItem(list, 1), false, &use_regex,
                                       "pre_tokenizer.pretokenizers[1]", path);
  if (status != TSR_OK) return status;
  return load_split(t, cJSON_GetArrayItem(list, 0), path);
}

/* A top-level key that must be null or absent. */
static tsr_status want_null(const cJSON *root, const char *key, const char *path) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, key);
  return !item || cJSON_IsNull(item) ? TSR_OK : unsupported(item, key, path);
}

tsr_status tsri_tok_load_config(tsr_tokenizer *t, const cJSON *root, const char *path) {
  static const char *const nulls[] = {"normalizer", "truncation", "padding"};
  for (size_t i = 0; i < sizeof nulls / sizeof nulls[0]; i++) {
    tsr_status status = want_null(root, nulls[i], path);
    if (status != TSR_OK) return status;
  }
  const cJSON *decoder = cJSON_GetObjectItemCaseSensitive(root, "decoder");
  if (!is_type(decoder, "ByteLevel"))
    return decoder && !cJSON_IsNull(decoder)
               ? unsupported(decoder, "decoder", path)
               : tsri_error(TSR_ERR_UNSUPPORTED,
                            "tokenizer %s: decoder null is not supported (only ByteLevel)", path);
  const cJSON *post = cJSON_GetObjectItemCaseSensitive(root, "post_processor");
  if (post && !cJSON_IsNull(post) && !is_type(post, "ByteLevel"))
    return unsupported(post, "post_processor", path);
  const cJSON *pre = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer");
  return load_pre_tokenizer(t, cJSON_IsNull(pre) ? NULL : pre, path);
}
