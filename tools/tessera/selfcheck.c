/* tools/tessera/selfcheck.c — `tessera selfcheck`: small graphs built, evaluated and compared
 * exactly against the same float arithmetic in plain C, then a ledger check; not a test suite
 * (tests/ is), just proof that this library and machine work end to end. */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "cli.h"

static const char selfcheck_usage[] =
    "usage: tessera selfcheck [--device cpu|gpu|gpu:N] [--json]\n"
    "\n"
    "Builds small graphs through the public API (a chain of 1000 adds over float32[64], a\n"
    "broadcasting add float32[4,3] + float32[3]), evaluates them on the device, compares every\n"
    "element bit for bit with the same arithmetic in plain C, and checks that the device's and\n"
    "the CPU's ledgers hold the same active bytes after the arrays are released as before.\n"
    "Prints 'selfcheck: ok' and exits 0, or says what differed and exits 1.\n"
    "\n"
    "  --device D   where the arrays live (default: the default device)\n"
    "  --json       one JSON object on stdout instead of text\n"
    "  --help       this text\n";

enum { CHAIN_LENGTH = 64, CHAIN_ADDS = 1000, BCAST_ROWS = 4, BCAST_COLS = 3 };

typedef struct {
  const char *name;
  bool passed;
  char detail[320];
} check_result;

typedef struct {
  tsr_device device;
  tsr_stream *stream;
} selfcheck_target;

/* Compares bit patterns (so -0 and 0 differ and a NaN would be caught); fills r. */
static void compare_exactly(check_result *r, const char *what, const float *got,
                            const float *expected, int count) {
  int differing = 0, first = -1;
  for (int i = 0; i < count; i++) {
    if (memcmp(&got[i], &expected[i], sizeof(float)) == 0) continue;
    if (first < 0) first = i;
    differing++;
  }
  r->passed = differing == 0;
  if (r->passed) {
    snprintf(r->detail, sizeof r->detail, "%s: all %d elements exact", what, count);
    return;
  }
  uint32_t got_bits, expected_bits;
  memcpy(&got_bits, &got[first], sizeof got_bits);
  memcpy(&expected_bits, &expected[first], sizeof expected_bits);
  snprintf(r->detail, sizeof r->detail,
           "%s: %d of %d elements differ; first at [%d]: got %.9g (0x%08" PRIx32
           "), expected %.9g (0x%08" PRIx32 ")",
           what, differing, count, first, (double)got[first], got_bits, (double)expected[first],
           expected_bits);
}

/* acc = x, then acc = acc + step, `adds` times, releasing each intermediate handle at once (the
 * graph keeps what it needs). */
static tsr_status build_add_chain(tsr_array **out, tsr_array *x, tsr_array *step, int adds,
                                  tsr_stream *s) {
  tsr_array *acc = tsr_array_retain(x);
  for (int k = 0; k < adds; k++) {
    tsr_array *next = NULL;
    tsr_status st = tsr_add(&next, acc, step, s);
    tsr_array_release(acc);
    if (st != TSR_OK) return st;
    acc = next;
  }
  *out = acc;
  return TSR_OK;
}

static tsr_status check_add_chain(const selfcheck_target *t, check_result *r) {
  float x[CHAIN_LENGTH], step[CHAIN_LENGTH], expected[CHAIN_LENGTH], got[CHAIN_LENGTH];
  for (int i = 0; i < CHAIN_LENGTH; i++) {
    x[i] = (float)i * 0.1f - 3.0f;
    step[i] = 1.0f / (float)(i + 3); /* inexact, so every add rounds */
    expected[i] = x[i];
  }
  for (int k = 0; k < CHAIN_ADDS; k++)
    for (int i = 0; i < CHAIN_LENGTH; i++)
      expected[i] = expected[i] + step[i];

  int64_t shape[1] = {CHAIN_LENGTH};
  tsr_array *xa = NULL, *stepa = NULL, *result = NULL;
  tsr_status st = tsr_array_from_data_on(&xa, x, TSR_FLOAT32, shape, 1, t->device);
  if (st == TSR_OK) st = tsr_array_from_data_on(&stepa, step, TSR_FLOAT32, shape, 1, t->device);
  if (st == TSR_OK) st = build_add_chain(&result, xa, stepa, CHAIN_ADDS, t->stream);
  if (st == TSR_OK) st = tsr_eval(&result, 1);
  if (st == TSR_OK) st = tsr_array_read(result, got, sizeof got);
  if (st == TSR_OK)
    compare_exactly(r, "1000 chained adds over float32[64]", got, expected, CHAIN_LENGTH);
  tsr_array_release(result);
  tsr_array_release(stepa);
  tsr_array_release(xa);
  return st;
}

