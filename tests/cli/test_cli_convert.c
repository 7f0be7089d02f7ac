/* tests/cli/test_cli_convert.c — `tessera convert` as a user meets it, through the program at
 * TSR_TOOL_PATH: --help (exit 0, usage on stdout), usage errors found before anything is read
 * (exit 2, a message on stderr, nothing on stdout, no output folder), bad input (a folder without
 * config.json, an unknown model_type, an existing output: exit 2 naming it), and a conversion
 * (exit 0, nothing on stdout, "wrote" on stderr, a folder that loads, as many shards as
 * --shard-size asks for). */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../model/model_fixture.h"
#include "tool_run.h"

/* Runs the program and checks its exit code and output (tool_expect_in). */
static void expect_run(const char *const *args, int exit_code, const char *in_out,
                       const char *in_err) {
  tool_expect_in(fx_root, args, exit_code, in_out, in_err, NULL);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static bool exists(const char *path) {
  struct stat info;
  return stat(path, &info) == 0;
}

static void check_usage(const char *out) {
  expect_run(ARGS("convert", "--help"), 0, "usage: tessera convert", NULL);
  expect_run(ARGS("--help"), 0, "convert", NULL);
  expect_run(ARGS("convert", "--hf", FX_MOE_HF), 2, "", "--hf DIR and -o OUT are required");
  expect_run(ARGS("convert", "-o", out), 2, "", "--hf DIR and -o OUT are required");
  expect_run(ARGS("convert", "--hf", FX_MOE_HF, "-o", out, "--mode", "int4"), 2, "", "--mode");
  expect_run(ARGS("convert", "--hf", FX_MOE_HF, "-o", out, "--bits", "x"), 2, "", "--bits");
  expect_run(ARGS("convert", "--hf", FX_MOE_HF, "-o", out, "--group-size", "0"), 2, "",
             "--group-size");
  expect_run(ARGS("convert", "--hf", FX_MOE_HF, "-o", out, "--dtype", "int8"), 2, "", "--dtype");
  expect_run(ARGS("convert", "--hf", FX_MOE_HF, "-o", out, "--shard-size", "-1"), 2, "",
             "--shard-size");
  expect_run(ARGS("convert", "--hf", FX_MOE_HF, "-o", out, "--frobnicate", "1"), 2, "",
             "unknown option");
  expect_run(ARGS("convert", "--hf", FX_MOE_HF, "-o", out, "--bits", "7"), 2, "", "bits 7");
  CHECK(!exists(out));
}

static void check_bad_input(const char *out) {
  expect_run(ARGS("convert", "--hf", "/nonexistent", "-o", out), 2, "", "/nonexistent/config.json");
  char dir[512];
  fx_copy_checkpoint(FX_MOE_HF, fx_root, "llama", dir);
  fx_config_set(dir, "model_type", cJSON_CreateString("llama"));
  expect_run(ARGS("convert", "--hf", dir, "-o", out), 2, "", "model_type \"llama\"");
  expect_run(ARGS("convert", "--hf", GLM_DATA "/moe/mlx-q4g64", "-o", out), 2, "",
             "already quantized");
  CHECK(!exists(out));
  expect_run(ARGS("convert", "--hf", FX_MOE_HF, "-o", fx_root), 2, "", "already exists");
}

static void check_convert(const char *out) {
  expect_run(ARGS("convert", "--hf", FX_MOE_HF, "-o", out, "--bits", "8", "--group-size", "32",
                  "--shard-size", "100K"),
             0, "", "wrote");
  CHECK(exists(fx_path(out, "model-00001-of-00003.safetensors")));
  CHECK(exists(fx_path(out, "model-00003-of-00003.safetensors")));
  tsr_model *m = NULL;
  CHECK_OK(tsr_model_load(&m, out, NULL));
  tsr_model_free(m);
  CHECK_NO_LEAKS();
}

int main(void) {
  fx_make_root("cli-convert", fx_root);
  const char *out = fx_path(fx_root, "out");
  char out_copy[512];
  snprintf(out_copy, sizeof out_copy, "%s", out);
  check_usage(out_copy);
  check_bad_input(out_copy);
  check_convert(out_copy);
  fx_remove_tree(fx_root);
  tsr_shutdown();
  printf("test_cli_convert: ok\n");
  return 0;
}
