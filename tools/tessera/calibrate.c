/* tools/tessera/calibrate.c — `tessera calibrate`: installs a backing cap on the device before the
 * model is loaded, runs prompts through it observing every quantized linear's input
 * (tessera/calibrate.h), and reports the activation ranges and the peak backing against the cap;
 * with --bits-budget, a mixed 4/8-bit recipe for `tessera convert --recipe`. This file parses the
 * flags and runs; calibrate_report.c prints. */
#include "calibrate.h"

#include <stdlib.h>
#include <string.h>

static const char calibrate_usage[] =
    "usage: tessera calibrate -m DIR --cap BYTES (-p TEXT | --tokens 1,2,3)... [--json]\n"
    "                         [--bits-budget B [--recipe OUT.json]] [--device cpu|gpu|gpu:N]\n"
    "                         [--group mpi|nccl]\n"
    "\n"
    "Installs a backing cap on the device before anything is loaded, runs each prompt through\n"
    "the model (one forward pass over all its tokens) and reports, for every linear layer, the\n"
    "absolute maximum and the 50th/99th/99.9th percentiles of |x| at its input over all tokens,\n"
    "and the peak backing against the cap. When the cap is too small it stops with exit status 3,\n"
    "naming the bytes that were refused and what they were for; nothing is written then.\n"
    "\n"
    "  -m DIR            checkpoint folder (mlx-lm or Hugging Face layout)\n"
    "  --cap BYTES       the cap to install (e.g. 512M, 8G); required\n"
    "  -p TEXT           a prompt as text (needs tokenizer.json); repeatable\n"
    "  --tokens IDS      a prompt as comma-separated token ids; repeatable\n"
    "  --bits-budget B   also propose which linears to quantize at 8 bits and which at 4 (affine,\n"
    "                    group 64) within B bits per weight, 4.5 (all 4-bit) to 8.5 (all 8-bit),\n"
    "                    from each linear's activation-weighted 4- vs 8-bit error\n"
    "  --recipe OUT      write that proposal, a config.json `quantization` block, to OUT for\n"
    "                    `tessera convert --recipe OUT` (with --bits-budget)\n"
    "  --device D        where the weights and compute live (default: the default device)\n"
    "  --group G         under mpirun -np N: split the model tensor-parallel over the N ranks\n"
    "                    (rank 0 reports and writes the recipe)\n"
    "  --json            one JSON object on stdout instead of the table\n"
    "  --help            this text\n"
    "\n"
    "Progress goes to stderr. Exit status: 0 done, 2 bad usage or input, 3 the cap refused\n"
    "memory, 1 anything else.\n";

static int add_prompt(const char **list, size_t *n, const char *value) {
  if (*n == CALIBRATE_MAX_PROMPTS)
    return cli_usage_error("calibrate", "at most %d prompts", CALIBRATE_MAX_PROMPTS);
  list[(*n)++] = value;
  return 0;
}

static int parse_value(calibrate_args *a, const char *flag, const char *value) {
  if (strcmp(flag, "-m") == 0)
    a->dir = value;
  else if (strcmp(flag, "-p") == 0)
    return add_prompt(a->texts, &a->n_texts, value);
  else if (strcmp(flag, "--tokens") == 0)
    return add_prompt(a->ids, &a->n_ids, value);
  else if (strcmp(flag, "--recipe") == 0)
    a->recipe_path = value;
  else if (strcmp(flag, "--cap") == 0) {
    if (!cli_parse_bytes(value, &a->cap))
      return cli_usage_error("calibrate", "bad --cap '%s' (bytes, e.g. 512M or 8G)", value);
  } else if (strcmp(flag, "--bits-budget") == 0) {
    float budget = 0;
    if (!cli_parse_float(value, &budget) || (double)budget < TSR_RECIPE_MIN_BITS_PER_WEIGHT ||
        (double)budget > TSR_RECIPE_MAX_BITS_PER_WEIGHT)
      return cli_usage_error("calibrate",
                             "bad --bits-budget '%s' (bits per weight from %g, every linear at 4 "
                             "bits, to %g, every one at 8)",
                             value, TSR_RECIPE_MIN_BITS_PER_WEIGHT, TSR_RECIPE_MAX_BITS_PER_WEIGHT);
    a->bits_budget = (double)budget;
  } else if (strcmp(flag, "--group") == 0) {
    if (!cli_parse_group(value)) return cli_usage_error("calibrate", "bad group '%s'", value);
    a->group = value;
  } else if (strcmp(flag, "--device") == 0) {
    if (!cli_parse_device(value, &a->device))
      return cli_usage_error("calibrate", "bad --device '%s'", value);
  } else {
    return cli_usage_error("calibrate", "unknown option '%s'", flag);
  }
  return 0;
}

