/* model/calibrate.h — what the files of tsr_model_calibration share: the per-linear histogram of
 * |x| (calibrate_stats.c), the calibration's state (calibrate.c) and the recipe's sensitivity
 * pass (calibrate_recipe.c). Internal to src/model. */
#ifndef TSR_MODEL_CALIBRATE_H
#define TSR_MODEL_CALIBRATE_H

#include "model/glm_model.h"

/* |x| in bins of 1/32 of a power of two from 2^-64 to 2^64: 32 linear bins per octave, so a bin's
 * upper edge is within 1/32 (relative) of any value in it. Zeros (and anything below 2^-65) have
 * a bin of their own; NaN is not counted. */
enum { CAL_SUB_BINS = 32, CAL_MIN_EXP = -64, CAL_MAX_EXP = 64 };
enum { CAL_BINS = (CAL_MAX_EXP - CAL_MIN_EXP + 1) * CAL_SUB_BINS + 1 };

typedef struct {
  uint64_t counts[CAL_BINS]; /* counts[0]: zeros */
  uint64_t values;
  double absmax;
} cal_histogram;

void cal_histogram_add(cal_histogram *h, const float *x, size_t n);
/* The smallest bin edge u with at least ceil(q * values) values <= u, at most absmax; 0 when
 * nothing was added. q in (0, 1]. */
double cal_histogram_percentile(const cal_histogram *h, double q);

/* The recipe's quantization group (affine, convert's default). */
enum { CAL_RECIPE_GROUP = 64 };

/* One observed linear layer. */
typedef struct {
  char name[160];
  const glm_linear *linear; /* this rank's shard; its weight NULL where another rank holds it all */
  const glm_linear *partner; /* a split glm4 gate_up's up rows, weighed with the gate; else NULL */
  int64_t layer, experts;    /* experts: the whole layer's (0 unstacked) */
  int64_t matrices; /* the matrices this rank holds: its experts, 1, or 0 (held elsewhere) */
  int bits;         /* as loaded: 0 float, else the quantized bits (the holder's, under a group) */
  cal_histogram hist;   /* of the whole input (combined over the ranks when split) */
  cal_histogram *local; /* under a group, a linear whose input values are split over the
                           ranks (o_proj and down_proj's channels, the routed down_proj's
                           rows, a shared expert held by rank 0 alone): this rank's part,
                           summed into hist; else NULL */
  int64_t in_features, out_features; /* the whole layer's, not this rank's shard */
  double *channel_squares; /* [this rank's in_features]: sum of x_j^2 over every row observed */
  uint64_t rows;
  uint64_t peak_in_use;
  /* Under a group, how the recipe weighs it (calibrate_group.c): */
  bool contributes; /* this rank's errors count in the sum over the ranks (not a replica's) */
  bool rows_split;  /* the ranks saw disjoint rows (routed down_proj): squares summed first */
  bool gather;      /* input channels split off CAL_RECIPE_GROUP boundaries: weighed gathered */
  double error_4bit, error_8bit;
  int proposed_bits;
} cal_linear;

struct tsr_model_calibration {
  tsr_model *model;
  cal_linear *linears;
  size_t n, cap;
  size_t prompts;
  uint64_t tokens;
  float *scratch; /* the observed input on the host */
  size_t scratch_len;
};

/* The estimated output errors of `lin` at 4 and 8 bits (calibrate.h's recipe), computed on the
 * model's device a weight (an expert) at a time (this rank's shard of it under a group). */
tsr_status cal_linear_errors(tsr_model_calibration *c, cal_linear *lin);

/* Under a tensor-parallel group (calibrate_group.c; no-ops without one): each linear's whole
 * shape, how its statistics are split and how the recipe weighs it; after a prompt, the split
 * inputs' histograms summed over the ranks and every maximum taken over them. */
tsr_status cal_group_prepare(tsr_model_calibration *c);
tsr_status cal_group_combine(tsr_model_calibration *c);
/* sum[i] = the sum over the ranks of mine[i] (n doubles), added in rank order in float64 on every
 * rank, so every rank gets the same bits. sum may be mine. */
tsr_status cal_group_sum_doubles(const tsr_model_calibration *c, const double *mine, double *sum,
                                 size_t n);

#endif
