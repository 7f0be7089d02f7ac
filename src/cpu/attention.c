/* cpu/attention.c — the sdpa kernel: for each (batch, query head, block of query rows) the scores
 * S = scale * Q K^T and the output O = P V go through OpenBLAS sgemm (operands in place or
 * gathered to float32, cpu/gemm.h), with a float32 softmax between them; the causal mask is a
 * row length, not an added -inf. Not a fused (flash) kernel: a block's scores are materialized,
 * at most QUERY_BLOCK x Tk floats. */
#include "cpu/attention.h"

#include <string.h>

#include "cpu/context.h"
#include "cpu/gemm.h"
#include "cpu/rows.h"
#include "ops/nn.h"

#define QUERY_BLOCK 64

typedef struct {
  const tsri_view *q, *k, *v, *out;
  tsr_device device;        /* the op's: where the scratch comes from */
  tsri_parallel_pool *pool; /* the device's (cpu/context.h): where the GEMMs run */
  int64_t hq, hkv, tq, tk, d;
  float scale;
  bool causal;
  tsri_gemm_operand q_op, k_op, v_op;
  tsri_buffer *scores; /* QUERY_BLOCK x Tk float32 */
  tsri_buffer *o;      /* QUERY_BLOCK x D float32, when the output is not float32 */
} sdpa_plan;

/* Keys a query row may see: all, or under the causal mask those j <= i + (Tk - Tq). */
static int64_t visible_keys(const sdpa_plan *p, int64_t query) {
  if (!p->causal) return p->tk;
  int64_t last = query + p->tk - p->tq + 1;
  return last < p->tk ? last : p->tk;
}

/* Query rows [first, first + rows) of head h in batch b; k_op and v_op already point at the kv
 * head this query head reads. With one query row per head (q_op's rows step over heads), the
 * rows are heads [h, h + rows) instead, all of one kv head: q rows and outputs lie at the same
 * offsets the general case computes with first = 0. */
static void attend_block(sdpa_plan *p, int64_t b, int64_t h, int64_t first, int64_t rows) {
  const tsri_view *q = p->q;
  tsri_gemm_operand_at(
      &p->q_op, q->offset + b * q->strides[0] + h * q->strides[1] + first * q->strides[2], rows);
  int64_t keys = visible_keys(p, first + rows - 1); /* the block's widest row */
  float *scores = (float *)p->scores->data;
  tsri_gemm(p->pool, &p->q_op, &p->k_op, true, rows, keys, p->d, p->scale, 0.0f, scores, keys);
  for (int64_t r = 0; r < rows; r++) {
    float *row = scores + r * keys;
    int64_t visible = visible_keys(p, first + r);
    tsri_cpu_softmax_row_f32(row, row, visible);
    memset(row + visible, 0, (size_t)(keys - visible) * sizeof *row);
  }
  int64_t out_offset = ((b * p->hq + h) * p->tq + first) * p->d;
  float *o = p->o ? (float *)p->o->data : (float *)p->out->data + out_offset;
  tsri_gemm_operand probabilities = {.data = scores, .ld = (int)keys};
  tsri_gemm(p->pool, &probabilities, &p->v_op, false, rows, p->d, keys, 1.0f, 0.0f, o, p->d);
  if (p->o) {
    size_t element = tsr_dtype_size(p->out->dtype);
    tsri_cpu_store_f32((unsigned char *)p->out->data + out_offset * (int64_t)element, p->out->dtype,
                       rows * p->d, o);
  }
}

