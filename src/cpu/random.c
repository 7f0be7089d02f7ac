/* cpu/random.c — CPU kernels of ops/random.c: Philox-4x32-10 (Salmon et al., "Parallel random
 * numbers: as easy as 1, 2, 3", SC'11) and the draws built on it. Element i uses only the counter
 * block that ops/random.h assigns it, so a draw is the same on every run, in any slice, and for
 * any split of the work. Not a stream generator: there is no state between calls. */
#include "cpu/kernels.h"

#include <math.h>
#include <stdlib.h>

#include "base/half.h"
#include "base/status.h"
#include "cpu/rows.h"
#include "cpu/strided.h"
#include "ops/random.h"

#define CHUNK 256 /* a multiple of 4: chunks start on block boundaries */

enum {
  PHILOX_M0 = 0xD2511F53u, /* the round multipliers */
  PHILOX_M1 = 0xCD9E8D57u,
  PHILOX_W0 = 0x9E3779B9u, /* the key schedule's Weyl increments (golden ratio, sqrt(3) - 1) */
  PHILOX_W1 = 0xBB67AE85u
};

typedef struct {
  uint32_t word[4];
} philox_block;

/* Philox-4x32-10 of counter (block low, block high, 0, 0) under key (seed low, seed high). */
static philox_block philox4x32_10(uint64_t block, uint64_t seed) {
  uint32_t c0 = (uint32_t)block, c1 = (uint32_t)(block >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  for (int round = 0; round < 10; round++) {
    if (round > 0) { /* the key is bumped before every round but the first */
      k0 += PHILOX_W0;
      k1 += PHILOX_W1;
    }
    uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
    uint32_t next0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, next2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c1 = (uint32_t)p1;
    c3 = (uint32_t)p0;
    c0 = next0;
    c2 = next2;
  }
  return (philox_block){{c0, c1, c2, c3}};
}

/* A 53-bit uniform in [0, 1) from two words. */
static double uniform53(uint32_t high, uint32_t low) {
  return ((double)(high >> 5) * 67108864.0 + (double)(low >> 6)) * 0x1p-53;
}

/* The dtype value nearest to v, as a float. */
static float dtype_round(tsr_dtype dtype, float v) {
  if (dtype == TSR_FLOAT16) return tsri_f16_to_f32(tsri_f32_to_f16(v));
  if (dtype == TSR_BFLOAT16) return tsri_bf16_to_f32(tsri_f32_to_bf16(v));
  return v;
}

/* low + (high - low) * u with u = top 24 bits / 2^24 in [0, 1), rounded to the dtype and clamped
 * to the dtype values in [low, high) (rounding alone could reach high). */
static tsr_status cpu_uniform(const tsri_op *op) {
  const tsri_view *out = &op->out;
  if (out->size == 0) return TSR_OK;
  const tsri_random_params *p = TSRI_PARAMS(op, tsri_random_params);
  double width = p->b - p->a;
  int64_t element = (int64_t)tsr_dtype_size(out->dtype);
  float values[CHUNK];
  philox_block block = {{0}};
  for (int64_t start = 0; start < out->size; start += CHUNK) {
    int64_t n = out->size - start < CHUNK ? out->size - start : CHUNK;
    for (int64_t i = 0; i < n; i++) {
      uint64_t index = (uint64_t)(start + i);
      if ((index & 3u) == 0) block = philox4x32_10(index >> 2, p->seed);
      double u = (double)(block.word[index & 3u] >> 8) * 0x1p-24;
      float v = dtype_round(out->dtype, (float)(p->a + width * u));
      values[i] = v < p->lowest ? p->lowest : v > p->highest ? p->highest : v;
    }
    tsri_cpu_store_f32((unsigned char *)out->data + start * element, out->dtype, n, values);
  }
  return TSR_OK;
}

/* Box-Muller on block i / 2: r = sqrt(-2 ln(1 - u1)), theta = 2 pi u2 with 53-bit u1, u2;
 * element 2j is r cos(theta), 2j + 1 is r sin(theta). */
static tsr_status cpu_normal(const tsri_op *op) {
  const tsri_view *out = &op->out;
  if (out->size == 0) return TSR_OK;
  const tsri_random_params *p = TSRI_PARAMS(op, tsri_random_params);
  const double two_pi = 6.283185307179586476925;
  int64_t element = (int64_t)tsr_dtype_size(out->dtype);
  float values[CHUNK];
  double radius = 0.0, theta = 0.0;
  for (int64_t start = 0; start < out->size; start += CHUNK) {
    int64_t n = out->size - start < CHUNK ? out->size - start : CHUNK;
    for (int64_t i = 0; i < n; i++) {
      uint64_t index = (uint64_t)(start + i);
      if ((index & 1u) == 0) {
        philox_block b = philox4x32_10(index >> 1, p->seed);
        radius = sqrt(-2.0 * log(1.0 - uniform53(b.word[0], b.word[1])));
        theta = two_pi * uniform53(b.word[2], b.word[3]);
      }
      double z = (index & 1u) ? radius * sin(theta) : radius * cos(theta);
      values[i] = (float)(p->a + p->b * z);
    }
    tsri_cpu_store_f32((unsigned char *)out->data + start * element, out->dtype, n, values);
  }
  return TSR_OK;
}

/* Gumbel-max: per row, the first index of the largest logit - log(-log(u)), u = (word + 1/2) /
 * 2^32 in (0, 1) for the logit's row-major index. A NaN logit wins its row, as in argmax. */
static void categorical_fold(const tsri_view *logits, const tsri_random_params *p, double *best,
                             int32_t *arg) {
  int64_t out_strides[TSR_MAX_NDIM], stride = 1;
  for (int d = logits->ndim - 1; d >= 0; d--) {
    out_strides[d] = d == p->axis ? 0 : stride;
    if (d != p->axis) stride *= logits->shape[d];
  }
  const int64_t *strides[2] = {logits->strides, out_strides};
  int64_t offsets[2] = {logits->offset, 0};
  tsri_row_walker walker;
  tsri_row_walker_init(&walker, logits, 2, strides, offsets);
  int last = logits->ndim - 1;
  int64_t n = logits->shape[last], in_stride = logits->strides[last];
  int64_t out_stride = out_strides[last], element = (int64_t)tsr_dtype_size(logits->dtype);
  uint64_t index = 0; /* row-major, the draw's counter */
  philox_block block = {{0}};
  float x[CHUNK];
  do {
    for (int64_t start = 0; start < n; start += CHUNK) {
      int64_t count = n - start < CHUNK ? n - start : CHUNK;
      tsri_cpu_load_f32(
          (const unsigned char *)logits->data + (walker.offset[0] + start * in_stride) * element,
          logits->dtype, in_stride, count, x);
      for (int64_t i = 0; i < count; i++, index++) {
        if ((index & 3u) == 0) block = philox4x32_10(index >> 2, p->seed);
        double u = ((double)block.word[index & 3u] + 0.5) * 0x1p-32;
        double score = (double)x[i] - log(-log(u));
        int64_t row = walker.offset[1] + (start + i) * out_stride;
        if (!isnan(best[row]) && (score > best[row] || isnan(score))) {
          best[row] = score;
          arg[row] = (int32_t)(last == p->axis ? start + i : walker.index[p->axis]);
        }
      }
    }
  } while (tsri_row_walker_next(&walker));
}

static tsr_status cpu_categorical(const tsri_op *op) {
  const tsri_view *out = &op->out;
  if (out->size == 0) return TSR_OK;
  const tsri_view *logits = &op->in[0];
  int32_t *arg = (int32_t *)out->data;
  double *best = malloc((size_t)out->size * sizeof *best);
  if (!best)
    return tsri_error(TSR_ERR_NOMEM, "out of host memory for %lld rows", (long long)out->size);
  for (int64_t i = 0; i < out->size; i++) {
    best[i] = -INFINITY;
    arg[i] = 0;
  }
  categorical_fold(logits, TSRI_PARAMS(op, tsri_random_params), best, arg);
  free(best);
  return TSR_OK;
}

void tsri_cpu_register_random(tsri_kernel_fn *table) {
  table[TSRI_PRIM_RANDOM_UNIFORM] = cpu_uniform;
  table[TSRI_PRIM_RANDOM_NORMAL] = cpu_normal;
  table[TSRI_PRIM_RANDOM_CATEGORICAL] = cpu_categorical;
}
