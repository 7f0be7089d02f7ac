/* tools/tessera/bench.c — `tessera bench generate`: prefill and decode speed of a checkpoint on
 * this machine (tokens/s, the weight bytes a decode step streams per second). The synthetic
 * GLM-4-9B run with the memory-read roof beside it is bench/generate; `qmm` and `allsum` are the
 * programs bench/qmm_cpu and (Step 7) bench/allsum for now. */
#include <stdlib.h>
#include <string.h>

#include "model_cli.h"

static const char bench_usage[] =
    "usage: tessera bench generate -m DIR [--prompt N] [--context N[,N...]] [--steps N]\n"
    "                              [--device cpu|gpu|gpu:N] [--group mpi|nccl] [--json]\n"
    "\n"
    "Times a prefill of N prompt tokens (default 512) and, for each context length (default\n"
    "128,2048), --steps single-token decode steps (default 32) after a prefill to that length.\n"
    "Token ids are deterministic and need no tokenizer. Prints tokens/s, ms per token and the\n"
    "weight bytes a decode step reads per second. With --group under mpirun -np N, the model is\n"
    "split tensor-parallel over the N ranks and rank 0 prints (the bytes are rank 0's shard).\n";

enum { MAX_CONTEXTS = 8 };

typedef struct {
  const char *dir, *group;
  uint64_t prompt, steps;
  uint64_t contexts[MAX_CONTEXTS];
  int n_contexts;
  tsr_device device;
  bool json;
} bench_args;

static bool parse_contexts(const char *text, bench_args *a) {
  a->n_contexts = 0;
  char *copy = strdup(text), *save = NULL;
  bool ok = copy != NULL;
  for (char *p = copy ? strtok_r(copy, ",", &save) : NULL; ok && p; p = strtok_r(NULL, ",", &save))
    ok = a->n_contexts < MAX_CONTEXTS &&
         cli_parse_count(p, 1u << 24, &a->contexts[a->n_contexts++]) &&
         a->contexts[a->n_contexts - 1] >= 2;
  free(copy);
  return ok && a->n_contexts > 0;
}

static int parse_args(int argc, char **argv, bench_args *a) {
  *a = (bench_args){.prompt = 512,
                    .steps = 32,
                    .contexts = {128, 2048},
                    .n_contexts = 2,
                    .device = tsr_default_device()};
  for (int i = 2; i < argc; i++) {
    const char *flag = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
    bool ok = true;
    if (strcmp(flag, "--json") == 0) {
      a->json = true;
      continue;
    }
    if (!value) return cli_usage_error("bench", "missing value for %s", flag);
    i++;
    if (strcmp(flag, "-m") == 0)
      a->dir = value;
    else if (strcmp(flag, "--prompt") == 0)
      ok = cli_parse_count(value, 1u << 24, &a->prompt);
    else if (strcmp(flag, "--steps") == 0)
      ok = cli_parse_count(value, 1u << 20, &a->steps);
    else if (strcmp(flag, "--context") == 0)
      ok = parse_contexts(value, a);
    else if (strcmp(flag, "--device") == 0)
      ok = cli_parse_device(value, &a->device);
    else if (strcmp(flag, "--group") == 0) {
      a->group = value;
      ok = cli_parse_group(value);
    } else
      return cli_usage_error("bench", "unknown option '%s'", flag);
    if (!ok) return cli_usage_error("bench", "bad value for %s: '%s'", flag, value);
  }
  if (!a->dir) return cli_usage_error("bench", "-m DIR is required");
  if (a->prompt == 0 || a->steps == 0)
    return cli_usage_error("bench", "--prompt and --steps must be > 0");
  return 0;
}

/* Deterministic ids in [1, vocab) (a multiplicative sequence: no tokenizer needed). */
static int32_t *make_tokens(size_t n, int64_t vocab) {
  int32_t *ids = malloc(n * sizeof *ids);
  for (size_t i = 0; ids && i < n; i++)
    ids[i] = (int32_t)(1 + (i * 2654435761u) % (uint64_t)(vocab - 1));
  return ids;
}

typedef struct {
  double prefill_tok_s;
  double decode_tok_s[MAX_CONTEXTS];
} bench_result;

static tsr_status time_prefill(tsr_model *m, const int32_t *ids, size_t n, double *tok_s) {
  tsr_session *s = NULL;
  tsr_status st = tsr_session_new(&s, m, n);
  double t0 = cli_now_s();
  if (st == TSR_OK) st = tsr_session_append(s, ids, n);
  *tok_s = (double)n / (cli_now_s() - t0);
  tsr_session_free(s);
  return st;
}

/* Prefill to context - 1 positions (the last of them one untimed single-token step, so the
 * decode path is warm), then `steps` single-token steps, each reading its logits. */