/* Everything that can be checked before the model loads. */
static int check_args(const calibrate_args *a) {
  if (!a->dir) return cli_usage_error("calibrate", "-m DIR is required");
  if (!a->cap) return cli_usage_error("calibrate", "--cap BYTES is required");
  if (a->n_texts + a->n_ids == 0)
    return cli_usage_error("calibrate", "give at least one prompt (-p TEXT or --tokens IDS)");
  if (a->recipe_path && a->bits_budget == 0)
    return cli_usage_error("calibrate", "--recipe needs --bits-budget");
  for (size_t i = 0; i < a->n_ids; i++) {
    int32_t *ids = NULL;
    size_t n = 0;
    if (!cli_parse_tokens(a->ids[i], &ids, &n))
      return cli_usage_error("calibrate", "--tokens '%s' is not a list of token ids", a->ids[i]);
    free(ids);
  }
  return 0;
}

/* 0 when parsed; 2 (usage) or -1 (--help printed) otherwise. */
static int parse_args(int argc, char **argv, calibrate_args *a) {
  *a = (calibrate_args){.device = tsr_default_device()};
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0) {
      fputs(calibrate_usage, stdout);
      return -1;
    }
    if (strcmp(argv[i], "--json") == 0) {
      a->json = true;
      continue;
    }
    if (i + 1 >= argc)
      return cli_usage_error("calibrate", "unknown option or missing value: %s", argv[i]);
    int code = parse_value(a, argv[i], argv[i + 1]);
    if (code != 0) return code;
    i++;
  }
  return check_args(a);
}

/* The ledger's refusal (memory.h) reads "<what> of N bytes ... refused by the cap: cap C, active
 * A, cached K, pending P, fixed F": what was in use then (cached bytes excepted, evictable) plus
 * N is the least the cap must allow. False when the message is not a refusal. */
static bool refused_need(const char *message, uint64_t *need, uint64_t *asked) {
  const char *refused = strstr(message, " refused by the cap: cap ");
  const char *of = NULL;
  for (const char *p = strstr(message, " of "); p && p < refused; p = strstr(p + 1, " of "))
    of = p;
  unsigned long long bytes, cap, active, cached, pending, fixed;
  if (!refused || !of || sscanf(of, " of %llu bytes", &bytes) != 1 ||
      sscanf(refused,
             " refused by the cap: cap %llu, active %llu, cached %llu, pending %llu, fixed "
             "%llu",
             &cap, &active, &cached, &pending, &fixed) != 5)
    return false;
  *need = active + pending + fixed + bytes;
  *asked = bytes;
  return true;
}

/* After TSR_ERR_CAP: how many bytes were needed, and for what (the ledger's message above). */
static void report_cap_need(uint64_t cap, const char *phase) {
  uint64_t need = 0, asked = 0;
  if (!refused_need(tsr_last_error(), &need, &asked)) return;
  fprintf(stderr,
          "tessera calibrate: the cap of %llu bytes is too small for %s: it needed at least %llu "
          "bytes (%llu more for the allocation named above); nothing was written\n",
          (unsigned long long)cap, phase, (unsigned long long)need, (unsigned long long)asked);
}

