/* cuda/qmm.c — quantized_matmul and gather_qmm on the GPU, under the geometry ops/quant_matmul.h
 * derived: affine 4- and 8-bit transposed products against bfloat16 x run on the tensor cores
 * below 128 rows of x, on cuda/kernels/qmma.cuh — or, for decode (rows of x that one mma's
 * columns hold with a group per column: 2, 4, 8 for groups of 32, 64, 128), on
 * cuda/kernels/qmv_mma.cuh when TSR_QMV_MMA asks (the default once it has run on a GPU:
 * QMV_MMA_BY_DEFAULT below); a transposed product with more rows (past qmv's 8
 * where qmma does not apply) whose dequantized weights are exact in the output's dtype
 * dequantizes w once into scratch and runs one cuBLASLt product (prefill); otherwise for decode
 * (transpose, M <= 8) the warp-per-columns kernel cuda/kernels/qmv.cuh, for everything else the
 * tiled cuda/kernels/qmm.cuh; all accumulate
 * in float32 and round once to the output dtype (quant-spec Part A §4; the CPU reference is
 * cpu/qmm.c). x, w_q, scales and biases are gathered packed when strided (cuda/packed.h); the
 * index arrays are read where they lie, any integer dtype and layout.
 *
 * Which matrices each product uses is resolved in the kernels (cuda/kernels/qmm_batch.cuh). A
 * gather's index out of range leaves its product unwritten and records the first such batch
 * position per side in a device flag; after the kernel this file reads the flag back (waiting for
 * the stream: a gather_qmm synchronizes) and fails the op with the CPU's message, lhs_indices
 * before rhs_indices. quantized_matmul's indices are positions in shapes the op checked, so it
 * never waits. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/discovery.h"
#include "base/env.h"
#include "base/quant_format.h"
#include "base/shape.h"
#include "base/status.h"
#include "core/stream.h"
#include "cuda/launch.h"
#include "cuda/packed.h"
#include "cuda/quant.h"
#include "cuda/runtime.h"
#include "ops/quant.h"
#include "ops/quant_matmul.h"

#define QMV_MAX_M 8
#define QMV_WARPS 8 /* qmv.cuh's WARPS and COLS */
#define QMV_COLS 4
#define QMMA_WARPS 8    /* qmma.cuh's WARPS */
#define QMM_THREADS 256 /* qmm.cuh's THREADS, BM and BN */
#define QMM_TILE 64

_Static_assert(TSR_MAX_NDIM == 8, "cuda/kernels/qmm_batch.cuh is built for 8 axes");

/* Mirrors struct tsr_qmm_side in qmm_batch.cuh. */
typedef struct {
  const void *indices;
  int64_t offset, matrices;
  int64_t shape[TSR_MAX_NDIM], strides[TSR_MAX_NDIM];
  int ndim, dtype;
} qmm_side;

/* Mirrors struct tsr_qmm_batch in qmm_batch.cuh. */
typedef struct {
  int64_t count;
  int64_t shape[TSR_MAX_NDIM];
  int ndim, unused;
  qmm_side lhs, rhs;
} qmm_batch;

/* Mirrors struct tsr_qmv_args in qmv.cuh. */
typedef struct {
  int64_t n, k, w_rows, w_words, groups, col_blocks, blocks;
  int vector_loads, unused;
} qmv_args;

/* Mirrors struct tsr_qmma_args in qmma.cuh. */
typedef struct {
  int64_t m, n, k, w_rows, w_words, groups, n_blocks, m_blocks, blocks;
} qmma_args;

/* Mirrors struct tsr_qmv_mma_args in qmv_mma.cuh. */
typedef struct {
  int64_t m, n, k, w_rows, w_words, groups, n_blocks, blocks;
  int scale_pairs, unused;
} qmv_mma_args;

/* Mirrors struct tsr_qmm_args in qmm.cuh. */
typedef struct {
  int64_t m, n, k, w_rows, w_words, groups, m_blocks, n_blocks, blocks;
} qmm_args;

