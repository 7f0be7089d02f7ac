/* tests/dist/test_mpi_calibrate.c — a calibration of a dense and of an MoE model split over the
 * ranks (tensor parallel) reports what a calibration of the same model in one process reports:
 * every linear's whole shape and expert count, the count of input values (exact: a row-parallel
 * linear's histogram is the sum of the ranks' disjoint channel slices, the routed down_proj's the
 * sum of each rank's own experts' (token, expert) rows with no padding, so a rank's share alone, or
 * a padded one, would differ), and |x|'s maximum and percentiles within the split forward's own
 * error. That error: the split only reorders float32 sums (o_proj's and down_proj's all-sums, the
 * row-blocked products), which test_mpi_model bounds at 2e-4 relative on the logits, so inputs
 * agree to 2e-4 relative; a percentile is a bin's upper edge (bins 1/32 of a power of two wide),
 * and a value moved by 2e-4 crosses at most one edge, so percentiles agree within one bin (1/16
 * relative, with margin).
 * The recipe: at several budgets the split model's JSON is the one-process model's, byte for
 * byte, and the same on every rank, and each linear's 4- and 8-bit errors agree within 2e-3
 * relative: an error weighs squared weight errors (the same weights) by the inputs' mean squares,
 * which move by at most 2 * 2e-4 relative, and the ranks' float32-rounded shares add N roundings
 * of 6e-8; 2e-3 leaves a factor of five. A rank's share alone, or a replica counted twice, misses
 * that by far (a half or a double of the error).
 * Failures on one rank: its k-th allocation fails, for every k a prompt and a recipe make; every
 * rank fails (the others with TSR_ERR_DIST, at once) or none does, and the group stays usable. */
#include <time.h>

#include "dist_check.h"
#include "model/model_fixture.h"
#include "tessera/testing.h"

static tsr_group *group;

static tsr_model *load(const char *dir, tsr_group *g) {
  tsr_model_options opt = tsr_model_default_options();
  opt.device = fx_cpu;
  opt.group = g;
  tsr_model *m = NULL;
  CHECK_OK(tsr_model_load(&m, dir, &opt));
  return m;
}

static tsr_model_calibration *calibrated(tsr_model *m) {
  static const int32_t first[12] = {5, 17, 99, 3, 250, 42, 7, 7, 128, 64, 1, 200};
  static const int32_t second[5] = {9, 8, 7, 6, 5};
  tsr_model_calibration *c = NULL;
  CHECK_OK(tsr_model_calibration_new(&c, m));
  CHECK_OK(tsr_model_calibration_run(c, first, 12));
  CHECK_OK(tsr_model_calibration_run(c, second, 5));
  return c;
}

static bool near(double got, double want, double relative) {
  return fabs(got - want) <= relative * fabs(want);
}

static void compare(const tsr_calibration_linear *s, const tsr_calibration_linear *w) {
  if (strcmp(s->name, w->name) != 0) CHECK_FAIL_("linear %s against %s", s->name, w->name);
  if (s->in_features != w->in_features || s->out_features != w->out_features ||
      s->experts != w->experts || s->parameters != w->parameters || s->values != w->values)
    CHECK_FAIL_("%s: split in %lld out %lld parameters %llu values %llu; whole %lld %lld %llu %llu",
                s->name, (long long)s->in_features, (long long)s->out_features,
                (unsigned long long)s->parameters, (unsigned long long)s->values,
                (long long)w->in_features, (long long)w->out_features,
                (unsigned long long)w->parameters, (unsigned long long)w->values);
  if (!near(s->absmax, w->absmax, 2e-4) || !near(s->p50, w->p50, 1.0 / 16) ||
      !near(s->p99, w->p99, 1.0 / 16) || !near(s->p999, w->p999, 1.0 / 16))
    CHECK_FAIL_("%s: split absmax %g p50 %g p99 %g p99.9 %g; whole %g %g %g %g", s->name, s->absmax,
                s->p50, s->p99, s->p999, w->absmax, w->p50, w->p99, w->p999);
  CHECK(s->peak_in_use_bytes > 0);
}

