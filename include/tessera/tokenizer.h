/* tessera/tokenizer.h — text to token ids and back with a Hugging Face tokenizer.json.
 *
 * The byte-level BPE that GLM-4-0414 and GLM-4.5 use (shared/glm-spec.md §7), identical to the
 * `tokenizers` library: added (special) tokens cut out of the text first, longest match first; the
 * pre-tokenizer's Split regex run through PCRE2 on each piece between them; GPT-2's byte-to-unicode
 * alphabet; BPE merges by rank, with `ignore_merges` honoured. Decoding maps the token strings back
 * to bytes and replaces invalid UTF-8 as Rust's lossy conversion does. Other tokenizer kinds are
 * refused with TSR_ERR_UNSUPPORTED naming what is not supported.
 *
 *   tsr_tokenizer *tok = NULL;
 *   int32_t *ids = NULL;
 *   size_t n = 0;
 *   tsr_status st = tsr_tokenizer_load(&tok, "GLM-4-9B-0414-4bit/tokenizer.json");
 *   if (st == TSR_OK) st = tsr_tokenizer_encode(tok, "Hello, 世界", &ids, &n);
 *   ...
 *   free(ids);
 *   tsr_tokenizer_free(tok);
 *
 * Threads: a loaded tokenizer is immutable; encode and decode may run on several threads at once.
 */
#ifndef TESSERA_TOKENIZER_H
#define TESSERA_TOKENIZER_H

#include "tessera/base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsr_tokenizer tsr_tokenizer;

/* Reads a tokenizer.json. What it takes is what GLM's file has: normalizer null; pre_tokenizer
 * Sequence[Split{Regex, "Isolated", invert false}, ByteLevel{add_prefix_space false, use_regex
 * false}] or a lone ByteLevel (GPT-2's regex when use_regex is true, no split when false); model
 * BPE (merges as "a b" or ["a", "b"], ignore_merges either way; no dropout, unk_token,
 * byte_fallback, subword prefix or suffix); added_tokens with single_word, lstrip, rstrip and
 * normalized false; decoder ByteLevel; post_processor ByteLevel or null; no truncation or
 * padding. The Split regex runs through PCRE2 with \s, \p{L} and \p{N} rewritten to the sets of
 * the library's regex engine (Oniguruma), measured on tokenizers 0.23.3.
 * TSR_ERR_INVALID for NULL arguments; TSR_ERR_IO for a missing or malformed file (message names
 * the file and the key: not JSON, a missing key, a merge naming a token not in the vocabulary,
 * two tokens with one id, an added token whose id is not the one the library assigns);
 * TSR_ERR_UNSUPPORTED for anything else above (the message names the key and its value;
 * an id beyond 4 per token in the file plus 1024 is refused too, as the decode table is dense);
 * TSR_ERR_NOMEM. On failure *out is NULL. A tokenizer of GLM's size (151k tokens and merges)
 * loads in about 0.4 s. */
TSR_API tsr_status tsr_tokenizer_load(tsr_tokenizer **out, const char *path);
TSR_API void tsr_tokenizer_free(tsr_tokenizer *t);

/* Encodes `text` (NUL-terminated UTF-8) into a malloc'd array of ids (free() it; NULL when *n is
 * 0). Adds no BOS/EOS: chat formatting is the caller's. Invalid UTF-8 is first replaced the way
 * a Python or Rust caller of the library must replace it to pass a string at all: each maximal
 * invalid subsequence becomes one U+FFFD (Python's bytes.decode("utf-8", "replace") and Rust's
 * String::from_utf8_lossy agree; "\xE2\x82A" is U+FFFD then "A"). Added tokens are then cut out
 * leftmost-longest, anywhere, even inside words ("/nothinking" is "/nothink" + "ing").
 * TSR_ERR_INVALID for NULL arguments; TSR_ERR_NOMEM. */
TSR_API tsr_status tsr_tokenizer_encode(const tsr_tokenizer *t, const char *text, int32_t **ids,
                                        size_t *n);
/* Decodes ids into a malloc'd NUL-terminated UTF-8 string (free() it). Special tokens decode to
 * their text. The joined bytes are made valid as Rust's String::from_utf8_lossy does (one U+FFFD
 * per maximal invalid subsequence: ids that cut a character give U+FFFD). A decoded NUL byte
 * (the token of byte 0) ends the C string there. TSR_ERR_INVALID names an id outside the
 * vocabulary, its index and the vocabulary size; TSR_ERR_NOMEM. */
TSR_API tsr_status tsr_tokenizer_decode(const tsr_tokenizer *t, const int32_t *ids, size_t n,
                                        char **text);
/* The id of a token given by its text: an added token such as "<|user|>", else a vocabulary
 * string as the vocabulary spells it, in the byte-level alphabet ("Ġthe" for " the"); -1 when
 * there is none or an argument is NULL. */
TSR_API int32_t tsr_tokenizer_token_id(const tsr_tokenizer *t, const char *token);
/* One more than the largest id (vocabulary and added tokens); 0 for NULL. */
TSR_API int64_t tsr_tokenizer_vocab_size(const tsr_tokenizer *t);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_TOKENIZER_H */