/* Everything one launch reads. */
typedef struct {
  tsri_cuda_packed x, w, scales, biases;
  tsri_buffer *flags; /* a gather's two first-bad batch positions, else NULL */
  qmm_batch batch;
} qmm_run;

static void side_init(qmm_side *s, const tsri_view *indices, const int64_t *shape, int ndim,
                      int64_t matrices) {
  memset(s, 0, sizeof *s);
  s->ndim = ndim;
  s->matrices = matrices;
  memcpy(s->shape, shape, sizeof(int64_t) * (size_t)ndim);
  if (!indices) return;
  s->indices = indices->data;
  s->offset = indices->offset;
  s->dtype = (int)indices->dtype;
  memcpy(s->strides, indices->strides, sizeof(int64_t) * (size_t)ndim);
}

static void batch_init(qmm_batch *batch, const tsri_qmm_operands *o, const tsri_qmm_geometry *g) {
  memset(batch, 0, sizeof *batch);
  batch->count = g->batch_count;
  batch->ndim = g->batch_ndim;
  memcpy(batch->shape, g->batch_shape, sizeof(int64_t) * (size_t)g->batch_ndim);
  side_init(&batch->lhs, o->lhs, g->lhs_shape, g->lhs_ndim, g->x_matrices);
  side_init(&batch->rhs, o->rhs, g->rhs_shape, g->rhs_ndim, g->w_matrices);
}

/* "-D..." words of one specialization: the format and the dtypes, then `extra`. */
static void format_options(char *buf, size_t size, const tsri_qmm_params *p,
                           const tsri_qmm_operands *o, const tsri_op *op, const char *extra) {
  tsr_dtype scale_dtype = o->scales->dtype; /* uint8 codes for the fp modes */
  snprintf(buf, size,
           "-DTSR_QF_MODE=%d -DTSR_QF_BITS=%d -DTSR_QF_GROUP_SIZE=%d -DTSR_X_DTYPE=%d "
           "-DTSR_S_DTYPE=%d -DTSR_OUT_DTYPE=%d %s",
           p->mode, p->bits, p->group_size, (int)o->x->dtype, (int)scale_dtype, (int)op->out.dtype,
           extra);
}

/* Whether every full 32-code chunk of every packed row lies on a 16-byte (2 bits: 8-byte)
   boundary, so qmv may read it as vectors. */
static bool vector_loads(const void *w, int64_t w_words, int bits) {
  uintptr_t address = (uintptr_t)w;
  if (bits == 4 || bits == 8) return address % 16 == 0 && w_words % 4 == 0;
  if (bits == 2) return address % 8 == 0 && w_words % 2 == 0;
  return false;
}

/* qmv and qmm take the same operands after their own geometry struct: one launch for both
   (shared_bytes of dynamic shared memory beside the kernel's static_bytes). */
static tsr_status launch_product(const tsri_op *op, const qmm_run *r, const char *kernel,
                                 const char *options, void *geometry, int64_t blocks,
                                 unsigned threads, size_t shared_bytes, size_t static_bytes) {
  void *flags = r->flags ? r->flags->data : NULL;
  void *args[] = {geometry,
                  (void *)&r->batch,
                  (void *)&r->x.data,
                  (void *)&r->w.data,
                  (void *)&r->scales.data,
                  (void *)&r->biases.data,
                  (void *)&op->out.data,
                  &flags};
  return tsri_cuda_launch_shared(op, kernel, options,
                                 tsri_dim3(tsri_cuda_blocks_for(blocks * threads, threads)),
                                 tsri_dim3(threads), shared_bytes, static_bytes, args);
}