static bool near_error(double got, double want) {
  return fabs(got - want) <= 2e-3 * fabs(want) + 1e-30;
}

/* The recipe at `budget` of both, which must be the same JSON on every rank, with the same
   per-linear errors within near_error. Returns how many linears it puts at 8 bits. */
static int same_recipe(tsr_model_calibration *s, tsr_model_calibration *w, double budget) {
  char *split = NULL, *whole = NULL;
  CHECK_OK(tsr_model_calibration_recipe(s, budget, &split));
  CHECK_OK(tsr_model_calibration_recipe(w, budget, &whole));
  if (strcmp(split, whole) != 0)
    CHECK_FAIL_("budget %g: the split recipe\n%s\nis not the whole model's\n%s", budget, split,
                whole);
  int blocks = 0; /* the default block and one per linear at 8 bits */
  for (const char *p = whole; (p = strstr(p, "\"group_size\"")) != NULL; p++)
    blocks++;
  /* every rank's JSON is rank 0's: its length and bytes summed over the ranks are N times its own
   */
  int64_t mine[2] = {(int64_t)strlen(split), 0}, sum[2];
  for (const char *p = split; *p; p++)
    mine[1] += (unsigned char)*p;
  CHECK_OK(tsr_group_all_sum_raw(group, mine, sum, 2, TSR_INT64, dist_cpu()));
  CHECK_OK(tsr_stream_synchronize(dist_cpu()));
  CHECK(sum[0] == mine[0] * tsr_group_size(group) && sum[1] == mine[1] * tsr_group_size(group));
  for (size_t i = 0; i < tsr_model_calibration_count(w); i++) {
    tsr_calibration_linear ls, lw;
    CHECK_OK(tsr_model_calibration_linear(s, i, &ls));
    CHECK_OK(tsr_model_calibration_linear(w, i, &lw));
    if (!near_error(ls.error_4bit, lw.error_4bit) || !near_error(ls.error_8bit, lw.error_8bit) ||
        ls.proposed_bits != lw.proposed_bits)
      CHECK_FAIL_("%s: split errors %.9g %.9g bits %d; whole %.9g %.9g bits %d", ls.name,
                  ls.error_4bit, ls.error_8bit, ls.proposed_bits, lw.error_4bit, lw.error_8bit,
                  lw.proposed_bits);
  }
  free(split);
  free(whole);
  return blocks - 1;
}

static void split_matches_whole(const char *dir, const char *what) {
  tsr_model *whole = load(dir, NULL), *split = load(dir, group);
  tsr_model_calibration *w = calibrated(whole), *s = calibrated(split);
  size_t n = tsr_model_calibration_count(w);
  CHECK_EQ_U64(tsr_model_calibration_count(s), n);
  for (size_t i = 0; i < n; i++) {
    tsr_calibration_linear ls, lw;
    CHECK_OK(tsr_model_calibration_linear(s, i, &ls));
    CHECK_OK(tsr_model_calibration_linear(w, i, &lw));
    compare(&ls, &lw);
  }
  /* 4.5: all at 4 bits; 8.5: all at 8; between: some of each (checked, or the test is idle) */
  static const double budgets[5] = {4.5, 5.0, 6.0, 7.0, 8.5};
  int eights[5];
  for (int b = 0; b < 5; b++)
    eights[b] = same_recipe(s, w, budgets[b]);
  CHECK(eights[0] == 0 && eights[2] > 0 && eights[2] < eights[4]);
  if (tsr_group_rank(group) == 0)
    printf(
        "  %s split %d ways: %zu linears as in one process; recipes equal (8-bit linears at "
        "budgets 4.5..8.5: %d %d %d %d %d)\n",
        what, tsr_group_size(group), n, eights[0], eights[1], eights[2], eights[3], eights[4]);
  tsr_model_calibration_free(s);
  tsr_model_calibration_free(w);
  tsr_model_free(split);
  tsr_model_free(whole);
}

