/* tools/tessera/generate.c — `tessera generate`: a prompt (text, chat, or token ids) through a
 * model, the generated text streamed to stdout as it is produced, speeds and the ledger's peak on
 * stderr (or everything as one JSON object with --json). */
#include <stdlib.h>
#include <string.h>

#include "model_cli.h"

static const char generate_usage[] =
    "usage: tessera generate -m DIR (-p TEXT | --tokens 1,2,3) [-n N] [--chat] [--system TEXT]\n"
    "                        [--no-think] [--temp T] [--top-p P] [--seed S]\n"
    "                        [--device cpu|gpu|gpu:N] [--cap BYTES] [--group mpi|nccl] [--json]\n"
    "\n"
    "Generates up to N tokens (default 64) after the prompt and streams the text to stdout; stops\n"
    "early at any of the checkpoint's end tokens. Without a tokenizer.json in DIR, give --tokens\n"
    "and the generated ids are printed instead of text.\n"
    "\n"
    "  -m DIR          checkpoint folder (mlx-lm or Hugging Face layout)\n"
    "  -p TEXT         the prompt as text\n"
    "  --tokens IDS    the prompt as comma-separated token ids\n"
    "  -n N            tokens to generate (default 64)\n"
    "  --chat          wrap the prompt in GLM's chat format as a user message\n"
    "  --system TEXT   a system message before it (with --chat)\n"
    "  --no-think      turn thinking off on models that have it (with --chat)\n"
    "  --temp T        sampling temperature (default 0: greedy)\n"
    "  --top-p P       nucleus sampling mass in (0, 1] (default 1: off)\n"
    "  --seed S        sampling seed (default 0); the same seed gives the same text\n"
    "  --device D      where the weights and compute live (default: the default device)\n"
    "  --cap BYTES     install a backing cap on the device first (e.g. 8G); exit 3 if it refuses\n"
    "  --group G       under mpirun -np N: split the model tensor-parallel over the N ranks\n"
    "                  (mpi, or nccl with one GPU a rank); rank 0 prints, the others are silent\n"
    "  --json          one JSON object on stdout at the end instead of streamed text\n"
    "  --help          this text\n"
    "\n"
    "stderr gets the prefill and decode speeds in tokens/s and the ledger's peak.\n";

typedef struct {
  const char *dir, *prompt, *tokens_text, *system, *group;
  uint64_t max_new, cap;
  bool chat, no_think, json;
  tsr_sampling sampling;
  tsr_device device;
} generate_args;

static int parse_value(generate_args *a, const char *flag, const char *value) {
  uint64_t count;
  if (strcmp(flag, "-m") == 0)
    a->dir = value;
  else if (strcmp(flag, "-p") == 0)
    a->prompt = value;
  else if (strcmp(flag, "--tokens") == 0)
    a->tokens_text = value;
  else if (strcmp(flag, "--system") == 0)
    a->system = value;
  else if (strcmp(flag, "-n") == 0) {
    if (!cli_parse_count(value, 1u << 30, &a->max_new)) return 1;
  } else if (strcmp(flag, "--temp") == 0) {
    if (!cli_parse_float(value, &a->sampling.temperature) || a->sampling.temperature < 0) return 1;
  } else if (strcmp(flag, "--top-p") == 0) {
    float top_p;
    if (!cli_parse_float(value, &top_p) || !(top_p > 0 && top_p <= 1)) return 1;
    a->sampling.top_p = top_p;
  } else if (strcmp(flag, "--seed") == 0) {
    if (!cli_parse_count(value, UINT64_MAX, &count)) return 1;
    a->sampling.seed = count;
  } else if (strcmp(flag, "--device") == 0) {
    if (!cli_parse_device(value, &a->device)) return 1;
  } else if (strcmp(flag, "--cap") == 0) {
    if (!cli_parse_bytes(value, &a->cap)) return 1;
  } else if (strcmp(flag, "--group") == 0) {
    if (!cli_parse_group(value)) return 1;
    a->group = value;
  } else {
    return -1;
  }
  return 0;
}

