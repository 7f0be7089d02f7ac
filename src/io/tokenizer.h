/* io/tokenizer.h — the insides of tessera/tokenizer.h, shared by src/io/tokenizer_*.c: the
 * loaded tokenizer, its hash tables, the byte-level alphabet and UTF-8 helpers, the pre-split
 * regex and the BPE merge loop. Loading is tokenizer_load.c (tokenizer.json's model and added
 * tokens) and tokenizer_config.c (the components around the model); encoding is
 * tokenizer_encode.c. Nothing here is public. */
#ifndef TSR_IO_TOKENIZER_H
#define TSR_IO_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tessera/tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

/* ---- hash tables (tokenizer_table.c) ---------------------------------------------------- */

/* Bytes kept together: the strings of a table live in one growing buffer, named by offset. */
typedef struct {
  char *bytes;
  size_t len, cap;
} tsri_arena;

/* Appends n bytes; *offset receives where they start. false when out of memory. */
bool tsri_arena_append(tsri_arena *a, const void *bytes, size_t n, size_t *offset);

/* A string -> int32 map with open addressing (linear probing, capacity a power of two at least
 * twice the count). Keys are copied into the map's arena; lookups take (bytes, length). */
typedef struct {
  size_t offset;
  uint32_t len;
  int32_t value;
} tsri_strmap_entry;

typedef struct {
  tsri_arena keys;
  tsri_strmap_entry *entries;
  size_t count, cap_entries;
  uint32_t *slots; /* entry index + 1; 0 is empty */
  size_t mask;
  size_t max_key_len;
} tsri_strmap;

/* Sizes the map for `expected` keys (it grows past that as needed). */
bool tsri_strmap_init(tsri_strmap *m, size_t expected);
void tsri_strmap_free(tsri_strmap *m);
/* Adds key -> value. Returns 1 when added, 0 when the key was there (*existing gets its value,
 * nothing changes), -1 when out of memory. */
int tsri_strmap_insert(tsri_strmap *m, const char *key, size_t len, int32_t value,
                       int32_t *existing);
/* The value of a key, or -1. */
int32_t tsri_strmap_get(const tsri_strmap *m, const char *key, size_t len);
const char *tsri_strmap_key(const tsri_strmap *m, size_t entry);

/* The merges: a pair of ids (left, right) -> its rank and the id it makes. */
typedef struct {
  uint64_t key; /* (left << 32 | right) + 1; 0 is empty */
  uint32_t rank;
  int32_t merged;
} tsri_pair_slot;

typedef struct {
  tsri_pair_slot *slots;
  size_t mask, count;
} tsri_pairmap;

bool tsri_pairmap_init(tsri_pairmap *m, size_t expected);
void tsri_pairmap_free(tsri_pairmap *m);
/* Sets the pair's rank and result; a pair seen again takes the later rank, as the `tokenizers`
 * library's map does. false when out of memory. */
bool tsri_pairmap_put(tsri_pairmap *m, int32_t left, int32_t right, uint32_t rank, int32_t merged);
const tsri_pair_slot *tsri_pairmap_get(const tsri_pairmap *m, int32_t left, int32_t right);

/* ---- the tokenizer ------------------------------------------------------------------------ */

typedef struct {
  size_t offset; /* into the added map's arena */
  uint32_t len;
  int32_t id;
  unsigned char first; /* the first byte */
} tsri_added_token;

/* The bytes an id decodes to, in decoded's arena; len -1 for an id that names no token. */
typedef struct {
  size_t offset;
  int32_t len;
} tsri_decoded;

struct tsr_tokenizer {
  tsri_strmap vocab; /* vocabulary string (byte-level alphabet) -> id */
  tsri_pairmap merges;
  bool ignore_merges;
  int32_t byte_id[256]; /* the id of each byte's one-symbol token, -1 if the vocabulary lacks it */
  unsigned char symbol_utf8[256][3]; /* each byte's symbol in UTF-8: bytes, then the length */

  tsri_strmap added;     /* added token content -> id */
  tsri_added_token *cut; /* added tokens by first byte, longest first within one byte */
  size_t cut_count;
  uint32_t cut_start[257]; /* cut[cut_start[b] .. cut_start[b + 1]) begin with byte b */

  pcre2_code *split; /* the pre-tokenizer's regex, rewritten for PCRE2; NULL: no split */

