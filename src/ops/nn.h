/* ops/nn.h — the parameters the transformer-block ops (softmax, rms_norm, rope, sdpa) keep in
 * their nodes, for the backends' kernels. The checks and shapes are in ops/nn.c. */
#ifndef TSR_OPS_NN_H
#define TSR_OPS_NN_H

#include "core/primitive.h"

#include <stdbool.h>

typedef struct {
  int axis; /* non-negative */
} tsri_softmax_params;

/* Inputs: x, and weight when has_weight. */
typedef struct {
  float eps;
  bool has_weight;
} tsri_rms_norm_params;

typedef struct {
  int64_t offset; /* position of row t is offset + t */
  int dims;       /* even, 2 <= dims <= D */
  bool traditional;
  float base;
} tsri_rope_params;

/* Inputs: q [B, Hq, Tq, D], k and v [B, Hkv, Tk, D]. */
typedef struct {
  float scale;
  bool causal;
} tsri_sdpa_params;

#endif