/* 0 when parsed; 2 (usage) or -1 (--help printed) otherwise. */
static int parse_args(int argc, char **argv, generate_args *a) {
  *a = (generate_args){
      .max_new = 64, .sampling = {.temperature = 0, .top_p = 1}, .device = tsr_default_device()};
  for (int i = 1; i < argc; i++) {
    const char *flag = argv[i];
    if (strcmp(flag, "--help") == 0) {
      fputs(generate_usage, stdout);
      return -1;
    }
    if (strcmp(flag, "--chat") == 0)
      a->chat = true;
    else if (strcmp(flag, "--no-think") == 0)
      a->no_think = true;
    else if (strcmp(flag, "--json") == 0)
      a->json = true;
    else if (i + 1 >= argc)
      return cli_usage_error("generate", "unknown option or missing value: %s", flag);
    else {
      int r = parse_value(a, flag, argv[++i]);
      if (r < 0) return cli_usage_error("generate", "unknown option '%s'", flag);
      if (r > 0) return cli_usage_error("generate", "bad value for %s: '%s'", flag, argv[i]);
    }
  }
  if (!a->dir) return cli_usage_error("generate", "-m DIR is required");
  if (!a->prompt == !a->tokens_text)
    return cli_usage_error("generate", "give exactly one of -p and --tokens");
  if (a->chat && !a->prompt) return cli_usage_error("generate", "--chat needs -p TEXT");
  /* Checked here, before a model that may take minutes to load; parsed again once loaded. */
  int32_t *ids = NULL;
  size_t n = 0;
  if (a->tokens_text && !cli_parse_tokens(a->tokens_text, &ids, &n))
    return cli_usage_error("generate", "--tokens '%s' is not a list of token ids", a->tokens_text);
  free(ids);
  return 0;
}

static tsr_status prompt_tokens(tsr_model *m, const generate_args *a, int32_t **ids, size_t *n) {
  if (a->tokens_text) {
    if (!cli_parse_tokens(a->tokens_text, ids, n))
      return tsr_error_set(TSR_ERR_INVALID, "--tokens '%s' is not a list of token ids",
                           a->tokens_text);
    return TSR_OK;
  }
  if (!a->chat) return tsr_model_encode(m, a->prompt, ids, n);
  tsr_chat_message messages[2];
  size_t count = 0;
  if (a->system) messages[count++] = (tsr_chat_message){"system", a->system};
  messages[count++] = (tsr_chat_message){"user", a->prompt};
  return tsr_model_chat_encode(m, messages, count, !a->no_think, ids, n);
}

/* The generated tokens so far and how much of their text is on stdout. */
typedef struct {
  tsr_model *model;
  bool as_text, stream;
  int32_t *tokens;
  size_t n, cap;
  size_t printed; /* tokens whose text is on stdout: a whole-character boundary */
  tsr_status status;
} generation;

static bool ends_incomplete(const char *text, size_t len) {
  /* U+FFFD (EF BF BD) at the end: a character split across tokens, held back until complete. */
  return len >= 3 && memcmp(text + len - 3, "\xEF\xBF\xBD", 3) == 0;
}

/* Decodes only the tokens not yet printed (their bytes start on a character boundary, so their
 * text is the tail of the whole text's), and prints it unless it ends inside a character. */
static void print_new_text(generation *gen, bool final) {
  if (gen->printed == gen->n) return;
  char *text = NULL;
  tsr_status st =
      tsr_model_decode(gen->model, gen->tokens + gen->printed, gen->n - gen->printed, &text);
  if (st != TSR_OK) {
    gen->status = st; /* an id the tokenizer does not know: stop and say so */
    return;
  }
  size_t len = strlen(text);
  if (final || !ends_incomplete(text, len)) {
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    gen->printed = gen->n;
  }
  free(text);
}

static bool on_token(int32_t token, void *ctx) {
  generation *gen = ctx;
  if (tsr_model_is_stop_token(gen->model, token)) return false;
  if (gen->n == gen->cap) {
    size_t cap = gen->cap ? gen->cap * 2 : 64;
    int32_t *grown = realloc(gen->tokens, cap * sizeof *grown);
    if (!grown) {
      gen->status = tsr_error_set(TSR_ERR_NOMEM, "generate: out of memory for the output");
      return false;
    }
    gen->tokens = grown;
    gen->cap = cap;
  }
  gen->tokens[gen->n++] = token;
  if (!gen->stream) return true;
  if (gen->as_text) {
    print_new_text(gen, false);
    if (gen->status != TSR_OK) return false;
  } else {
    printf("%s%d", gen->n > 1 ? " " : "", token);
    fflush(stdout);
  }
  return true;
}

typedef struct {
  size_t prompt_tokens;
  double prefill_s, decode_s;
  tsr_backing_snapshot ledger; /* taken before the session is freed */
} generate_stats;