static tsr_status launch_qmv(const tsri_op *op, const tsri_qmm_params *p,
                             const tsri_qmm_operands *o, qmm_run *r) {
  const tsri_qmm_geometry *g = &p->g;
  const int64_t columns = QMV_WARPS * QMV_COLS;
  qmv_args a = {.n = g->n,
                .k = g->k,
                .w_rows = g->w_rows,
                .w_words = g->w_words,
                .groups = g->groups,
                .col_blocks = (g->n + columns - 1) / columns};
  a.blocks = g->batch_count * a.col_blocks;
  a.vector_loads = vector_loads(r->w.data, g->w_words, p->bits);
  char extra[24], options[224];
  snprintf(extra, sizeof extra, "-DTSR_QMV_M=%d", (int)g->m);
  format_options(options, sizeof options, p, o, op, extra);
  return launch_product(op, r, "qmv", options, &a, a.blocks, QMV_WARPS * 32, 0, 0);
}

/* The tensor-core kernel takes affine 4- and 8-bit weights in groups of 32, 64 or 128,
   transposed, against bfloat16 x, with w and x on 16-byte boundaries (its vector loads). */
static bool qmma_fits(const tsri_qmm_params *p, const tsri_qmm_operands *o, const qmm_run *r) {
  return p->transpose && p->mode == TSRI_QF_AFFINE && (p->bits == 4 || p->bits == 8) &&
         (p->group_size == 32 || p->group_size == 64 || p->group_size == 128) &&
         o->x->dtype == TSR_BFLOAT16 && o->biases && (uintptr_t)r->x.data % 16 == 0 &&
         (uintptr_t)r->w.data % 16 == 0;
}

static tsr_status launch_qmma(const tsri_op *op, const tsri_qmm_params *p,
                              const tsri_qmm_operands *o, qmm_run *r) {
  const tsri_qmm_geometry *g = &p->g;
  /* x tiles of 8 rows per block: one for decode; up to 8 so a block's weights serve 64 rows */
  int tiles = g->m <= 8 ? 1 : g->m <= 16 ? 2 : g->m <= 32 ? 4 : 8;
  qmma_args a = {.m = g->m,
                 .n = g->n,
                 .k = g->k,
                 .w_rows = g->w_rows,
                 .w_words = g->w_words,
                 .groups = g->groups,
                 .n_blocks = (g->n + 15) / 16,
                 .m_blocks = (g->m + 8 * tiles - 1) / (8 * tiles)};
  a.blocks = g->batch_count * a.n_blocks * a.m_blocks;
  char extra[24], options[224];
  snprintf(extra, sizeof extra, "-DTSR_QMMA_MT=%d", tiles);
  format_options(options, sizeof options, p, o, op, extra);
  return launch_product(op, r, "qmma", options, &a, a.blocks, QMMA_WARPS * 32, 0, 0);
}

/* Rows of x one qmv_mma.cuh mma serves: 8 columns over the 128 / G groups of a window. */
static int64_t qmv_mma_rows(const tsri_qmm_params *p) {
  return 8 / (128 / p->group_size);
}

/* Whether decode takes qmv_mma.cuh without TSR_QMV_MMA asking: not until it has been measured
   and its tests run on a GPU (bench/notes/gpu_qmm.md, v4). */
#define QMV_MMA_BY_DEFAULT 0

/* Decode on the tensor cores with a group per mma column (qmv_mma.cuh): where qmma applies and
   every row of x fits one mma, when TSR_QMV_MMA names a shape (or by default, above). */
static bool qmv_mma_fits(const tsri_qmm_params *p) {
  int knob = tsri_env()->qmv_mma;
  return (knob > 0 || (knob == 0 && QMV_MMA_BY_DEFAULT)) && p->g.m <= qmv_mma_rows(p);
}

/* Whether each lane's two groups of a window load as one word: an even group count per row and
   scales and biases on the pair's boundary. */
static bool scale_pairs(const tsri_qmm_params *p, const qmm_run *r, size_t scale_size) {
  return p->g.groups % 2 == 0 && (uintptr_t)r->scales.data % (2 * scale_size) == 0 &&
         (uintptr_t)r->biases.data % (2 * scale_size) == 0;
}

/* qmv_mma.cuh's staged x in shared memory, per block: B's fragments (8 bytes per k-step and
   quad lane), the partial sums of 32 codes and Σ x per window column. */
static size_t qmv_mma_staged_bytes(const tsri_qmm_geometry *g) {
  int64_t windows = (g->k + 127) / 128;
  return (size_t)(windows * (g->m * (8 * 4 * 8 + 4 * 4) + 8 * 4));
}

