/* io/tokenizer_encode.c — text to ids (tsr_tokenizer_encode) and the two lookups. The order is
 * the `tokenizers` library's: invalid UTF-8 replaced first (what a Python or Rust caller does
 * before it can pass a string), then added tokens cut out leftmost-longest, then the Split
 * regex over each piece between them (matches and the gaps between matches are all pre-tokens),
 * then BPE per pre-token (tokenizer_bpe.c). Not the loader and not decoding. */
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "io/tokenizer.h"

typedef struct {
  const tsr_tokenizer *t;
  pcre2_match_data *match;
  tsri_bpe_scratch *scratch;
  tsri_ids ids;
} encoder;

/* The longest added token that starts at text[pos], or NULL. */
static const tsri_added_token *added_at(const tsr_tokenizer *t, const char *text, size_t len,
                                        size_t pos) {
  unsigned char first = (unsigned char)text[pos];
  for (uint32_t k = t->cut_start[first]; k < t->cut_start[first + 1]; k++) {
    const tsri_added_token *a = &t->cut[k];
    if (a->len <= len - pos && memcmp(t->added.keys.bytes + a->offset, text + pos, a->len) == 0)
      return a;
  }
  return NULL;
}

static size_t char_length(const char *s, size_t n) {
  bool valid;
  uint32_t cp;
  return tsri_utf8_next((const unsigned char *)s, n, &valid, &cp);
}

static tsr_status match_error(int rc, size_t offset) {
  PCRE2_UCHAR message[256];
  pcre2_get_error_message(rc, message, sizeof message);
  return tsri_error(rc == PCRE2_ERROR_NOMEMORY ? TSR_ERR_NOMEM : TSR_ERR_UNSUPPORTED,
                    "tokenizer encode: the pre-tokenizer regex failed at byte %zu of a piece (%s)",
                    offset, (const char *)message);
}

/* The next match in piece[start..n): 1 with [*s, *e), 0 for none. A JIT stack too small for
 * the subject falls back to the interpreter, which uses the heap. */
static int next_match(encoder *enc, const char *piece, size_t n, size_t start, size_t *s, size_t *e,
                      tsr_status *status) {
  int rc =
      pcre2_match(enc->t->split, (PCRE2_SPTR)piece, n, start, PCRE2_NO_UTF_CHECK, enc->match, NULL);
  if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
    rc = pcre2_match(enc->t->split, (PCRE2_SPTR)piece, n, start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                     enc->match, NULL);
  if (rc == PCRE2_ERROR_NOMATCH) return 0;
  if (rc < 0) {
    *status = match_error(rc, start);
    return -1;
  }
  PCRE2_SIZE *ovector = pcre2_get_ovector_pointer(enc->match);
  *s = ovector[0];
  *e = ovector[1];
  return 1;
}

/* A piece between added tokens: Split with behaviour Isolated, as Oniguruma's find_iter in the
 * library walks it (an empty match ends the gap before it and the search goes on one character
 * later; empty pre-tokens give no ids). */
static tsr_status encode_piece(encoder *enc, const char *piece, size_t n) {
  if (!enc->t->split)
    return tsri_bpe_piece(enc->t, (const unsigned char *)piece, n, enc->scratch, &enc->ids);
  tsr_status status = TSR_OK;
  size_t start = 0, done = 0, s = 0, e = 0;
  int found = 0;
  while (start <= n && (found = next_match(enc, piece, n, start, &s, &e, &status)) == 1) {
    if (s > done)
      status = tsri_bpe_piece(enc->t, (const unsigned char *)piece + done, s - done, enc->scratch,
                              &enc->ids);
    if (status == TSR_OK && e > s)
      status =
          tsri_bpe_piece(enc->t, (const unsigned char *)piece + s, e - s, enc->scratch, &enc->ids);
    if (status != TSR_OK) return status;
    done = e;
    start = e > s ? e : (s < n ? s + char_length(piece + s, n - s) : n + 1);
  }
  if (found < 0) return status;
  if (done < n)
    status = tsri_bpe_piece(enc->t, (const unsigned char *)piece + done, n - done, enc->scratch,
                            &enc->ids);
  return status;
}

static tsr_status encode_text(encoder *enc, const char *text, size_t len) {
  const tsr_tokenizer *t = enc->t;
  size_t piece = 0;
  for (size_t pos = 0; pos < len;) {
    const tsri_added_token *a = t->cut_count ? added_at(t, text, len, pos) : NULL;
    if (!a) {
      pos++;
      continue;
    }
    tsr_status status = encode_piece(enc, text + piece, pos - piece);
    if (status != TSR_OK) return status;
    if (!tsri_ids_push(&enc->ids, a->id))
      return tsri_error(TSR_ERR_NOMEM, "tokenizer encode: no memory for %zu ids", enc->ids.n);
    pos += a->len;
    piece = pos;
  }
  return encode_piece(enc, text + piece, len - piece);
}

tsr_status tsr_tokenizer_encode(const tsr_tokenizer *t, const char *text, int32_t **ids,
                                size_t *n) {
  if (!ids || !n) return tsri_error(TSR_ERR_INVALID, "tokenizer encode: ids or n is NULL");
  *ids = NULL;
  *n = 0;
  if (!t || !text)
    return tsri_error(TSR_ERR_INVALID, "tokenizer encode: %s is NULL", t ? "text" : "tokenizer");
  char *clean = NULL;
  size_t len;
  tsr_status status = tsri_utf8_lossy((const unsigned char *)text, strlen(text), &clean, &len);
  if (status != TSR_OK) return status;
  encoder enc = {t, NULL, tsri_bpe_scratch_new(), {0}};
  if (t->split) enc.match = pcre2_match_data_create_from_pattern(t->split, NULL);
  if (!enc.scratch || (t->split && !enc.match)) {
    status = tsri_error(TSR_ERR_NOMEM, "tokenizer encode: no memory for its scratch");
    goto done;
  }
  status = encode_text(&enc, clean ? clean : text, len);
  if (status == TSR_OK) {
    *ids = enc.ids.data;
    *n = enc.ids.n;
    enc.ids.data = NULL;
  }
done:
  free(enc.ids.data);
  pcre2_match_data_free(enc.match);
  tsri_bpe_scratch_free(enc.scratch);
  free(clean);
  return status;
}

int32_t tsr_tokenizer_token_id(const tsr_tokenizer *t, const char *token) {
  if (!t || !token) return -1;
  size_t len = strlen(token);
  int32_t id = tsri_strmap_get(&t->added, token, len);
  return id >= 0 ? id : tsri_strmap_get(&t->vocab, token, len);
}

int64_t tsr_tokenizer_vocab_size(const tsr_tokenizer *t) {
  return t ? t->vocab_size : 0;
}