  int64_t vocab_size; /* largest id + 1 */
  tsri_arena decoded_bytes;
  tsri_decoded *decoded; /* vocab_size entries (decoded_cap allocated) */
  size_t decoded_cap;
  int64_t id_limit; /* ids above this are refused: the decode table is dense */
};

/* tokenizer_config.c: checks normalizer, pre_tokenizer, decoder, post_processor, truncation
 * and padding, and compiles the pre-tokenizer's regex into t->split. */
struct cJSON;
tsr_status tsri_tok_load_config(tsr_tokenizer *t, const struct cJSON *root, const char *path);
/* tokenizer_load.c: model.vocab and model.merges, then added_tokens and the decode table. */
tsr_status tsri_tok_load_model(tsr_tokenizer *t, const struct cJSON *root, const char *path);
tsr_status tsri_tok_load_added(tsr_tokenizer *t, const struct cJSON *root, const char *path);

/* ---- byte-level alphabet and UTF-8 (tokenizer_bytes.c) ------------------------------------ */

/* GPT-2's byte -> code point: printable bytes stand for themselves, the other 68 become
 * U+0100.. in byte order. tsri_tok_symbol_byte is the inverse (-1 for other code points). */
uint32_t tsri_tok_byte_symbol(uint8_t byte);
int tsri_tok_symbol_byte(uint32_t cp);
/* Writes the UTF-8 of a code point (at most 4 bytes) and returns its length. */
size_t tsri_utf8_put(uint32_t cp, char *out);
/* The length of the UTF-8 sequence at s (n > 0 bytes left): its length when *valid, else the
 * length of the maximal invalid subsequence there (Unicode's "maximal subpart", which Python's
 * "replace" and Rust's from_utf8_lossy both replace by one U+FFFD). *cp gets the code point. */
size_t tsri_utf8_next(const unsigned char *s, size_t n, bool *valid, uint32_t *cp);
/* `text` with every maximal invalid subsequence replaced by U+FFFD, malloc'd and
 * NUL-terminated, in *out (NULL with *out_len = n when text is valid UTF-8 already). */
tsr_status tsri_utf8_lossy(const unsigned char *text, size_t n, char **out, size_t *out_len);
/* Records what `id` decodes to (the ByteLevel decoder's rule applied to its token string),
 * growing the table and vocab_size. false when out of memory. */
bool tsri_tok_decoded_put(tsr_tokenizer *t, int32_t id, const char *token, size_t len);
/* Whether an id already names a token. */
bool tsri_tok_decoded_has(const tsr_tokenizer *t, int32_t id);

/* ---- the pre-split regex (tokenizer_regex.c, tokenizer_unicode.c) ------------------------- */

typedef struct {
  uint32_t first, last;
} tsri_codepoint_range;

/* The library's \s, and its \p{L} and \p{N} beyond Unicode 14.0 (tokenizer_unicode.c). */
extern const tsri_codepoint_range tsri_tok_space[];
extern const size_t tsri_tok_space_count;
extern const tsri_codepoint_range tsri_tok_letter_extra[];
extern const size_t tsri_tok_letter_extra_count;
extern const tsri_codepoint_range tsri_tok_number_extra[];
extern const size_t tsri_tok_number_extra_count;

/* Compiles an Oniguruma-syntax pattern of tokenizer.json with PCRE2 (UTF, UCP, JIT when
 * available) after rewriting \s, \S, \p{L}, \P{L}, \p{N} and \P{N} into the library's sets.
 * `where` names the pattern in messages. TSR_ERR_UNSUPPORTED for what PCRE2 cannot take. */
tsr_status tsri_tok_regex_compile(pcre2_code **out, const char *pattern, const char *path,
                                  const char *where);

/* ---- BPE (tokenizer_bpe.c) ---------------------------------------------------------------- */

/* Growing arrays of ids and of BPE scratch, reused across the pieces of one encode call. */
typedef struct {
  int32_t *data;
  size_t n, cap;
} tsri_ids;

bool tsri_ids_push(tsri_ids *v, int32_t id);

typedef struct tsri_bpe_scratch tsri_bpe_scratch;
tsri_bpe_scratch *tsri_bpe_scratch_new(void);
void tsri_bpe_scratch_free(tsri_bpe_scratch *s);

/* Appends the ids of one pre-token (its raw bytes) to out: one id when ignore_merges and the
 * whole byte-level string is in the vocabulary, else the merges by rank. */
tsr_status tsri_bpe_piece(const tsr_tokenizer *t, const unsigned char *piece, size_t n,
                          tsri_bpe_scratch *scratch, tsri_ids *out);

#endif