/* Staged x up to this size per block (two blocks and their reduction space fit an SM's 227 KiB). */
#define QMV_MMA_STAGED_MAX (96 * 1024)

static tsr_status launch_qmv_mma(const tsri_op *op, const tsri_qmm_params *p,
                                 const tsri_qmm_operands *o, qmm_run *r) {
  const tsri_qmm_geometry *g = &p->g;
  const tsri_env_knobs *env = tsri_env();
  /* H200, 4-bit g64 28672 x 8192: see bench/notes/gpu_qmm.md, v4 */
  int rows = 1, warps = 8, blocks_per_sm = 2;
  const size_t staged_bytes = qmv_mma_staged_bytes(g);
  bool staged = staged_bytes <= QMV_MMA_STAGED_MAX;
  if (env->qmv_mma > 0) {
    rows = env->qmv_mma_rows;
    warps = env->qmv_mma_warps;
    blocks_per_sm = env->qmv_mma_blocks;
    staged = staged && env->qmv_mma_staged;
  }
  qmv_mma_args a = {.m = g->m,
                    .n = g->n,
                    .k = g->k,
                    .w_rows = g->w_rows,
                    .w_words = g->w_words,
                    .groups = g->groups,
                    .n_blocks = (g->n + 16 * rows - 1) / (16 * rows)};
  a.blocks = g->batch_count * a.n_blocks;
  a.scale_pairs = scale_pairs(p, r, tsr_dtype_size(o->scales->dtype));
  /* Staged x is made once per block and x matrix: a grid of the blocks that fit at once, each
     taking tile after tile. */
  int64_t grid = a.blocks;
  const tsri_discovery_result *found = tsri_discovery();
  int sms = op->device.index < found->gpu_count ? found->gpus[op->device.index].compute_units : 0;
  if (staged && sms > 0 && grid > (int64_t)sms * blocks_per_sm) grid = (int64_t)sms * blocks_per_sm;
  char extra[96], options[288];
  snprintf(extra, sizeof extra,
           "-DTSR_QMVM_RT=%d -DTSR_QMVM_WARPS=%d -DTSR_QMVM_MINB=%d -DTSR_QMVM_XS=%d", rows, warps,
           blocks_per_sm, staged ? 1 : 0);
  format_options(options, sizeof options, p, o, op, extra);
  /* qmv_mma.cuh's static red[]: a float per warp, row tile, half, column and row */
  size_t reduction_bytes = (size_t)warps * (size_t)rows * 2 * 8 * 8 * sizeof(float);
  return launch_product(op, r, "qmv_mma", options, &a, grid, (unsigned)warps * 32,
                        staged ? staged_bytes : 0, reduction_bytes);
}

static tsr_status launch_qmm(const tsri_op *op, const tsri_qmm_params *p,
                             const tsri_qmm_operands *o, qmm_run *r) {
  const tsri_qmm_geometry *g = &p->g;
  qmm_args a = {.m = g->m,
                .n = g->n,
                .k = g->k,
                .w_rows = g->w_rows,
                .w_words = g->w_words,
                .groups = g->groups,
                .m_blocks = (g->m + QMM_TILE - 1) / QMM_TILE,
                .n_blocks = (g->n + QMM_TILE - 1) / QMM_TILE};
  a.blocks = g->batch_count * a.m_blocks * a.n_blocks;
  char options[224];
  format_options(options, sizeof options, p, o, op,
                 p->transpose ? "-DTSR_QMM_TRANSPOSE=1" : "-DTSR_QMM_TRANSPOSE=0");
  return launch_product(op, r, "qmm", options, &a, a.blocks, QMM_THREADS, 0, 0);
}

/* ---- prefill: dequantize once, then cuBLASLt ------------------------------------------------ */

