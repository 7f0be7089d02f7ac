/* ops/random.h — the parameters of the random nodes (ops/random.c), read back by their kernels
 * (cpu/random.c), and how a draw's elements map onto Philox-4x32-10 counters. No kernels.
 *
 * The Philox key is the 64-bit seed (low word first); the counter is (block, 0, 0) with a 64-bit
 * block number (low word first), so element i of a draw depends only on (seed, i):
 *   uniform:     block i / 4, word i % 4, its top 24 bits;
 *   normal:      block i / 2, whose 4 words make two 53-bit uniforms for one Box-Muller pair
 *                (cos for even i, sin for odd i);
 *   categorical: element i of the logits in row-major order: block i / 4, word i % 4. */
#ifndef TSR_OPS_RANDOM_H
#define TSR_OPS_RANDOM_H

#include "core/op.h"

typedef struct {
  uint64_t seed;
  double a, b;           /* uniform: low, high; normal: mean, std */
  float lowest, highest; /* uniform: the smallest and largest values of the dtype in [low, high) */
  int axis;              /* categorical, in [0, ndim) */
} tsri_random_params;

#endif
