/* cuda/attention.c — the GPU's sdpa (cuda/kernels/sdpa.cuh): one block per query row, scores in
 * shared memory, so a row's keys must fit there (TSR_ERR_UNSUPPORTED at construction beyond). A
 * dynamic length is read by the kernel; shared memory is sized for all Tk keys. */
#include "cuda/kernels.h"

#include <stdio.h>

#include "base/status.h"
#include "cuda/launch.h"
#include "ops/nn.h"

/* Shared memory an H200 block may opt into. */
#define SDPA_SHARED_LIMIT (227 * 1024)
#define SDPA_THREADS 128

/* Mirrors struct tsr_sdpa_args in sdpa.cuh. */
typedef struct {
  int64_t q_strides[4], k_strides[4], v_strides[4];
  int64_t q_offset, k_offset, v_offset;
  int64_t batch, hq, hkv, tq, tk, d;
  float scale;
  int causal;
} sdpa_args;

static int dtype_code(tsr_dtype dtype) {
  return dtype == TSR_FLOAT32 ? 0 : dtype == TSR_FLOAT16 ? 1 : 2;
}

static size_t shared_bytes(int64_t tk, int64_t d) {
  return (size_t)(32 + d + tk) * sizeof(float);
}

static bool sdpa_supported(const tsri_op *op) {
  return shared_bytes(op->in[1].shape[2], op->in[0].shape[3]) <= SDPA_SHARED_LIMIT;
}

static void copy4(int64_t *dst, const int64_t *src) {
  for (int i = 0; i < 4; i++)
    dst[i] = src[i];
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
  /* A dynamic length stays on the device: the kernel reads it, the host never waits for it. */
  const tsri_view *length = p->dynamic_length ? &op->in[3] : NULL;
  const void *length_at = length ? tsri_view_at(length, length->offset) : NULL;
  int length_bytes = length ? (int)tsr_dtype_size(length->dtype) : 0;
  void *args[] = {
      &a,         (void *)&q->data, (void *)&k->data, (void *)&v->data, (void *)&out->data,
      &length_at, &length_bytes};
  unsigned rows = (unsigned)(a.batch * a.hq * a.tq);
  return tsri_cuda_launch(op, "sdpa", options, tsri_dim3(rows), tsri_dim3(SDPA_THREADS),
                          shared_bytes(a.tk, a.d), args);
}

void tsri_cuda_register_attention(tsri_kernel_fn *table, tsri_cuda_supports_fn *supports) {
  table[TSRI_PRIM_SDPA] = cuda_sdpa;
  supports[TSRI_PRIM_SDPA] = sdpa_supported;
}