/* Prompt i: the -p texts first, then the --tokens lists. */
static tsr_status prompt_tokens(tsr_model *m, const calibrate_args *a, size_t i, int32_t **ids,
                                size_t *n) {
  if (i < a->n_texts) return tsr_model_encode(m, a->texts[i], ids, n);
  const char *text = a->ids[i - a->n_texts];
  if (!cli_parse_tokens(text, ids, n))
    return tsr_error_set(TSR_ERR_INVALID, "--tokens '%s' is not a list of token ids", text);
  return TSR_OK;
}

static int run_prompts(tsr_model *m, const calibrate_args *a, calibrate_result *r) {
  size_t prompts = a->n_texts + a->n_ids;
  for (size_t i = 0; i < prompts; i++) {
    int32_t *ids = NULL;
    size_t n = 0;
    tsr_status st = prompt_tokens(m, a, i, &ids, &n);
    if (st == TSR_OK && n == 0) st = tsr_error_set(TSR_ERR_INVALID, "it encodes to no tokens");
    fprintf(stderr, "tessera calibrate: prompt %zu of %zu (%zu tokens)\n", i + 1, prompts, n);
    if (st == TSR_OK) st = tsr_model_calibration_run(r->calibration, ids, n);
    free(ids);
    if (st != TSR_OK) {
      char what[64];
      snprintf(what, sizeof what, "running prompt %zu of %zu", i + 1, prompts);
      int code = cli_report_failure("calibrate", what, st);
      if (code == CLI_EXIT_CAP) report_cap_need(a->cap, what);
      return code;
    }
  }
  return CLI_EXIT_OK;
}

/* `rank`: this process's in the group (-1 without one); rank 0 alone speaks and writes. */
static int calibrate(tsr_model *m, const calibrate_args *a, int rank, calibrate_result *r) {
  tsr_status st = tsr_model_calibration_new(&r->calibration, m);
  if (st != TSR_OK) return cli_report_failure("calibrate", "starting", st);
  int code = run_prompts(m, a, r);
  if (code == CLI_EXIT_OK && a->bits_budget > 0) {
    if (rank <= 0)
      fprintf(stderr, "tessera calibrate: weighing 4- against 8-bit weights for the recipe\n");
    st = tsr_model_calibration_recipe(r->calibration, a->bits_budget, &r->recipe);
    if (st != TSR_OK) code = cli_report_failure("calibrate", "proposing the recipe", st);
    if (code == CLI_EXIT_CAP) report_cap_need(a->cap, "proposing the recipe");
  }
  tsr_calibration_snapshot(a->device, &r->ledger);
  if (code == CLI_EXIT_OK && a->recipe_path && rank <= 0) {
    st = calibrate_write_recipe(a, r);
    if (st != TSR_OK) code = cli_report_failure("calibrate", "writing the recipe", st);
  }
  return code;
}

int cli_calibrate(int argc, char **argv) {
  calibrate_args a;
  int parsed = parse_args(argc, argv, &a);
  if (parsed != 0) return parsed < 0 ? CLI_EXIT_OK : parsed;
  double start = cli_now_s();
  tsr_model *m = NULL;
  tsr_group *group = NULL;
  int code = cli_group_join("calibrate", a.group, &group);
  if (code == CLI_EXIT_OK)
    code = cli_load_model_in("calibrate", a.dir, &a.device, a.cap, group, &m);
  if (code == CLI_EXIT_CAP) report_cap_need(a.cap, "loading the weights");
  if (code == CLI_EXIT_OK && a.n_texts > 0 && !tsr_model_has_tokenizer(m))
    code =
        cli_usage_error("calibrate", "%s has no tokenizer.json: give prompts as --tokens", a.dir);
  calibrate_result r = {0};
  if (code == CLI_EXIT_OK) code = calibrate(m, &a, tsr_group_rank(group), &r);
  r.seconds = cli_now_s() - start;
  if (code == CLI_EXIT_OK && tsr_group_rank(group) <= 0) calibrate_print(&a, &r);
  free(r.recipe);
  tsr_model_calibration_free(r.calibration);
  tsr_model_free(m);
  return cli_group_leave("calibrate", group, code);
}