/* One step of a calibration the last rank may fail: a prompt (the forward's nodes, the
   collectives' outputs, the statistics), or a recipe over a calibration made beforehand (the
   weighing: some allocations before any collective, some in the nodes that feed one, a split
   linear's gathers and sums). */
static tsr_model_calibration *step_input(tsr_model *m, bool recipe) {
  if (recipe) return calibrated(m);
  tsr_model_calibration *c = NULL;
  CHECK_OK(tsr_model_calibration_new(&c, m));
  return c;
}

static tsr_status step(tsr_model_calibration *c, bool recipe) {
  static const int32_t tokens[6] = {5, 17, 99, 3, 250, 42};
  if (!recipe) return tsr_model_calibration_run(c, tokens, 6);
  char *json = NULL;
  tsr_status st = tsr_model_calibration_recipe(c, 6.0, &json);
  free(json);
  return st;
}

/* The last rank's k-th system allocation of the step fails (armed after the cache is emptied),
   for every k the step makes. That rank reports its own error; the others fail with
   TSR_ERR_DIST naming it, at once rather than after the group's 60 s timeout (its failed
   collectives took part in their seals as refusals, or, when it failed before any, one refusal
   told the group), or every rank succeeds. Every rank has then made the same seals: a sum
   afterwards succeeds. */
static void one_rank_fails(const char *dir, bool recipe) {
  tsr_model *split = load(dir, group);
  CHECK_OK(tsr_group_set_timeout(group, 60));
  bool failing = tsr_group_rank(group) == tsr_group_size(group) - 1;
  int fired = 0;
  for (uint64_t k = 1; k < 4000; k++) {
    tsr_model_calibration *c = step_input(split, recipe);
    CHECK_OK(tsr_memory_clear_cache(fx_cpu));
    if (failing) CHECK_OK(tsr_testing_fail_allocation(fx_cpu, k));
    double start = dist_seconds();
    tsr_status st = step(c, recipe);
    double took = dist_seconds() - start;
    bool fired_here = failing && tsr_testing_fail_allocation_pending(fx_cpu) == 0;
    if (failing) CHECK_OK(tsr_testing_fail_allocation(fx_cpu, 0));
    fired += fired_here;
    if (fired_here) {
      CHECK_STATUS(st, TSR_ERR_NOMEM);
    } else if (st != TSR_OK) {
      CHECK_STATUS(st, TSR_ERR_DIST); /* another rank's failure */
    }
    if (took > 20)
      CHECK_FAIL_("%s, k %llu: the failure took %.1f s to reach every rank",
                  recipe ? "recipe" : "prompt", (unsigned long long)k, took);
    /* still usable: a sum after the failure, of who failed and whether the failure fired */
    int32_t mine[2] = {st != TSR_OK, fired_here}, all[2] = {0, 0};
    CHECK_OK(tsr_group_all_sum_raw(group, mine, all, 2, TSR_INT32, dist_cpu()));
    CHECK_OK(tsr_stream_synchronize(dist_cpu()));
    if (all[0] != 0 && all[0] != tsr_group_size(group))
      CHECK_FAIL_("%s, k %llu: %d of %d ranks failed", recipe ? "recipe" : "prompt",
                  (unsigned long long)k, all[0], tsr_group_size(group));
    tsr_model_calibration_free(c);
    if (all[1] == 0) break; /* past the step's allocations */
  }
  if (failing) CHECK(fired >= 5); /* the loop reached into the step */
  tsr_model_free(split);
}

int main(void) {
  group = dist_group("mpi");
  one_rank_fails(FX_DENSE_HF, false);
  one_rank_fails(FX_DENSE_HF, true);
  split_matches_whole(FX_DENSE_HF, "dense");
  split_matches_whole(FX_MOE_HF, "moe");
  tsr_group_free(group);
  tsr_memory_clear_cache(fx_cpu);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