static tsr_status time_decode(tsr_model *m, const int32_t *ids, size_t context, size_t steps,
                              double *tok_s) {
  tsr_session *s = NULL;
  size_t vocab = (size_t)tsr_model_vocab_size(m);
  float *logits = malloc(vocab * sizeof *logits);
  tsr_status st = logits ? tsr_session_new(&s, m, context + steps)
                         : tsr_error_set(TSR_ERR_NOMEM, "bench: out of memory");
  if (st == TSR_OK && context > 2) st = tsr_session_append(s, ids, context - 2);
  if (st == TSR_OK) st = tsr_session_append(s, &ids[context - 2], 1); /* warm-up, untimed */
  if (st == TSR_OK) st = tsr_session_logits(s, logits, vocab);
  double t0 = cli_now_s();
  for (size_t i = 0; st == TSR_OK && i < steps; i++) {
    st = tsr_session_append(s, &ids[context - 1 + i], 1);
    if (st == TSR_OK) st = tsr_session_logits(s, logits, vocab);
  }
  *tok_s = (double)steps / (cli_now_s() - t0);
  tsr_session_free(s);
  free(logits);
  return st;
}

static void report(const bench_args *a, tsr_model *m, const bench_result *r) {
  double gb = (double)tsr_model_decode_bytes(m) / 1e9;
  cJSON *root = a->json ? cJSON_CreateObject() : NULL, *decode = NULL;
  if (root) {
    cJSON_AddNumberToObject(root, "prompt_tokens", (double)a->prompt);
    cJSON_AddNumberToObject(root, "prefill_tokens_per_s", r->prefill_tok_s);
    cJSON_AddNumberToObject(root, "decode_bytes_per_token", (double)tsr_model_decode_bytes(m));
    decode = cJSON_AddArrayToObject(root, "decode");
  } else {
    printf("prefill  %6llu tokens   %9.1f tok/s\n", (unsigned long long)a->prompt,
           r->prefill_tok_s);
  }
  for (int i = 0; i < a->n_contexts; i++) {
    double rate = r->decode_tok_s[i];
    if (!root) {
      printf("decode   context %-6llu %9.2f tok/s  %8.2f ms/token  %7.2f GB/s of weights\n",
             (unsigned long long)a->contexts[i], rate, 1e3 / rate, gb * rate);
      continue;
    }
    cJSON *row = cJSON_CreateObject();
    cJSON_AddNumberToObject(row, "context", (double)a->contexts[i]);
    cJSON_AddNumberToObject(row, "tokens_per_s", rate);
    cJSON_AddNumberToObject(row, "weight_gb_per_s", gb * rate);
    cJSON_AddItemToArray(decode, row);
  }
  if (root) cli_print_json(root);
}

static tsr_status run_bench(tsr_model *m, const bench_args *a, bench_result *r) {
  size_t longest = (size_t)a->prompt;
  for (int i = 0; i < a->n_contexts; i++)
    if (a->contexts[i] + a->steps > longest) longest = (size_t)(a->contexts[i] + a->steps);
  int32_t *ids = make_tokens(longest, tsr_model_vocab_size(m));
  if (!ids) return tsr_error_set(TSR_ERR_NOMEM, "bench: out of memory for %zu tokens", longest);
  tsr_status st = time_prefill(m, ids, (size_t)a->prompt, &r->prefill_tok_s);
  for (int i = 0; st == TSR_OK && i < a->n_contexts; i++)
    st = time_decode(m, ids, (size_t)a->contexts[i], (size_t)a->steps, &r->decode_tok_s[i]);
  free(ids);
  return st;
}

/* Loads the model (split over `group` when there is one), measures and reports. */
static int bench_model(bench_args *a, tsr_group *group) {
  tsr_model *m = NULL;
  int code = cli_load_model_in("bench", a->dir, &a->device, 0, group, &m);
  if (code != CLI_EXIT_OK) return code;
  bench_result r = {0};
  tsr_status st = run_bench(m, a, &r);
  if (st == TSR_OK)
    report(a, m, &r);
  else
    code = cli_report_failure("bench", "running", st);
  tsr_model_free(m);
  return code;
}

int cli_bench(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "--help") == 0) {
    fputs(bench_usage, stdout);
    return CLI_EXIT_OK;
  }
  if (argc < 2 || strcmp(argv[1], "generate") != 0)
    return cli_usage_error("bench",
                           "%s%s: only 'generate' is built into the program (qmm and "
                           "allsum are the bench/ programs)",
                           argc < 2 ? "missing kind" : "unknown kind ", argc < 2 ? "" : argv[1]);
  bench_args a;
  int parsed = parse_args(argc, argv, &a);
  if (parsed != 0) return parsed;
  tsr_group *group = NULL;
  int code = cli_group_join("bench", a.group, &group);
  if (code == CLI_EXIT_OK) code = bench_model(&a, group);
  return cli_group_leave("bench", group, code);
}
