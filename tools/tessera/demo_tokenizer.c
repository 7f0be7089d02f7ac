/* tools/tessera/demo_tokenizer.c — the demo model's tokenizer: a small byte-level BPE trained here
 * on a built-in English paragraph (pairs merged by frequency, the most frequent first), written as
 * a tokenizer.json in GLM's form (the cl100k Split regex, ByteLevel, `ignore_merges`, GLM's
 * special tokens after the learned vocabulary). Good enough to turn text into ids and back; not a
 * tokenizer anyone should train a model with. */
#include <stdlib.h>
#include <string.h>

#include "demo_model.h"

static const char demo_corpus[] =
    "The quick brown fox jumps over the lazy dog. A tessera is one small tile of a mosaic, and "
    "a model is many small tiles of arithmetic put together. The runner reads the weights, the "
    "tokens go in, and the logits come out. Then the next token is chosen, and the story goes "
    "on, one token at a time, until the end of the text or the end of the budget. This is the "
    "demo model: its weights are random, so what it writes means nothing, but every part of the "
    "path from the prompt to the text is real, and the speed it reports is the speed of the "
    "machine that runs it. Hello, world! What is the capital of France? Paris is the capital of "
    "France, and the river there is the Seine.";

static const char *const demo_specials[] = {
    "<|endoftext|>", "[MASK]",     "[gMASK]",  "[sMASK]",       "<sop>",
    "<eop>",         "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>",
    "<think>",       "</think>",   "/nothink"};
#define DEMO_SPECIAL_COUNT (sizeof demo_specials / sizeof demo_specials[0])

/* GPT-2's byte-to-unicode alphabet: printable bytes stand for themselves, the others for code
 * points 256 and up, in byte order. Writes the UTF-8 of byte b's symbol into out (3 bytes max). */
static size_t byte_symbol(unsigned b, char *out) {
  bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  unsigned cp = b;
  if (!printable) {
    unsigned rank = 0;
    for (unsigned i = 0; i < b; i++)
      rank += !((i >= 33 && i <= 126) || (i >= 161 && i <= 172) || (i >= 174 && i <= 255));
    cp = 256 + rank;
  }
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  out[0] = (char)(0xC0 | (cp >> 6));
  out[1] = (char)(0x80 | (cp & 0x3F));
  return 2;
}

/* Symbols are token ids; words are runs of them split at spaces (a space starts a word). */
typedef struct {
  char **strings; /* token id -> its string in the byte alphabet */
  int count;
  int merges[DEMO_MERGES][2];
  int n_merges;
} demo_vocab;

static int most_frequent_pair(int **words, const int *lengths, int n_words, int *a, int *b) {
  int best = 0;
  for (int w = 0; w < n_words; w++)
    for (int i = 0; i + 1 < lengths[w]; i++) {
      int count = 0;
      for (int v = 0; v < n_words; v++)
        for (int j = 0; j + 1 < lengths[v]; j++)
          count += words[v][j] == words[w][i] && words[v][j + 1] == words[w][i + 1];
      if (count > best) best = count, *a = words[w][i], *b = words[w][i + 1];
    }
  return best;
}

static void apply_merge(int **words, int *lengths, int n_words, int a, int b, int merged) {
  for (int w = 0; w < n_words; w++) {
    int out = 0;
    for (int i = 0; i < lengths[w]; i++) {
      if (i + 1 < lengths[w] && words[w][i] == a && words[w][i + 1] == b) {
        words[w][out++] = merged;
        i++;
      } else {
        words[w][out++] = words[w][i];
      }
    }
    lengths[w] = out;
  }
}

static bool train(demo_vocab *v) {
  size_t len = strlen(demo_corpus);
  int **words = calloc(len, sizeof *words), *lengths = calloc(len, sizeof *lengths), n = 0;
  bool ok = words && lengths;
  for (size_t i = 0; ok && i < len; n++) { /* a word: an optional space, then non-spaces */
    words[n] = malloc(len * sizeof **words);
    ok = words[n] != NULL;
    size_t j = i + (demo_corpus[i] == ' ');
    while (j < len && demo_corpus[j] != ' ')
      j++;
    for (size_t k = i; ok && k < j; k++)
      words[n][lengths[n]++] = (unsigned char)demo_corpus[k];
    i = j;
  }
  for (v->n_merges = 0; ok && v->n_merges < DEMO_MERGES; v->n_merges++) {
    int a = 0, b = 0;
    if (most_frequent_pair(words, lengths, n, &a, &b) < 2) break;
    size_t la = strlen(v->strings[a]), lb = strlen(v->strings[b]);
    char *joined = malloc(la + lb + 1);
    if (!(ok = joined != NULL)) break;
    memcpy(joined, v->strings[a], la);
    memcpy(joined + la, v->strings[b], lb + 1);
    v->strings[v->count] = joined;
    v->merges[v->n_merges][0] = a, v->merges[v->n_merges][1] = b;
    apply_merge(words, lengths, n, a, b, v->count++);
  }
  for (int w = 0; words && w < n; w++)
    free(words[w]);
  free(words);
  free(lengths);
  return ok;
}

