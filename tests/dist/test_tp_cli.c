/* tests/dist/test_tp_cli.c — `tessera generate` and `tessera logits` with --group mpi under
 * `mpirun -np 2` and `-np 4` (this test is one plain process that launches them): the greedy
 * tokens printed are the single-process run's, printed once (rank 0 prints, the others are
 * silent: one stats line on stderr), the logits file rank 0 writes is the single-process one
 * within 2e-4 (test_mpi_model.c derives that bound), and a model that does not split exits 2
 * naming the tensor. Also on `make run`'s demo model (`tessera demo-model`: 4-bit g64 MoE, 16
 * experts, QK-norm), the quantized model that splits 4 ways: its 355-entry vocabulary does not
 * divide, so lm_head is replicated, and over 4 ranks its 128-wide shared expert (2 groups) lives
 * on rank 0. */
#include <dirent.h>
#include <math.h>

#include <cjson/cJSON.h>

#include "cli/tool_run.h"
#include "model/glm_golden.h"

#define TOKENS "5,6,7,8,9,10,11,12"
enum { T = 8 };

static char tmp_dir[] = "/tmp/tessera-test-tp-cli-XXXXXX";

/* `mpirun -np ranks tessera args...` (ranks 0: the program alone), streams captured. */
static tool_run run_ranks(int ranks, const char *const *args) {
  if (ranks == 0) return run_tool_in(tmp_dir, args);
  char np[8];
  snprintf(np, sizeof np, "%d", ranks);
  const char *argv[32] = {TSR_MPIEXEC, "--allow-run-as-root", "--oversubscribe", "-np",
                          np,          TSR_TOOL_PATH};
  int argc = 6;
  for (int i = 0; args[i] && argc < 31; i++)
    argv[argc++] = args[i];
  argv[argc] = NULL;
  return run_argv_in(tmp_dir, argv);
}

static void expect_exit(const tool_run *run, int code, const char *what) {
  if (run->exit_code != code)
    CHECK_FAIL_("%s: exit %d, want %d\n--- stdout:\n%s--- stderr:\n%s---", what, run->exit_code,
                code, run->out, run->err);
}

static int count_of(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
    n++;
  return n;
}

static void check_generate(const char *model, int ranks) {
  const char *const args[] = {"generate", "-m", model,     "--tokens", TOKENS,
                              "-n",       "12", "--group", "mpi",      NULL};
  const char *const alone_args[] = {"generate", "-m", model, "--tokens", TOKENS, "-n", "12", NULL};
  tool_run alone = run_ranks(0, alone_args), split = run_ranks(ranks, args);
  expect_exit(&alone, 0, "generate alone");
  expect_exit(&split, 0, "generate --group mpi");
  if (strcmp(alone.out, split.out) != 0)
    CHECK_FAIL_("%s, %d ranks: printed \"%s\", alone \"%s\"", model, ranks, split.out, alone.out);
  CHECK_EQ_INT(count_of(split.err, "prefill:"), 1); /* rank 0 alone reports */
  printf("  generate %d ranks (%s): the same %zu bytes\n", ranks, model, strlen(split.out));
  tool_run_free(&alone);
  tool_run_free(&split);
}

static float *read_logits(const char *path, int64_t vocab) {
  tsr_array *a = NULL;
  size_t n = (size_t)(T * vocab);
  CHECK_OK(tsr_npy_load(&a, path));
  CHECK_EQ_INT(tsr_array_dim(a, 0), T);
  CHECK_EQ_INT(tsr_array_dim(a, 1), vocab);
  float *x = malloc(n * sizeof *x);
  CHECK_OK(tsr_array_read(a, x, n * sizeof *x));
  tsr_array_release(a);
  return x;
}

