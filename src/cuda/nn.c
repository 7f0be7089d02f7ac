/* cuda/nn.c — the GPU's softmax and rms_norm (cuda/kernels/softmax.cuh, rms_norm.cuh: a line per
 * thread, warp or block, cuda/lines.h) and rope (cuda/kernels/rope.cuh; a dynamic offset is read
 * by the kernel). Every float dtype and layout; sdpa is cuda/attention.c's. */
#include "cuda/kernels.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cuda/launch.h"
#include "cuda/lines.h"
#include "ops/nn.h"

_Static_assert(TSR_FLOAT16 == 6 && TSR_BFLOAT16 == 7 && TSR_FLOAT32 == 8,
               "cuda/kernels/dtype_io.cuh's TSR_DT_* are tsr_dtype's values");

/* Lines longer than this get a whole block of threads; shorter ones a warp. */
#define BLOCK_PER_LINE_FROM 1024

static tsr_status launch_lines(const tsri_op *op, const char *kernel, const char *options,
                               const tsri_cuda_lines *lines, void **args) {
  return tsri_cuda_launch(op, kernel, options, tsri_dim3(tsri_cuda_lines_blocks(lines)),
                          tsri_dim3(TSRI_CUDA_LINES_BLOCK), 0, args);
}

static tsr_status cuda_softmax(const tsri_op *op) {
  const tsri_view *x = &op->in[0], *y = &op->out;
  if (y->size == 0) return TSR_OK;
  const tsri_view *operands[2] = {x, y};
  tsri_cuda_lines lines;
  tsri_cuda_lines_init(&lines, y, TSRI_PARAMS(op, tsri_softmax_params)->axis, operands, 2);
  tsri_cuda_lines_pick_lanes(&lines, BLOCK_PER_LINE_FROM);
  char options[32];
  snprintf(options, sizeof options, "-DTSR_SOFTMAX_DTYPE=%d", (int)x->dtype);
  void *args[] = {&lines, (void *)&x->data, (void *)&y->data};
  return launch_lines(op, "softmax", options, &lines, args);
}

static tsr_status cuda_rms_norm(const tsri_op *op) {
  const tsri_rms_norm_params *p = TSRI_PARAMS(op, tsri_rms_norm_params);
  const tsri_view *x = &op->in[0], *y = &op->out, *weight = p->has_weight ? &op->in[1] : NULL;
  if (y->size == 0) return TSR_OK;
  const tsri_view *operands[3] = {x, y, weight};
  tsri_cuda_lines lines;
  tsri_cuda_lines_init(&lines, y, y->ndim - 1, operands, weight ? 3 : 2);
  tsri_cuda_lines_pick_lanes(&lines, BLOCK_PER_LINE_FROM);
  char options[48];
  snprintf(options, sizeof options, "-DTSR_NORM_X=%d -DTSR_NORM_W=%d", (int)x->dtype,
           weight ? (int)weight->dtype : -1);
  void *weight_data = weight ? weight->data : NULL;
  float eps = p->eps;
  void *args[] = {&lines, (void *)&x->data, &weight_data, (void *)&y->data, &eps};
  return launch_lines(op, "rms_norm", options, &lines, args);
}

/* Mirrors struct tsr_rope_args in cuda/kernels/rope.cuh. */
#define ROPE_TABLE 256
#define ROPE_ROWS 64
#define ROPE_LEAD 6
typedef struct {
  int64_t lead_shape[ROPE_LEAD], lead_strides[ROPE_LEAD];
  int64_t x_offset, x_stride_t, x_stride_d;
  int64_t lead, t_count, d, position;
  int64_t rows_per_block;
  int nlead, dims, traditional, table_size;
  float base;
  float inv_freq[ROPE_TABLE];
} rope_args;
_Static_assert(sizeof(rope_args) == 1208, "cuda/kernels/rope.cuh mirrors this layout");
_Static_assert(TSR_MAX_NDIM - 2 == ROPE_LEAD, "rope's leading axes");

/* The frequencies by cpu/nn.c's own expression and libm, so the GPU's angles are its bits. */
static void rope_frequencies(const tsri_rope_params *p, rope_args *a) {
  int half = p->dims / 2;
  a->table_size = half < ROPE_TABLE ? half : ROPE_TABLE;
  for (int i = 0; i < a->table_size; i++)
    a->inv_freq[i] = 1.0f / powf(p->base, (float)(2 * i) / (float)p->dims);
}

static tsr_status cuda_rope(const tsri_op *op) {
  const tsri_rope_params *p = TSRI_PARAMS(op, tsri_rope_params);
  const tsri_view *x = &op->in[0], *y = &op->out;
  if (y->size == 0) return TSR_OK;
  int last = x->ndim - 1;
  rope_args a;
  memset(&a, 0, sizeof a);
  a.nlead = x->ndim - 2;
  a.lead = 1;
  for (int d = 0; d < a.nlead; d++) {
    a.lead_shape[d] = x->shape[d];
    a.lead_strides[d] = x->strides[d];
    a.lead *= x->shape[d];
  }
  a.x_offset = x->offset;
  a.x_stride_t = x->strides[last - 1];
  a.x_stride_d = x->strides[last];
  a.t_count = x->shape[last - 1];
  a.d = x->shape[last];
  a.position = p->offset;
  a.dims = p->dims;
  a.traditional = p->traditional;
  a.base = p->base;
  rope_frequencies(p, &a);
  /* Enough tiles (one t, some rows) for every SM twice; more rows per tile share cos and sin. */
  int64_t rows = a.lead * a.t_count / (132 * 2);
  a.rows_per_block = rows < 1 ? 1 : rows > ROPE_ROWS ? ROPE_ROWS : rows;
  if (a.rows_per_block > a.lead) a.rows_per_block = a.lead;
  int64_t tiles = a.t_count * ((a.lead + a.rows_per_block - 1) / a.rows_per_block);
  char options[32];
  snprintf(options, sizeof options, "-DTSR_ROPE_DTYPE=%d", (int)x->dtype);
  /* A dynamic offset stays on the device: the kernel reads it, the host never waits for it. */
  tsri_cuda_position offset = tsri_cuda_position_of(p->dynamic_offset ? &op->in[1] : NULL);
  void *args[] = {&a, (void *)&x->data, (void *)&y->data, &offset.at, &offset.bytes};
  return tsri_cuda_launch(op, "rope", options, tsri_dim3(tsri_cuda_blocks_for(tiles, 1)),
                          tsri_dim3(256), 0, args);
}

void tsri_cuda_register_nn(tsri_kernel_fn *table, tsri_cuda_supports_fn *supports) {
  (void)supports; /* every float dtype, layout and parameter */
  table[TSRI_PRIM_SOFTMAX] = cuda_softmax;
  table[TSRI_PRIM_RMS_NORM] = cuda_rms_norm;
  table[TSRI_PRIM_ROPE] = cuda_rope;
}
