/* model/session.c — tsr_session: one KV cache, prefill and incremental decode, and generation.
 * A generated token is held pending and appended with the next call that needs it, so generation
 * never runs a forward whose logits nobody reads. A forward that fails leaves the cache
 * undefined (its buffers are updated in place), so the session then refuses further work with
 * TSR_ERR_STATE naming the first failure; free it and start again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/glm_model.h"
#include "model/sampling.h"

struct tsr_session {
  tsr_model *model;
  glm_cache cache;
  glm_step *step; /* the decode step, replayed while tokens come one at a time; NULL: none */
  bool no_step;   /* a step could not be made or replayed for this session: forwards only */
  float *logits;  /* the last position's, [vocab] */
  bool has_logits;
  bool has_pending;
  int32_t pending;
  uint64_t draws; /* samples taken so far: the counter of the next draw */
  tsr_status failed;
  char failure[256];
};

tsr_status tsr_session_new(tsr_session **out, tsr_model *m, size_t max_tokens) {
  if (!out || !m || max_tokens == 0 || max_tokens > ((size_t)1 << 31))
    return tsr_error_set(TSR_ERR_INVALID,
                         "session_new: NULL argument or max_tokens %zu outside "
                         "[1, 2^31]",
                         max_tokens);
  tsr_session *s = calloc(1, sizeof *s);
  float *logits = malloc((size_t)m->cfg.vocab_size * sizeof *logits);
  if (!s || !logits) {
    free(s);
    free(logits);
    return tsr_error_set(TSR_ERR_NOMEM, "session_new: out of memory");
  }
  s->model = m;
  s->logits = logits;
  tsr_status st = glm_cache_new(&s->cache, m, (int64_t)max_tokens);
  if (st != TSR_OK) {
    free(logits);
    free(s);
    return st;
  }
  *out = s;
  return TSR_OK;
}

void tsr_session_free(tsr_session *s) {
  if (!s) return;
  glm_step_free(s->step);
  glm_cache_free(&s->cache);
  free(s->logits);
  free(s);
}

size_t tsr_session_length(const tsr_session *s) {
  return s ? (size_t)s->cache.length + (s->has_pending ? 1 : 0) : 0;
}

static tsr_status check_usable(const tsr_session *s, const char *what) {
  if (!s) return tsr_error_set(TSR_ERR_INVALID, "%s: session is NULL", what);
  if (s->failed != TSR_OK)
    return tsr_error_set(TSR_ERR_STATE, "%s: the session failed earlier (%s: %s); free it", what,
                         tsr_status_name(s->failed), s->failure);
  return TSR_OK;
}

/* One token through the replayed step when the model allows it (the step is built at the first
   such token); anything else through a forward built anew, after the step is dropped (its hold
   on the cache's arrays would keep the forward from updating them in place). */
static tsr_status forward(tsr_session *s, const int32_t *tokens, size_t n) {
  tsr_status st = glm_check_tokens(s->model, tokens, n); /* refused before anything changes */
  if (st != TSR_OK) return st;
  bool stepped = n == 1 && !s->no_step && glm_step_usable(s->model);
  /* A step that cannot be made (the device cannot attend over the whole capacity at once)
     leaves the cache as it was: this session decodes with forwards. */
  if (stepped && !s->step && glm_step_new(&s->step, s->model, &s->cache) != TSR_OK)
    stepped = false, s->no_step = true;
  if (stepped) {
    st = glm_step_decode(s->step, s->model, &s->cache, tokens[0], s->logits);
    if (st == TSR_OK && !glm_step_replayable(s->step)) { /* the first run was right, not replays */
      glm_step_free(s->step);
      s->step = NULL;
      s->no_step = true;
    }
    return st;
  }
  glm_step_free(s->step);
  s->step = NULL;
  return glm_forward(s->model, &s->cache, tokens, n, false, s->logits);
}

static tsr_status run(tsr_session *s, const int32_t *tokens, size_t n) {
  tsr_status st = forward(s, tokens, n);
  if (st == TSR_OK) {
    s->has_logits = true;
  } else if (st != TSR_ERR_INVALID) { /* invalid input is refused before anything runs */
    s->failed = st;
    snprintf(s->failure, sizeof s->failure, "%s", tsr_last_error());
  }
  return st;
}

static tsr_status flush_pending(tsr_session *s) {
  if (!s->has_pending) return TSR_OK;
  s->has_pending = false;
  return run(s, &s->pending, 1);
}

tsr_status tsr_session_append(tsr_session *s, const int32_t *tokens, size_t n) {
  tsr_status st = check_usable(s, "session_append");
  if (st != TSR_OK) return st;
  if (!tokens || n == 0) return tsr_error_set(TSR_ERR_INVALID, "session_append: no tokens");
  if ((int64_t)n + (int64_t)tsr_session_length(s) > s->cache.capacity)
    return tsr_error_set(TSR_ERR_INVALID,
                         "session_append: %zu tokens after %zu pass the session's max_tokens %lld",
                         n, tsr_session_length(s), (long long)s->cache.capacity);
  if ((st = flush_pending(s)) != TSR_OK) return st;
  return run(s, tokens, n);
}

static tsr_status ready_logits(tsr_session *s, const char *what) {
  tsr_status st = check_usable(s, what);
  if (st == TSR_OK) st = flush_pending(s);
  if (st == TSR_OK && !s->has_logits)
    st = tsr_error_set(TSR_ERR_STATE, "%s: nothing has been appended yet", what);
  return st;
}

tsr_status tsr_session_logits(tsr_session *s, float *dst, size_t dst_len) {
  tsr_status st = ready_logits(s, "session_logits");
  if (st != TSR_OK) return st;
  size_t vocab = (size_t)s->model->cfg.vocab_size;
  if (!dst || dst_len != vocab)
    return tsr_error_set(TSR_ERR_INVALID, "session_logits: dst_len %zu, want the vocabulary %zu",
                         dst_len, vocab);
  memcpy(dst, s->logits, vocab * sizeof *dst);
  return TSR_OK;
}

tsr_status tsr_session_sample(tsr_session *s, const tsr_sampling *p, int32_t *token) {
  tsr_status st = ready_logits(s, "session_sample");
  if (st != TSR_OK) return st;
  if (!p || !token) return tsr_error_set(TSR_ERR_INVALID, "session_sample: NULL argument");
  if ((st = sampling_check(p)) != TSR_OK) return st;
  *token = sampling_draw(s->logits, (size_t)s->model->cfg.vocab_size, p, s->draws++);
  return TSR_OK;
}

tsr_status tsr_session_generate(tsr_session *s, const tsr_sampling *p, size_t max_new,
                                bool (*on_token)(int32_t token, void *ctx), void *ctx) {
  tsr_status st = check_usable(s, "session_generate"); /* before s is read */
  /* The arguments are checked even when no token will be drawn (a full cache, max_new 0). */
  if (st == TSR_OK && !p) st = tsr_error_set(TSR_ERR_INVALID, "session_generate: p is NULL");
  if (st == TSR_OK) st = sampling_check(p);
  for (size_t i = 0; i < max_new && st == TSR_OK; i++) {
    if ((int64_t)tsr_session_length(s) >= s->cache.capacity) break; /* the cache is full */
    int32_t token;
    if ((st = tsr_session_sample(s, p, &token)) != TSR_OK) break;
    bool go_on = on_token ? on_token(token, ctx) : true;
    if (tsr_model_is_stop_token(s->model, token) || !go_on) break;
    s->pending = token;
    s->has_pending = true;
  }
  return st;
}
