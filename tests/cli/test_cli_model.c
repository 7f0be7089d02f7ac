/* tests/cli/test_cli_model.c — `tessera generate` and `tessera logits` as a user meets them, run
 * through the program at TSR_TOOL_PATH: --help, usage errors (exit 2, a message on stderr,
 * nothing on stdout) found before any model is loaded, a missing folder (2), a cap that refuses
 * (3); and what they produce: logits -o equal to the transformers golden, generated ids and text
 * equal to what the library's own session gives in this process, the stats on stderr, --json. */
#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "../model/glm_golden.h"
#include "tool_run.h"

static char tmp_dir[] = "/tmp/tessera-test-cli-model-XXXXXX";

/* Runs the program and checks its exit code and output (tool_expect_in); the run is freed
 * unless `keep`. */
static void expect_run(const char *const *args, int exit_code, const char *in_out,
                       const char *in_err, tool_run *keep) {
  tool_expect_in(tmp_dir, args, exit_code, in_out, in_err, keep);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define DENSE GLM_DATA "/dense/hf"
#define MOE GLM_DATA "/moe/mlx-q4g64"

static void check_usage(void) {
  expect_run(ARGS("generate", "--help"), 0, "usage: tessera generate", NULL, NULL);
  expect_run(ARGS("logits", "--help"), 0, "usage: tessera logits", NULL, NULL);
  expect_run(ARGS("generate", "--tokens", "1,2"), 2, "", "-m DIR is required", NULL);
  expect_run(ARGS("generate", "-m", MOE), 2, "", "exactly one of -p and --tokens", NULL);
  expect_run(ARGS("generate", "-m", MOE, "-p", "hi", "--tokens", "1"), 2, "",
             "exactly one of -p and --tokens", NULL);
  /* found before loading: the folder does not exist, yet the usage error is what is reported */
  static const char *const bad_tokens[] = {"1,x", "1,,2", "-1", "", "1,2,", "99999999999"};
  for (size_t i = 0; i < sizeof bad_tokens / sizeof bad_tokens[0]; i++)
    expect_run(ARGS("generate", "-m", "/nonexistent", "--tokens", bad_tokens[i]), 2, "", "--tokens",
               NULL);
  expect_run(ARGS("logits", "-m", "/nonexistent", "--tokens", "1,x", "-o", "x.npy"), 2, "",
             "--tokens", NULL);
  static const char *const bad_temps[] = {"-1", "abc", "nan", "inf", ""};
  for (size_t i = 0; i < sizeof bad_temps / sizeof bad_temps[0]; i++)
    expect_run(ARGS("generate", "-m", "/nonexistent", "--tokens", "1", "--temp", bad_temps[i]), 2,
               "", "--temp", NULL);
  static const char *const bad_top_p[] = {"0", "1.5", "-0.2", "x"};
  for (size_t i = 0; i < sizeof bad_top_p / sizeof bad_top_p[0]; i++)
    expect_run(ARGS("generate", "-m", "/nonexistent", "--tokens", "1", "--top-p", bad_top_p[i]), 2,
               "", "--top-p", NULL);
  expect_run(ARGS("generate", "-m", MOE, "--tokens", "1", "--frobnicate", "2"), 2, "",
             "--frobnicate", NULL);
  expect_run(ARGS("generate", "-m", MOE, "--tokens", "1", "--cap", "lots"), 2, "", "lots", NULL);
  expect_run(ARGS("logits", "-m", MOE, "--tokens", "1,2"), 2, "", "-o OUT.npy", NULL);
  expect_run(ARGS("generate", "-m", MOE, "--chat", "--tokens", "1"), 2, "", "--chat", NULL);
}

static void check_failures(void) {
  char missing[400];
  snprintf(missing, sizeof missing, "%s/no-such-model", tmp_dir);
  expect_run(ARGS("generate", "-m", missing, "--tokens", "1,2"), 2, "", "no-such-model", NULL);
  expect_run(ARGS("logits", "-m", missing, "--tokens", "1,2", "-o", "x.npy"), 2, "",
             "no-such-model", NULL);
  expect_run(ARGS("generate", "-m", MOE, "--tokens", "1,2", "--cap", "1K"), 3, "",
             "refused by the cap", NULL);
  expect_run(ARGS("logits", "-m", MOE, "--tokens", "1,2", "-o", "x.npy", "--cap", "1K"), 3, "",
             "refused by the cap", NULL);
  expect_run(ARGS("generate", "-m", MOE, "--tokens", "3,256"), 2, "", "token 256", NULL);
  expect_run(ARGS("generate", "-m", MOE, "-p", "hello"), 2, "", "no tokenizer.json", NULL);
  char bad_out[400];
  snprintf(bad_out, sizeof bad_out, "%s/no-such-folder/l.npy", tmp_dir);
  expect_run(ARGS("logits", "-m", MOE, "--tokens", "1,2", "-o", bad_out), 2, "", "no-such-folder",
             NULL);
}

/* ---- what the commands produce -------------------------------------------------------------- */

/* "a,b,c" of ids[0..n). */
static char *join_ids(const int32_t *ids, size_t n) {
  char *text = calloc(n * 12 + 1, 1);
  CHECK(text != NULL);
  for (size_t i = 0; i < n; i++)
    sprintf(text + strlen(text), "%s%d", i ? "," : "", ids[i]);
  return text;
}

static void check_logits(void) {
  enum { T = 12, V = 256 };
  int32_t *tokens = golden_i32(GLM_DATA "/dense", "tokens.npy", T);
  char *ids = join_ids(tokens, T), out[400];
  snprintf(out, sizeof out, "%s/logits.npy", tmp_dir);
  expect_run(ARGS("logits", "-m", DENSE, "--tokens", ids, "-o", out), 0, "", NULL, NULL);
  tsr_array *a = NULL;
  CHECK_OK(tsr_npy_load(&a, out));
  CHECK_EQ_INT(tsr_array_dtype(a), TSR_FLOAT32);
  CHECK_EQ_INT(tsr_array_ndim(a), 2);
  CHECK_EQ_INT(tsr_array_dim(a, 0), T);
  CHECK_EQ_INT(tsr_array_dim(a, 1), V);
  float *got = malloc(T * V * sizeof *got);
  CHECK_OK(tsr_array_read(a, got, T * V * sizeof *got));
  double *want = golden_f64(GLM_DATA "/dense", "logits_f64.npy", T * V);
  for (size_t i = 0; i < T * V; i++)
    if (!(fabs((double)got[i] - want[i]) <= 1e-4))
      CHECK_FAIL_("logits.npy [%zu, %zu] is %.7g, transformers %.7g", i / V, i % V, (double)got[i],
                  want[i]);
  tsr_array_release(a);
  free(got);
  free(want);
  free(ids);
  free(tokens);
}

/* Greedy ids after `prompt` as the library gives them (at most n, ending before a stop token). */
static size_t library_greedy(tsr_model *m, const int32_t *prompt, size_t n_prompt, size_t n,
                             int32_t *out) {
  tsr_session *s = NULL;
  CHECK_OK(tsr_session_new(&s, m, n_prompt + n));
  CHECK_OK(tsr_session_append(s, prompt, n_prompt));
  tsr_sampling greedy = {.temperature = 0, .top_p = 1};
  size_t count = 0;
  for (; count < n; count++) {
    CHECK_OK(tsr_session_sample(s, &greedy, &out[count]));
    if (tsr_model_is_stop_token(m, out[count])) break;
    CHECK_OK(tsr_session_append(s, &out[count], 1));
  }
  tsr_session_free(s);
  return count;
}

static void check_generate_ids(void) {
  int32_t prompt[3] = {5, 17, 42}, want[10];
  tsr_model *m = NULL;
  CHECK_OK(tsr_model_load(&m, MOE, NULL));
  size_t n = library_greedy(m, prompt, 3, 10, want);
  tsr_model_free(m);
  char line[200] = "";
  for (size_t i = 0; i < n; i++)
    sprintf(line + strlen(line), "%s%d", i ? " " : "", want[i]);
  strcat(line, "\n");
  tool_run run;
  expect_run(ARGS("generate", "-m", MOE, "--tokens", "5,17,42", "-n", "10"), 0, NULL,
             "prefill:", &run);
  if (strcmp(run.out, line) != 0) CHECK_FAIL_("stdout \"%s\", want \"%s\"", run.out, line);
  tool_run_free(&run);
}

/* The demo model's greedy text after "hello" as the library gives it (its ids in ids, *n). */
static char *library_text(const char *demo, int32_t *ids, size_t *n) {
  tsr_model *m = NULL;
  CHECK_OK(tsr_model_load(&m, demo, NULL));
  int32_t *prompt = NULL;
  size_t n_prompt = 0;
  CHECK_OK(tsr_model_encode(m, "hello", &prompt, &n_prompt));
  *n = library_greedy(m, prompt, n_prompt, 8, ids);
  char *text = NULL;
  CHECK_OK(tsr_model_decode(m, ids, *n, &text));
  tsr_model_free(m);
  free(prompt);
  return text;
}

static void check_generate_text(const char *demo) {
  int32_t ids[8];
  size_t n = 0;
  char *text = library_text(demo, ids, &n);
  tool_run run;
  expect_run(ARGS("generate", "-m", demo, "-p", "hello", "-n", "8"), 0, NULL, "tok/s", &run);
  size_t len = strlen(text);
  if (strncmp(run.out, text, len) != 0 || strcmp(run.out + len, "\n") != 0)
    CHECK_FAIL_("stdout \"%s\", want \"%s\\n\"", run.out, text);
  CHECK(strstr(run.err, "prefill:") && strstr(run.err, "decode:"));
  tool_run_free(&run);

  expect_run(ARGS("generate", "-m", demo, "-p", "hello", "-n", "8", "--json"), 0, "{", NULL, &run);
  cJSON *root = cJSON_Parse(run.out);
  if (!cJSON_IsObject(root)) CHECK_FAIL_("not one JSON object:\n%s", run.out);
  cJSON *tokens = cJSON_GetObjectItemCaseSensitive(root, "tokens");
  CHECK(cJSON_IsArray(tokens));
  CHECK_EQ_INT(cJSON_GetArraySize(tokens), n);
  for (size_t i = 0; i < n; i++)
    CHECK_EQ_INT(cJSON_GetArrayItem(tokens, (int)i)->valuedouble, ids[i]);
  cJSON *json_text = cJSON_GetObjectItemCaseSensitive(root, "text");
  CHECK(cJSON_IsString(json_text) && strcmp(json_text->valuestring, text) == 0);
  cJSON *rate = cJSON_GetObjectItemCaseSensitive(root, "decode_tokens_per_s");
  CHECK(cJSON_IsNumber(rate) && rate->valuedouble >= 0);
  cJSON *peak = cJSON_GetObjectItemCaseSensitive(root, "peak_backing_bytes");
  CHECK(cJSON_IsNumber(peak) && peak->valuedouble > 0);
  cJSON_Delete(root);
  tool_run_free(&run);
  free(text);
}

static void remove_tree(const char *dir) {
  char command[600];
  snprintf(command, sizeof command, "rm -rf '%s'", dir);
  CHECK_EQ_INT(system(command), 0);
}

int main(void) {
  if (!mkdtemp(tmp_dir)) CHECK_FAIL_("mkdtemp failed");
  check_usage();
  check_failures();
  check_logits();
  check_generate_ids();
  char demo[400];
  snprintf(demo, sizeof demo, "%s/demo", tmp_dir);
  expect_run(ARGS("demo-model", "-o", demo), 0, NULL, NULL, NULL);
  check_generate_text(demo);
  remove_tree(tmp_dir);
  tsr_memory_clear_cache((tsr_device){TSR_CPU, 0});
  CHECK_NO_LEAKS();
  tsr_shutdown();
  printf("test_cli_model: ok\n");
  return 0;
}
