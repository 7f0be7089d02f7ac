/* model/glm_model.h — what tsr_model and tsr_session are inside, and the forward pass they share.
 * Internal to src/model, which is built on the public API only. */
#ifndef TSR_MODEL_GLM_MODEL_H
#define TSR_MODEL_GLM_MODEL_H

#include <tessera/tessera.h>
#include <tessera/testing.h>

#include "model/glm_config.h"
#include "model/glm_shard.h"
#include "model/glm_weights.h"
#include "model/graph.h"

/* Observes each MoE layer's routing (tests compare the selected experts with transformers'):
 * `experts` is [tokens, k] row-major, each row ascending. */
typedef tsr_testing_routing_hook glm_routing_hook;

struct tsr_model {
  glm_config cfg;
  glm_weights weights;
  tsr_tokenizer *tokenizer; /* NULL when the folder has none */
  tsr_device device;
  bool progress;    /* loaded with a progress bar: long operations on it (a recipe) draw one too */
  tsr_group *group; /* the caller's, NULL without tensor parallelism */
  glm_shard shard;  /* what this rank holds (all of it without a group) */
  glm_routing_hook routing_hook;
  void *routing_ctx;
  glm_linear_observer linear_observer; /* a calibration's (calibrate.h); NULL: none */
  void *observer_ctx;
};

/* The KV cache: per layer, post-RoPE keys and raw values [1, kv_heads, capacity, head_dim] of
 * this rank's key/value heads,
 * float32, allocated once and written in place. */
typedef struct {
  tsr_array **keys, **values;
  int64_t layers, capacity, length;
} glm_cache;

tsr_status glm_cache_new(glm_cache *cache, const tsr_model *m, int64_t capacity);
void glm_cache_free(glm_cache *cache);

/* Runs `n` tokens at positions cache->length.. through the model, appending to the cache, and
 * writes float32 logits: for every position ([n, vocab]) when all_positions, else the last
 * ([vocab]). logits NULL: no head product at all, only its input handed to the observer (a
 * calibration's pass). On failure the cache is left as it was (length unchanged). */
tsr_status glm_forward(tsr_model *m, glm_cache *cache, const int32_t *tokens, size_t n,
                       bool all_positions, float *logits);

#endif
