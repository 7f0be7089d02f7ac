/* tests/dist/test_mpi_calibrate.c — a calibration of a dense model split over the ranks
 * (tensor parallel) reports what a calibration of the same model in one process reports: every
 * linear's whole shape, the count of input values (exact: a row-parallel linear's histogram is
 * the sum of the ranks' disjoint channel slices, so a rank's share alone would be 1/N of it), and
 * |x|'s maximum and percentiles within the split forward's own error. That error: the split only
 * reorders float32 sums (o_proj's and down_proj's all-sums, the row-blocked products), which
 * test_mpi_model bounds at 2e-4 relative on the logits, so inputs agree to 2e-4 relative; a
 * percentile is a bin's upper edge (bins 1/32 of a power of two wide), and a value moved by 2e-4
 * crosses at most one edge, so percentiles agree within one bin (1/16 relative, with margin). A
 * split MoE model and a split model's recipe are refused (TSR_ERR_UNSUPPORTED). */
#include "dist_check.h"
#include "model/model_fixture.h"

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
      s->parameters != w->parameters || s->values != w->values)
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

static void split_matches_whole(void) {
  tsr_model *whole = load(FX_DENSE_HF, NULL), *split = load(FX_DENSE_HF, group);
  tsr_model_calibration *w = calibrated(whole), *s = calibrated(split);
  size_t n = tsr_model_calibration_count(w);
  CHECK_EQ_U64(tsr_model_calibration_count(s), n);
  for (size_t i = 0; i < n; i++) {
    tsr_calibration_linear ls, lw;
    CHECK_OK(tsr_model_calibration_linear(s, i, &ls));
    CHECK_OK(tsr_model_calibration_linear(w, i, &lw));
    compare(&ls, &lw);
  }
  char *block = NULL;
  CHECK_STATUS(tsr_model_calibration_recipe(s, 6.0, &block), TSR_ERR_UNSUPPORTED);
  CHECK_MESSAGE("split over");
  CHECK(block == NULL);
  if (tsr_group_rank(group) == 0)
    printf("  dense split %d ways: %zu linears as in one process; the recipe refused: %s\n",
           tsr_group_size(group), n, tsr_last_error());
  tsr_model_calibration_free(s);
  tsr_model_calibration_free(w);
  tsr_model_free(split);
  tsr_model_free(whole);
}

static void moe_refused(void) {
  tsr_model *m = load(FX_MOE_HF, group);
  tsr_model_calibration *c = NULL;
  CHECK_STATUS(tsr_model_calibration_new(&c, m), TSR_ERR_UNSUPPORTED);
  CHECK_MESSAGE("MoE");
  CHECK(c == NULL);
  tsr_model_free(m);
}

int main(void) {
  group = dist_group("mpi");
  split_matches_whole();
  moe_refused();
  tsr_group_free(group);
  tsr_memory_clear_cache(fx_cpu);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
