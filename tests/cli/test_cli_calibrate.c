/* tests/cli/test_cli_calibrate.c — `tessera calibrate` as a user meets it, through the program at
 * TSR_TOOL_PATH: --help; every bad input (exit 2, its message on stderr, nothing on stdout), most
 * found before any model loads; a folder that is missing or not a folder (2); a cap too small for
 * the weights (3); the need read from one run's --json, then a cap one byte below it (3, saying
 * the bytes it needed, stdout empty, the recipe file not written) and at it (0), and a cap that
 * fits the prompts but not the recipe's weighing (3, no file); the table, the JSON object and the
 * recipe file, which convert takes; prompts as text on the demo model, which has a tokenizer. The
 * program runs with the buffer cache off (TSR_CACHE_LIMIT=0), so the peak it reports is exactly
 * the least cap that works (docs/API-additions.md, "Step 8 (calibrate)"). */
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "../model/glm_golden.h"
#include "tool_run.h"

static char tmp_dir[] = "/tmp/tessera-test-cli-calibrate-XXXXXX";

static void expect_run(const char *const *args, int exit_code, const char *in_out,
                       const char *in_err, tool_run *keep) {
  tool_expect_in(tmp_dir, args, exit_code, in_out, in_err, keep);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define MOE GLM_DATA "/moe/hf"
#define DENSE GLM_DATA "/dense/hf"
#define PROMPTS "--tokens", "1,2,3,4,5,6,7,8", "--tokens", "9,10,11,12"

static const char *tmp_path(const char *name) {
  static char bufs[4][512];
  static int next;
  char *buf = bufs[next++ % 4];
  snprintf(buf, sizeof bufs[0], "%s/%s", tmp_dir, name);
  return buf;
}

static bool exists(const char *path) {
  struct stat info;
  return stat(path, &info) == 0;
}

static void check_usage(void) {
  expect_run(ARGS("calibrate", "--help"), 0, "usage: tessera calibrate", NULL, NULL);
  expect_run(ARGS("calibrate", "--cap", "1G", "--tokens", "1"), 2, "", "-m DIR is required", NULL);
  expect_run(ARGS("calibrate", "-m", MOE, "--tokens", "1"), 2, "", "--cap BYTES is required", NULL);
  static const char *const bad_caps[] = {"lots", "0", "-5", "1.5X", "", "1e400"};
  for (size_t i = 0; i < sizeof bad_caps / sizeof bad_caps[0]; i++)
    expect_run(ARGS("calibrate", "-m", "/nonexistent", "--cap", bad_caps[i], "--tokens", "1"), 2,
               "", "bad --cap", NULL);
  expect_run(ARGS("calibrate", "-m", MOE, "--cap", "1G"), 2, "", "at least one prompt", NULL);
  static const char *const bad_tokens[] = {"1,x", "", "-1", "1,,2"};
  for (size_t i = 0; i < sizeof bad_tokens / sizeof bad_tokens[0]; i++)
    expect_run(ARGS("calibrate", "-m", "/nonexistent", "--cap", "1G", "--tokens", bad_tokens[i]), 2,
               "", "--tokens", NULL);
  static const char *const bad_budgets[] = {"4.49", "8.51", "0", "-5", "x", "nan", "inf", ""};
  for (size_t i = 0; i < sizeof bad_budgets / sizeof bad_budgets[0]; i++)
    expect_run(ARGS("calibrate", "-m", "/nonexistent", "--cap", "1G", "--tokens", "1",
                    "--bits-budget", bad_budgets[i]),
               2, "", "bad --bits-budget", NULL);
  expect_run(ARGS("calibrate", "-m", MOE, "--cap", "1G", "--tokens", "1", "--recipe", "r.json"), 2,
             "", "--recipe needs --bits-budget", NULL);
  expect_run(ARGS("calibrate", "-m", MOE, "--cap", "1G", "--tokens", "1", "--frobnicate", "2"), 2,
             "", "--frobnicate", NULL);
  expect_run(ARGS("calibrate", "-m", MOE, "--cap", "1G", "--tokens", "1", "--device", "tpu"), 2, "",
             "bad --device", NULL);
  expect_run(ARGS("calibrate", "-m", MOE, "--cap"), 2, "", "missing value", NULL);
}

static void check_bad_models(void) {
  expect_run(ARGS("calibrate", "-m", tmp_path("no-such-model"), "--cap", "1G", "--tokens", "1"), 2,
             "", "no-such-model", NULL);
  FILE *f = fopen(tmp_path("a-file"), "w");
  CHECK(f != NULL);
  fclose(f);
  expect_run(ARGS("calibrate", "-m", tmp_path("a-file"), "--cap", "1G", "--tokens", "1"), 2, "",
             "is not a folder", NULL);
  CHECK_EQ_INT(mkdir(tmp_path("empty"), 0700), 0);
  expect_run(ARGS("calibrate", "-m", tmp_path("empty"), "--cap", "1G", "--tokens", "1"), 2, "",
             "config.json", NULL);
  expect_run(ARGS("calibrate", "-m", MOE, "--cap", "1G", "-p", "hello"), 2, "", "no tokenizer.json",
             NULL);
  expect_run(ARGS("calibrate", "-m", MOE, "--cap", "1G", "--tokens", "3,256"), 2, "", "token 256",
             NULL);
  expect_run(ARGS("calibrate", "-m", MOE, "--cap", "100K", "--tokens", "1"), 3, "",
             "too small for loading the weights", NULL);
  expect_run(ARGS("calibrate", "-m", MOE, "--cap", "1G", "--tokens", "1", "--bits-budget", "5",
                  "--recipe", tmp_path("no-such-folder/r.json")),
             2, "", "cannot write", NULL);
}

/* The JSON object of a successful run. */
static cJSON *run_json(const char *const *args) {
  tool_run run;
  expect_run(args, 0, "\"linears\"", "prompt 2 of 2", &run);
  cJSON *root = cJSON_Parse(run.out);
  if (!root) CHECK_FAIL_("stdout is not JSON:\n%s", run.out);
  tool_run_free(&run);
  return root;
}

static double number(const cJSON *obj, const char *key) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!cJSON_IsNumber(item)) CHECK_FAIL_("no number \"%s\"", key);
  return item->valuedouble;
}