static tsr_status check_broadcast_add(const selfcheck_target *t, check_result *r) {
  float a[BCAST_ROWS * BCAST_COLS], b[BCAST_COLS] = {1e-3f, -2.5f, 1e7f};
  float expected[BCAST_ROWS * BCAST_COLS], got[BCAST_ROWS * BCAST_COLS];
  for (int i = 0; i < BCAST_ROWS; i++)
    for (int j = 0; j < BCAST_COLS; j++) {
      a[i * BCAST_COLS + j] = (float)(i * BCAST_COLS + j) * 0.3f + 0.125f;
      expected[i * BCAST_COLS + j] = a[i * BCAST_COLS + j] + b[j];
    }

  int64_t a_shape[2] = {BCAST_ROWS, BCAST_COLS}, b_shape[1] = {BCAST_COLS};
  tsr_array *aa = NULL, *ba = NULL, *sum = NULL;
  tsr_status st = tsr_array_from_data_on(&aa, a, TSR_FLOAT32, a_shape, 2, t->device);
  if (st == TSR_OK) st = tsr_array_from_data_on(&ba, b, TSR_FLOAT32, b_shape, 1, t->device);
  if (st == TSR_OK) st = tsr_add(&sum, aa, ba, t->stream);
  if (st == TSR_OK && (tsr_array_ndim(sum) != 2 || tsr_array_dim(sum, 0) != BCAST_ROWS ||
                       tsr_array_dim(sum, 1) != BCAST_COLS)) {
    r->passed = false;
    snprintf(r->detail, sizeof r->detail,
             "float32[4,3] + float32[3]: result has %d axes, shape [%" PRId64 ", %" PRId64
             "], expected [4, 3]",
             tsr_array_ndim(sum), tsr_array_dim(sum, 0), tsr_array_dim(sum, 1));
  } else {
    if (st == TSR_OK) st = tsr_array_read(sum, got, sizeof got);
    if (st == TSR_OK)
      compare_exactly(r, "float32[4,3] + float32[3]", got, expected, BCAST_ROWS * BCAST_COLS);
  }
  tsr_array_release(sum);
  tsr_array_release(ba);
  tsr_array_release(aa);
  return st;
}

enum { QUANT_N = 32, QUANT_K = 128, QUANT_M = 2 };

/* y = x @ W.T two ways: tsr_quantized_matmul on the quantized W, and tsr_matmul on its
 * dequantized float32 copy. Both sum the same float32 weights, possibly in different orders, so
 * each output may differ by at most K * 2^-24 * sum_k |x_k w_k| (the float32 summation bound). */
static void compare_quant(check_result *r, const float *fast, const float *plain, const float *x,
                          const float *w) {
  int bad = -1;
  for (int i = 0; i < QUANT_M && bad < 0; i++)
    for (int n = 0; n < QUANT_N; n++) {
      double magnitude = 0;
      for (int k = 0; k < QUANT_K; k++)
        magnitude += fabs((double)x[i * QUANT_K + k] * (double)w[n * QUANT_K + k]);
      double bound = QUANT_K * 0x1p-24 * magnitude;
      if (fabs((double)fast[i * QUANT_N + n] - (double)plain[i * QUANT_N + n]) > bound) {
        bad = i * QUANT_N + n;
        break;
      }
    }
  r->passed = bad < 0;
  if (r->passed)
    snprintf(r->detail, sizeof r->detail,
             "affine 4-bit [32,128] W: quantized_matmul = matmul(dequantize) on all %d outputs",
             QUANT_M * QUANT_N);
  else
    snprintf(r->detail, sizeof r->detail, "quantized_matmul [%d] = %.9g, matmul = %.9g", bad,
             (double)fast[bad], (double)plain[bad]);
}