static void run_sdpa(sdpa_plan *p, int64_t batches) {
  const tsri_view *k = p->k, *v = p->v;
  int64_t group = p->hq / p->hkv; /* query heads per kv head */
  for (int64_t b = 0; b < batches; b++) {
    for (int64_t g = 0; g < p->hkv; g++) {
      tsri_gemm_operand_at(&p->k_op, k->offset + b * k->strides[0] + g * k->strides[1], p->tk);
      tsri_gemm_operand_at(&p->v_op, v->offset + b * v->strides[0] + g * v->strides[1], p->tk);
      if (p->tq == 1) { /* decode: the group's query heads are the block's rows */
        for (int64_t h = g * group; h < (g + 1) * group; h += QUERY_BLOCK) {
          int64_t rows = (g + 1) * group - h < QUERY_BLOCK ? (g + 1) * group - h : QUERY_BLOCK;
          attend_block(p, b, h, 0, rows);
        }
        continue;
      }
      for (int64_t h = g * group; h < (g + 1) * group; h++) {
        for (int64_t first = 0; first < p->tq; first += QUERY_BLOCK) {
          int64_t rows = p->tq - first < QUERY_BLOCK ? p->tq - first : QUERY_BLOCK;
          attend_block(p, b, h, first, rows);
        }
      }
    }
  }
}

static tsr_status plan_scratch(sdpa_plan *p) {
  const tsri_view *q = p->q, *k = p->k, *v = p->v;
  /* With one query row per head (decode), a block's rows are the query heads that share a kv
   * head (their rows lie q->strides[1] apart, as their outputs lie d apart): two GEMMs per kv head
   * instead of two matrix-vector calls per query head, ~16x fewer OpenBLAS calls for GLM-4-9B. */
  bool heads_as_rows = p->tq == 1;
  int64_t rows = heads_as_rows ? p->hq / p->hkv : p->tq;
  int64_t block = rows < QUERY_BLOCK ? rows : QUERY_BLOCK;
  tsr_status status = tsri_gemm_operand_init(&p->q_op, q, p->device, block, p->d,
                                             q->strides[heads_as_rows ? 1 : 2], q->strides[3]);
  if (status == TSR_OK)
    status =
        tsri_gemm_operand_init(&p->k_op, k, p->device, p->tk, p->d, k->strides[2], k->strides[3]);
  if (status == TSR_OK)
    status =
        tsri_gemm_operand_init(&p->v_op, v, p->device, p->tk, p->d, v->strides[2], v->strides[3]);
  if (status == TSR_OK) status = tsri_cpu_scratch(p->device, block * p->tk, &p->scores);
  if (status == TSR_OK && p->out->dtype != TSR_FLOAT32)
    status = tsri_cpu_scratch(p->device, block * p->d, &p->o);
  return status;
}

tsr_status tsri_cpu_sdpa(const tsri_op *op) {
  if (op->out.size == 0) return TSR_OK;
  const tsri_sdpa_params *params = TSRI_PARAMS(op, tsri_sdpa_params);
  sdpa_plan p = {.q = &op->in[0],
                 .k = &op->in[1],
                 .v = &op->in[2],
                 .out = &op->out,
                 .device = op->device,
                 .hq = op->out.shape[1],
                 .hkv = op->in[1].shape[1],
                 .tq = op->out.shape[2],
                 .tk = op->in[1].shape[2],
                 .d = op->out.shape[3],
                 .scale = params->scale,
                 .causal = params->causal};
  if (params->dynamic_length) { /* k and v as if sliced to their first L rows */
    int64_t length = tsri_cpu_view_scalar_i64(&op->in[3]);
    p.tk = length < p.tq ? p.tq : length > p.tk ? p.tk : length;
  }
  if (p.tk == 0) { /* no keys (never causal: ops/nn.c rejects Tk < Tq): an empty sum, zeros */
    memset(op->out.data, 0, (size_t)op->out.size * tsr_dtype_size(op->out.dtype));
    return TSR_OK;
  }
  const tsri_cpu_context *cpu = NULL;
  tsr_status status = tsri_cpu_context_get(op->device, &cpu);
  if (status == TSR_OK) {
    p.pool = cpu->pool;
    status = plan_scratch(&p);
  }
  if (status == TSR_OK) run_sdpa(&p, op->out.shape[0]);
  tsri_buffer_release(p.o);
  tsri_buffer_release(p.scores);
  tsri_gemm_operand_free(&p.v_op);
  tsri_gemm_operand_free(&p.k_op);
  tsri_gemm_operand_free(&p.q_op);
  return status;
}
