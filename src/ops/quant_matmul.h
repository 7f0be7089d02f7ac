/* ops/quant_matmul.h — the parameters of tsr_quantized_matmul and tsr_gather_qmm nodes: the
 * resolved arguments and the geometry the constructors (ops/quant_matmul.c) derive once from
 * every argument check, read by every backend's kernel so the two cannot disagree. Not the
 * arithmetic: that is the backends' (cpu/qmm.c). */
#ifndef TSR_OPS_QUANT_MATMUL_H
#define TSR_OPS_QUANT_MATMUL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/op.h"

/* How the products of one node are laid out.
 *
 * Each output matrix [M, N] sits at one position of the batch shape (row-major). The matrix of x
 * it uses is a flat index over x's batch axes (x.shape[:-2]), the matrix of w (and of scales and
 * biases) a flat index over w's batch axes. Each of the two indices comes from an "index shape"
 * aligned at the right of the batch shape and broadcast over it: for gather_qmm the indices
 * array's shape (the index is the array's element there) or, when that array is NULL, the
 * operand's own batch shape (the index is the flat position in it: MLX's default arange); for
 * quantized_matmul the operands' batch shapes when both x and w have more than two axes, else
 * x's batch shape for x and no axes for w (every product then uses w's first matrix: MLX's rule,
 * quant-spec.md Part B §4.1). */
typedef struct {
  int64_t m, n, k;
  int64_t w_rows;     /* rows of one packed weight matrix: N (transpose) or K */
  int64_t w_words;    /* uint32 words per packed row: (K or N) * bits / 32 */
  int64_t groups;     /* scale (and bias) entries per packed row */
  int64_t x_matrices; /* product of x's batch axes (1 for 1-D and 2-D x) */
  int64_t w_matrices; /* product of w's batch axes */
  int batch_ndim;     /* axes of the batch shape */
  int64_t batch_shape[TSR_MAX_NDIM];
  int64_t batch_count;    /* product of batch_shape */
  int lhs_ndim, rhs_ndim; /* the index shapes (see above) */
  int64_t lhs_shape[TSR_MAX_NDIM], rhs_shape[TSR_MAX_NDIM];
  int out_ndim;
  int64_t out_shape[TSR_MAX_NDIM];
} tsri_qmm_geometry;

/* TSRI_PRIM_QUANTIZED_MATMUL and TSRI_PRIM_GATHER_QMM. The node's inputs are x, w_q, scales, then
   biases when has_biases, then lhs_indices when has_lhs, then rhs_indices when has_rhs.
   group_size and bits are resolved (never 0). */
typedef struct {
  int mode; /* tsr_quant_mode */
  int group_size, bits;
  bool transpose;
  bool has_biases, has_lhs, has_rhs;
  bool sorted_indices; /* a hint only: never trusted for bounds */
  tsri_qmm_geometry g; /* from the argument checks (shapes only: strides are known at run time) */
} tsri_qmm_params;

/* The op's inputs, named. */
typedef struct {
  const tsri_view *x, *w_q, *scales, *biases, *lhs, *rhs; /* biases/lhs/rhs may be NULL */
} tsri_qmm_operands;

/* The op's inputs, named (the order of tsri_qmm_params). */
static inline tsri_qmm_operands tsri_qmm_operands_of(const tsri_op *op) {
  const tsri_qmm_params *p = TSRI_PARAMS(op, tsri_qmm_params);
  tsri_qmm_operands o = {&op->in[0], &op->in[1], &op->in[2], NULL, NULL, NULL};
  int next = 3;
  if (p->has_biases) o.biases = &op->in[next++];
  if (p->has_lhs) o.lhs = &op->in[next++];
  if (p->has_rhs) o.rhs = &op->in[next++];
  return o;
}

#endif
