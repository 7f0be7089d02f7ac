/* model/chat.c — GLM's chat format (GLM-4-0414 and GLM-4.5): `[gMASK]<sop>` once, then
 * `<|role|>\n` and the content of each message, then `<|assistant|>`; with thinking turned off on a
 * model that has `<think>`, an empty `\n<think></think>\n` follows, as GLM-4.5's template writes
 * it. The text is rendered, then encoded, so special tokens in it are cut out as the tokenizer
 * cuts them (as transformers' apply_chat_template followed by encode does). */
#include <stdlib.h>
#include <string.h>

#include "model/glm_model.h"

static bool known_role(const char *role) {
  return strcmp(role, "system") == 0 || strcmp(role, "user") == 0 ||
         strcmp(role, "assistant") == 0 || strcmp(role, "observation") == 0;
}

static size_t rendered_length(const tsr_chat_message *messages, size_t n) {
  size_t total = 64; /* preamble, generation prompt and the empty think block */
  for (size_t i = 0; i < n; i++)
    total += strlen(messages[i].role) + strlen(messages[i].content) + 8;
  return total;
}

static tsr_status render(tsr_model *m, const tsr_chat_message *messages, size_t n, bool thinking,
                         char **out) {
  for (size_t i = 0; i < n; i++)
    if (!messages[i].role || !messages[i].content || !known_role(messages[i].role))
      return tsr_error_set(TSR_ERR_INVALID,
                           "chat: message %zu has role %s%s%s (system, user, assistant or "
                           "observation, with content)",
                           i, messages[i].role ? "\"" : "",
                           messages[i].role ? messages[i].role : "NULL",
                           messages[i].role ? "\"" : "");
  char *text = malloc(rendered_length(messages, n));
  if (!text) return tsr_error_set(TSR_ERR_NOMEM, "chat: out of memory");
  char *p = text;
  p = stpcpy(p, "[gMASK]<sop>");
  for (size_t i = 0; i < n; i++) {
    p = stpcpy(stpcpy(stpcpy(p, "<|"), messages[i].role), "|>\n");
    p = stpcpy(p, messages[i].content);
  }
  p = stpcpy(p, "<|assistant|>");
  if (!thinking && tsr_tokenizer_token_id(m->tokenizer, "<think>") >= 0)
    p = stpcpy(p, "\n<think></think>\n");
  *out = text;
  return TSR_OK;
}

tsr_status tsr_model_chat_encode(tsr_model *m, const tsr_chat_message *messages, size_t n_messages,
                                 bool thinking, int32_t **tokens, size_t *n) {
  if (!m || (!messages && n_messages) || !tokens || !n)
    return tsr_error_set(TSR_ERR_INVALID, "chat: NULL argument");
  if (!m->tokenizer)
    return tsr_error_set(TSR_ERR_STATE, "chat: the checkpoint has no tokenizer.json");
  char *text = NULL;
  tsr_status st = render(m, messages, n_messages, thinking, &text);
  if (st != TSR_OK) return st;
  st = tsr_tokenizer_encode(m->tokenizer, text, tokens, n);
  free(text);
  return st;
}
