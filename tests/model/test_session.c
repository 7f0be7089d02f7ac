/* tests/model/test_session.c — the session and sampling contract on the tiny MLX 4-bit MoE
 * (tests/data/glm/moe/mlx-q4g64, no tokenizer): argument and state errors that leave the session
 * usable, greedy = argmax, seeded sampling reproducible across sessions and thread counts (child
 * processes with TSR_NUM_THREADS=1 and 2), top_p near 0 = greedy, and tsr_session_generate's stop
 * token, max_new, cancellation, full cache and lazy appends, checked against fresh forwards. The
 * chat format is test_model_chat.c's. */
#include <math.h>

#include <tessera/testing.h>

#include "model_fixture.h"

enum { V = 256, PROMPT = 8, DRAWS = 24 };

static tsr_model *model;
static int32_t *prompt;

static tsr_session *new_session(tsr_model *m, size_t max_tokens) {
  tsr_session *s = NULL;
  CHECK_OK(tsr_session_new(&s, m, max_tokens));
  return s;
}

/* The last row of a fresh stateless forward over `tokens`. */
static void fresh_last_row(tsr_model *m, const int32_t *tokens, size_t n, float *row) {
  float *all = malloc(n * V * sizeof *all);
  CHECK(all != NULL);
  CHECK_OK(tsr_model_logits(m, tokens, n, all, n * V));
  memcpy(row, all + (n - 1) * V, V * sizeof *row);
  free(all);
}

/* Within 1e-4, test_glm_golden's bar for two float32 forwards of these models: a session's
 * incremental forward and a fresh one split their sums differently (by M, and by the thread count:
 * 1.5e-5 apart on a 16-core host), each ~4e-6 from float64. */
static void expect_close(const char *what, const float *got, const float *want) {
  for (int v = 0; v < V; v++)
    if (!(fabsf(got[v] - want[v]) <= 1e-4f))
      CHECK_FAIL_("%s: logit %d is %.8g, want %.8g", what, v, (double)got[v], (double)want[v]);
}

static int32_t argmax(const float *row) {
  int32_t best = 0;
  for (int32_t v = 1; v < V; v++)
    if (row[v] > row[best]) best = v;
  return best;
}

/* ---- arguments and states ------------------------------------------------------------------- */

static void check_new_and_state(void) {
  tsr_session *s = NULL;
  CHECK_STATUS(tsr_session_new(NULL, model, 8), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_session_new(&s, NULL, 8), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_session_new(&s, model, 0), TSR_ERR_INVALID);
  CHECK_MESSAGE("max_tokens 0");
  CHECK(s == NULL);
  s = new_session(model, 8);
  CHECK_EQ_U64(tsr_session_length(s), 0);
  float row[V];
  int32_t token = -7;
  tsr_sampling greedy = {.temperature = 0, .top_p = 1};
  CHECK_STATUS(tsr_session_logits(s, row, V), TSR_ERR_STATE);
  CHECK_MESSAGE("nothing has been appended");
  CHECK_STATUS(tsr_session_sample(s, &greedy, &token), TSR_ERR_STATE);
  CHECK_EQ_INT(token, -7);
  CHECK_STATUS(tsr_session_append(s, prompt, 0), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_session_append(s, NULL, 3), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_session_generate(s, &greedy, 3, NULL, NULL), TSR_ERR_STATE);
  CHECK_STATUS(tsr_session_generate(NULL, &greedy, 3, NULL, NULL), TSR_ERR_INVALID);
  CHECK_EQ_U64(tsr_session_length(NULL), 0);
  tsr_session_free(s);
  tsr_session_free(NULL);
}

