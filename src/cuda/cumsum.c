/* cuda/cumsum.c — the GPU's cumsum (cuda/kernels/cumsum.cuh): every dtype and layout, a line
 * per thread, warp or block (cuda/lines.h). Not the sorts (argsort, argpartition, topk). */
#include "cuda/kernels.h"

#include <stdio.h>

#include "cuda/launch.h"
#include "cuda/lines.h"
#include "ops/sort.h"

_Static_assert(TSR_BOOL == 0 && TSR_INT64 == 5 && TSR_FLOAT32 == 8,
               "cuda/kernels/dtype_io.cuh's TSR_DT_* are tsr_dtype's values");

/* Lines longer than this get a whole block of threads (a warp scans 256 elements a step). */
#define BLOCK_PER_LINE_FROM 2048

static tsr_status cuda_cumsum(const tsri_op *op) {
  const tsri_cumsum_params *p = TSRI_PARAMS(op, tsri_cumsum_params);
  const tsri_view *x = &op->in[0], *y = &op->out;
  if (y->size == 0) return TSR_OK;
  const tsri_view *operands[2] = {x, y};
  tsri_cuda_lines lines;
  tsri_cuda_lines_init(&lines, y, p->axis, operands, 2);
  tsri_cuda_lines_pick_lanes(&lines, BLOCK_PER_LINE_FROM);
  char options[32];
  snprintf(options, sizeof options, "-DTSR_CUMSUM_IN=%d", (int)x->dtype);
  int reverse = p->reverse, inclusive = p->inclusive;
  void *args[] = {&lines, (void *)&x->data, (void *)&y->data, &reverse, &inclusive};
  return tsri_cuda_launch(op, "cumsum", options, tsri_dim3(tsri_cuda_lines_blocks(&lines)),
                          tsri_dim3(TSRI_CUDA_LINES_BLOCK), 0, args);
}

void tsri_cuda_register_cumsum(tsri_kernel_fn *table, tsri_cuda_supports_fn *supports) {
  (void)supports; /* every dtype, axis and layout */
  table[TSRI_PRIM_CUMSUM] = cuda_cumsum;
}
