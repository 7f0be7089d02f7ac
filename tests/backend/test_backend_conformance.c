/* tests/backend/test_backend_conformance.c — the backend conformance harness's main: every case
 * of the tables (cases_*.c) on every backend present.
 *
 * For each case, on the CPU's default stream, in every layout the case's inputs allow (harness.h):
 * the views must give what the contiguous copy of the same values gives (bit for bit for exact
 * cases, else within the case's tolerance); the same runs on a second CPU stream must give the
 * same bits. Then every usable GPU runs the same variants on its default stream and on a second
 * stream, each compared with the CPU's result of that variant within the case's tolerance, and
 * the checks only a GPU has (gpu_only.c). Without a usable GPU that part prints one line per GPU
 * (or one line for none) and passes.
 *
 * A check that fails prints one FAIL line and the run goes on; the exit status is 1 when any
 * check failed that is not in known_failures below (and when a listed one passes: the list must
 * stay true). `test_backend_conformance NAME...` runs only the cases whose names contain one of
 * the arguments, to reproduce a failure. */
#include <time.h>

#include "harness.h"

/* Checks known to fail today, each with the issue it waits on: {case, check}. The check is
   the text a FAIL line prints after the case's input shapes, e.g. "cpu: step-2 slice view vs
   contiguous" or "gpu:0 default stream: contiguous vs cpu". Empty today. */
typedef struct {
  const char *case_name, *check;
} known_failure;
static const known_failure known_failures[] = {{NULL, NULL}};

static const tsr_device cpu = {TSR_CPU, 0};

typedef struct {
  tsr_device device;
  tsr_stream *streams[2]; /* the default stream and a second one */
} conf_gpu;

static int failures, known, checks, unsupported;

static bool is_known(const conf_case *c, const char *check) {
  for (const known_failure *k = known_failures; k->case_name && k->check; k++)
    if (!strcmp(k->case_name, c->name) && !strcmp(k->check, check)) return true;
  return false;
}

/* Counts one check's outcome against the known-failure list. */
static void tally(const conf_case *c, const char *check, bool ok) {
  checks++;
  bool listed = is_known(c, check);
  if (ok && listed) {
    printf("FAIL %s: %s passes but is listed in known_failures: remove it\n", c->name, check);
    failures++;
  } else if (!ok && listed) {
    printf("  (known failure, listed in known_failures)\n");
    known++;
  } else if (!ok) {
    failures++;
  }
}

/* "name (float32 [7, 33], int32 [5])": the case and its input shapes, for messages. */
static void describe(char *buf, size_t cap, const conf_case *c, const char *check) {
  int used = snprintf(buf, cap, "%s (", c->name);
  for (int i = 0; i < c->ninputs && used > 0 && (size_t)used < cap; i++) {
    used += snprintf(buf + used, cap - (size_t)used, "%s%s [", i ? ", " : "",
                     tsr_dtype_name(c->in[i].dtype));
    for (int d = 0; d < c->in[i].ndim && (size_t)used < cap; d++)
      used += snprintf(buf + used, cap - (size_t)used, d ? ", %lld" : "%lld",
                       (long long)c->in[i].shape[d]);
    if ((size_t)used < cap) used += snprintf(buf + used, cap - (size_t)used, "]");
  }
  if (used > 0 && (size_t)used < cap) snprintf(buf + used, cap - (size_t)used, "): %s", check);
}

static bool compare(const conf_case *c, const char *check, const conf_result *got,
                    const conf_result *want, conf_tol tol) {
  char what[512];
  describe(what, sizeof what, c, check);
  bool ok = conf_compare(what, got, want, tol);
  tally(c, check, ok);
  return ok;
}

static bool run(const conf_case *c, const char *check, const conf_values *vals, conf_variant v,
                tsr_stream *s, conf_result *r) {
  tsr_status st = conf_run(c, vals, v, s, r);
  if (st == TSR_OK) return true;
  char what[512];
  describe(what, sizeof what, c, check);
  printf("FAIL %s: %s: %s\n", what, tsr_status_name(st), tsr_last_error());
  tally(c, check, false);
  return false;
}

/* The layout checks and the second-stream check on the CPU; fills cpu_results[v] (n = 0 where
   the variant does not apply or failed). */
static void run_cpu(const conf_case *c, const conf_values *vals, tsr_stream *second,
                    conf_result *results) {
  char check[160];
  for (int v = 0; v < CONF_VARIANTS; v++) {
    if (!conf_variant_applies(c, vals, (conf_variant)v)) continue;
    snprintf(check, sizeof check, "cpu: %s", conf_variant_name((conf_variant)v));
    if (!run(c, check, vals, (conf_variant)v, tsr_default_stream(cpu), &results[v])) continue;
    conf_result again;
    snprintf(check, sizeof check, "cpu second stream: %s", conf_variant_name((conf_variant)v));
    if (!run(c, check, vals, (conf_variant)v, second, &again)) continue;
    compare(c, check, &again, &results[v], (conf_tol){0, 0});
    conf_result_free(&again);
  }
  static const conf_variant view[4] = {CONF_TRANSPOSED, CONF_STRIDED, CONF_REVERSED,
                                       CONF_BROADCAST};
  static const conf_variant same[4] = {CONF_BASE, CONF_BASE, CONF_BASE, CONF_BROADCAST_COPY};
  for (int i = 0; i < 4; i++) {
    if (!results[view[i]].n || !results[same[i]].n) continue;
    snprintf(check, sizeof check, "cpu: %s vs contiguous", conf_variant_name(view[i]));
    compare(c, check, &results[view[i]], &results[same[i]], c->tol);
  }
}

