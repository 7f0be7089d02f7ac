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
  tsr_array *positions; /* input: int64 [2] = {position, position + 1} */
  tsr_array *logits;    /* output: [1, vocab] float32 */
  void **cache_data;    /* the cache's buffers before the first run, which must update them */
  bool verified;        /* the first run updated the cache in place */
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
  int64_t values[2] = {position, position + 1}, two = 2;
  return g_from_data(g, values, TSR_INT64, &two, 1, m->device);
}

/* The step's graph on g over `draft` (a copy of the cache's handles, each retained): its inputs
   evaluated, the draft's arrays replaced by the step's updates, the logits lazy. */
static void build(glm_graph *g, glm_step *s, tsr_model *m, glm_cache *draft) {
  int64_t hidden[2] = {1, m->cfg.hidden_size};
  s->x = tsr_array_retain(g_zeros(g, hidden, 2));
  s->positions = tsr_array_retain(positions_at(g, m, draft->length));
  tsr_array *inputs[2] = {s->x, s->positions};
  if (graph_ok(g)) graph_fail(g, tsr_eval(inputs, 2));
  if (!graph_ok(g)) return;
  int64_t first[1] = {0}, one[1] = {1}, two[1] = {2};
  draft->position = g_slice(g, s->positions, first, one, 1);
  draft->filled = g_slice(g, s->positions, one, two, 1);
  tsr_array *logits = glm_head(g, m, glm_decoder_stack(g, m, draft, s->x, false));
  draft->position = draft->filled = NULL;
  if (graph_ok(g)) s->logits = tsr_array_retain(logits);
}

/* The cache's arrays handed to `draft` (retained; the cache keeps its own until commit). */
static tsr_status draft_of(const glm_cache *cache, glm_cache *draft) {
  *draft = *cache;
  size_t n = (size_t)(2 * cache->layers);
  draft->keys = malloc(n * sizeof *draft->keys);
  if (!draft->keys) return tsr_error_set(TSR_ERR_NOMEM, "session: out of memory for a step");
  draft->values = draft->keys + cache->layers;
  for (size_t i = 0; i < n; i++)
    draft->keys[i] = tsr_array_retain(cache->keys[i]);
  return TSR_OK;
}

static void release_all(tsr_array **arrays, size_t n) {
  for (size_t i = 0; i < n; i++)
    tsr_array_release(arrays[i]);
}

/* The buffers of the cache's arrays, which the step's first run must update in place (a copy
   would make every replay start again from the cache as it was before the first). */
static tsr_status note_cache_data(glm_step *s, const glm_cache *cache) {
  size_t n = (size_t)(2 * cache->layers);
  s->cache_data = calloc(n, sizeof *s->cache_data);
  if (!s->cache_data) return tsr_error_set(TSR_ERR_NOMEM, "session: out of memory for a step");
  tsr_status st = TSR_OK;
  for (size_t i = 0; i < n && st == TSR_OK; i++)
    st = tsr_array_data(cache->keys[i], &s->cache_data[i]);
  return st;
}

tsr_status glm_step_new(glm_step **out, tsr_model *m, glm_cache *cache) {
  /* The last forward's releases done, so that nothing but the cache holds its buffers and the
     step's appends write into them. */
  tsr_status st = tsr_stream_synchronize(tsr_default_stream(m->device));
  glm_step *s = st == TSR_OK ? calloc(1, sizeof *s) : NULL;
  if (st != TSR_OK) return st;
  if (!s) return tsr_error_set(TSR_ERR_NOMEM, "session: out of memory for a decode step");
  glm_cache draft;
  if ((st = note_cache_data(s, cache)) != TSR_OK || (st = draft_of(cache, &draft)) != TSR_OK) {
    glm_step_free(s);
    return st;
  }
  size_t n = (size_t)(2 * cache->layers);
  glm_graph g;
  graph_begin(&g, tsr_default_stream(m->device));
  build(&g, s, m, &draft);
  st = graph_end(&g);
  if (st == TSR_OK) {
    tsr_array *inputs[2] = {s->x, s->positions};
    st = tsr_step_new(&s->step, inputs, 2, &s->logits, 1);
  }
  if (st != TSR_OK) { /* the cache is as it was: the draft goes */
    release_all(draft.keys, n);
    free(draft.keys);
    glm_step_free(s);
    return st;
  }
  release_all(cache->keys, n); /* the step's appends now hold the only references */
  memcpy(cache->keys, draft.keys, n * sizeof *cache->keys);
  free(draft.keys);
  *out = s;
  return TSR_OK;
}

/* After the first run: whether every cache array kept its buffer (its update was in place). */
static bool updated_in_place(glm_step *s, const glm_cache *cache) {
  for (int64_t i = 0; i < 2 * cache->layers; i++) {
    void *data = NULL;
    if (tsr_array_data(cache->keys[i], &data) != TSR_OK || data != s->cache_data[i]) return false;
  }
  return true;
}

tsr_status glm_step_decode(glm_step *s, tsr_model *m, glm_cache *cache, int32_t token,
                           float *logits) {
  if (cache->length >= cache->capacity)
    return tsr_error_set(TSR_ERR_INVALID,
                         "forward: 1 new token after %lld does not fit a cache of %lld",
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
  tsr_status st = graph_end(&g);
  if (st != TSR_OK) return st;
  cache->length++;
  if (!s->verified) s->verified = updated_in_place(s, cache);
  return TSR_OK;
}

bool glm_step_replayable(const glm_step *s) {
  return s && s->verified;
}

void glm_step_free(glm_step *s) {
  if (!s) return;
  tsr_step_free(s->step);
  tsr_array_release(s->x);
  tsr_array_release(s->positions);
  tsr_array_release(s->logits);
  free(s->cache_data);
  free(s);
}
