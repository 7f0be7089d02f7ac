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

/* Inputs: x, and when dynamic_offset the offset (an int32/int64 array of one element). */
typedef struct {
  int64_t offset; /* position of row t is offset + t (the offset input's value when dynamic) */
  int dims;       /* even, 2 <= dims <= D */
  bool traditional;
  float base;
  bool dynamic_offset; /* offset is 0 and ignored; positions wrap in int64 */
} tsri_rope_params;

/* Inputs: q [B, Hq, Tq, D], k and v [B, Hkv, Tk, D], and when dynamic_length the length L (an
   int32/int64 array of one element): then causal, and only keys and values [0, clamp(L, Tq, Tk))
   are read, as if k and v had been sliced to them. */
typedef struct {
  float scale;
  bool causal;
  bool dynamic_length;
} tsri_sdpa_params;

#endif