static void check_capacity(void) {
  tsr_session *s = new_session(model, 8);
  CHECK_STATUS(tsr_session_append(s, prompt, 9), TSR_ERR_INVALID);
  CHECK_MESSAGE("max_tokens 8");
  CHECK_EQ_U64(tsr_session_length(s), 0);
  CHECK_OK(tsr_session_append(s, prompt, 5));
  CHECK_STATUS(tsr_session_append(s, prompt + 5, 4), TSR_ERR_INVALID);
  CHECK_MESSAGE("4 tokens after 5");
  CHECK_EQ_U64(tsr_session_length(s), 5);
  CHECK_OK(tsr_session_append(s, prompt + 5, 3)); /* still usable: exactly full */
  CHECK_EQ_U64(tsr_session_length(s), 8);
  float got[V], want[V];
  CHECK_OK(tsr_session_logits(s, got, V));
  fresh_last_row(model, prompt, 8, want);
  expect_close("after a refused append", got, want);
  CHECK_STATUS(tsr_session_append(s, prompt, 1), TSR_ERR_INVALID);
  tsr_session_free(s);
}

static void check_bad_tokens(void) {
  tsr_session *s = new_session(model, 16);
  CHECK_OK(tsr_session_append(s, prompt, 4));
  int32_t bad[2] = {3, V};
  CHECK_STATUS(tsr_session_append(s, bad, 2), TSR_ERR_INVALID);
  CHECK_MESSAGE("token 256 at position 1 is outside [0, 256)");
  bad[1] = -1;
  CHECK_STATUS(tsr_session_append(s, bad, 2), TSR_ERR_INVALID);
  CHECK_MESSAGE("token -1");
  CHECK_EQ_U64(tsr_session_length(s), 4);
  CHECK_OK(tsr_session_append(s, prompt + 4, 4)); /* nothing of the refused ones went in */
  float got[V], want[V];
  CHECK_OK(tsr_session_logits(s, got, V));
  fresh_last_row(model, prompt, 8, want);
  expect_close("after refused tokens", got, want);
  CHECK_STATUS(tsr_session_logits(s, got, V - 1), TSR_ERR_INVALID);
  CHECK_MESSAGE("dst_len 255");
  CHECK_STATUS(tsr_session_logits(s, got, V + 1), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_session_logits(s, NULL, V), TSR_ERR_INVALID);
  float *all = malloc(PROMPT * V * sizeof *all);
  CHECK_STATUS(tsr_model_logits(model, prompt, PROMPT, all, PROMPT * V - 1), TSR_ERR_INVALID);
  CHECK_MESSAGE("dst_len 2047");
  CHECK_STATUS(tsr_model_logits(model, bad, 2, all, 2 * V), TSR_ERR_INVALID);
  CHECK_MESSAGE("token -1");
  CHECK_OK(tsr_model_logits(model, prompt, PROMPT, all, PROMPT * V));
  expect_close("tsr_model_logits last row = session prefill", all + (PROMPT - 1) * V, got);
  free(all);
  tsr_session_free(s);
}

/* ---- sampling ------------------------------------------------------------------------------- */

/* DRAWS tokens sampled and appended one by one after the prompt. */
static void sample_sequence(tsr_model *m, const tsr_sampling *p, int32_t *out) {
  tsr_session *s = new_session(m, PROMPT + DRAWS);
  CHECK_OK(tsr_session_append(s, prompt, PROMPT));
  for (int i = 0; i < DRAWS; i++) {
    CHECK_OK(tsr_session_sample(s, p, &out[i]));
    CHECK(out[i] >= 0 && out[i] < V);
    CHECK_OK(tsr_session_append(s, &out[i], 1));
  }
  tsr_session_free(s);
}

static const tsr_sampling nucleus = {.temperature = 0.8f, .top_p = 0.9f, .seed = 42};

static void check_greedy(void) {
  tsr_session *s = new_session(model, PROMPT + DRAWS);
  CHECK_OK(tsr_session_append(s, prompt, PROMPT));
  tsr_sampling greedy = {.temperature = 0, .top_p = 1, .seed = 9};
  for (int i = 0; i < DRAWS; i++) {
    float row[V];
    int32_t token;
    CHECK_OK(tsr_session_logits(s, row, V));
    CHECK_OK(tsr_session_sample(s, &greedy, &token));
    CHECK_EQ_INT(token, argmax(row));
    CHECK_OK(tsr_session_append(s, &token, 1));
  }
  tsr_session_free(s);
}