/* The linears of the MoE model, each with ordered statistics of 12 tokens. */
static void check_linears(const cJSON *root) {
  const cJSON *linears = cJSON_GetObjectItemCaseSensitive(root, "linears");
  CHECK_EQ_INT(cJSON_GetArraySize(linears), 28);
  const cJSON *first = cJSON_GetArrayItem(linears, 0);
  CHECK(strcmp(cJSON_GetObjectItem(first, "name")->valuestring,
               "model.layers.0.self_attn.q_proj") == 0);
  const cJSON *lin;
  cJSON_ArrayForEach(lin, linears) {
    double absmax = number(lin, "absmax"), p999 = number(lin, "p99_9"), p99 = number(lin, "p99"),
           p50 = number(lin, "p50");
    if (!(absmax >= p999 && p999 >= p99 && p99 >= p50 && p50 > 0))
      CHECK_FAIL_("%s: absmax %g p99.9 %g p99 %g p50 %g",
                  cJSON_GetObjectItem(lin, "name")->valuestring, absmax, p999, p99, p50);
    if (number(lin, "experts") == 0)
      CHECK_EQ_U64(number(lin, "values"), 12 * number(lin, "in_features"));
  }
}

/* Measures the need, then runs just below it (refused) and at it (calibrates). */
static void check_cap(void) {
  cJSON *root = run_json(ARGS("calibrate", "-m", MOE, "--cap", "1G", PROMPTS, "--json"));
  check_linears(root);
  CHECK_EQ_U64(number(root, "cap_bytes"), 1u << 30);
  CHECK_EQ_U64(number(root, "tokens"), 12);
  uint64_t need = (uint64_t)number(root, "peak_backing_bytes");
  cJSON_Delete(root);
  char below[32], at[32], needed[64];
  snprintf(below, sizeof below, "%llu", (unsigned long long)(need - 1));
  snprintf(at, sizeof at, "%llu", (unsigned long long)need);
  snprintf(needed, sizeof needed, "it needed at least %llu bytes", (unsigned long long)need);
  const char *recipe = tmp_path("refused.json");
  expect_run(ARGS("calibrate", "-m", MOE, "--cap", below, PROMPTS, "--bits-budget", "5", "--recipe",
                  recipe),
             3, "", needed, NULL);
  expect_run(ARGS("calibrate", "-m", MOE, "--cap", below, PROMPTS, "--json"), 3, "",
             "refused by the cap", NULL);
  CHECK(!exists(recipe));
  root = run_json(ARGS("calibrate", "-m", MOE, "--cap", at, PROMPTS, "--json"));
  if (number(root, "peak_backing_bytes") > (double)need) CHECK_FAIL_("the peak passed the cap");
  cJSON_Delete(root);
  expect_run(ARGS("calibrate", "-m", MOE, "--cap", at, PROMPTS), 0, "peak backing", NULL, NULL);
  expect_run(ARGS("calibrate", "-m", MOE, "--cap", at, PROMPTS), 0,
             "layer 2                                  backing in use up to", NULL, NULL);
  expect_run(ARGS("calibrate", "-m", MOE, "--cap", at, PROMPTS), 0, "\n  mlp.switch_mlp.down_proj ",
             NULL, NULL);
  printf("  need %llu bytes: exit 3 one byte below, 0 at it\n", (unsigned long long)need);
}

