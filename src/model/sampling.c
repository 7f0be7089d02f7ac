/* model/sampling.c — greedy (argmax, ties to the lower id), or softmax at a temperature, cut to
 * the smallest set of most likely tokens whose mass reaches top_p, and one uniform draw from a
 * counter-based generator (splitmix64 of seed and counter): reproducible across runs and thread
 * counts, since nothing here depends on how the logits were computed in parallel. */
#include "model/sampling.h"

#include <math.h>
#include <stdlib.h>

tsr_status sampling_check(const tsr_sampling *p) {
  if (!(p->temperature >= 0) || !isfinite(p->temperature))
    return tsr_error_set(TSR_ERR_INVALID, "sampling: temperature %g must be finite and >= 0",
                         (double)p->temperature);
  if (!(p->top_p > 0 && p->top_p <= 1))
    return tsr_error_set(TSR_ERR_INVALID, "sampling: top_p %g must be in (0, 1]", (double)p->top_p);
  return TSR_OK;
}

static int32_t argmax(const float *logits, size_t vocab) {
  size_t best = 0;
  for (size_t i = 1; i < vocab; i++)
    if (logits[i] > logits[best] || (isnan(logits[i]) && !isnan(logits[best]))) best = i;
  return (int32_t)best;
}

/* A uniform double in [0, 1) from (seed, counter). */
static double uniform(uint64_t seed, uint64_t counter) {
  uint64_t z = seed + (counter + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (double)(z >> 11) * 0x1.0p-53;
}

typedef struct {
  double p;
  int32_t id;
} candidate;

static int by_probability(const void *a, const void *b) {
  const candidate *x = a, *y = b;
  if (x->p != y->p) return x->p < y->p ? 1 : -1;
  return (x->id > y->id) - (x->id < y->id);
}

int32_t sampling_draw(const float *logits, size_t vocab, const tsr_sampling *p, uint64_t draw) {
  int32_t best = argmax(logits, vocab);
  if (p->temperature == 0 || isnan(logits[best])) return best;
  candidate *c = malloc(vocab * sizeof *c);
  if (!c) return best; /* no room to sample: the most likely token */
  double total = 0, top = (double)logits[best];
  for (size_t i = 0; i < vocab; i++) {
    c[i].id = (int32_t)i;
    c[i].p = exp(((double)logits[i] - top) / (double)p->temperature);
    total += c[i].p;
  }
  qsort(c, vocab, sizeof *c, by_probability);
  size_t keep = vocab;
  double mass = 0;
  for (size_t i = 0; i < vocab; i++) {
    mass += c[i].p / total;
    if (mass >= (double)p->top_p) {
      keep = i + 1;
      break;
    }
  }
  double kept = 0;
  for (size_t i = 0; i < keep; i++)
    kept += c[i].p;
  double target = uniform(p->seed, draw) * kept, run = 0;
  int32_t chosen = c[keep - 1].id;
  for (size_t i = 0; i < keep; i++) {
    run += c[i].p;
    if (target < run) {
      chosen = c[i].id;
      break;
    }
  }
  free(c);
  return chosen;
}