static bool same_sequence(const int32_t *a, const int32_t *b) {
  return memcmp(a, b, DRAWS * sizeof *a) == 0;
}

static void check_seeds(void) {
  int32_t a[DRAWS], b[DRAWS], greedy_seq[DRAWS], tiny_p[DRAWS];
  sample_sequence(model, &nucleus, a);
  sample_sequence(model, &nucleus, b);
  CHECK(same_sequence(a, b));
  int32_t other[DRAWS];
  tsr_sampling hot = {.temperature = 1.5f, .top_p = 1, .seed = 1};
  sample_sequence(model, &hot, b);
  hot.seed = 2;
  sample_sequence(model, &hot, other);
  CHECK(!same_sequence(b, other));
  tsr_sampling greedy = {.temperature = 0, .top_p = 1};
  sample_sequence(model, &greedy, greedy_seq);
  CHECK(!same_sequence(greedy_seq, b)); /* temperature 1.5 really samples */
  tsr_sampling narrow = {.temperature = 1.0f, .top_p = 1e-6f, .seed = 3};
  sample_sequence(model, &narrow, tiny_p);
  CHECK(same_sequence(greedy_seq, tiny_p));
}

/* Refused whether or not a token would be drawn: the session is full after the prompt. */
static void check_bad_sampling(void) {
  tsr_session *s = new_session(model, PROMPT);
  CHECK_OK(tsr_session_append(s, prompt, PROMPT));
  int32_t token;
  const tsr_sampling bad[] = {
      {.temperature = -0.5f, .top_p = 1},    {.temperature = NAN, .top_p = 1},
      {.temperature = INFINITY, .top_p = 1}, {.temperature = 1, .top_p = 0},
      {.temperature = 1, .top_p = 1.5f},     {.temperature = 1, .top_p = NAN}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK_STATUS(tsr_session_sample(s, &bad[i], &token), TSR_ERR_INVALID);
    CHECK_STATUS(tsr_session_generate(s, &bad[i], 2, NULL, NULL), TSR_ERR_INVALID);
  }
  CHECK_MESSAGE("top_p");
  CHECK_STATUS(tsr_session_sample(s, NULL, &token), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_session_generate(s, NULL, 2, NULL, NULL), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_session_sample(s, &nucleus, NULL), TSR_ERR_INVALID);
  CHECK_EQ_U64(tsr_session_length(s), PROMPT);
  tsr_session_free(s);
}

/* The child: the nucleus sequence under its TSR_NUM_THREADS, written to `path`. */
static void child_sample(const char *path) {
  int32_t seq[DRAWS];
  sample_sequence(model, &nucleus, seq);
  fx_write_bytes(path, seq, sizeof seq);
}

static void check_thread_counts(const char *dir) {
  int32_t mine[DRAWS];
  sample_sequence(model, &nucleus, mine);
  static const char *const counts[] = {"1", "2"};
  for (int i = 0; i < 2; i++) {
    const char *path = fx_path(dir, counts[i]);
    test_rerun("sample", path, "TSR_NUM_THREADS", counts[i]);
    size_t n = 0;
    char *theirs = fx_read_file(path, &n);
    CHECK_EQ_U64(n, sizeof mine);
    if (memcmp(theirs, mine, sizeof mine) != 0)
      CHECK_FAIL_("TSR_NUM_THREADS=%s sampled another sequence", counts[i]);
    free(theirs);
  }
}

/* ---- generation ----------------------------------------------------------------------------- */

typedef struct {
  int32_t tokens[64];
  size_t n, cancel_at; /* on_token returns false for the cancel_at-th token (0: never) */
} report;

static bool record(int32_t token, void *ctx) {
  report *r = ctx;
  CHECK(r->n < 64);
  r->tokens[r->n++] = token;
  return r->cancel_at == 0 || r->n < r->cancel_at;
}