/* Rows of x from which a product is cheaper as dequantize-then-GEMM than on the tensor-core kernel
   (H200, affine 4-bit g64, 28672 x 8192: qmma 313-335 µs at M = 64, ~3.2-3.8 ms at M = 512;
   dequantize ~350 µs + cuBLASLt's bfloat16 product 120-260 µs). Where qmma does not apply, the
   tiled kernel's M = 16 already takes 2.5-2.8 ms, so every product past qmv's rows goes there. */
#define DEQUANTIZED_MIN_ROWS_QMMA 128

/* Whether w dequantized into the output's dtype is exactly the w of the bound (quant-spec Part A
   §4; tests/quant/qmm_ref.h's rule and hat weights) for a product whose x and output are of that
   dtype. Affine: into float32 the weights are the matmul's own, s * q + b unrounded
   (tsri_cuda_dequantize_weights: what the CPU and the fused kernels use, so the model layer's
   float32 activations against bfloat16 scales give the same answer at every M; rounding them to
   bfloat16 flipped a router choice in test_glm_golden); into the scales' dtype, the rounded
   weights of tsr_dequantize (the bound's hat). mxfp4 and nvfp4 values times their scale have at
   most 6 significant bits and a float32 exponent, exact in bfloat16 and float32 (not float16's
   range); mxfp8's subnormal codes times small e8m0 scales reach below bfloat16's subnormals, so
   float32 only. A float32 product runs on cuBLASLt with CUBLAS_COMPUTE_32F (no TF32:
   cuda/matmul.c). */
static bool dequantized_exact(const tsri_qmm_params *p, const tsri_qmm_operands *o, tsr_dtype out) {
  if (p->mode == TSRI_QF_AFFINE)
    return o->biases && (o->scales->dtype == out || out == TSR_FLOAT32);
  if (p->mode == TSRI_QF_MXFP8) return out == TSR_FLOAT32;
  return out == TSR_FLOAT32 || out == TSR_BFLOAT16;
}

/* A quantized_matmul (no gather), transposed, one weight matrix shared by every product, x of the
   output's dtype, the dequantized weights exact (above), and enough rows of x in all that
   dequantizing once and one cuBLASLt product (float32 accumulation, one rounding to the output)
   beat the fused kernels. */
static bool dequantized_fits(const tsri_op *op, const tsri_qmm_params *p,
                             const tsri_qmm_operands *o, bool qmma) {
  const tsri_qmm_geometry *g = &p->g;
  int64_t min_rows = qmma ? DEQUANTIZED_MIN_ROWS_QMMA : QMV_MAX_M + 1;
  return op->primitive == TSRI_PRIM_QUANTIZED_MATMUL && p->transpose && !o->lhs && !o->rhs &&
         g->w_matrices == 1 && g->batch_count == g->x_matrices && o->x->dtype == op->out.dtype &&
         dequantized_exact(p, o, op->out.dtype) && g->x_matrices * g->m >= min_rows;
}

/* Scratch for w dequantized ([N, K] of the output's dtype), or NULL when the product does not
   take that path or the bytes are not to be had (a cap: then the kernels that need none run). */
static tsri_buffer *dequantized_scratch(const tsri_op *op, const tsri_qmm_params *p,
                                        const tsri_qmm_operands *o, bool qmma) {
  if (!dequantized_fits(op, p, o, qmma)) return NULL;
  tsri_buffer *w = NULL;
  uint64_t bytes = (uint64_t)(p->g.n * p->g.k) * tsr_dtype_size(op->out.dtype);
  return tsri_cuda_scratch_alloc(op, bytes, "quantized_matmul", &w) == TSR_OK ? w : NULL;
}

/* w dequantized into the scratch by the dequantize kernel, then out = x · w^T on cuBLASLt; the
   scratch goes back once the stream has passed both. */
