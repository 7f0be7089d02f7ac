/* model/glm_step.c — a session's decode step recorded once and replayed (tessera/step.h).
 *
 * One token's forward is several hundred small kernels; built and launched anew each token, its
 * host cost exceeds the GPU's own time several times over (bench/notes/gpu_decode.md). The step
 * is the decoder stack and the head over one token's embedding, built once with the position
 * read from a device array (tsr_rope_dynamic, tsr_slice_update_dynamic on the cache,
 * tsr_sdpa_dynamic over its filled part), so the same graph serves every position; each token
 * then costs its embedding lookup, one upload of the position and one replay. */
#include <stdlib.h>
#include <string.h>

#include "model/glm_layers.h"

struct glm_step {
  tsr_step *step;
  tsr_array *x;         /* input: the token's embedding [1, hidden] float32 */
  tsr_array *positions; /* input: int32 [2] = {position, position + 1} */
  tsr_array *logits;    /* output: [1, vocab] float32 */
};

bool glm_step_usable(const tsr_model *m) {
  const char *knob = getenv("TSR_DECODE_STEP");
  if (knob && strcmp(knob, "0") == 0) return false;
  if (m->group || m->linear_observer) return false;
  for (int64_t i = 0; i < m->cfg.num_layers; i++)
    if (m->weights.layers[i].is_moe) return false;
  return true;
}

/* {position, position + 1} as a lazy upload on g. */
static tsr_array *positions_at(glm_graph *g, const tsr_model *m, int64_t position) {
  int32_t values[2] = {(int32_t)position, (int32_t)(position + 1)};
  int64_t two = 2;
  return g_from_data(g, values, TSR_INT32, &two, 1, m->device);
}

/* The step's graph on g: its inputs evaluated, the cache's arrays replaced by the step's
   updates, the logits lazy. */
static void build(glm_graph *g, glm_step *s, tsr_model *m, glm_cache *cache) {
  int64_t hidden[2] = {1, m->cfg.hidden_size};
  s->x = g_zeros(g, hidden, 2);
  s->positions = positions_at(g, m, cache->length);
  tsr_array *inputs[2] = {s->x, s->positions};
  if (graph_ok(g)) graph_fail(g, tsr_eval(inputs, 2));
  if (!graph_ok(g)) return;
  tsr_array_retain(s->x);
  tsr_array_retain(s->positions);
  int64_t first[1] = {0}, one[1] = {1}, two[1] = {2};
  cache->position = g_slice(g, s->positions, first, one, 1);
  cache->filled = g_slice(g, s->positions, one, two, 1);
  tsr_array *logits = glm_head(g, m, glm_decoder_stack(g, m, cache, s->x, false));
  cache->position = cache->filled = NULL;
  if (graph_ok(g)) s->logits = tsr_array_retain(logits);
}

tsr_status glm_step_new(glm_step **out, tsr_model *m, glm_cache *cache) {
  glm_step *s = calloc(1, sizeof *s);
  if (!s) return tsr_error_set(TSR_ERR_NOMEM, "session: out of memory for a decode step");
  glm_graph g;
  graph_begin(&g, tsr_default_stream(m->device));
  build(&g, s, m, cache);
  tsr_status st = graph_end(&g);
  if (st == TSR_OK) {
    tsr_array *inputs[2] = {s->x, s->positions};
    st = tsr_step_new(&s->step, inputs, 2, &s->logits, 1);
  }
  if (st != TSR_OK) {
    glm_step_free(s);
    return st;
  }
  *out = s;
  return TSR_OK;
}

tsr_status glm_step_decode(glm_step *s, tsr_model *m, glm_cache *cache, int32_t token,
                           float *logits) {
  tsr_status st = glm_check_tokens(m, &token, 1);
  if (st != TSR_OK) return st;
  if (cache->length >= cache->capacity)
    return tsr_error_set(TSR_ERR_INVALID,
                         "forward: 1 new token after %lld does not fit a cache "
                         "of %lld",
                         (long long)cache->length, (long long)cache->capacity);
  glm_graph g;
  graph_begin(&g, tsr_default_stream(m->device));
  int64_t one = 1;
  tsr_array *values[2] = {
      layer_embed(&g, &m->weights.embed, g_from_data(&g, &token, TSR_INT32, &one, 1, m->device)),
      positions_at(&g, m, cache->length)};
  if (graph_ok(&g)) graph_fail(&g, tsr_step_run(s->step, values, 2));
  if (graph_ok(&g))
    graph_fail(&g, tsr_array_read(s->logits, logits, (size_t)m->cfg.vocab_size * sizeof *logits));
  st = graph_end(&g);
  if (st == TSR_OK) cache->length++;
  return st;
}

void glm_step_free(glm_step *s) {
  if (!s) return;
  tsr_step_free(s->step);
  tsr_array_release(s->x);
  tsr_array_release(s->positions);
  tsr_array_release(s->logits);
  free(s);
}
