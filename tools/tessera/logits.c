/* tools/tessera/logits.c — `tessera logits`: the float32 logits [T, vocab] of a token sequence,
 * every position, written as .npy (the runner's output for tests and comparisons). */
#include <stdlib.h>
#include <string.h>

#include "model_cli.h"

static const char logits_usage[] =
    "usage: tessera logits -m DIR --tokens 1,2,3 -o OUT.npy [--device cpu|gpu|gpu:N] [--cap "
    "BYTES]\n"
    "                      [--group mpi|nccl]\n"
    "\n"
    "Runs the tokens through the model in one forward pass and writes the logits of every\n"
    "position as a float32 [T, vocab] .npy file (written whole or not at all).\n"
    "\n"
    "  -m DIR        checkpoint folder (mlx-lm or Hugging Face layout)\n"
    "  --tokens IDS  comma-separated token ids\n"
    "  -o OUT.npy    where to write the logits\n"
    "  --device D    where the weights and compute live (default: the default device)\n"
    "  --cap BYTES   install a backing cap on the device first; exit 3 if it refuses\n"
    "  --group G     under mpirun -np N: split the model tensor-parallel over the N ranks\n"
    "                (mpi, or nccl with one GPU a rank); rank 0 writes OUT.npy and prints\n"
    "  --help        this text\n";

typedef struct {
  const char *dir, *tokens, *out, *group;
  tsr_device device;
  uint64_t cap;
} logits_args;

static int parse_args(int argc, char **argv, logits_args *a) {
  *a = (logits_args){.device = tsr_default_device()};
  for (int i = 1; i < argc; i++) {
    const char *flag = argv[i];
    if (strcmp(flag, "--help") == 0) {
      fputs(logits_usage, stdout);
      return -1;
    }
    if (i + 1 >= argc)
      return cli_usage_error("logits", "unknown option or missing value: %s", flag);
    const char *value = argv[++i];
    if (strcmp(flag, "-m") == 0)
      a->dir = value;
    else if (strcmp(flag, "--tokens") == 0)
      a->tokens = value;
    else if (strcmp(flag, "-o") == 0)
      a->out = value;
    else if (strcmp(flag, "--device") == 0) {
      if (!cli_parse_device(value, &a->device))
        return cli_usage_error("logits", "bad device '%s'", value);
    } else if (strcmp(flag, "--cap") == 0) {
      if (!cli_parse_bytes(value, &a->cap)) return cli_usage_error("logits", "bad cap '%s'", value);
    } else if (strcmp(flag, "--group") == 0) {
      if (!cli_parse_group(value)) return cli_usage_error("logits", "bad group '%s'", value);
      a->group = value;
    } else {
      return cli_usage_error("logits", "unknown option '%s'", flag);
    }
  }
  if (!a->dir || !a->tokens || !a->out)
    return cli_usage_error("logits", "-m DIR, --tokens IDS and -o OUT.npy are required");
  return 0;
}

/* Every rank computes the logits; only `writer` writes them. */
static tsr_status write_logits(tsr_model *m, const int32_t *ids, size_t n, const char *path,
                               bool writer) {
  size_t vocab = (size_t)tsr_model_vocab_size(m);
  float *logits = malloc(n * vocab * sizeof *logits);
  if (!logits)
    return tsr_error_set(TSR_ERR_NOMEM, "logits: cannot allocate %zu x %zu floats", n, vocab);
  tsr_array *a = NULL;
  int64_t shape[2] = {(int64_t)n, (int64_t)vocab};
  tsr_status st = tsr_model_logits(m, ids, n, logits, n * vocab);
  if (st == TSR_OK && writer)
    st = tsr_array_from_data_on(&a, logits, TSR_FLOAT32, shape, 2, (tsr_device){TSR_CPU, 0});
  if (st == TSR_OK && writer) st = tsr_npy_save(path, a);
  tsr_array_release(a);
  free(logits);
  return st;
}

int cli_logits(int argc, char **argv) {
  logits_args a;
  int parsed = parse_args(argc, argv, &a);
  if (parsed != 0) return parsed < 0 ? CLI_EXIT_OK : parsed;
  int32_t *ids = NULL;
  size_t n = 0;
  if (!cli_parse_tokens(a.tokens, &ids, &n))
    return cli_usage_error("logits", "--tokens '%s' is not a list of token ids", a.tokens);
  tsr_model *m = NULL;
  tsr_group *group = NULL;
  int code = cli_group_join("logits", a.group, &group);
  if (code == CLI_EXIT_OK) code = cli_load_model_in("logits", a.dir, &a.device, a.cap, group, &m);
  if (code == CLI_EXIT_OK) {
    tsr_status st = write_logits(m, ids, n, a.out, tsr_group_rank(group) <= 0);
    if (st != TSR_OK) code = cli_report_failure("logits", "computing the logits", st);
  }
  tsr_model_free(m);
  free(ids);
  return cli_group_leave("logits", group, code);
}
