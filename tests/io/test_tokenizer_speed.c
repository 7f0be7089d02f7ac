/* tests/io/test_tokenizer_speed.c — load and encode at GLM's real size, printed, not asserted: a
 * synthetic tokenizer.json with glm_style.json's pre-tokenizer and added tokens but 150,792
 * learned tokens (the 256 bytes, every byte pair, then 85,000 byte triples) and 150,536 merges.
 * Encodes ~1 MiB of the golden corpus, a 1 MiB whitespace run and a 1 MiB run of one letter
 * (one pre-token of a million symbols), and checks that decoding gives the text back. */
#include <unistd.h>

#include "test_tokenizer_util.h"

#define TRIPLES 85000

/* GPT-2's byte-level symbol of a byte, in UTF-8. */
static void symbol(unsigned byte, char out[3]) {
  bool printable = (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE;
  unsigned cp = byte, rank = 0;
  for (unsigned b = 0; b < byte && !printable; b++)
    rank += !((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE);
  if (!printable) cp = 256 + rank;
  memset(out, 0, 3);
  if (cp < 0x80) {
    out[0] = (char)cp;
  } else {
    out[0] = (char)(0xC0 | cp >> 6);
    out[1] = (char)(0x80 | (cp & 0x3F));
  }
}

static void add_merge(cJSON *merges, const char *left, const char *right) {
  cJSON *pair = cJSON_CreateArray();
  cJSON_AddItemToArray(pair, cJSON_CreateString(left));
  cJSON_AddItemToArray(pair, cJSON_CreateString(right));
  cJSON_AddItemToArray(merges, pair);
}

/* vocab and merges of the synthetic model; returns the vocabulary size. */
static int build_model(cJSON *vocab, cJSON *merges) {
  char sym[256][3];
  for (unsigned b = 0; b < 256; b++)
    symbol(b, sym[b]);
  int id = 0;
  for (unsigned b = 0; b < 256; b++)
    cJSON_AddNumberToObject(vocab, sym[b], id++);
  char token[16], left[8];
  for (unsigned pair = 0; pair < 65536; pair++) {
    snprintf(token, sizeof token, "%s%s", sym[pair >> 8], sym[pair & 255]);
    cJSON_AddNumberToObject(vocab, token, id++);
    add_merge(merges, sym[pair >> 8], sym[pair & 255]);
  }
  for (unsigned k = 0; k < TRIPLES; k++) {
    unsigned pair = k >> 8, last = k & 255;
    snprintf(left, sizeof left, "%s%s", sym[pair >> 8], sym[pair & 255]);
    snprintf(token, sizeof token, "%s%s", left, sym[last]);
    cJSON_AddNumberToObject(vocab, token, id++);
    add_merge(merges, left, sym[last]);
  }
  return id;
}

static void write_synthetic(const char *path) {
  char *text = tok_read_file(tok_data("glm_style.json"), NULL);
  cJSON *root = cJSON_Parse(text);
  free(text);
  CHECK(root != NULL);
  cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
  cJSON *vocab = cJSON_CreateObject(), *merges = cJSON_CreateArray();
  int size = build_model(vocab, merges);
  CHECK(cJSON_ReplaceItemInObject(model, "vocab", vocab));
  CHECK(cJSON_ReplaceItemInObject(model, "merges", merges));
  for (cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "added_tokens")->child; a; a = a->next)
    cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(a, "id"), size++);
  text = cJSON_PrintUnformatted(root);
  CHECK(text != NULL);
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  CHECK_EQ_U64(fwrite(text, 1, strlen(text), f), strlen(text));
  fclose(f);
  printf("  synthetic tokenizer.json: %d ids, %.1f MiB\n", size, (double)strlen(text) / 1048576.0);
  cJSON_free(text);
  cJSON_Delete(root);
}

/* Encodes, prints the rate, and decodes back to the text. */
static void time_encode(const tsr_tokenizer *tok, const char *text, const char *what) {
  int32_t *ids = NULL;
  size_t n = 0, len = strlen(text);
  double start = tok_seconds();
  CHECK_OK(tsr_tokenizer_encode(tok, text, &ids, &n));
  double seconds = tok_seconds() - start;
  printf("  encode %s: %.2f MiB -> %zu ids in %.3f s (%.1f MiB/s)\n", what, (double)len / 1048576.0,
         n, seconds, (double)len / 1048576.0 / seconds);
  char *back = NULL;
  CHECK_OK(tsr_tokenizer_decode(tok, ids, n, &back));
  CHECK(strcmp(back, text) == 0);
  free(back);
  free(ids);
}

static char *corpus_text(size_t target) {
  cJSON *golden = tok_golden();
  char *out = malloc(target + 4096);
  CHECK(out != NULL);
  size_t len = 0;
  while (len < target)
    for (const cJSON *c = tok_key(golden, "encode")->child; c && len < target; c = c->next) {
      size_t n;
      char *text = tok_unhex(tok_key(c, "text")->valuestring, &n);
      if (len + n + 1 < target + 4096) {
        memcpy(out + len, text, n);
        len += n;
        out[len++] = '\n';
      }
      free(text);
    }
  out[len] = '\0';
  cJSON_Delete(golden);
  return out;
}

int main(void) {
  char dir[64] = "/tmp/tsr_test_tokenizer_speed_XXXXXX", path[128];
  if (!mkdtemp(dir)) CHECK_FAIL_("mkdtemp failed");
  snprintf(path, sizeof path, "%s/tokenizer.json", dir);
  write_synthetic(path);
  tsr_tokenizer *tok = NULL;
  double start = tok_seconds();
  CHECK_OK(tsr_tokenizer_load(&tok, path));
  printf("  load: %.0f ms\n", (tok_seconds() - start) * 1e3);
  CHECK_EQ_INT(tsr_tokenizer_vocab_size(tok), 256 + 65536 + TRIPLES + 36);
  char *text = corpus_text(1 << 20);
  time_encode(tok, text, "corpus");
  memset(text, ' ', 1 << 20);
  text[1 << 20] = '\0';
  time_encode(tok, text, "whitespace run");
  memset(text, 'a', 1 << 20);
  time_encode(tok, text, "one-letter run");
  free(text);
  tsr_tokenizer_free(tok);
  CHECK_EQ_INT(remove(path), 0);
  CHECK_EQ_INT(rmdir(dir), 0);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  printf("test_tokenizer_speed: ok\n");
  return 0;
}