static void check_logits(const char *model, int64_t vocab, int ranks) {
  char alone_path[300], split_path[300];
  snprintf(alone_path, sizeof alone_path, "%s/alone.npy", tmp_dir);
  snprintf(split_path, sizeof split_path, "%s/split.npy", tmp_dir);
  const char *const alone_args[] = {"logits", "-m", model,      "--tokens",
                                    TOKENS,   "-o", alone_path, NULL};
  const char *const args[] = {"logits", "-m",       model,     "--tokens", TOKENS,
                              "-o",     split_path, "--group", "mpi",      NULL};
  tool_run alone = run_ranks(0, alone_args), split = run_ranks(ranks, args);
  expect_exit(&alone, 0, "logits alone");
  expect_exit(&split, 0, "logits --group mpi");
  float *want = read_logits(alone_path, vocab), *got = read_logits(split_path, vocab);
  double worst = 0;
  for (size_t i = 0; i < (size_t)(T * vocab); i++)
    worst = fmax(worst, fabs((double)got[i] - (double)want[i]));
  if (!(worst <= 2e-4)) CHECK_FAIL_("logits, %d ranks: %.3g from the single process", ranks, worst);
  printf("  logits %d ranks (%s): max |diff| %.2e\n", ranks, model, worst);
  free(want);
  free(got);
  tool_run_free(&alone);
  tool_run_free(&split);
}

/* `tessera demo-model -o tmp_dir/demo`, once. */
static const char *demo_model(void) {
  static char dir[300];
  snprintf(dir, sizeof dir, "%s/demo", tmp_dir);
  const char *const args[] = {"demo-model", "-o", dir, NULL};
  tool_run run = run_ranks(0, args);
  expect_exit(&run, 0, "demo-model");
  tool_run_free(&run);
  return dir;
}

static double number_of(const cJSON *o, const char *key) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(item)) CHECK_FAIL_("report: no number \"%s\"", key);
  return item->valuedouble;
}

/* The --json reports' linears: the same names, shapes, expert and value counts, and 4- and 8-bit
   errors within 2e-3 relative (test_mpi_calibrate derives that bound). The demo model's routed
   down_proj (128 inputs) is weighed here with channel squares summed over the ranks: a rank's
   own rows alone would give another mean square and another error. */
static void same_linears(const char *split_out, const char *alone_out, const char *what) {
  cJSON *split = cJSON_Parse(split_out), *alone = cJSON_Parse(alone_out);
  CHECK(split && alone);
  const cJSON *ls = cJSON_GetObjectItemCaseSensitive(split, "linears");
  const cJSON *la = cJSON_GetObjectItemCaseSensitive(alone, "linears");
  CHECK_EQ_INT(cJSON_GetArraySize(ls), cJSON_GetArraySize(la));
  static const char *const exact[5] = {"in_features", "out_features", "experts", "values", "bits"};
  for (int i = 0; i < cJSON_GetArraySize(la); i++) {
    const cJSON *s = cJSON_GetArrayItem(ls, i), *a = cJSON_GetArrayItem(la, i);
    const char *name = cJSON_GetObjectItemCaseSensitive(a, "name")->valuestring;
    CHECK(strcmp(cJSON_GetObjectItemCaseSensitive(s, "name")->valuestring, name) == 0);
    for (int k = 0; k < 5; k++)
      if (number_of(s, exact[k]) != number_of(a, exact[k]))
        CHECK_FAIL_("%s: %s: %s %g, alone %g", what, name, exact[k], number_of(s, exact[k]),
                    number_of(a, exact[k]));
    for (int bits = 4; bits <= 8; bits += 4) {
      const char *key = bits == 4 ? "error_4bit" : "error_8bit";
      double got = number_of(s, key), want = number_of(a, key);
      if (!(fabs(got - want) <= 2e-3 * fabs(want)))
        CHECK_FAIL_("%s: %s: %s %.9g, alone %.9g", what, name, key, got, want);
    }
  }
  cJSON_Delete(split);
  cJSON_Delete(alone);
}

/* calibrate --group on `model`: rank 0 alone prints the report, with every linear the single
   process reports, the same shapes, value counts and errors (the statistics themselves are
   compared in test_mpi_calibrate), and the recipe rank 0 writes with --bits-budget is the single
   process's, byte for byte. */