static tsr_status check_quantized_matmul(const selfcheck_target *t, check_result *r) {
  static float w[QUANT_N * QUANT_K], x[QUANT_M * QUANT_K], wd[QUANT_N * QUANT_K];
  float fast[QUANT_M * QUANT_N], plain[QUANT_M * QUANT_N];
  for (int i = 0; i < QUANT_N * QUANT_K; i++)
    w[i] = (float)((i * 37) % 101 - 50) * 0.01f;
  for (int i = 0; i < QUANT_M * QUANT_K; i++)
    x[i] = (float)((i * 13) % 29 - 14) * 0.1f;
  int64_t w_shape[2] = {QUANT_N, QUANT_K}, x_shape[2] = {QUANT_M, QUANT_K};
  tsr_array *wa = NULL, *xa = NULL, *wq = NULL, *sc = NULL, *bi = NULL, *deq = NULL, *y = NULL,
            *dt = NULL, *y2 = NULL;
  tsr_status st = tsr_array_from_data_on(&wa, w, TSR_FLOAT32, w_shape, 2, t->device);
  if (st == TSR_OK) st = tsr_array_from_data_on(&xa, x, TSR_FLOAT32, x_shape, 2, t->device);
  if (st == TSR_OK) st = tsr_quantize(&wq, &sc, &bi, wa, 64, 4, TSR_QUANT_AFFINE, t->stream);
  if (st == TSR_OK)
    st = tsr_quantized_matmul(&y, xa, wq, sc, bi, true, 64, 4, TSR_QUANT_AFFINE, t->stream);
  if (st == TSR_OK)
    st = tsr_dequantize(&deq, wq, sc, bi, 64, 4, TSR_QUANT_AFFINE, TSR_FLOAT32, t->stream);
  if (st == TSR_OK) st = tsr_transpose(&dt, deq, NULL, 0, t->stream);
  if (st == TSR_OK) st = tsr_matmul(&y2, xa, dt, t->stream);
  if (st == TSR_OK) st = tsr_array_read(y, fast, sizeof fast);
  if (st == TSR_OK) st = tsr_array_read(y2, plain, sizeof plain);
  if (st == TSR_OK) st = tsr_array_read(deq, wd, sizeof wd);
  if (st == TSR_OK) compare_quant(r, fast, plain, x, wd);
  tsr_array *all[] = {y2, dt, y, deq, bi, sc, wq, xa, wa};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    tsr_array_release(all[i]);
  return st;
}

/* Active bytes on the target device and on the CPU (a GPU run also stages through the host). */
typedef struct {
  uint64_t device_active, cpu_active;
} ledger_reading;

static ledger_reading read_ledgers(tsr_device d) {
  tsr_device cpu = {TSR_CPU, 0};
  return (ledger_reading){tsr_memory_active(d), tsr_memory_active(cpu)};
}

/* Everything the checks made is released; once the stream has run its work, the ledgers must
 * read what they read before. */
static tsr_status check_ledger(const selfcheck_target *t, const ledger_reading *before,
                               check_result *r) {
  tsr_status st = tsr_stream_synchronize(t->stream);
  if (st != TSR_OK) return st;
  ledger_reading after = read_ledgers(t->device);
  char name[32];
  r->passed =
      after.device_active == before->device_active && after.cpu_active == before->cpu_active;
  int used = snprintf(r->detail, sizeof r->detail,
                      "active bytes on %s: %" PRIu64 " before, %" PRIu64 " after release",
                      cli_device_name(t->device, name), before->device_active, after.device_active);
  if (t->device.type != TSR_CPU && used > 0 && (size_t)used < sizeof r->detail)
    snprintf(r->detail + used, sizeof r->detail - (size_t)used,
             "; on cpu: %" PRIu64 " before, %" PRIu64 " after", before->cpu_active,
             after.cpu_active);
  return TSR_OK;
}

typedef tsr_status (*graph_check_fn)(const selfcheck_target *t, check_result *r);

static const struct {
  const char *name;
  graph_check_fn run;
} graph_checks[] = {{"add_chain", check_add_chain},
                    {"broadcast_add", check_broadcast_add},
                    {"quantized_matmul", check_quantized_matmul}};

enum { GRAPH_CHECK_COUNT = sizeof graph_checks / sizeof graph_checks[0] };
enum { CHECK_COUNT = GRAPH_CHECK_COUNT + 1 }; /* the ledger check comes last */

/* Records a library failure as the check's result; keeps the first one in *first. */
static void note_failure(check_result *r, tsr_status st, tsr_status *first) {
  if (st == TSR_OK) return;
  r->passed = false;
  snprintf(r->detail, sizeof r->detail, "%s: %s", tsr_status_name(st), tsr_last_error());
  if (*first == TSR_OK) *first = st;
}

