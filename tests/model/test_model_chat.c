/* tests/model/test_model_chat.c — GLM's chat format and the tokenizer through the model API, on
 * the demo model (written by `tessera demo-model`, the program at TSR_TOOL_PATH): the ids start
 * with [gMASK]<sop>, hold each role's token in order and end with <|assistant|> (or the empty
 * think block when thinking is off), and decode back to the rendered text; bad roles are refused;
 * stop tokens come from the config; and a checkpoint without tokenizer.json refuses text with
 * TSR_ERR_STATE. */
#include "model_fixture.h"

static tsr_model *demo;

/* Writes the demo model into `dir` with the tessera program. */
static void write_demo(const char *dir) {
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    if (!freopen("/dev/null", "w", stdout)) _exit(126);
    execl(TSR_TOOL_PATH, "tessera", "demo-model", "-o", dir, (char *)NULL);
    _exit(127);
  }
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    CHECK_FAIL_("%s demo-model -o %s failed (status %d)", TSR_TOOL_PATH, dir, status);
}

/* The one id `text` encodes to (a special token). */
static int32_t special_id(const char *text) {
  int32_t *ids = NULL;
  size_t n = 0;
  CHECK_OK(tsr_model_encode(demo, text, &ids, &n));
  if (n != 1) CHECK_FAIL_("'%s' encodes to %zu ids, want one", text, n);
  int32_t id = ids[0];
  free(ids);
  return id;
}

static ptrdiff_t find_id(const int32_t *ids, size_t n, int32_t id, size_t from) {
  for (size_t i = from; i < n; i++)
    if (ids[i] == id) return (ptrdiff_t)i;
  return -1;
}

static void expect_decodes_to(const int32_t *ids, size_t n, const char *want) {
  char *text = NULL;
  CHECK_OK(tsr_model_decode(demo, ids, n, &text));
  if (strcmp(text, want) != 0) CHECK_FAIL_("decoded \"%s\", want \"%s\"", text, want);
  free(text);
}

static void check_chat(void) {
  tsr_chat_message messages[2] = {{"system", "Be brief."}, {"user", "What is 2 + 2?"}};
  int32_t *ids = NULL;
  size_t n = 0;
  CHECK_OK(tsr_model_chat_encode(demo, messages, 2, true, &ids, &n));
  CHECK(n > 6);
  CHECK_EQ_INT(ids[0], special_id("[gMASK]"));
  CHECK_EQ_INT(ids[1], special_id("<sop>"));
  ptrdiff_t system = find_id(ids, n, special_id("<|system|>"), 2);
  CHECK(system == 2);
  ptrdiff_t user = find_id(ids, n, special_id("<|user|>"), (size_t)system + 1);
  CHECK(user > system + 1);
  CHECK_EQ_INT(ids[n - 1], special_id("<|assistant|>"));
  CHECK(find_id(ids, n, special_id("<think>"), 0) < 0);
  expect_decodes_to(ids, n,
                    "[gMASK]<sop><|system|>\nBe brief.<|user|>\nWhat is 2 + 2?<|assistant|>");

  int32_t *quiet = NULL;
  size_t quiet_n = 0;
  CHECK_OK(tsr_model_chat_encode(demo, messages, 2, false, &quiet, &quiet_n));
  CHECK(quiet_n > n);
  CHECK(memcmp(quiet, ids, n * sizeof *ids) == 0); /* the same, then the empty think block */
  CHECK(find_id(quiet, quiet_n, special_id("<think>"), n) >= 0);
  CHECK_EQ_INT(quiet[quiet_n - 2], special_id("</think>"));
  expect_decodes_to(quiet + n, quiet_n - n, "\n<think></think>\n");
  free(quiet);
  free(ids);

  CHECK_OK(tsr_model_chat_encode(demo, NULL, 0, true, &ids, &n)); /* no messages: the preamble */
  expect_decodes_to(ids, n, "[gMASK]<sop><|assistant|>");
  free(ids);
}

