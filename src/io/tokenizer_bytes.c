/* io/tokenizer_bytes.c — GPT-2's byte-level alphabet, UTF-8 with lossy replacement, and
 * decoding (tsr_tokenizer_decode). The decode rule is the `tokenizers` ByteLevel decoder's: a
 * token whose every character is in the alphabet becomes those bytes, any other token its own
 * UTF-8 bytes; the joined bytes then go through the replacement of Rust's String::from_utf8_lossy
 * (one U+FFFD per maximal invalid subsequence). Not the encoder: tokenizer_encode.c is. */
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "io/tokenizer.h"

/* Bytes that stand for themselves: '!'..'~', 0xA1..0xAC and 0xAE..0xFF. */
static bool printable_byte(unsigned byte) {
  return (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE;
}

/* The 68 others, in byte order, are 0x00..0x20 (33), 0x7F..0xA0 (34) and 0xAD. */
uint32_t tsri_tok_byte_symbol(uint8_t byte) {
  if (printable_byte(byte)) return byte;
  if (byte <= 0x20) return 256u + byte;
  return byte == 0xAD ? 256u + 67 : 256u + 33 + (byte - 0x7Fu);
}

int tsri_tok_symbol_byte(uint32_t cp) {
  if (cp < 256) return printable_byte(cp) ? (int)cp : -1;
  if (cp >= 256 + 68) return -1;
  uint32_t rank = cp - 256;
  if (rank < 33) return (int)rank;
  return rank < 67 ? (int)(0x7F + rank - 33) : 0xAD;
}

size_t tsri_utf8_put(uint32_t cp, char *out) {
  unsigned char *o = (unsigned char *)out;
  if (cp < 0x80) {
    o[0] = (unsigned char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (unsigned char)(0xC0 | cp >> 6);
    o[1] = (unsigned char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (unsigned char)(0xE0 | cp >> 12);
    o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (unsigned char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (unsigned char)(0xF0 | cp >> 18);
  o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
  o[3] = (unsigned char)(0x80 | (cp & 0x3F));
  return 4;
}

/* Unicode's table of well-formed sequences (The Unicode Standard, Table 3-7): the lead byte
 * fixes how many continuation bytes follow and the range of the first one. */
size_t tsri_utf8_next(const unsigned char *s, size_t n, bool *valid, uint32_t *cp) {
  unsigned lead = s[0], need, lo = 0x80, hi = 0xBF;
  *valid = false;
  *cp = 0xFFFD;
  if (lead < 0x80) {
    *valid = true;
    *cp = lead;
    return 1;
  }
  if (lead >= 0xC2 && lead <= 0xDF)
    need = 1;
  else if (lead >= 0xE0 && lead <= 0xEF)
    need = 2;
  else if (lead >= 0xF0 && lead <= 0xF4)
    need = 3;
  else
    return 1;
  if (lead == 0xE0) lo = 0xA0;
  if (lead == 0xED) hi = 0x9F;
  if (lead == 0xF0) lo = 0x90;
  if (lead == 0xF4) hi = 0x8F;
  uint32_t value = lead & (0x3Fu >> need);
  for (unsigned i = 1; i <= need; i++) {
    if (i >= n || s[i] < lo || s[i] > hi) return i;
    value = value << 6 | (s[i] & 0x3Fu);
    lo = 0x80;
    hi = 0xBF;
  }
  *valid = true;
  *cp = value;
  return need + 1;
}

/* How many bytes `text` takes once each invalid subsequence is three bytes of U+FFFD. */
static size_t lossy_length(const unsigned char *text, size_t n, bool *all_valid) {
  size_t out = 0;
  *all_valid = true;
  for (size_t i = 0; i < n;) {
    bool valid;
    uint32_t cp;
    size_t len = tsri_utf8_next(text + i, n - i, &valid, &cp);
    out += valid ? len : 3;
    *all_valid = *all_valid && valid;
    i += len;
  }
  return out;
}

tsr_status tsri_utf8_lossy(const unsigned char *text, size_t n, char **out, size_t *out_len) {
  bool all_valid;
  size_t total = lossy_length(text, n, &all_valid);
  *out = NULL;
  *out_len = n;
  if (all_valid) return TSR_OK;
  char *buf = malloc(total + 1);
  if (!buf) return tsri_error(TSR_ERR_NOMEM, "tokenizer: no memory for %zu bytes of text", total);
  size_t w = 0;
  for (size_t i = 0; i < n;) {
    bool valid;
    uint32_t cp;
    size_t len = tsri_utf8_next(text + i, n - i, &valid, &cp);
    if (valid) memcpy(buf + w, text + i, len);
    w += valid ? len : tsri_utf8_put(0xFFFD, buf + w);
    i += len;
  }
  buf[w] = '\0';
  *out = buf;
  *out_len = w;
  return TSR_OK;
}

/* ---- decoding --------------------------------------------------------------------------- */

/* The bytes one token decodes to: its symbols' bytes when all are in the alphabet, else its
 * own UTF-8 (the ByteLevel decoder's fallback, which added tokens such as "<|user|>" never
 * need: their characters are printable ASCII and stand for themselves). */
static bool append_token_bytes(tsri_arena *arena, const char *token, size_t len,
                               tsri_decoded *out) {
  char buf[256];
  char *bytes = len <= sizeof buf ? buf : malloc(len);
  if (!bytes) return false;
  size_t n = 0;
  bool mapped = true;
  for (size_t i = 0; i < len && mapped;) {
    bool valid;
    uint32_t cp;
    i += tsri_utf8_next((const unsigned char *)token + i, len - i, &valid, &cp);
    int byte = valid ? tsri_tok_symbol_byte(cp) : -1;
    mapped = byte >= 0;
    if (mapped) bytes[n++] = (char)byte;
  }
  bool ok = mapped ? tsri_arena_append(arena, bytes, n, &out->offset)
                   : tsri_arena_append(arena, token, len, &out->offset);
  out->len = (int32_t)(mapped ? n : len);
  if (bytes != buf) free(bytes);
  return ok;
}

bool tsri_tok_decoded_has(const tsr_tokenizer *t, int32_t id) {
  return id >= 0 && id < t->vocab_size && t->decoded[id].len >= 0;
}

bool tsri_tok_decoded_put(tsr_tokenizer *t, int32_t id, const char *token, size_t len) {
  if ((size_t)id >= t->decoded_cap) {
    size_t cap = t->decoded_cap ? t->decoded_cap : 1024;
    while (cap <= (size_t)id)
      cap *= 2;
    tsri_decoded *grown = realloc(t->decoded, cap * sizeof *grown);
    if (!grown) return false;
    for (size_t i = t->decoded_cap; i < cap; i++)
      grown[i] = (tsri_decoded){0, -1};
    t->decoded = grown;
    t->decoded_cap = cap;
  }
  if (id >= t->vocab_size) t->vocab_size = (int64_t)id + 1;
  return append_token_bytes(&t->decoded_bytes, token, len, &t->decoded[id]);
}

tsr_status tsr_tokenizer_decode(const tsr_tokenizer *t, const int32_t *ids, size_t n, char **text) {
  if (!text) return tsri_error(TSR_ERR_INVALID, "tokenizer decode: text is NULL");
  *text = NULL;
  if (!t || (!ids && n))
    return tsri_error(TSR_ERR_INVALID, "tokenizer decode: %s is NULL", t ? "ids" : "tokenizer");
  size_t total = 0;
  for (size_t i = 0; i < n; i++) {
    if (ids[i] < 0 || ids[i] >= t->vocab_size || t->decoded[ids[i]].len < 0)
      return tsri_error(TSR_ERR_INVALID,
                        "tokenizer decode: id %d (ids[%zu]) is not a token (vocabulary size "
                        "%lld)",
                        (int)ids[i], i, (long long)t->vocab_size);
    total += (size_t)t->decoded[ids[i]].len;
  }
  char *bytes = malloc(total + 1);
  if (!bytes) return tsri_error(TSR_ERR_NOMEM, "tokenizer decode: no memory for %zu bytes", total);
  size_t w = 0;
  for (size_t i = 0; i < n; i++) {
    const tsri_decoded *d = &t->decoded[ids[i]];
    memcpy(bytes + w, t->decoded_bytes.bytes + d->offset, (size_t)d->len);
    w += (size_t)d->len;
  }
  bytes[w] = '\0';
  char *lossy;
  size_t lossy_len;
  tsr_status status = tsri_utf8_lossy((const unsigned char *)bytes, w, &lossy, &lossy_len);
  if (status == TSR_OK && lossy) {
    free(bytes);
    bytes = lossy;
  }
  if (status != TSR_OK)
    free(bytes);
  else
    *text = bytes;
  return status;
}
