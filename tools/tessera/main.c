/* tools/tessera/main.c — the tessera program's entry: global flags and dispatch to a subcommand;
 * each subcommand lives in its own file and parses its own flags. */
#include <string.h>

#include "cli.h"
#include "demo_model.h"

typedef struct {
  const char *name;
  const char *summary;
  cli_command_fn run;
} command_entry;

/* Only what is built is listed. */
static const command_entry commands[] = {
    {"info", "devices, their features, and this build", cli_info},
    {"selfcheck", "evaluate small graphs through the public API and check them exactly",
     cli_selfcheck},
    {"generate", "generate text (or token ids) from a GLM checkpoint", cli_generate},
    {"logits", "the logits of a token sequence, as .npy", cli_logits},
    {"bench", "tessera bench generate: prefill and decode speed of a checkpoint", cli_bench},
    {"convert", "a Hugging Face GLM checkpoint to mlx-lm's quantized layout", cli_convert},
    {"calibrate", "activation ranges of every linear under a backing cap; a 4/8-bit recipe",
     cli_calibrate},
    {"demo-model", "write the small random GLM-4.5-shaped checkpoint `make run` uses",
     cli_demo_model},
};
enum { COMMAND_COUNT = sizeof commands / sizeof commands[0] };

static void print_usage(FILE *out) {
  fprintf(out,
          "usage: tessera <command> [options]\n"
          "       tessera --help | --version\n"
          "\n"
          "commands:\n");
  for (int i = 0; i < COMMAND_COUNT; i++)
    fprintf(out, "  %-10s  %s\n", commands[i].name, commands[i].summary);
  fprintf(out,
          "\n"
          "Every command takes --help; results go to stdout (--json for machine-readable\n"
          "output), diagnostics to stderr. Exit status: 0 success, 2 bad usage or input,\n"
          "3 a backing cap refused memory, 1 any other failure.\n");
}

static int run(int argc, char **argv) {
  if (argc < 2) {
    print_usage(stderr);
    return CLI_EXIT_USAGE;
  }
  const char *first = argv[1];
  if (strcmp(first, "--help") == 0 || strcmp(first, "-h") == 0 || strcmp(first, "help") == 0) {
    print_usage(stdout);
    return CLI_EXIT_OK;
  }
  if (strcmp(first, "--version") == 0) {
    printf("tessera %s\n", tsr_version());
    return CLI_EXIT_OK;
  }
  for (int i = 0; i < COMMAND_COUNT; i++)
    if (strcmp(first, commands[i].name) == 0) return commands[i].run(argc - 1, argv + 1);
  if (first[0] == '-')
    fprintf(stderr, "tessera: unknown option '%s'\n", first);
  else
    fprintf(stderr, "tessera: unknown command '%s'\n", first);
  fprintf(stderr, "run 'tessera --help' for the commands\n");
  return CLI_EXIT_USAGE;
}

/* Every path goes through cli_finish: output that could not be written is a failure (exit 1),
   whichever subcommand wrote it, --help and --version included. */
int main(int argc, char **argv) {
  cli_guard_std_fds();
  return cli_finish(run(argc, argv));
}
