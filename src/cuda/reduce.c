/* cuda/reduce.c — the GPU's sum, mean, max, min and argmax over any set of axes of any layout
 * and dtype (cuda/kernels/reduce.cuh). Here: the axes as the kernel walks them (size-1 axes
 * dropped, neighbours merged where their strides allow, the kept ones for the output, the
 * reduced ones for the inner loop) and how many threads take one output. Not cumsum
 * (cuda/cumsum.c). */
#include "cuda/kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/launch.h"
#include "ops/reduce.h"

_Static_assert(TSR_BOOL == 0 && TSR_INT32 == 4 && TSR_INT64 == 5 && TSR_FLOAT32 == 8,
               "cuda/kernels/dtype_io.cuh's TSR_DT_* are tsr_dtype's values");

#define REDUCE_BLOCK 256
/* Reductions longer than this get a whole block per output. */
#define BLOCK_PER_OUTPUT_FROM 1024

/* Mirrors struct tsr_reduce_args in cuda/kernels/reduce.cuh. */
typedef struct {
  int64_t kept_shape[TSR_MAX_NDIM], kept_strides[TSR_MAX_NDIM];
  int64_t reduced_shape[TSR_MAX_NDIM], reduced_strides[TSR_MAX_NDIM];
  int64_t offset, outputs, count;
  int nkept, nreduced;
  int lanes, lanes_strided;
} reduce_args;
_Static_assert(sizeof(reduce_args) == 296, "cuda/kernels/reduce.cuh mirrors this layout");

/* Appends an axis to a list, merged into the list's last one when walking both row-major is one
 * walk with the last's stride (so the flat order, the CPU's, is unchanged). */
static void append_axis(int64_t *shape, int64_t *strides, int *n, int64_t extent, int64_t stride) {
  if (*n > 0 && strides[*n - 1] == stride * extent) {
    shape[*n - 1] *= extent;
    strides[*n - 1] = stride;
    return;
  }
  shape[*n] = extent;
  strides[(*n)++] = stride;
}

static void layout_axes(const tsri_view *in, const bool *reduced, reduce_args *a) {
  a->offset = in->offset;
  a->outputs = a->count = 1;
  for (int d = 0; d < in->ndim; d++) {
    if (reduced[d]) a->count *= in->shape[d];
    if (in->shape[d] == 1) continue; /* no effect on any index, argmax's included */
    if (reduced[d])
      append_axis(a->reduced_shape, a->reduced_strides, &a->nreduced, in->shape[d], in->strides[d]);
    else
      append_axis(a->kept_shape, a->kept_strides, &a->nkept, in->shape[d], in->strides[d]);
  }
  for (int d = 0; d < a->nkept; d++)
    a->outputs *= a->kept_shape[d];
}

static int pow2_at_least(int64_t n, int most) {
  int p = 1;
  while (p < n && p < most)
    p *= 2;
  return p;
}

/* Few long reductions: a block each. Neighbouring outputs that are neighbours in memory while
 * the reduced elements are not: lanes strided over the block, so a warp reads along the output.
 * Otherwise consecutive lanes, up to a warp, over the reduced elements. */
static void choose_lanes(reduce_args *a) {
  bool kept_unit = a->nkept > 0 && llabs(a->kept_strides[a->nkept - 1]) == 1;
  bool reduced_unit = a->nreduced > 0 && llabs(a->reduced_strides[a->nreduced - 1]) == 1;
  if (a->count > BLOCK_PER_OUTPUT_FROM && (a->outputs < 64 || !kept_unit || reduced_unit)) {
    a->lanes = REDUCE_BLOCK;
    a->lanes_strided = 1;
  } else if (kept_unit && !reduced_unit) {
    a->lanes = pow2_at_least(a->count, a->outputs >= 8192 ? 8 : 32);
    a->lanes_strided = 1;
  } else {
    a->lanes = pow2_at_least(a->count, 32);
    a->lanes_strided = 0;
  }
}

static int op_code(tsri_primitive primitive) {
  switch (primitive) {
    case TSRI_PRIM_SUM:
      return 0;
    case TSRI_PRIM_MEAN:
      return 1;
    case TSRI_PRIM_MAX:
      return 2;
    case TSRI_PRIM_MIN:
      return 3;
    default:
      return 4; /* argmax */
  }
}

static tsr_status cuda_reduce(const tsri_op *op) {
  const tsri_view *in = &op->in[0], *out = &op->out;
  if (out->size == 0) return TSR_OK;
  reduce_args a;
  memset(&a, 0, sizeof a);
  layout_axes(in, TSRI_PARAMS(op, tsri_reduce_params)->reduced, &a);
  choose_lanes(&a);
  char options[48];
  snprintf(options, sizeof options, "-DTSR_REDUCE_OP=%d -DTSR_REDUCE_IN=%d", op_code(op->primitive),
           (int)in->dtype);
  void *args[] = {&a, (void *)&in->data, (void *)&out->data};
  int64_t tiles = (a.outputs + REDUCE_BLOCK / a.lanes - 1) / (REDUCE_BLOCK / a.lanes);
  return tsri_cuda_launch(op, "reduce", options, tsri_dim3(tsri_cuda_blocks_for(tiles, 1)),
                          tsri_dim3(REDUCE_BLOCK), 0, args);
}

void tsri_cuda_register_reduce(tsri_kernel_fn *table, tsri_cuda_supports_fn *supports) {
  (void)supports; /* every dtype, axes set and layout */
  table[TSRI_PRIM_SUM] = cuda_reduce;
  table[TSRI_PRIM_MEAN] = cuda_reduce;
  table[TSRI_PRIM_MAX] = cuda_reduce;
  table[TSRI_PRIM_MIN] = cuda_reduce;
  table[TSRI_PRIM_ARGMAX] = cuda_reduce;
}
