/* tests/io/test_tokenizer_unicode.c — the pre-tokenizer regex's \s, \p{L} and \p{N} against the
 * `tokenizers` library over every code point. probe.json (tools/gen_tokenizer_golden.py) has
 * GLM's pre-tokenizer and merges that join 'a', '1' and 'Ġ' with every byte, so a piece boundary
 * that moves changes the ids. Each code point c (all but U+0000 and the surrogates) is written
 * as 'a' c 'a1' c '1 ' c ' |' c c 'a|' (c c 'a' splits as c, c 'a' only when c is whitespace:
 * that is where U+180E shows); every block of 65536 code points must give the library's id
 * count and FNV-1a hash (a failure names the block; the generator's probe_text rebuilds it). */
#include "test_tokenizer_util.h"

static size_t put_utf8(uint32_t cp, char *out) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xC0 | cp >> 6);
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | cp >> 12);
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | cp >> 18);
  out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

static size_t put_str(const char *s, char *out) {
  memcpy(out, s, strlen(s));
  return strlen(s);
}

/* The probe text of code points first .. first + block - 1. */
static char *probe_text(uint32_t first, uint32_t block) {
  char *text = malloc((size_t)block * 36 + 1);
  CHECK(text != NULL);
  size_t n = 0;
  for (uint32_t cp = first; cp < first + block && cp < 0x110000; cp++) {
    if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF)) continue;
    n += put_str("a", text + n);
    n += put_utf8(cp, text + n);
    n += put_str("a1", text + n);
    n += put_utf8(cp, text + n);
    n += put_str("1 ", text + n);
    n += put_utf8(cp, text + n);
    n += put_str(" |", text + n);
    n += put_utf8(cp, text + n);
    n += put_utf8(cp, text + n);
    n += put_str("a|", text + n);
  }
  text[n] = '\0';
  return text;
}

static void test_probe(void) {
  cJSON *golden = tok_golden();
  const cJSON *probe = tok_key(golden, "probe");
  tsr_tokenizer *tok = NULL;
  CHECK_OK(tsr_tokenizer_load(&tok, tok_data(tok_key(probe, "tokenizer")->valuestring)));
  uint32_t block = (uint32_t)tok_key(probe, "block")->valuedouble;
  size_t blocks = 0, total = 0;
  double start = tok_seconds();
  for (const cJSON *b = tok_key(probe, "blocks")->child; b; b = b->next, blocks++) {
    uint32_t first = (uint32_t)tok_key(b, "first")->valuedouble;
    char *text = probe_text(first, block);
    int32_t *ids = NULL;
    size_t n = 0;
    CHECK_OK(tsr_tokenizer_encode(tok, text, &ids, &n));
    char hash[17];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)tok_fnv1a64(TOK_FNV_START, ids, n));
    if (n != (size_t)tok_key(b, "count")->valuedouble ||
        strcmp(hash, tok_key(b, "fnv1a64")->valuestring) != 0)
      CHECK_FAIL_("code points U+%04X..U+%04X: %zu ids hash %s, library %.0f ids hash %s", first,
                  first + block - 1, n, hash, tok_key(b, "count")->valuedouble,
                  tok_key(b, "fnv1a64")->valuestring);
    total += strlen(text);
    free(ids);
    free(text);
  }
  CHECK_EQ_U64(blocks, 0x110000 / block);
  printf("  %zu blocks, %.1f MiB of probe text in %.2f s\n", blocks, (double)total / 1048576.0,
         tok_seconds() - start);
  tsr_tokenizer_free(tok);
  cJSON_Delete(golden);
}

int main(void) {
  test_probe();
  CHECK_NO_LEAKS();
  tsr_shutdown();
  printf("test_tokenizer_unicode: ok\n");
  return 0;
}