static void check_calibrate(const char *model, int ranks) {
  char alone_path[300], split_path[300];
  snprintf(alone_path, sizeof alone_path, "%s/alone.json", tmp_dir);
  snprintf(split_path, sizeof split_path, "%s/split.json", tmp_dir);
  const char *const alone_args[] = {"calibrate", "-m",       model,    "--cap",         "1G",
                                    "--tokens",  TOKENS,     "--json", "--bits-budget", "6",
                                    "--recipe",  alone_path, NULL};
  const char *const args[] = {"calibrate", "-m",       model,     "--cap",         "1G",
                              "--tokens",  TOKENS,     "--json",  "--bits-budget", "6",
                              "--recipe",  split_path, "--group", "mpi",           NULL};
  tool_run alone = run_ranks(0, alone_args), split = run_ranks(ranks, args);
  expect_exit(&alone, 0, "calibrate alone");
  expect_exit(&split, 0, "calibrate --group mpi");
  int linears = count_of(alone.out, "\"name\"");
  CHECK(linears > 0);
  CHECK_EQ_INT(count_of(split.out, "\"name\""), linears);
  CHECK_EQ_INT(count_of(split.out, "gate_up_proj"), count_of(alone.out, "gate_up_proj"));
  CHECK_EQ_INT(count_of(split.err, "weighing"), 1); /* rank 0 alone speaks */
  same_linears(split.out, alone.out, model);
  char *want = tool_read_file(alone_path), *got = tool_read_file(split_path);
  CHECK(want && got && count_of(want, "\"group_size\"") > 1); /* some linears at 8 bits */
  if (strcmp(want, got) != 0)
    CHECK_FAIL_("%s, %d ranks: recipe\n%s\nalone\n%s", model, ranks, got, want);
  printf(
      "  calibrate %d ranks (%s): rank 0 reports the %d linears, the same recipe (%d at 8 "
      "bits)\n",
      ranks, model, linears, count_of(want, "\"group_size\"") - 1);
  free(want);
  free(got);
  unlink(alone_path);
  unlink(split_path);
  tool_run_free(&alone);
  tool_run_free(&split);
}

static void check_refused(int ranks) {
  const char *const args[] = {
      "generate", "-m", GLM_DATA "/moe/mlx-q4g64", "--tokens", "5", "--group", "mpi", NULL};
  tool_run run = run_ranks(ranks, args);
  expect_exit(&run, 2, "an unsplittable model");
  CHECK(strstr(run.err, "model.layers.0.self_attn.o_proj") != NULL);
  CHECK(run.out[0] == '\0');
  tool_run_free(&run);
}

int main(void) {
  CHECK(mkdtemp(tmp_dir) != NULL);
  const char *demo = demo_model();
  static const int rank_counts[2] = {2, 4};
  for (int i = 0; i < 2; i++) {
    check_generate(GLM_DATA "/moe/hf", rank_counts[i]);
    check_logits(GLM_DATA "/dense/mlx-f32", 256, rank_counts[i]);
    check_generate(demo, rank_counts[i]);
    check_logits(demo, 355, rank_counts[i]);
    check_refused(rank_counts[i]);
    check_calibrate(GLM_DATA "/dense/hf", rank_counts[i]);
    check_calibrate(GLM_DATA "/moe/hf", rank_counts[i]);
    check_calibrate(demo, rank_counts[i]);
  }
  char path[600];
  static const char *const files[] = {"stdout", "stderr", "alone.npy", "split.npy"};
  for (int i = 0; i < 4; i++) {
    snprintf(path, sizeof path, "%s/%s", tmp_dir, files[i]);
    unlink(path);
  }
  DIR *d = opendir(demo);
  for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
    snprintf(path, sizeof path, "%s/%s", demo, e->d_name);
    if (e->d_name[0] != '.') unlink(path);
  }
  if (d) closedir(d);
  rmdir(demo);
  rmdir(tmp_dir);
  tsr_shutdown();
  return 0;
}
