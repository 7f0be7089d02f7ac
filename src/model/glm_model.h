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
  /* While a decode step is built (glm_step.c): the position of its one token as a one-element
     int64 array on the model's device, read by the ops when they run, so the step's graph is the
     same at every position; and length + 1 likewise (the keys attention reads). NULL otherwise. */
  tsr_array *position, *filled;
} glm_cache;

tsr_status glm_cache_new(glm_cache *cache, const tsr_model *m, int64_t capacity);
void glm_cache_free(glm_cache *cache);

/* Runs `n` tokens at positions cache->length.. through the model, appending to the cache, and
 * writes float32 logits: for every position ([n, vocab]) when all_positions, else the last
 * ([vocab]). logits NULL: no head product at all, only its input handed to the observer (a
 * calibration's pass). On failure the cache is left as it was (length unchanged). */
tsr_status glm_forward(tsr_model *m, glm_cache *cache, const int32_t *tokens, size_t n,
                       bool all_positions, float *logits);
/* Under a group, a rank whose work failed before any of its collectives could refuse
 * (tsr_group_refusals unchanged since `refusals_before`: it stopped building the graph, or failed
 * between collectives) would leave the others waiting at their next collective until the group's
 * timeout. It takes part in one more seal instead, as a refusal (a raw all-sum with no buffers):
 * the others' next collective fails at once with TSR_ERR_DIST naming this rank, and every rank
 * has made the same seals, so the group stays usable (a lazy collective it built and abandoned is
 * never run: dist/lazy.c). TSR_ERR_DIST came from a collective: every rank knows. Returns
 * `failure`, with this rank's message kept. */
tsr_status glm_tell_group(tsr_model *m, tsr_status failure, uint64_t refusals_before);
/* TSR_ERR_INVALID naming the first token outside [0, vocab). */
tsr_status glm_check_tokens(const tsr_model *m, const int32_t *tokens, size_t n);
/* The parts of a forward, built lazily on g: the decoder layers over x [T, hidden] appending to
 * the cache, then the final norm (of the last row only unless all_positions); and the head over
 * that, gathered across the ranks' vocabulary shards: [rows, vocab]. */
tsr_array *glm_decoder_stack(glm_graph *g, tsr_model *m, glm_cache *cache, tsr_array *x,
                             bool all_positions);
tsr_array *glm_head(glm_graph *g, tsr_model *m, tsr_array *x);

/* A session's decode step recorded once and replayed (glm_step.c). */
typedef struct glm_step glm_step;
/* Whether decode steps of this model can be replayed: a dense model (MoE routing reads the
 * router's scores on the host), one process (no group), no calibration observer; and
 * TSR_DECODE_STEP is not 0. */
bool glm_step_usable(const tsr_model *m);
/* Builds the step over the cache's current arrays, which it then replaces by its own (the
 * cache's arrays are the step's from now on). On failure (e.g. TSR_ERR_UNSUPPORTED: the device
 * cannot attend over the whole capacity at once) the cache is as it was. */
tsr_status glm_step_new(glm_step **out, tsr_model *m, glm_cache *cache);
/* One token (in the vocabulary) through the step at position cache->length: its logits
 * ([vocab]) into `logits`, the cache one longer. */
tsr_status glm_step_decode(glm_step *s, tsr_model *m, glm_cache *cache, int32_t token,
                           float *logits);
/* After a step's first decode: whether its replays are right, i.e. the first run updated the
 * cache's buffers in place (else each replay would start from the cache as it was). */
bool glm_step_replayable(const glm_step *s);
void glm_step_free(glm_step *s);

#endif