/* Weighing the weights for a recipe needs more than the prompts on the dense model: a cap at the
 * prompts' need runs them and then refuses the recipe, saying so, and writes no file. */
static void check_recipe_cap(void) {
  cJSON *root = run_json(ARGS("calibrate", "-m", DENSE, "--cap", "1G", PROMPTS, "--json"));
  char cap[32];
  snprintf(cap, sizeof cap, "%llu", (unsigned long long)number(root, "peak_backing_bytes"));
  cJSON_Delete(root);
  const char *recipe = tmp_path("too-small.json");
  expect_run(ARGS("calibrate", "-m", DENSE, "--cap", cap, PROMPTS, "--bits-budget", "5", "--recipe",
                  recipe),
             3, "", "too small for proposing the recipe", NULL);
  CHECK(!exists(recipe));
  expect_run(ARGS("calibrate", "-m", DENSE, "--cap", cap, PROMPTS), 0, "peak backing", NULL, NULL);
  printf("  a cap of %s bytes runs the prompts and refuses the recipe (exit 3)\n", cap);
}

/* The recipe file's block (parsed once, kept for the test's life). */
static const cJSON *from_file_again(const char *path) {
  static cJSON *block;
  if (!block) {
    char *text = tool_read_file(path);
    block = cJSON_Parse(text);
    free(text);
    CHECK(block != NULL);
  }
  return block;
}

static void check_recipe(void) {
  const char *recipe = tmp_path("recipe.json");
  cJSON *root = run_json(ARGS("calibrate", "-m", DENSE, "--cap", "1G", PROMPTS, "--bits-budget",
                              "6", "--recipe", recipe, "--json"));
  double bits = number(root, "bits_per_weight");
  if (!(bits > 4.5 && bits <= 6)) CHECK_FAIL_("bits per weight %g", bits);
  char *written = tool_read_file(recipe);
  cJSON *from_file = cJSON_Parse(written);
  CHECK(from_file != NULL);
  CHECK(cJSON_Compare(from_file, cJSON_GetObjectItem(root, "quantization"), true));
  CHECK_EQ_INT(cJSON_GetObjectItem(from_file, "bits")->valueint, 4);
  cJSON_Delete(from_file);
  free(written);
  cJSON_Delete(root);
  expect_run(ARGS("calibrate", "-m", DENSE, "--cap", "1G", PROMPTS, "--bits-budget", "8.5"), 0,
             "recipe: 8.500 bits per weight", NULL, NULL);
  /* convert takes it, and the converted checkpoint loads with 8 and 4 bits where proposed */
  expect_run(
      ARGS("convert", "--hf", DENSE, "-o", tmp_path("mixed"), "--recipe", recipe, "--bits", "8"), 2,
      "", "leave out --mode, --bits and --group-size", NULL);
  expect_run(ARGS("convert", "--hf", DENSE, "-o", tmp_path("mixed"), "--recipe", recipe), 0, "",
             NULL, NULL);
  cJSON *mixed =
      run_json(ARGS("calibrate", "-m", tmp_path("mixed"), "--cap", "1G", PROMPTS, "--json"));
  const cJSON *lin;
  int eights = 0, fours = 0;
  cJSON_ArrayForEach(lin, cJSON_GetObjectItem(mixed, "linears")) {
    const cJSON *entry =
        cJSON_GetObjectItem(from_file_again(recipe), cJSON_GetObjectItem(lin, "name")->valuestring);
    int want = entry ? 8 : 4;
    CHECK_EQ_INT(number(lin, "bits"), want);
    eights += want == 8;
    fours += want == 4;
  }
  CHECK(eights > 0 && fours > 0);
  cJSON_Delete(mixed);
  printf("  recipe at 6 bits per weight: %.3f, written whole\n", bits);
}

static void check_text_prompts(void) {
  const char *demo = tmp_path("demo");
  expect_run(ARGS("demo-model", "-o", demo), 0, NULL, NULL, NULL);
  expect_run(ARGS("calibrate", "-m", demo, "--cap", "1G", "-p", "The capital of France is", "-p",
                  "hello", "--tokens", "5,6"),
             0, "3 prompts", "prompt 3 of 3", NULL);
  expect_run(ARGS("calibrate", "-m", demo, "--cap", "1G", "-p", ""), 2, "", "encodes to no tokens",
             NULL);
}

static void remove_tmp(void) {
  char command[600];
  snprintf(command, sizeof command, "rm -rf '%s'", tmp_dir);
  CHECK_EQ_INT(system(command), 0);
}

int main(void) {
  CHECK(mkdtemp(tmp_dir) != NULL);
  setenv("TSR_CACHE_LIMIT", "0", 1);
  check_usage();
  check_bad_models();
  check_cap();
  check_recipe_cap();
  check_recipe();
  check_text_prompts();
  remove_tmp();
  printf("test_cli_calibrate: ok\n");
  return 0;
}