/* Runs every check; returns the first library failure (the checks after it still run). */
static tsr_status run_checks(const selfcheck_target *t, check_result results[CHECK_COUNT]) {
  tsr_status first_failure = TSR_OK;
  for (int i = 0; i < CHECK_COUNT; i++)
    results[i] = (check_result){.name = "", .passed = false};
  ledger_reading before = read_ledgers(t->device);
  for (int i = 0; i < GRAPH_CHECK_COUNT; i++) {
    results[i].name = graph_checks[i].name;
    note_failure(&results[i], graph_checks[i].run(t, &results[i]), &first_failure);
  }
  check_result *ledger = &results[GRAPH_CHECK_COUNT];
  ledger->name = "ledger";
  note_failure(ledger, check_ledger(t, &before, ledger), &first_failure);
  return first_failure;
}

static int count_failed(const check_result results[CHECK_COUNT]) {
  int failed = 0;
  for (int i = 0; i < CHECK_COUNT; i++)
    failed += !results[i].passed;
  return failed;
}

static void print_results_text(const selfcheck_target *t, const tsr_device_info *info,
                               const check_result results[CHECK_COUNT]) {
  char name[32];
  printf("selfcheck: device %s (%s)\n", cli_device_name(t->device, name), info->name);
  for (int i = 0; i < CHECK_COUNT; i++)
    printf("selfcheck: %s %s (%s)\n", results[i].name, results[i].passed ? "ok" : "FAILED",
           results[i].detail);
  int failed = count_failed(results);
  if (failed == 0)
    printf("selfcheck: ok\n");
  else
    printf("selfcheck: FAILED (%d of %d checks)\n", failed, CHECK_COUNT);
}

static bool print_results_json(const selfcheck_target *t, const tsr_device_info *info,
                               const check_result results[CHECK_COUNT]) {
  char name[32];
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "device", cli_device_name(t->device, name));
  cJSON_AddStringToObject(root, "device_name", info->name);
  cJSON_AddBoolToObject(root, "ok", count_failed(results) == 0);
  cJSON *list = cJSON_AddArrayToObject(root, "checks");
  for (int i = 0; i < CHECK_COUNT; i++) {
    cJSON *check = cJSON_CreateObject();
    cJSON_AddStringToObject(check, "name", results[i].name);
    cJSON_AddBoolToObject(check, "ok", results[i].passed);
    cJSON_AddStringToObject(check, "detail", results[i].detail);
    cJSON_AddItemToArray(list, check);
  }
  return cli_print_json(root);
}

/* Parses the flags; returns -1 to go on, or the exit code to stop with. */
static int parse_selfcheck_args(int argc, char **argv, bool *json, tsr_device *device) {
  *device = tsr_default_device();
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(selfcheck_usage, stdout);
      return CLI_EXIT_OK;
    }
    if (strcmp(argv[i], "--json") == 0) {
      *json = true;
    } else if (strcmp(argv[i], "--device") == 0) {
      if (i + 1 >= argc) return cli_usage_error("selfcheck", "--device needs a value");
      if (!cli_parse_device(argv[++i], device))
        return cli_usage_error("selfcheck", "--device '%s' is not cpu, gpu or gpu:N", argv[i]);
    } else {
      return cli_usage_error("selfcheck", "unknown argument '%s'", argv[i]);
    }
  }
  return -1;
}

int cli_selfcheck(int argc, char **argv) {
  bool json = false;
  selfcheck_target target = {{TSR_CPU, 0}, NULL};
  int stop = parse_selfcheck_args(argc, argv, &json, &target.device);
  if (stop >= 0) return stop;
  tsr_device_info info;
  tsr_status st = tsr_device_info_get(target.device, &info);
  if (st != TSR_OK) {
    fprintf(stderr, "tessera selfcheck: %s\n", tsr_last_error());
    return CLI_EXIT_USAGE;
  }
  target.stream = tsr_default_stream(target.device);

  check_result results[CHECK_COUNT];
  st = run_checks(&target, results);
  bool printed = json ? print_results_json(&target, &info, results)
                      : (print_results_text(&target, &info, results), true);
  if (st != TSR_OK) {
    /* A library failure is a failure of the library, not of the caller's input, except a cap. */
    for (int i = 0; i < CHECK_COUNT; i++)
      if (!results[i].passed)
        fprintf(stderr, "tessera selfcheck: %s: %s\n", results[i].name, results[i].detail);
    return st == TSR_ERR_CAP ? CLI_EXIT_CAP : CLI_EXIT_FAILURE;
  }
  int failed = count_failed(results);
  if (failed > 0)
    fprintf(stderr, "tessera selfcheck: %d of %d checks failed\n", failed, CHECK_COUNT);
  return (printed && failed == 0) ? CLI_EXIT_OK : CLI_EXIT_FAILURE;
}
