/* tessera/model.h — the GLM runner: load a checkpoint, tokenize, prefill and decode, sample.
 *
 * A checkpoint folder as mlx-lm writes it (config.json, model.safetensors or shards with
 * model.safetensors.index.json, tokenizer.json; quantized or not) or as Hugging Face publishes
 * it (bf16/fp16/fp32). Model types `glm4` (GLM-4-0414 dense) and `glm4_moe` (GLM-4.5 family);
 * shared/glm-spec.md is the reference. Everything is computed with float32 accumulation.
 *
 *   tsr_model *m = NULL;
 *   tsr_session *s = NULL;
 *   int32_t *ids = NULL;
 *   size_t n = 0;
 *   tsr_status st = tsr_model_load(&m, "GLM-4-9B-0414-4bit", NULL);
 *   if (st == TSR_OK) st = tsr_model_encode(m, "The capital of France is", &ids, &n);
 *   if (st == TSR_OK) st = tsr_session_new(&s, m, 4096);
 *   if (st == TSR_OK) st = tsr_session_append(s, ids, n);
 *   tsr_sampling greedy = {.temperature = 0, .top_p = 1};
 *   if (st == TSR_OK) st = tsr_session_generate(s, &greedy, 32, print_token, m);
 *   free(ids);
 *   tsr_session_free(s);
 *   tsr_model_free(m);
 *
 * Threads: a model may be shared by sessions on several threads; one session is used by one
 * thread at a time. Every call blocks until its work is done.
 *
 * Tensor parallelism: with a group in the options (tessera/dist.h; launched by mpirun, one
 * process per rank), every rank loads only its shard of the weights and the forward pass sums
 * over the ranks (Megatron-style: attention heads and MLP columns split, the MoE's experts split,
 * key/value heads replicated when the ranks exceed them, the vocabulary of lm_head split and the
 * logits gathered). Every rank then makes the same calls, in the same order, with the same
 * arguments (tokens, sampling seed), from one thread at a time per model, and every rank gets
 * every result (logits, sampled tokens). A model that cannot be split that many ways is refused
 * at load with TSR_ERR_INVALID naming the key or tensor and the values. The group must outlive
 * the model.
 */
#ifndef TESSERA_MODEL_H
#define TESSERA_MODEL_H

#include "tessera/array.h"
#include "tessera/base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsr_group tsr_group;
typedef struct tsr_model tsr_model;

typedef struct {
  tsr_device device;    /* where weights and compute live */
  tsr_group *group;     /* NULL = no tensor parallelism */
  uint64_t backing_cap; /* 0 = none; else installed on `device` before any weight is loaded */
  bool progress;        /* progress bar on stderr while loading */
  uint64_t reserved[8];
} tsr_model_options;

/* The defaults: the default device, no group, no cap, no progress bar. */
TSR_API tsr_model_options tsr_model_default_options(void);

/* Loads a checkpoint folder (opt NULL = defaults). TSR_ERR_IO names the file and tensor for
 * anything missing, truncated or malformed; TSR_ERR_UNSUPPORTED for a model type or layout this
 * build does not run; TSR_ERR_INVALID when opt->group's ranks cannot split the model (heads,
 * key/value heads, MLP width or experts not divisible, or a quantized row-parallel
 * layer whose per-rank inputs are not whole quantization groups); TSR_ERR_CAP/TSR_ERR_NOMEM when
 * the weights do not fit (nothing is left on the ledger); TSR_ERR_STATE when a cap was asked for
 * but the device's first backing attempt has already happened. *out untouched on failure. */
TSR_API tsr_status tsr_model_load(tsr_model **out, const char *dir, const tsr_model_options *opt);
TSR_API void tsr_model_free(tsr_model *m);
/* The config's vocab_size (rows of the logits; may exceed the tokenizer's). */
TSR_API int64_t tsr_model_vocab_size(const tsr_model *m);