static tsr_status launch_dequantized(const tsri_op *op, const tsri_qmm_params *p,
                                     const tsri_qmm_operands *o, const qmm_run *r, tsri_buffer *w) {
  const tsri_qmm_geometry *g = &p->g;
  tsr_status status;
  tsri_dequantize_params dq_params = {
      .mode = p->mode, .group_size = p->group_size, .bits = p->bits};
  tsri_op dq = *op;
  dq.primitive = TSRI_PRIM_DEQUANTIZE;
  dq.params = &dq_params;
  dq.params_size = sizeof dq_params;
  dq.ninputs = o->biases ? 3 : 2;
  dq.in[0] = *o->w_q;
  dq.in[1] = *o->scales;
  if (o->biases) dq.in[2] = *o->biases;
  dq.out = (tsri_view){.data = w->data,
                       .dtype = op->out.dtype,
                       .ndim = 2,
                       .shape = {g->n, g->k},
                       .strides = {g->k, 1},
                       .size = g->n * g->k};
  dq.out_is_in0 = false;
  status = tsri_cuda_dequantize_weights(&dq);
  if (status == TSR_OK)
    status = tsri_cuda_matmul_nt(op, g->x_matrices * g->m, g->n, g->k, r->x.data, w->data);
  tsri_cuda_scratch_done(op, w);
  return status;
}

/* ---- a gather's index out of range --------------------------------------------------------- */

/* An index element read back from the device, as int64. */
static int64_t host_index(const unsigned char *bytes, tsr_dtype dtype) {
  switch (dtype) {
    case TSR_INT8:
      return (int8_t)bytes[0];
    case TSR_UINT32: {
      uint32_t v;
      memcpy(&v, bytes, 4);
      return v;
    }
    case TSR_INT32: {
      int32_t v;
      memcpy(&v, bytes, 4);
      return v;
    }
    case TSR_INT64: {
      int64_t v;
      memcpy(&v, bytes, 8);
      return v;
    }
    default:
      return bytes[0];
  }
}

/* cpu/qmm.c's message for side s at output matrix b: the index's value, its position in the
   index shape, and the matrix count. */
static tsr_status report_index(const tsri_op *op, const qmm_batch *batch, const qmm_side *s,
                               const tsri_view *indices, int64_t b, const char *name,
                               const char *operand) {
  int64_t coord[TSR_MAX_NDIM], rest = b, flat = 0, offset = s->offset;
  for (int d = batch->ndim - 1; d >= 0; d--) {
    coord[d] = rest % batch->shape[d];
    rest /= batch->shape[d];
  }
  for (int i = 0; i < s->ndim; i++) {
    int64_t c = s->shape[i] == 1 ? 0 : coord[batch->ndim - s->ndim + i];
    flat = flat * s->shape[i] + c;
    offset += c * s->strides[i];
  }
  int64_t value = flat;
  if (indices) {
    unsigned char bytes[8] = {0};
    tsr_status status = op->stream->iface->copy(op->stream, bytes, tsri_view_at(indices, offset),
                                                tsr_dtype_size(indices->dtype), TSRI_COPY_TO_HOST);
    if (status != TSR_OK) return status;
    value = host_index(bytes, indices->dtype);
  }
  int64_t position[TSR_MAX_NDIM];
  for (int d = s->ndim - 1; d >= 0; d--) {
    position[d] = flat % s->shape[d];
    flat /= s->shape[d];
  }
  char where[160];
  return tsri_error(TSR_ERR_INVALID,
                    "%s value %lld at %s is out of range [0, %lld) (%s has %lld matrices)", name,
                    (long long)value, tsri_shape_str(position, s->ndim, where, sizeof where),
                    (long long)s->matrices, operand, (long long)s->matrices);
}

/* Reads the flags back (the stream waits for the kernel) and reports the first bad index. */
static tsr_status check_indices(const tsri_op *op, const tsri_qmm_operands *o, const qmm_run *r) {
  unsigned long long first_bad[2] = {0, 0};
  tsr_status status = op->stream->iface->copy(op->stream, first_bad, r->flags->data,
                                              sizeof first_bad, TSRI_COPY_TO_HOST);
  if (status != TSR_OK) return status;
  if (first_bad[0] != ~0ull)
    return report_index(op, &r->batch, &r->batch.lhs, o->lhs, (int64_t)first_bad[0], "lhs_indices",
                        "x");
  if (first_bad[1] != ~0ull)
    return report_index(op, &r->batch, &r->batch.rhs, o->rhs, (int64_t)first_bad[1], "rhs_indices",
                        "w_q");
  return TSR_OK;
}