/* A copy of the MLX checkpoint whose only stop token is `eos` (generation_config.json emptied). */
static tsr_model *with_eos(int32_t eos) {
  const char *dir = fx_fresh(FX_MOE_Q4);
  fx_cases++;
  fx_config_set(dir, "eos_token_id", cJSON_CreateNumber(eos));
  fx_write_text(fx_path(dir, "generation_config.json"), "{}");
  tsr_model *m = NULL;
  CHECK_OK(tsr_model_load(&m, dir, NULL));
  CHECK(tsr_model_is_stop_token(m, eos));
  CHECK(eos == 1 || !tsr_model_is_stop_token(m, 1));
  return m;
}

/* The session's logits equal a fresh forward over the prompt and g[0..n). */
static void expect_continues(const char *what, tsr_session *s, const int32_t *g, size_t n) {
  int32_t all[PROMPT + DRAWS];
  memcpy(all, prompt, PROMPT * sizeof *all);
  memcpy(all + PROMPT, g, n * sizeof *all);
  float got[V], want[V];
  CHECK_OK(tsr_session_logits(s, got, V));
  fresh_last_row(model, all, PROMPT + n, want);
  expect_close(what, got, want);
}

/* Runs generate on a fresh prefilled session; checks the reported tokens are g[0..want_n). */
static tsr_session *generate(tsr_model *m, size_t max_tokens, size_t max_new, report *r,
                             const int32_t *g, size_t want_n) {
  tsr_session *s = new_session(m, max_tokens);
  CHECK_OK(tsr_session_append(s, prompt, PROMPT));
  tsr_sampling greedy = {.temperature = 0, .top_p = 1};
  CHECK_OK(tsr_session_generate(s, &greedy, max_new, record, r));
  CHECK_EQ_U64(r->n, want_n);
  CHECK(memcmp(r->tokens, g, want_n * sizeof *g) == 0);
  return s;
}

/* The first index k >= 2 whose greedy token did not come earlier: the stop token to plant. */
static size_t fresh_index(const int32_t *g) {
  for (size_t k = 2; k < DRAWS; k++) {
    bool seen = false;
    for (size_t j = 0; j < k; j++)
      seen |= g[j] == g[k];
    if (!seen) return k;
  }
  CHECK_FAIL_("the greedy sequence repeats one token");
}

static void check_stop_token(const int32_t *g) {
  size_t k = fresh_index(g);
  tsr_model *m = with_eos(g[k]);
  report r = {.n = 0};
  tsr_session *s = generate(m, PROMPT + DRAWS, 20, &r, g, k + 1); /* the stop token reported */
  CHECK_EQ_U64(tsr_session_length(s), PROMPT + k);                /* ... but not appended */
  expect_continues("after a stop token", s, g, k);
  r.n = 0;
  tsr_sampling greedy = {.temperature = 0, .top_p = 1};
  CHECK_OK(tsr_session_generate(s, &greedy, 5, record, &r));
  CHECK_EQ_U64(r.n, 1);
  CHECK_EQ_INT(r.tokens[0], g[k]);
  tsr_session_free(s);
  tsr_model_free(m);
}

static void check_limits(const int32_t *g, tsr_model *m) {
  report r = {.n = 0};
  tsr_session *s = generate(m, PROMPT + DRAWS, 5, &r, g, 5);
  CHECK_EQ_U64(tsr_session_length(s), PROMPT + 5); /* the 5th is pending, counted */
  expect_continues("after max_new 5", s, g, 5);
  r.n = 0;
  tsr_sampling greedy = {.temperature = 0, .top_p = 1};
  CHECK_OK(tsr_session_generate(s, &greedy, 3, record, &r)); /* it goes on from there */
  CHECK_EQ_U64(r.n, 3);
  CHECK(memcmp(r.tokens, g + 5, 3 * sizeof *g) == 0);
  CHECK_OK(tsr_session_generate(s, &greedy, 0, record, &r));
  CHECK_EQ_U64(r.n, 3);
  CHECK_OK(tsr_session_generate(s, &greedy, 2, NULL, NULL));
  CHECK_EQ_U64(tsr_session_length(s), PROMPT + 10);
  expect_continues("after three generate calls", s, g, 10);
  tsr_session_free(s);

  r = (report){.cancel_at = 3};
  s = generate(m, PROMPT + DRAWS, 10, &r, g, 3);
  CHECK_EQ_U64(tsr_session_length(s), PROMPT + 2); /* the refused token is not appended */
  expect_continues("after cancellation", s, g, 2);
  tsr_session_free(s);

  r = (report){.n = 0};
  s = generate(m, PROMPT + 3, 10, &r, g, 3); /* stops when the cache is full */
  CHECK_EQ_U64(tsr_session_length(s), PROMPT + 3);
  CHECK_STATUS(tsr_session_append(s, g, 1), TSR_ERR_INVALID);
  expect_continues("with a full cache", s, g, 3);
  tsr_session_free(s);
}