static const char glm_split_pattern[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+"
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static cJSON *pre_tokenizer_json(void) {
  cJSON *seq = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(seq, "pretokenizers");
  cJSON_AddStringToObject(seq, "type", "Sequence");
  cJSON *split = cJSON_CreateObject(), *pattern = cJSON_AddObjectToObject(split, "pattern");
  cJSON_AddStringToObject(split, "type", "Split");
  cJSON_AddStringToObject(pattern, "Regex", glm_split_pattern);
  cJSON_AddStringToObject(split, "behavior", "Isolated");
  cJSON_AddBoolToObject(split, "invert", false);
  cJSON *bytes = cJSON_CreateObject();
  cJSON_AddStringToObject(bytes, "type", "ByteLevel");
  cJSON_AddBoolToObject(bytes, "add_prefix_space", false);
  cJSON_AddBoolToObject(bytes, "trim_offsets", true);
  cJSON_AddBoolToObject(bytes, "use_regex", false);
  cJSON_AddItemToArray(list, split);
  cJSON_AddItemToArray(list, bytes);
  return seq;
}

static cJSON *byte_level(void) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "type", "ByteLevel");
  cJSON_AddBoolToObject(o, "add_prefix_space", false);
  cJSON_AddBoolToObject(o, "trim_offsets", true);
  cJSON_AddBoolToObject(o, "use_regex", false);
  return o;
}

static cJSON *model_json(const demo_vocab *v) {
  cJSON *model = cJSON_CreateObject(), *vocab = cJSON_AddObjectToObject(model, "vocab");
  cJSON_AddStringToObject(model, "type", "BPE");
  cJSON_AddNullToObject(model, "dropout");
  cJSON_AddNullToObject(model, "unk_token");
  cJSON_AddNullToObject(model, "continuing_subword_prefix");
  cJSON_AddNullToObject(model, "end_of_word_suffix");
  cJSON_AddBoolToObject(model, "fuse_unk", false);
  cJSON_AddBoolToObject(model, "byte_fallback", false);
  cJSON_AddBoolToObject(model, "ignore_merges", true);
  for (int i = 0; i < v->count; i++)
    cJSON_AddNumberToObject(vocab, v->strings[i], i);
  cJSON *merges = cJSON_AddArrayToObject(model, "merges");
  for (int i = 0; i < v->n_merges; i++) {
    const char *pair[2] = {v->strings[v->merges[i][0]], v->strings[v->merges[i][1]]};
    cJSON_AddItemToArray(merges, cJSON_CreateStringArray(pair, 2));
  }
  return model;
}

static cJSON *added_tokens_json(int first_id) {
  cJSON *list = cJSON_CreateArray();
  for (size_t i = 0; i < DEMO_SPECIAL_COUNT; i++) {
    cJSON *t = cJSON_CreateObject();
    cJSON_AddNumberToObject(t, "id", first_id + (int)i);
    cJSON_AddStringToObject(t, "content", demo_specials[i]);
    cJSON_AddBoolToObject(t, "single_word", false);
    cJSON_AddBoolToObject(t, "lstrip", false);
    cJSON_AddBoolToObject(t, "rstrip", false);
    cJSON_AddBoolToObject(t, "normalized", false);
    cJSON_AddBoolToObject(t, "special", true);
    cJSON_AddItemToArray(list, t);
  }
  return list;
}

static tsr_status write_json(cJSON *root, const char *path) {
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text) return tsr_error_set(TSR_ERR_NOMEM, "demo-model: cannot render %s", path);
  tsr_status st = demo_write_file(path, text, strlen(text));
  cJSON_free(text);
  return st;
}

tsr_status demo_write_tokenizer(const char *dir, demo_token_ids *ids) {
  demo_vocab v = {.count = 0};
  v.strings = calloc(256 + DEMO_MERGES, sizeof *v.strings);
  tsr_status st = v.strings ? TSR_OK : tsr_error_set(TSR_ERR_NOMEM, "demo-model: out of memory");
  for (unsigned b = 0; st == TSR_OK && b < 256; b++) {
    char symbol[4] = {0};
    byte_symbol(b, symbol);
    if (!(v.strings[v.count++] = strdup(symbol)))
      st = tsr_error_set(TSR_ERR_NOMEM, "demo-model: out of memory");
  }
  if (st == TSR_OK && !train(&v)) st = tsr_error_set(TSR_ERR_NOMEM, "demo-model: out of memory");
  if (st == TSR_OK) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "version", "1.0");
    cJSON_AddNullToObject(root, "truncation");
    cJSON_AddNullToObject(root, "padding");
    cJSON_AddItemToObject(root, "added_tokens", added_tokens_json(v.count));
    cJSON_AddNullToObject(root, "normalizer");
    cJSON_AddItemToObject(root, "pre_tokenizer", pre_tokenizer_json());
    cJSON_AddItemToObject(root, "post_processor", byte_level());
    cJSON_AddItemToObject(root, "decoder", byte_level());
    cJSON_AddItemToObject(root, "model", model_json(&v));
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    st = write_json(root, path);
  }
  ids->first_special = v.count;
  ids->end_of_text = v.count;     /* <|endoftext|> */
  ids->user = v.count + 7;        /* <|user|> */
  ids->observation = v.count + 9; /* <|observation|> */
  ids->vocab = v.count + (int)DEMO_SPECIAL_COUNT;
  for (int i = 0; v.strings && i < v.count; i++)
    free(v.strings[i]);
  free(v.strings);
  return st;
}