/* ---- the op ---------------------------------------------------------------------------------- */

static tsr_status prepare(const tsri_op *op, const tsri_qmm_operands *o, qmm_run *r) {
  const char *what = op->primitive == TSRI_PRIM_GATHER_QMM ? "gather_qmm" : "quantized_matmul";
  tsr_status status = tsri_cuda_packed_get(op, o->x, what, &r->x);
  if (status == TSR_OK) status = tsri_cuda_packed_get(op, o->w_q, what, &r->w);
  if (status == TSR_OK) status = tsri_cuda_packed_get(op, o->scales, what, &r->scales);
  if (status == TSR_OK && o->biases) status = tsri_cuda_packed_get(op, o->biases, what, &r->biases);
  /* Indices proven in range at construction need no flag: no read back, no synchronization
     (the kernels skip an out-of-range index either way, so memory stays safe). */
  const tsri_qmm_geometry *g = &TSRI_PARAMS(op, tsri_qmm_params)->g;
  bool lhs_checked = o->lhs && !tsri_view_values_within(o->lhs, 0, g->x_matrices);
  bool rhs_checked = o->rhs && !tsri_view_values_within(o->rhs, 0, g->w_matrices);
  if (status != TSR_OK || (!lhs_checked && !rhs_checked)) return status;
  status = tsri_cuda_scratch_alloc(op, 2 * sizeof(unsigned long long), what, &r->flags);
  if (status != TSR_OK) return status;
  return tsri_cuda_status(cudaMemsetAsync(r->flags->data, 0xff, 2 * sizeof(unsigned long long),
                                          tsri_cuda_op_stream(op)),
                          "gather_qmm: clearing the index flags");
}

static tsr_status cuda_qmm(const tsri_op *op) {
  if (op->out.size == 0) return TSR_OK;
  const tsri_qmm_params *p = TSRI_PARAMS(op, tsri_qmm_params);
  tsri_qmm_operands o = tsri_qmm_operands_of(op);
  qmm_run r = {0};
  tsr_status status = prepare(op, &o, &r);
  batch_init(&r.batch, &o, &p->g);
  if (status == TSR_OK) status = tsri_cuda_poison_output(op);
  if (status == TSR_OK) {
    bool qmma = qmma_fits(p, &o, &r);
    tsri_buffer *dequantized = dequantized_scratch(op, p, &o, qmma);
    if (dequantized)
      status = launch_dequantized(op, p, &o, &r, dequantized);
    else if (qmma && qmv_mma_fits(p))
      status = launch_qmv_mma(op, p, &o, &r);
    else if (qmma)
      status = launch_qmma(op, p, &o, &r);
    else if (p->transpose && p->g.m <= QMV_MAX_M)
      status = launch_qmv(op, p, &o, &r);
    else
      status = launch_qmm(op, p, &o, &r);
  }
  if (r.flags) {
    if (status == TSR_OK) {
      status = check_indices(op, &o, &r);
    } else { /* what was launched before the failure may still write the flags */
      cudaStreamSynchronize(tsri_cuda_op_stream(op));
      (void)cudaGetLastError();
    }
    tsri_buffer_release(r.flags); /* the stream is past every kernel that used it */
  }
  tsri_cuda_packed_done(op, &r.x);
  tsri_cuda_packed_done(op, &r.w);
  tsri_cuda_packed_done(op, &r.scales);
  tsri_cuda_packed_done(op, &r.biases);
  return status;
}

/* Every mode, bit width, group size, dtype, layout and index dtype the ops accept: no supports()
   refusal. */
void tsri_cuda_register_qmm(tsri_kernel_fn *table, tsri_cuda_supports_fn *supports) {
  (void)supports;
  table[TSRI_PRIM_QUANTIZED_MATMUL] = cuda_qmm;
  table[TSRI_PRIM_GATHER_QMM] = cuda_qmm;
}