/* Every variant on both streams of one GPU, against the CPU's result of that variant. */
static void run_gpu(const conf_case *c, const conf_values *vals, const conf_gpu *g,
                    const conf_result *cpu_results) {
  char check[160];
  for (int k = 0; k < 2; k++) {
    for (int v = 0; v < CONF_VARIANTS; v++) {
      if (!cpu_results[v].n) continue;
      snprintf(check, sizeof check, "gpu:%d %s stream: %s vs cpu", g->device.index,
               k ? "second" : "default", conf_variant_name((conf_variant)v));
      conf_result r;
      tsr_status st = conf_run(c, vals, (conf_variant)v, g->streams[k], &r);
      char what[512];
      describe(what, sizeof what, c, check);
      if (st == TSR_ERR_UNSUPPORTED) { /* refused at construction: not there yet, not wrong */
        printf("unsupported %s: %s\n", what, tsr_last_error());
        unsupported++;
        return;
      }
      if (st != TSR_OK) {
        printf("FAIL %s: %s: %s\n", what, tsr_status_name(st), tsr_last_error());
        tally(c, check, false);
        continue;
      }
      compare(c, check, &r, &cpu_results[v], c->tol);
      conf_result_free(&r);
    }
  }
}

/* FNV-1a of the name: each case draws its own values, whatever the order of the tables. */
static uint64_t case_seed(const char *name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *name; name++)
    h = (h ^ (unsigned char)*name) * 0x100000001b3ull;
  return h;
}

static bool selected(const char *name, int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strstr(name, argv[i])) return true;
  return argc < 2;
}

/* The GPUs that can run work: a second stream and a placed array must both be had. */
static int usable_gpus(conf_gpu *gpus, int cap) {
  int count = tsr_device_count(TSR_GPU), usable = 0;
  if (count == 0) printf("no GPU present: the GPU part is skipped\n");
  for (int i = 0; i < count && usable < cap; i++) {
    tsr_device d = {TSR_GPU, i};
    tsr_stream *second = NULL;
    tsr_array *probe = NULL;
    float one = 1;
    int64_t shape[1] = {1};
    tsr_status st = tsr_stream_new(&second, d);
    if (st == TSR_OK) st = tsr_array_from_data_on(&probe, &one, TSR_FLOAT32, shape, 1, d);
    tsr_array_release(probe);
    if (st != TSR_OK || !tsr_default_stream(d)) {
      printf("gpu:%d: skipped (%s: %s)\n", i, tsr_status_name(st), tsr_last_error());
      if (second) CHECK_OK(tsr_stream_free(second));
      continue;
    }
    gpus[usable++] = (conf_gpu){d, {tsr_default_stream(d), second}};
  }
  return usable;
}

int main(int argc, char **argv) {
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  const struct {
    const conf_case *cases;
    size_t n;
  } tables[] = {{conf_cases_layout, conf_cases_layout_count},
                {conf_cases_elementwise, conf_cases_elementwise_count},
                {conf_cases_reduce, conf_cases_reduce_count},
                {conf_cases_nn, conf_cases_nn_count},
                {conf_cases_quant, conf_cases_quant_count}};
  conf_check_views_are_views();
  conf_gpu gpus[16];
  int ngpus = usable_gpus(gpus, 16), ncases = 0;
  tsr_stream *second = NULL;
  CHECK_OK(tsr_stream_new(&second, cpu));
  for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {
    for (size_t i = 0; i < tables[t].n; i++) {
      const conf_case *c = &tables[t].cases[i];
      if (!selected(c->name, argc, argv)) continue;
      ncases++;
      conf_values *vals = conf_values_new(c, case_seed(c->name));
      conf_result results[CONF_VARIANTS] = {0};
      run_cpu(c, vals, second, results);
      for (int g = 0; g < ngpus; g++)
        run_gpu(c, vals, &gpus[g], results);
      for (int v = 0; v < CONF_VARIANTS; v++)
        conf_result_free(&results[v]);
      conf_values_free(vals);
    }
  }
  for (int g = 0; g < ngpus; g++) {
    failures += conf_gpu_only(gpus[g].device, gpus[g].streams[1]);
    CHECK_OK(tsr_stream_free(gpus[g].streams[1]));
  }
  CHECK_OK(tsr_stream_free(second));
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf(
      "%d cases, %d checks on the cpu and %d usable gpu(s) in %.2f s: %d failed, %d known "
      "failures, %d cases unsupported on a gpu\n",
      ncases, checks, ngpus,
      (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9, failures, known,
      unsupported);
  CHECK_OK(tsr_memory_clear_cache(cpu));
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return failures ? 1 : 0;
}