static void report_stats(const generate_args *a, const generation *gen, const generate_stats *s) {
  char peak[32], active[32], cached[32];
  cli_format_bytes(s->ledger.peak, peak);
  cli_format_bytes(s->ledger.active, active);
  cli_format_bytes(s->ledger.cached, cached);
  double decode_rate = gen->n > 1 && s->decode_s > 0 ? (double)(gen->n - 1) / s->decode_s : 0;
  if (!a->json) {
    fprintf(stderr,
            "\nprefill: %zu tokens in %.3f s (%.1f tok/s)  decode: %zu tokens (%.1f tok/s)\n"
            "ledger: active %s (weights and cache), cached %s, peak %s\n",
            s->prompt_tokens, s->prefill_s, (double)s->prompt_tokens / s->prefill_s, gen->n,
            decode_rate, active, cached, peak);
    return;
  }
  cJSON *root = cJSON_CreateObject();
  cJSON_AddItemToObject(root, "tokens", cJSON_CreateIntArray(gen->tokens, (int)gen->n));
  char *text = NULL;
  if (gen->as_text && tsr_model_decode(gen->model, gen->tokens, gen->n, &text) == TSR_OK)
    cJSON_AddStringToObject(root, "text", text);
  free(text);
  cJSON_AddNumberToObject(root, "prompt_tokens", (double)s->prompt_tokens);
  cJSON_AddNumberToObject(root, "prefill_tokens_per_s", (double)s->prompt_tokens / s->prefill_s);
  cJSON_AddNumberToObject(root, "decode_tokens_per_s", decode_rate);
  cJSON_AddNumberToObject(root, "peak_backing_bytes", (double)s->ledger.peak);
  cJSON_AddNumberToObject(root, "active_backing_bytes", (double)s->ledger.active);
  cli_print_json(root);
}

static tsr_status run_generation(tsr_model *m, const generate_args *a, generation *gen,
                                 generate_stats *stats) {
  int32_t *prompt = NULL;
  size_t n = 0;
  tsr_session *session = NULL;
  tsr_status st = prompt_tokens(m, a, &prompt, &n);
  if (st == TSR_OK) st = tsr_session_new(&session, m, n + (size_t)a->max_new);
  double t0 = cli_now_s();
  if (st == TSR_OK) st = tsr_session_append(session, prompt, n);
  double t1 = cli_now_s();
  if (st == TSR_OK) st = tsr_session_generate(session, &a->sampling, a->max_new, on_token, gen);
  if (st == TSR_OK) st = gen->status;
  *stats = (generate_stats){.prompt_tokens = n, .prefill_s = t1 - t0, .decode_s = cli_now_s() - t1};
  tsr_calibration_snapshot(a->device, &stats->ledger);
  tsr_session_free(session);
  free(prompt);
  return st;
}

/* Loads the model (split over `group` when there is one) and generates. */
static int generate_with(generate_args *a, tsr_group *group) {
  tsr_model *m = NULL;
  int code = cli_load_model_in("generate", a->dir, &a->device, a->cap, group, &m);
  if (code != CLI_EXIT_OK) return code;
  if (a->prompt && !tsr_model_has_tokenizer(m)) { /* bad usage for this model: exit 2, not 1 */
    tsr_model_free(m);
    return cli_usage_error("generate", "%s has no tokenizer.json: give the prompt as --tokens",
                           a->dir);
  }
  generation gen = {.model = m, .stream = !a->json, .as_text = tsr_model_has_tokenizer(m)};
  generate_stats stats;
  tsr_status st = run_generation(m, a, &gen, &stats);
  if (st == TSR_OK && gen.stream && gen.as_text) print_new_text(&gen, true);
  if (st == TSR_OK)
    report_stats(a, &gen, &stats);
  else
    code = cli_report_failure("generate", "generating", st);
  if (st == TSR_OK && gen.stream) putchar('\n');
  free(gen.tokens);
  tsr_model_free(m);
  return code;
}

int cli_generate(int argc, char **argv) {
  generate_args a;
  int parsed = parse_args(argc, argv, &a);
  if (parsed != 0) return parsed < 0 ? CLI_EXIT_OK : parsed;
  tsr_group *group = NULL;
  int code = cli_group_join("generate", a.group, &group);
  if (code == CLI_EXIT_OK) code = generate_with(&a, group);
  return cli_group_leave("generate", group, code);
}
