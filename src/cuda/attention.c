/* cuda/attention.c — the GPU's sdpa. Few query rows (decode: one query per head) split each
 * row's keys into slices of SDPA_SLICE_KEYS, a block each (cuda/kernels/sdpa_split.cuh into
 * scratch, then sdpa_combine.cuh), so a long cache spreads over many blocks. The slices depend
 * only on the key positions, never on Tk: keys past a dynamic length leave whole slices empty,
 * which add nothing, so tsr_sdpa_dynamic over a cache gives the bits of tsr_sdpa over its filled
 * prefix (the decode step replays what the forward computes). More rows take one block per row
 * (sdpa.cuh) with the row's scores in shared memory, so its keys must fit there
 * (TSR_ERR_UNSUPPORTED at construction beyond). */
#include "cuda/kernels.h"

#include <stdio.h>

#include "base/status.h"
#include "cuda/launch.h"
#include "cuda/packed.h"
#include "ops/nn.h"

/* Shared memory an H200 block may opt into. */
#define SDPA_SHARED_LIMIT (227 * 1024)
/* Threads per block of sdpa.cuh and of each slice: 8 warps (the keys are split over them). */
#define SDPA_THREADS 256
/* Rows up to which the keys are split into slices of SDPA_SLICE_KEYS. */
#define SDPA_FEW_ROWS 256
#define SDPA_SLICE_KEYS 256
#define SDPA_COMBINE_THREADS 128

/* Mirrors struct tsr_sdpa_args in sdpa_common.cuh. */
typedef struct {
  int64_t q_strides[4], k_strides[4], v_strides[4];
  int64_t q_offset, k_offset, v_offset;
  int64_t batch, hq, hkv, tq, tk, d;
  float scale;
  int causal;
  int64_t splits, split_keys;
} sdpa_args;
_Static_assert(sizeof(sdpa_args) == 192, "cuda/kernels/sdpa_common.cuh mirrors this layout");

static int dtype_code(tsr_dtype dtype) {
  return dtype == TSR_FLOAT32 ? 0 : dtype == TSR_FLOAT16 ? 1 : 2;
}

/* Rows are B * Hq * Tq. */
static int64_t sdpa_rows(const tsri_view *q) {
  return q->shape[0] * q->shape[1] * q->shape[2];
}

static bool sliced(const tsri_view *q) {
  return sdpa_rows(q) <= SDPA_FEW_ROWS;
}

/* [32 scratch][D query][`keys` scores][warps x D partial sums] */
static size_t shared_bytes(int64_t keys, int64_t d) {
  return (size_t)(32 + d + keys + SDPA_THREADS / 32 * d) * sizeof(float);
}

/* The scores of a row (or of a slice) in shared memory, and with slices the combine's weight per
   slice (which also keeps rows x slices far below the grid's limit). */
static bool sdpa_supported(const tsri_op *op) {
  const tsri_view *q = &op->in[0];
  int64_t tk = op->in[1].shape[2];
  if (!sliced(q)) return shared_bytes(tk, q->shape[3]) <= SDPA_SHARED_LIMIT;
  int64_t slices = (tk + SDPA_SLICE_KEYS - 1) / SDPA_SLICE_KEYS;
  return shared_bytes(SDPA_SLICE_KEYS, q->shape[3]) <= SDPA_SHARED_LIMIT &&
         (uint64_t)slices * sizeof(float) <= SDPA_SHARED_LIMIT;
}

static void copy4(int64_t *dst, const int64_t *src) {
  for (int i = 0; i < 4; i++)
    dst[i] = src[i];
}

/* The slices into scratch [rows, splits, 2 + D] floats, then their sum into the output (the
   combine's shared memory: a weight per slice). */
static tsr_status launch_split(const tsri_op *op, const char *options, sdpa_args *a,
                               tsri_cuda_position length) {
  const tsri_view *q = &op->in[0], *k = &op->in[1], *v = &op->in[2], *out = &op->out;
  const int64_t rows = sdpa_rows(q);
  tsri_buffer *parts = NULL;
  uint64_t bytes = (uint64_t)(rows * a->splits * (2 + a->d)) * sizeof(float);
  tsr_status status = tsri_cuda_scratch_alloc(op, bytes, "sdpa", &parts);
  if (status != TSR_OK) return status;
  void *split_args[] = {a,
                        (void *)&q->data,
                        (void *)&k->data,
                        (void *)&v->data,
                        &parts->data,
                        (void *)&length.at,
                        &length.bytes};
  status = tsri_cuda_launch(op, "sdpa_split", options, tsri_dim3((unsigned)(rows * a->splits)),
                            tsri_dim3(SDPA_THREADS), shared_bytes(a->split_keys, a->d), split_args);
  void *combine_args[] = {a, &parts->data, (void *)&out->data};
  if (status == TSR_OK)
    status = tsri_cuda_launch(op, "sdpa_combine", options, tsri_dim3((unsigned)rows),
                              tsri_dim3(SDPA_COMBINE_THREADS), (size_t)a->splits * sizeof(float),
                              combine_args);
  tsri_cuda_scratch_done(op, parts);
  return status;
}

static tsr_status cuda_sdpa(const tsri_op *op) {
  const tsri_view *q = &op->in[0], *k = &op->in[1], *v = &op->in[2], *out = &op->out;
  if (out->size == 0) return TSR_OK;
  const tsri_sdpa_params *p = TSRI_PARAMS(op, tsri_sdpa_params);
  sdpa_args a = {.q_offset = q->offset,
                 .k_offset = k->offset,
                 .v_offset = v->offset,
                 .batch = q->shape[0],
                 .hq = q->shape[1],
                 .hkv = k->shape[1],
                 .tq = q->shape[2],
                 .tk = k->shape[2],
                 .d = q->shape[3],
                 .scale = p->scale,
                 .causal = p->causal};
  copy4(a.q_strides, q->strides);
  copy4(a.k_strides, k->strides);
  copy4(a.v_strides, v->strides);
  char options[96];
  snprintf(
      options, sizeof options, "-DTSR_SDPA_Q=%d -DTSR_SDPA_K=%d -DTSR_SDPA_V=%d -DTSR_SDPA_OUT=%d",
      dtype_code(q->dtype), dtype_code(k->dtype), dtype_code(v->dtype), dtype_code(out->dtype));
  /* A dynamic length stays on the device: the kernels read it, the host never waits for it. */
  tsri_cuda_position length = tsri_cuda_position_of(p->dynamic_length ? &op->in[3] : NULL);
  if (sliced(q) && a.tk > 0) { /* no keys (never causal): sdpa.cuh's empty sum, zeros */
    a.split_keys = SDPA_SLICE_KEYS;
    a.splits = (a.tk + SDPA_SLICE_KEYS - 1) / SDPA_SLICE_KEYS;
    return launch_split(op, options, &a, length);
  }
  void *args[] = {
      &a,         (void *)&q->data, (void *)&k->data, (void *)&v->data, (void *)&out->data,
      &length.at, &length.bytes};
  return tsri_cuda_launch(op, "sdpa", options, tsri_dim3((unsigned)sdpa_rows(q)),
                          tsri_dim3(SDPA_THREADS), shared_bytes(a.tk, a.d), args);
}

void tsri_cuda_register_attention(tsri_kernel_fn *table, tsri_cuda_supports_fn *supports) {
  table[TSRI_PRIM_SDPA] = cuda_sdpa;
  supports[TSRI_PRIM_SDPA] = sdpa_supported;
}