static void check_chat_errors(void) {
  int32_t *ids = (int32_t *)&ids;
  size_t n = 99;
  tsr_chat_message robot[2] = {{"user", "hi"}, {"robot", "beep"}};
  CHECK_STATUS(tsr_model_chat_encode(demo, robot, 2, true, &ids, &n), TSR_ERR_INVALID);
  CHECK_MESSAGE("message 1 has role \"robot\"");
  tsr_chat_message no_role = {NULL, "hi"}, no_content = {"user", NULL};
  CHECK_STATUS(tsr_model_chat_encode(demo, &no_role, 1, true, &ids, &n), TSR_ERR_INVALID);
  CHECK_MESSAGE("role NULL");
  CHECK_STATUS(tsr_model_chat_encode(demo, &no_content, 1, true, &ids, &n), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_model_chat_encode(demo, NULL, 1, true, &ids, &n), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_model_chat_encode(NULL, robot, 1, true, &ids, &n), TSR_ERR_INVALID);
  CHECK_STATUS(tsr_model_chat_encode(demo, robot, 1, true, NULL, &n), TSR_ERR_INVALID);
  CHECK(ids == (int32_t *)&ids && n == 99); /* untouched */
}

static void check_text(void) {
  int32_t *ids = NULL;
  size_t n = 0;
  CHECK_OK(tsr_model_encode(demo, "hello world", &ids, &n));
  CHECK(n >= 1);
  for (size_t i = 0; i < n; i++)
    CHECK(ids[i] >= 0 && ids[i] < tsr_model_vocab_size(demo));
  expect_decodes_to(ids, n, "hello world");
  free(ids);
  CHECK(tsr_model_is_stop_token(demo, special_id("<|endoftext|>")));
  CHECK(tsr_model_is_stop_token(demo, special_id("<|user|>")));
  CHECK(tsr_model_is_stop_token(demo, special_id("<|observation|>")));
  CHECK(!tsr_model_is_stop_token(demo, special_id("<|assistant|>")));
  CHECK(!tsr_model_is_stop_token(NULL, 0));
}

static void check_no_tokenizer(void) {
  tsr_model *m = NULL;
  CHECK_OK(tsr_model_load(&m, FX_MOE_Q4, NULL));
  CHECK(!tsr_model_has_tokenizer(m));
  int32_t *ids = NULL;
  size_t n = 0;
  char *text = NULL;
  CHECK_STATUS(tsr_model_encode(m, "hello", &ids, &n), TSR_ERR_STATE);
  CHECK_MESSAGE("no tokenizer.json");
  CHECK_STATUS(tsr_model_decode(m, (int32_t[]){1, 2}, 2, &text), TSR_ERR_STATE);
  CHECK_MESSAGE("no tokenizer.json");
  tsr_chat_message user = {"user", "hello"};
  CHECK_STATUS(tsr_model_chat_encode(m, &user, 1, true, &ids, &n), TSR_ERR_STATE);
  CHECK_MESSAGE("no tokenizer.json");
  CHECK(ids == NULL && text == NULL);
  CHECK(tsr_model_is_stop_token(m, 1)); /* the config's eos_token_id */
  CHECK(!tsr_model_is_stop_token(m, 2));
  tsr_model_free(m);
}

int main(void) {
  fx_make_root("model-chat", fx_root);
  const char *dir = fx_path(fx_root, "demo");
  write_demo(dir);
  CHECK_OK(tsr_model_load(&demo, dir, NULL));
  CHECK(tsr_model_has_tokenizer(demo));
  check_chat();
  check_chat_errors();
  check_text();
  tsr_model_free(demo);
  check_no_tokenizer();
  fx_remove_tree(fx_root);
  tsr_memory_clear_cache(fx_cpu);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  printf("test_model_chat: ok\n");
  return 0;
}