/* generate draws as tsr_session_sample does: the same seeded tokens. */
static void check_generate_sampling(tsr_model *m) {
  int32_t want[DRAWS];
  sample_sequence(m, &nucleus, want);
  tsr_session *s = new_session(m, PROMPT + DRAWS);
  CHECK_OK(tsr_session_append(s, prompt, PROMPT));
  report r = {.n = 0};
  CHECK_OK(tsr_session_generate(s, &nucleus, DRAWS, record, &r));
  CHECK_EQ_U64(r.n, DRAWS);
  CHECK(memcmp(r.tokens, want, sizeof want) == 0);
  tsr_session_free(s);
}

static int32_t unused_token(const int32_t *g) {
  for (int32_t v = 0; v < V; v++) {
    bool used = false;
    for (int i = 0; i < DRAWS; i++)
      used |= g[i] == v;
    if (!used) return v;
  }
  CHECK_FAIL_("the greedy sequence uses every token");
}

static void check_generate(void) {
  int32_t g[DRAWS];
  tsr_sampling greedy = {.temperature = 0, .top_p = 1};
  sample_sequence(model, &greedy, g);
  check_stop_token(g);
  tsr_model *m = with_eos(unused_token(g)); /* a stop token greedy never reaches */
  check_limits(g, m);
  check_generate_sampling(m);
  tsr_model_free(m);
}

/* A forward that fails midway leaves the session refusing work with TSR_ERR_STATE. */
static void check_failed_forward(void) {
  tsr_session *s = new_session(model, 16);
  tsr_memory_clear_cache(fx_cpu);
  CHECK_OK(tsr_testing_fail_allocation(fx_cpu, 1));
  CHECK_STATUS(tsr_session_append(s, prompt, PROMPT), TSR_ERR_NOMEM);
  CHECK_EQ_U64(tsr_testing_fail_allocation_pending(fx_cpu), 0);
  CHECK_STATUS(tsr_session_append(s, prompt, 1), TSR_ERR_STATE);
  CHECK_MESSAGE("TSR_ERR_NOMEM");
  float row[V];
  CHECK_STATUS(tsr_session_logits(s, row, V), TSR_ERR_STATE);
  tsr_session_free(s);
  s = new_session(model, 16); /* a new one works */
  CHECK_OK(tsr_session_append(s, prompt, PROMPT));
  tsr_session_free(s);
}

int main(int argc, char **argv) {
  prompt = golden_i32(GLM_DATA "/moe", "tokens.npy", PROMPT);
  CHECK_OK(tsr_model_load(&model, FX_MOE_Q4, NULL));
  if (argc == 3 && strcmp(argv[1], "sample") == 0) {
    child_sample(argv[2]);
  } else {
    fx_make_root("session", fx_root);
    check_new_and_state();
    check_capacity();
    check_bad_tokens();
    check_greedy();
    check_seeds();
    check_bad_sampling();
    check_thread_counts(fx_root);
    check_generate();
    check_failed_forward();
    fx_remove_tree(fx_root);
    printf("test_session: ok\n");
  }
  tsr_model_free(model);
  free(prompt);
  tsr_memory_clear_cache(fx_cpu);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
