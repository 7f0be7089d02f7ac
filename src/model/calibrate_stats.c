/* model/calibrate_stats.c — the histogram of |x| a calibration keeps per linear: exact maximum,
 * percentiles within one bin (1/32 of a power of two), fixed memory whatever the token count. */
#include <math.h>

#include "model/calibrate.h"

static size_t bin_of(float magnitude) {
  if (!(magnitude >= 0x1p-65f)) return 0; /* zeros and what rounds to nothing */
  int exponent;
  float mantissa = frexpf(magnitude, &exponent); /* magnitude = mantissa 2^exponent, [0.5, 1) */
  if (exponent > CAL_MAX_EXP || isinf(magnitude)) return CAL_BINS - 1;
  if (exponent < CAL_MIN_EXP) return 1;
  size_t sub = (size_t)((mantissa - 0.5f) * (2 * CAL_SUB_BINS));
  if (sub >= CAL_SUB_BINS) sub = CAL_SUB_BINS - 1;
  return 1 + (size_t)(exponent - CAL_MIN_EXP) * CAL_SUB_BINS + sub;
}

/* The largest magnitude bin `bin` holds. */
static double upper_edge(size_t bin) {
  if (bin == 0) return 0x1p-65;
  size_t index = bin - 1;
  int exponent = CAL_MIN_EXP + (int)(index / CAL_SUB_BINS);
  double sub = (double)(index % CAL_SUB_BINS);
  return ldexp(0.5 + (sub + 1) / (2 * CAL_SUB_BINS), exponent);
}

void cal_histogram_add(cal_histogram *h, const float *x, size_t n) {
  for (size_t i = 0; i < n; i++) {
    float magnitude = fabsf(x[i]);
    if (isnan(magnitude)) continue;
    h->counts[bin_of(magnitude)]++;
    h->values++;
    if ((double)magnitude > h->absmax) h->absmax = (double)magnitude;
  }
}

double cal_histogram_percentile(const cal_histogram *h, double q) {
  if (h->values == 0) return 0;
  double wanted = ceil(q * (double)h->values);
  uint64_t target = wanted < 1 ? 1 : (uint64_t)wanted, seen = 0;
  for (size_t bin = 0; bin < CAL_BINS; bin++) {
    seen += h->counts[bin];
    if (seen >= target) {
      if (bin == 0) return 0;
      double edge = upper_edge(bin);
      return edge < h->absmax ? edge : h->absmax;
    }
  }
  return h->absmax;
}
