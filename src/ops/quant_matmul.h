/* ops/quant_matmul.h — the parameters and the shape rules of tsr_quantized_matmul and
 * tsr_gather_qmm, shared by the constructors (ops/quant_matmul.c) and every backend's kernel so
 * the two cannot disagree. Not the arithmetic: that is the backends' (cpu/qmm.c). */
#ifndef TSR_OPS_QUANT_MATMUL_H
#define TSR_OPS_QUANT_MATMUL_H

#include "core/array.h"

/* TSRI_PRIM_QUANTIZED_MATMUL and TSRI_PRIM_GATHER_QMM. The node's inputs are x, w_q, scales, then
   biases when has_biases, then lhs_indices when has_lhs, then rhs_indices when has_rhs.
   group_size and bits are resolved (never 0). */
typedef struct {
  int mode; /* tsr_quant_mode */
  int group_size, bits;
  bool transpose;
  bool has_biases, has_lhs, has_rhs;
  bool sorted_indices; /* a hint only: never trusted for bounds */
} tsri_qmm_params;
TSRI_PARAMS_FIT(tsri_qmm_params);

/* The node's inputs, named. */
typedef struct {
  const tsr_array *x, *w_q, *scales, *biases, *lhs, *rhs; /* biases/lhs/rhs may be NULL */
} tsri_qmm_operands;

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

/* Validates every argument of the op `op` ("quantized_matmul" or "gather_qmm"; a gather node
 * with neither indices array is a quantized_matmul, as in MLX) and computes its geometry and
 * output dtype. TSR_ERR_INVALID naming the values (quant-spec.md Part A §6, Part B §4.1). `p`
 * carries the resolved group size and bits; has_lhs / has_rhs must match operands' pointers. */
tsr_status tsri_qmm_geometry_of(const char *op, const tsri_qmm_operands *operands,
                                const tsri_qmm_params *p, tsri_qmm_geometry *g,
                                tsr_dtype *out_dtype);

/* The node's inputs, named (the order of tsri_qmm_params). */
tsri_qmm_operands tsri_qmm_operands_of(const tsr_array *node);

#endif