/* Logits for every position of `tokens`, float32, row-major [n, vocab]; dst_len must be
 * n * vocab. Stateless: a fresh cache each call. TSR_ERR_INVALID for a token outside
 * [0, vocab). */
TSR_API tsr_status tsr_model_logits(tsr_model *m, const int32_t *tokens, size_t n, float *dst,
                                    size_t dst_len);

/* text <-> tokens with the checkpoint's tokenizer.json (TSR_ERR_STATE when the folder has none);
 * free() the results. */
TSR_API tsr_status tsr_model_encode(tsr_model *m, const char *text, int32_t **tokens, size_t *n);
TSR_API tsr_status tsr_model_decode(tsr_model *m, const int32_t *tokens, size_t n, char **text);

/* Bytes of weights the model holds, as the checkpoint stores them (quantized codes, scales and
 * biases, float tensors). */
TSR_API uint64_t tsr_model_weight_bytes(const tsr_model *m);
/* Of those, the bytes one decode step reads: all but an untied embedding table (of which it reads
 * one row). Weight bytes per second = this x decode tokens per second. */
TSR_API uint64_t tsr_model_decode_bytes(const tsr_model *m);

/* Whether the checkpoint came with a tokenizer.json. */
TSR_API bool tsr_model_has_tokenizer(const tsr_model *m);

/* GLM's chat format: `[gMASK]<sop>` once, then `<|role|>\n` + content per message, then
 * `<|assistant|>` (and, when `thinking` is false on a model that has `<think>`, an empty
 * `\n<think></think>\n`). Roles are "system", "user", "assistant". */
typedef struct {
  const char *role;
  const char *content;
} tsr_chat_message;
TSR_API tsr_status tsr_model_chat_encode(tsr_model *m, const tsr_chat_message *messages,
                                         size_t n_messages, bool thinking, int32_t **tokens,
                                         size_t *n);
/* Whether `token` ends generation (the config's and generation_config's eos_token_id list). */
TSR_API bool tsr_model_is_stop_token(const tsr_model *m, int32_t token);

/* An incremental decoding session: one KV cache on the ledger, allocated at creation for
 * `max_tokens` positions. */
typedef struct tsr_session tsr_session;
typedef struct {
  float temperature; /* 0 = greedy */
  float top_p;       /* 1 = off */
  uint64_t seed;
  uint64_t reserved[8];
} tsr_sampling;
TSR_API tsr_status tsr_session_new(tsr_session **out, tsr_model *m, size_t max_tokens);
TSR_API void tsr_session_free(tsr_session *s);
/* Prefill or extend: runs the new tokens through the model, appending to the cache.
 * TSR_ERR_INVALID when the cache would pass max_tokens or a token is out of range. */
TSR_API tsr_status tsr_session_append(tsr_session *s, const int32_t *tokens, size_t n);
/* Logits of the last appended position (dst_len == vocab); TSR_ERR_STATE before any append. */
TSR_API tsr_status tsr_session_logits(tsr_session *s, float *dst, size_t dst_len);
/* Samples the next token from the last position's logits (it does not append it). The i-th draw
 * of a session uses the counter (seed, i): the same across runs and thread counts. */
TSR_API tsr_status tsr_session_sample(tsr_session *s, const tsr_sampling *p, int32_t *token);
/* Samples, appends and reports tokens until a stop token (reported, not appended), max_new
 * tokens, a full cache, or on_token returning false (cancellation: that token is reported but
 * not appended). TSR_ERR_INVALID for a NULL session or p and for invalid sampling parameters,
 * checked before anything is drawn. */
TSR_API tsr_status tsr_session_generate(tsr_session *s, const tsr_sampling *p, size_t max_new,
                                        bool (*on_token)(int32_t token, void *ctx), void *ctx);
/* Positions in the cache so far. */
TSR_API size_t tsr_session_length(const tsr_session *s);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_MODEL_H */
