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

/* Reads a tokenizer.json. TSR_ERR_INVALID for NULL arguments; TSR_ERR_IO for a missing or
 * malformed file (message names the file and the key); TSR_ERR_UNSUPPORTED for a model,
 * normalizer, pre-tokenizer or decoder this implementation does not do. */
TSR_API tsr_status tsr_tokenizer_load(tsr_tokenizer **out, const char *path);
TSR_API void tsr_tokenizer_free(tsr_tokenizer *t);

/* Encodes `text` (NUL-terminated UTF-8; invalid bytes are encoded as their bytes) into a
 * malloc'd array of ids (free() it). Adds no BOS/EOS: chat formatting is the caller's. */
TSR_API tsr_status tsr_tokenizer_encode(const tsr_tokenizer *t, const char *text, int32_t **ids,
                                        size_t *n);
/* Decodes ids into a malloc'd NUL-terminated UTF-8 string (free() it). Special tokens decode to
 * their text. TSR_ERR_INVALID names an id outside the vocabulary. */
TSR_API tsr_status tsr_tokenizer_decode(const tsr_tokenizer *t, const int32_t *ids, size_t n,
                                        char **text);
/* The id of a token given by its text (an added token such as "<|user|>", or a vocabulary
 * string), or -1 when there is none. */
TSR_API int32_t tsr_tokenizer_token_id(const tsr_tokenizer *t, const char *token);
/* One more than the largest id (vocabulary and added tokens). */
TSR_API int64_t tsr_tokenizer_vocab_size(const tsr_tokenizer *t);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_TOKENIZER_H */
