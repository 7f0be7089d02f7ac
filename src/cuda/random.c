/* cuda/random.c — the GPU's random_uniform, random_normal and random_categorical
 * (cuda/kernels/random.cuh): the CPU's Philox-4x32-10 counters per element (ops/random.h) and
 * its formulas in its precision (cpu/random.c), so a draw gives the same numbers on either
 * backend; random.cuh says where libm's last bits could still show. A uniform thread makes one
 * Philox block (4 elements), a normal one a Box-Muller pair, a categorical block one row. */
#include "cuda/kernels.h"

#include "base/shape.h"
#include "base/status.h"
#include "cuda/launch.h"
#include "cuda/strided.h"
#include "ops/random.h"

enum { BLOCK = 256 };

static tsr_status cuda_uniform(const tsri_op *op) {
  const tsri_view *out = &op->out;
  if (out->size == 0) return TSR_OK;
  const tsri_random_params *p = TSRI_PARAMS(op, tsri_random_params);
  int dtype = (int)out->dtype;
  int64_t n = out->size;
  uint64_t seed = p->seed;
  double low = p->a, width = p->b - p->a; /* as cpu/random.c computes it */
  float lowest = p->lowest, highest = p->highest;
  void *args[] = {(void *)&out->data, &dtype, &n, &seed, &low, &width, &lowest, &highest};
  return tsri_cuda_launch(op, "random", "-DTSR_RANDOM_KIND=1",
                          tsri_dim3(tsri_cuda_blocks_for((n + 3) / 4, BLOCK)), tsri_dim3(BLOCK), 0,
                          args);
}

static tsr_status cuda_normal(const tsri_op *op) {
  const tsri_view *out = &op->out;
  if (out->size == 0) return TSR_OK;
  const tsri_random_params *p = TSRI_PARAMS(op, tsri_random_params);
  int dtype = (int)out->dtype;
  int64_t n = out->size;
  uint64_t seed = p->seed;
  double mean = p->a, std = p->b;
  void *args[] = {(void *)&out->data, &dtype, &n, &seed, &mean, &std};
  return tsri_cuda_launch(op, "random", "-DTSR_RANDOM_KIND=2",
                          tsri_dim3(tsri_cuda_blocks_for((n + 1) / 2, BLOCK)), tsri_dim3(BLOCK), 0,
                          args);
}

/* A block per output row (the logits' axes but `axis`, packed): each row's first logit in memory
   and its row-major position in the logits, which numbers the Philox counters. */
static tsr_status cuda_categorical(const tsri_op *op) {
  const tsri_view *logits = &op->in[0], *out = &op->out;
  if (out->size == 0) return TSR_OK;
  const tsri_random_params *p = TSRI_PARAMS(op, tsri_random_params);
  int axis = p->axis, dtype = (int)logits->dtype;
  int64_t counters[TSR_MAX_NDIM];
  tsri_contiguous_strides(logits->shape, logits->ndim, counters);
  tsri_cuda_strided rows = {.n = 1, .noperands = 2};
  for (int d = 0; d < logits->ndim; d++) {
    if (d == axis) continue;
    int k = rows.ndim++;
    rows.shape[k] = logits->shape[d];
    rows.strides[0][k] = logits->strides[d];
    rows.strides[1][k] = counters[d];
    rows.n *= logits->shape[d];
  }
  rows.offset[0] = logits->offset;
  int64_t n = logits->shape[axis], axis_stride = logits->strides[axis];
  int64_t axis_counter_stride = counters[axis];
  uint64_t seed = p->seed;
  /* Whole warps (the reduction shuffles across all 32 lanes), at most 256 threads a row. */
  unsigned block = n >= BLOCK ? BLOCK : (unsigned)((n + 31) / 32 * 32);
  unsigned grid = (unsigned)(rows.n < (1 << 24) ? rows.n : (1 << 24));
  void *args[] = {&rows,        (void *)&logits->data, &dtype, &n,
                  &axis_stride, &axis_counter_stride,  &seed,  (void *)&out->data};
  return tsri_cuda_launch(op, "random", "-DTSR_RANDOM_KIND=3", tsri_dim3(grid), tsri_dim3(block), 0,
                          args);
}

void tsri_cuda_register_random(tsri_kernel_fn *table, tsri_cuda_supports_fn *supports) {
  (void)supports; /* every float dtype, shape and layout */
  table[TSRI_PRIM_RANDOM_UNIFORM] = cuda_uniform;
  table[TSRI_PRIM_RANDOM_NORMAL] = cuda_normal;
  table[TSRI_PRIM_RANDOM_CATEGORICAL] = cuda_categorical;
}
