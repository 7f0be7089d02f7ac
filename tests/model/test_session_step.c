/* tests/model/test_session_step.c — a session's replayed decode step (model/glm_step.c) against
 * the forward built anew for each token (TSR_DECODE_STEP=0), on the tiny dense models: the same
 * logits bit for bit at every position (the dynamic ops give the bits of their static
 * counterparts, and a replay runs the recorded kernels on the same values), through decodes, a
 * multi-token append between them (which drops the step; the next token builds a new one), a bad
 * token refused with the session still usable, and a full cache; nothing leaks. */
#include <stdlib.h>

#include "model_fixture.h"

enum { V = 256, PROMPT = 8, CAPACITY = 21 }; /* the prompt and the 13 tokens appended after it */

/* Appends `n` tokens to s with the step on or off and copies the last logits to row. */
static void append(tsr_session *s, bool step, const int32_t *tokens, size_t n, float *row) {
  CHECK(setenv("TSR_DECODE_STEP", step ? "1" : "0", 1) == 0);
  CHECK_OK(tsr_session_append(s, tokens, n));
  CHECK_OK(tsr_session_logits(s, row, V));
}

static void check_model(const char *dir, const int32_t *prompt) {
  tsr_model *m = NULL;
  CHECK_OK(tsr_model_load(&m, dir, NULL));
  tsr_session *fresh = NULL, *replayed = NULL;
  CHECK_OK(tsr_session_new(&fresh, m, CAPACITY));
  CHECK_OK(tsr_session_new(&replayed, m, CAPACITY));
  float want[V], got[V];
  append(fresh, false, prompt, PROMPT, want);
  append(replayed, true, prompt, PROMPT, got);
  CHECK(memcmp(want, got, sizeof want) == 0);
  /* One token at a time (the step), two at once (a forward), and one at a time again. */
  static const size_t pieces[] = {1, 1, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1};
  int32_t next = 3;
  size_t length = PROMPT;
  for (size_t i = 0; i < sizeof pieces / sizeof *pieces; i++) {
    int32_t tokens[2] = {next, (next * 5 + 1) % V};
    append(fresh, false, tokens, pieces[i], want);
    append(replayed, true, tokens, pieces[i], got);
    length += pieces[i];
    for (int v = 0; v < V; v++)
      if (memcmp(&want[v], &got[v], sizeof *got) != 0)
        CHECK_FAIL_("%s: position %zu, logit %d: replayed %.9g, built anew %.9g", dir, length - 1,
                    v, (double)got[v], (double)want[v]);
    next = (next * 7 + 11) % V;
    if (i == 6) { /* a bad token is refused before anything changes */
      int32_t bad = V + 3;
      CHECK_STATUS(tsr_session_append(replayed, &bad, 1), TSR_ERR_INVALID);
      CHECK_MESSAGE("259");
    }
  }
  CHECK_EQ_U64(tsr_session_length(replayed), CAPACITY);
  int32_t one = 1;
  CHECK_STATUS(tsr_session_append(replayed, &one, 1), TSR_ERR_INVALID); /* the cache is full */
  tsr_session_free(fresh);
  tsr_session_free(replayed);
  tsr_model_free(m);
  printf("  %-24s %d positions bit for bit\n", dir + strlen(GLM_DATA) + 1, CAPACITY);
}

int main(void) {
  int32_t *prompt = golden_i32(GLM_DATA "/dense", "tokens.npy", PROMPT);
  check_model(GLM_DATA "/dense/hf", prompt);
  check_model(GLM_DATA "/dense/mlx-q4g64", prompt);
  free(prompt);
  tsr_memory_clear_cache(fx_cpu);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  printf("test_session_step: ok\n");
  return 0;
}
