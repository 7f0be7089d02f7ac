/* cuda/sort.c — the GPU's argsort, argpartition and topk (cuda/kernels/sort.cuh): a bitonic sort
 * of each line's (key, index) pairs along the axis, the keys and their order cpu/sort.c's, so the
 * indices are the CPU's bit for bit (argpartition: a full sort, whose order on each side of kth
 * differs from the CPU's quickselect where ops.h leaves it free). Not cumsum.
 *
 * Every line length runs. A line of up to CHUNK elements (padded to a power of two) is sorted by
 * one block in shared memory, one launch for all lines. A longer line is padded to a power of two
 * P in a scratch buffer (12 bytes a pair, every line at once, released once the stream is past
 * it) and merged in 1 + sum over stages k = 2 CHUNK .. P of (log2(k / CHUNK) + 1) launches: for a
 * vocabulary of 151552 (P = 2^18), 36 launches spread over the whole GPU. topk sorts the whole
 * line too; a selection (radix select) would be the faster path for a small k of a long line. */
#include "cuda/kernels.h"

#include <stdint.h>
#include <string.h>

#include "base/status.h"
#include "core/stream.h"
#include "cuda/launch.h"
#include "cuda/strided.h"
#include "memory/buffer.h"
#include "ops/sort.h"

/* Pairs a block sorts in shared memory: 12 bytes each, 24 KiB, a thread per compare-exchange. */
enum { CHUNK = 2048, PAIR_BYTES = 8 + 4, STEP_BLOCK = 256 };

/* What every launch of one op shares. */
typedef struct {
  tsri_cuda_strided lines; /* the lines' starts: operand 0 in the input, 1 in the output */
  const void *in;
  int dtype;
  int64_t n, in_stride, written, out_stride, padded, chunk;
  uint64_t flip;
  int32_t *out;
  uint64_t *keys; /* the scratch; NULL when one chunk holds a line */
  int32_t *index;
} sort_job;

static void release_scratch(void *buffer) {
  tsri_buffer_release(buffer);
}

/* The lines along `axis`: every other axis, with the input's and the output's strides. */
static void lines_init(tsri_cuda_strided *lines, const tsri_view *in, const tsri_view *out,
                       int axis) {
  memset(lines, 0, sizeof *lines);
  lines->n = 1;
  lines->noperands = 2;
  for (int d = 0; d < in->ndim; d++) {
    if (d == axis) continue;
    int k = lines->ndim++;
    lines->shape[k] = in->shape[d];
    lines->strides[0][k] = in->strides[d];
    lines->strides[1][k] = out->strides[d];
    lines->n *= in->shape[d];
  }
  lines->offset[0] = in->offset;
  lines->offset[1] = out->offset;
}

/* One chunk pass (sort.cuh kind 1): stage 0 loads the input, stage k merges in the scratch. */
static tsr_status chunk_pass(const tsri_op *op, sort_job *job, int64_t stage, int last_pass) {
  int64_t blocks = job->lines.n * (job->padded / job->chunk);
  unsigned grid = (unsigned)(blocks < (1 << 24) ? blocks : (1 << 24));
  unsigned block = (unsigned)(job->chunk / 2 < 32 ? 32 : job->chunk / 2);
  void *args[] = {&job->lines, &job->in,     &job->dtype,   &job->n,          &job->in_stride,
                  &job->flip,  &job->out,    &job->written, &job->out_stride, &job->keys,
                  &job->index, &job->padded, &job->chunk,   &stage,           &last_pass};
  return tsri_cuda_launch(op, "sort", "-DTSR_SORT_KIND=1", tsri_dim3(grid), tsri_dim3(block),
                          (size_t)job->chunk * PAIR_BYTES, args);
}

/* One global compare-exchange step (sort.cuh kind 2) of stage k at distance j over the scratch. */
static tsr_status step_pass(const tsri_op *op, sort_job *job, int64_t k, int64_t j) {
  int64_t lines = job->lines.n;
  void *args[] = {&job->keys, &job->index, &lines, &job->padded, &k, &j};
  unsigned grid = tsri_cuda_blocks_for(lines * (job->padded / 2), STEP_BLOCK);
  return tsri_cuda_launch(op, "sort", "-DTSR_SORT_KIND=2", tsri_dim3(grid), tsri_dim3(STEP_BLOCK),
                          0, args);
}

/* Lines longer than a chunk: sorted chunks, then each stage's long steps one launch each and its
   short steps in one chunk pass; the last writes the output. */
static tsr_status merge_sort(const tsri_op *op, sort_job *job) {
  tsri_buffer *scratch = NULL;
  uint64_t pairs = (uint64_t)job->lines.n * (uint64_t)job->padded;
  tsr_status status = tsri_buffer_alloc(op->device, pairs * PAIR_BYTES, &scratch);
  if (status != TSR_OK) return status;
  job->keys = scratch->data;
  job->index = (int32_t *)(job->keys + pairs);
  status = chunk_pass(op, job, 0, 0);
  for (int64_t k = 2 * job->chunk; k <= job->padded && status == TSR_OK; k <<= 1) {
    for (int64_t j = k / 2; j >= job->chunk && status == TSR_OK; j >>= 1)
      status = step_pass(op, job, k, j);
    if (status == TSR_OK) status = chunk_pass(op, job, k, k == job->padded);
  }
  /* Whatever was launched reads the scratch until the stream is past it. */
  op->stream->iface->after_current(op->stream, release_scratch, scratch);
  return status;
}

/* argsort, argpartition and topk: the first out.shape[axis] indices of each sorted line (topk's
   keys flipped, so the largest come first). */
static tsr_status cuda_index_kernel(const tsri_op *op) {
  const tsri_view *in = &op->in[0], *out = &op->out;
  if (out->size == 0) return TSR_OK;
  int axis = TSRI_PARAMS(op, tsri_sort_params)->axis;
  sort_job job = {.in = in->data,
                  .dtype = (int)in->dtype,
                  .n = in->shape[axis],
                  .in_stride = in->strides[axis],
                  .written = out->shape[axis],
                  .out_stride = out->strides[axis],
                  .padded = 1,
                  .flip = op->primitive == TSRI_PRIM_TOPK ? UINT64_MAX : 0,
                  .out = out->data};
  lines_init(&job.lines, in, out, axis);
  while (job.padded < job.n)
    job.padded <<= 1;
  job.chunk = job.padded < CHUNK ? job.padded : CHUNK;
  if (job.padded == job.chunk) return chunk_pass(op, &job, 0, 1);
  return merge_sort(op, &job);
}

void tsri_cuda_register_sort(tsri_kernel_fn *table, tsri_cuda_supports_fn *supports) {
  (void)supports; /* every dtype, layout and line length */
  table[TSRI_PRIM_ARGSORT] = cuda_index_kernel;
  table[TSRI_PRIM_ARGPARTITION] = cuda_index_kernel;
  table[TSRI_PRIM_TOPK] = cuda_index_kernel;
}
