/* cuda/matmul.c — TSRI_PRIM_MATMUL on the GPU through cuBLASLt: float32, float16 or bfloat16
 * operands and output (all three of one dtype), accumulated in float32 (CUBLAS_COMPUTE_32F for
 * every dtype, so float32 never goes through TF32), under the geometry ops/matmul.h derived.
 *
 * cuBLASLt is column-major: the packed row-major C[M, N] = A[M, K] B[K, N] is computed as
 * C^T = B^T A^T, so tessera's b is cuBLASLt's A and a is its B. A matrix whose elements lie
 * row-major or column-major with a unit stride goes to cuBLASLt where it lies (a transposed view is
 * the other order, never a copy); any other layout (a step, a reversal, a broadcast row) is first
 * gathered into packed ledger scratch by the copy kernel (cuda/kernels/copy.cuh). Batches are
 * folded into one tall product when b is shared (as on the CPU), else run strided-batched over the
 * longest run of inner batch axes both operands step along at one stride each (broadcast: 0), with
 * a loop of calls over the axes outside it.
 *
 * The cuBLASLt handle, the workspace (fixed bytes on the device's ledger) and a cache of plans per
 * shape (descriptors and the heuristic's algorithm, so a decode step's repeated shapes cost a hash
 * lookup) live in the device's context (cuda/runtime.h), made on the first matmul. Not a GEMM of
 * its own, and no integer or mixed-dtype products: those are refused at construction. */
#include <cublasLt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "core/stream.h"
#include "cuda/kernels.h"
#include "cuda/launch.h"
#include "cuda/runtime.h"
#include "cuda/strided.h"
#include "memory/buffer.h"
#include "ops/matmul.h"

#define WORKSPACE_BYTES ((uint64_t)32 << 20)
/* Plans are kept in an open-addressed table; it is emptied when it fills past PLAN_LIMIT, which a
   model's handful of shapes never reaches. */
#define PLAN_SLOTS 256
#define PLAN_LIMIT 192

/* One cuBLASLt operand: a column-major rows x cols matrix with leading dimension ld, used
   transposed or not, batch_stride elements between the matrices of a strided batch, its data
   aligned to align_bytes. int64 fields only, so a key has no padding and hashes as bytes. */
typedef struct {
  int64_t rows, cols, ld, transposed, batch_stride, align_bytes;
} lt_matrix;

/* Everything the plan depends on. a and b are cuBLASLt's (tessera's b and a); d is the output. */
typedef struct {
  int64_t dtype, batch;
  lt_matrix a, b, d;
} plan_key;

typedef struct {
  bool used;
  plan_key key;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t a, b, d;
  cublasLtMatmulAlgo_t algo;
  size_t workspace_bytes; /* what the algorithm needs, at most the context's workspace */
} plan;

struct tsri_cuda_matmul_state {
  int plan_count;
  plan plans[PLAN_SLOTS];
  /* The workspace is one per device while matmuls may run on several of its streams: a call on a
     stream other than the workspace's last user first waits for this event, recorded after that
     user's last call that needed workspace. */
  cudaEvent_t workspace_done;
  cudaStream_t workspace_stream; /* NULL until a call used the workspace */
};

/* One operand of the product: matrices of rows x cols at `data` + offset elements, with element
   strides for the rows, the columns and each batch axis of the geometry (0 where broadcast). */
typedef struct {
  const void *data;
  tsr_dtype dtype;
  int64_t offset, rows, cols, row_stride, col_stride;
  int64_t batch_strides[TSR_MAX_NDIM];
  tsri_buffer *scratch; /* the gathered copy, when the layout could not be read in place */
} operand;

static bool cuda_dtype(tsr_dtype dtype, cudaDataType *out) {
  switch (dtype) {
    case TSR_FLOAT32:
      *out = CUDA_R_32F;
      return true;
    case TSR_FLOAT16:
      *out = CUDA_R_16F;
      return true;
    case TSR_BFLOAT16:
      *out = CUDA_R_16BF;
      return true;
    default:
      return false;
  }
}

static tsr_status lt_error(cublasStatus_t status, const char *what, const plan_key *key) {
  return tsri_error(
      TSR_ERR_DEVICE, "matmul: %s: %s (%s) for M %lld, N %lld, K %lld, batch %lld, %s", what,
      cublasLtGetStatusName(status), cublasLtGetStatusString(status), (long long)key->d.cols,
      (long long)key->d.rows, (long long)(key->a.transposed ? key->a.rows : key->a.cols),
      (long long)key->batch, tsr_dtype_name((tsr_dtype)key->dtype));
}

/* Returns the status of a failed cuBLASLt call from the calling function (which a function
   cannot do); each argument is evaluated once. */
#define LT_TRY(call, what, key)                                                                  \
  do {                                                                                           \
    cublasStatus_t lt_try_status_ = (call);                                                      \
    if (lt_try_status_ != CUBLAS_STATUS_SUCCESS) return lt_error(lt_try_status_, (what), (key)); \
  } while (0)

/* ---- plans ---------------------------------------------------------------------------------- */

static tsr_status layout_new(cudaDataType type, const lt_matrix *m, int64_t batch,
                             const plan_key *key, cublasLtMatrixLayout_t *out) {
  LT_TRY(cublasLtMatrixLayoutCreate(out, type, (uint64_t)m->rows, (uint64_t)m->cols, m->ld),
         "cublasLtMatrixLayoutCreate", key);
  if (batch <= 1) return TSR_OK;
  int32_t count = (int32_t)batch;
  int64_t stride = m->batch_stride;
  LT_TRY(cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                          sizeof count),
         "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)", key);
  LT_TRY(cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                          &stride, sizeof stride),
         "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)", key);
  return TSR_OK;
}

static tsr_status desc_new(const plan_key *key, cublasLtMatmulDesc_t *out) {
  LT_TRY(cublasLtMatmulDescCreate(out, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate",
         key);
  cublasOperation_t trans_a = key->a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t trans_b = key->b.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  LT_TRY(
      cublasLtMatmulDescSetAttribute(*out, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof trans_a),
      "cublasLtMatmulDescSetAttribute(TRANSA)", key);
  LT_TRY(
      cublasLtMatmulDescSetAttribute(*out, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof trans_b),
      "cublasLtMatmulDescSetAttribute(TRANSB)", key);
  return TSR_OK;
}

/* The heuristic's preferences: at most the workspace we have, split-K partial sums kept in float32
   (an in-place or output-type reduction would round them to a half-precision output), and the
   operands' real alignment (the default assumes 256 bytes, which a sliced view does not have). */
static tsr_status preference_new(const plan_key *key, uint64_t workspace_bytes,
                                 cublasLtMatmulPreference_t *out) {
  LT_TRY(cublasLtMatmulPreferenceCreate(out), "cublasLtMatmulPreferenceCreate", key);
  uint32_t reduction = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  uint32_t align[4] = {(uint32_t)key->a.align_bytes, (uint32_t)key->b.align_bytes,
                       (uint32_t)key->d.align_bytes, (uint32_t)key->d.align_bytes};
  const cublasLtMatmulPreferenceAttributes_t align_attr[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  LT_TRY(cublasLtMatmulPreferenceSetAttribute(*out, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                              &workspace_bytes, sizeof workspace_bytes),
         "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)", key);
  LT_TRY(cublasLtMatmulPreferenceSetAttribute(*out, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                              &reduction, sizeof reduction),
         "cublasLtMatmulPreferenceSetAttribute(REDUCTION_SCHEME_MASK)", key);
  for (int i = 0; i < 4; i++)
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(*out, align_attr[i], &align[i], sizeof align[i]),
           "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT)", key);
  return TSR_OK;
}

static void plan_destroy(plan *p) {
  if (p->d) cublasLtMatrixLayoutDestroy(p->d);
  if (p->b) cublasLtMatrixLayoutDestroy(p->b);
  if (p->a) cublasLtMatrixLayoutDestroy(p->a);
  if (p->desc) cublasLtMatmulDescDestroy(p->desc);
  memset(p, 0, sizeof *p);
}

/* The first algorithm the heuristic offers for the key; NOT_SUPPORTED when it offers none. */
static tsr_status choose_algorithm(cublasLtHandle_t handle, plan *p, uint64_t workspace_bytes) {
  cublasLtMatmulPreference_t preference = NULL;
  tsr_status status = preference_new(&p->key, workspace_bytes, &preference);
  cublasLtMatmulHeuristicResult_t result;
  memset(&result, 0, sizeof result);
  int found = 0;
  if (status == TSR_OK) {
    cublasStatus_t lt = cublasLtMatmulAlgoGetHeuristic(handle, p->desc, p->a, p->b, p->d, p->d,
                                                       preference, 1, &result, &found);
    if (lt == CUBLAS_STATUS_SUCCESS && found < 1) lt = CUBLAS_STATUS_NOT_SUPPORTED;
    if (lt != CUBLAS_STATUS_SUCCESS)
      status = lt_error(lt, "cublasLtMatmulAlgoGetHeuristic", &p->key);
  }
  if (preference) cublasLtMatmulPreferenceDestroy(preference);
  p->algo = result.algo;
  p->workspace_bytes = result.workspaceSize;
  return status;
}

static tsr_status plan_init(cublasLtHandle_t handle, const plan_key *key, uint64_t workspace_bytes,
                            plan *p) {
  memset(p, 0, sizeof *p);
  p->key = *key;
  cudaDataType type = CUDA_R_32F;
  cuda_dtype((tsr_dtype)key->dtype, &type);
  tsr_status status = desc_new(key, &p->desc);
  if (status == TSR_OK) status = layout_new(type, &key->a, key->batch, key, &p->a);
  if (status == TSR_OK) status = layout_new(type, &key->b, key->batch, key, &p->b);
  if (status == TSR_OK) status = layout_new(type, &key->d, key->batch, key, &p->d);
  if (status == TSR_OK) status = choose_algorithm(handle, p, workspace_bytes);
  if (status != TSR_OK) {
    plan_destroy(p);
    return status;
  }
  p->used = true;
  return TSR_OK;
}

static uint64_t key_hash(const plan_key *key) {
  const unsigned char *bytes = (const unsigned char *)key;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < sizeof *key; i++)
    h = (h ^ bytes[i]) * 0x100000001b3ull;
  return h;
}

static void plans_clear(tsri_cuda_matmul_state *state) {
  for (int i = 0; i < PLAN_SLOTS; i++)
    if (state->plans[i].used) plan_destroy(&state->plans[i]);
  state->plan_count = 0;
}

/* The plan of `key`, made on first use (matmul_lock held). */
static tsr_status plan_get(tsri_cuda_context *ctx, const plan_key *key, const plan **out) {
  tsri_cuda_matmul_state *state = ctx->matmul;
  if (state->plan_count >= PLAN_LIMIT) plans_clear(state);
  size_t slot = (size_t)(key_hash(key) % PLAN_SLOTS);
  while (state->plans[slot].used) {
    if (memcmp(&state->plans[slot].key, key, sizeof *key) == 0) {
      *out = &state->plans[slot];
      return TSR_OK;
    }
    slot = (slot + 1) % PLAN_SLOTS;
  }
  tsr_status status =
      plan_init((cublasLtHandle_t)ctx->lt_handle, key, ctx->workspace_bytes, &state->plans[slot]);
  if (status != TSR_OK) return status;
  state->plan_count++;
  *out = &state->plans[slot];
  return TSR_OK;
}

/* ---- the per-device state ------------------------------------------------------------------- */

static tsr_status workspace_new(tsri_cuda_context *ctx) {
  tsr_device device = {TSR_GPU, ctx->index};
  tsr_status status = tsri_ledger_reserve_fixed(device, WORKSPACE_BYTES);
  if (status != TSR_OK) {
    char message[TSR_ERROR_MAX];
    snprintf(message, sizeof message, "matmul: the cuBLASLt workspace of %llu bytes: %s",
             (unsigned long long)WORKSPACE_BYTES, tsr_last_error());
    return tsri_error_copy(status, message);
  }
  status = tsri_cuda_status(cudaMalloc(&ctx->workspace, (size_t)WORKSPACE_BYTES),
                            "matmul: cudaMalloc of the cuBLASLt workspace");
  if (status != TSR_OK) {
    ctx->workspace = NULL;
    tsri_ledger_release_fixed(device, WORKSPACE_BYTES);
    return status;
  }
  ctx->workspace_bytes = WORKSPACE_BYTES;
  return TSR_OK;
}

/* Makes the handle, the workspace and the plan cache on the first matmul of the device
   (matmul_lock held; the op's stream has made the device current). What a failed attempt made
   stays for the next one. */
static tsr_status state_ready(tsri_cuda_context *ctx) {
  if (ctx->matmul) return TSR_OK;
  if (!ctx->lt_handle) {
    cublasLtHandle_t handle = NULL;
    cublasStatus_t lt = cublasLtCreate(&handle);
    if (lt != CUBLAS_STATUS_SUCCESS)
      return tsri_error(TSR_ERR_DEVICE, "matmul: cublasLtCreate on gpu:%d: %s (%s)", ctx->index,
                        cublasLtGetStatusName(lt), cublasLtGetStatusString(lt));
    ctx->lt_handle = handle;
  }
  if (!ctx->workspace) {
    tsr_status status = workspace_new(ctx);
    if (status != TSR_OK) return status;
  }
  tsri_cuda_matmul_state *state = calloc(1, sizeof *state);
  if (!state) return tsri_error(TSR_ERR_NOMEM, "matmul: out of host memory for the plan cache");
  tsr_status status =
      tsri_cuda_status(cudaEventCreateWithFlags(&state->workspace_done, cudaEventDisableTiming),
                       "matmul: cudaEventCreateWithFlags");
  if (status != TSR_OK) {
    free(state);
    return status;
  }
  ctx->matmul = state;
  return TSR_OK;
}

void tsri_cuda_matmul_context_release(tsri_cuda_context *ctx) {
  pthread_mutex_lock(&ctx->matmul_lock);
  if (ctx->lt_handle || ctx->workspace || ctx->matmul) (void)tsri_cuda_use_device(ctx->index);
  if (ctx->matmul) {
    plans_clear(ctx->matmul);
    cudaEventDestroy(ctx->matmul->workspace_done);
    free(ctx->matmul);
    ctx->matmul = NULL;
  }
  if (ctx->lt_handle) cublasLtDestroy((cublasLtHandle_t)ctx->lt_handle);
  ctx->lt_handle = NULL;
  if (ctx->workspace) {
    cudaFree(ctx->workspace); /* synchronizes the device: the refund after it is true */
    tsri_ledger_release_fixed((tsr_device){TSR_GPU, ctx->index}, ctx->workspace_bytes);
  }
  ctx->workspace = NULL;
  ctx->workspace_bytes = 0;
  (void)cudaGetLastError();
  pthread_mutex_unlock(&ctx->matmul_lock);
}

/* ---- operands ------------------------------------------------------------------------------- */

static int64_t stride_of(const tsri_view *x, int axis) {
  return axis < 0 ? 0 : x->strides[axis];
}

static void operand_init(operand *x, const tsri_view *view, const tsri_matmul_side *side,
                         int batch_ndim, int64_t rows, int64_t cols) {
  memset(x, 0, sizeof *x);
  x->data = view->data;
  x->dtype = view->dtype;
  x->offset = view->offset;
  x->rows = rows;
  x->cols = cols;
  x->row_stride = stride_of(view, side->row_axis);
  x->col_stride = stride_of(view, side->col_axis);
  for (int i = 0; i < batch_ndim; i++)
    x->batch_strides[i] = stride_of(view, side->batch_axes[i]);
}

/* When b is the same matrix for every batch and a's batches follow one another at a fixed row
   stride (x [B, T, K] @ w [K, N]), the batches are rows of one [B*T, K] @ [K, N] product: one
   call instead of a batch. Rewrites g and a to that product (cpu/matmul.c does the same). */
static void fold_batches(tsri_matmul_geometry *g, operand *a, const operand *b) {
  if (g->batch_count <= 1) return;
  int64_t rows = g->m, stride = a->row_stride;
  for (int i = g->batch_ndim - 1; i >= 0; i--) {
    if (g->batch_shape[i] == 1) continue;
    if (b->batch_strides[i] != 0) return;
    if (rows == 1) { /* a single row has no row stride yet: the batch axis gives it one */
      stride = a->batch_strides[i];
    } else if (a->batch_strides[i] != rows * stride) {
      return;
    }
    rows *= g->batch_shape[i];
  }
  if (rows > INT_MAX) return;
  g->m = a->rows = rows;
  a->row_stride = stride;
  g->batch_ndim = 0;
  g->batch_count = 1;
}

static int64_t at_least_one(int64_t v) {
  return v > 1 ? v : 1;
}

/* Whether x's matrices can be read in place column-major (unit row stride, columns at least rows
   apart) or row-major (unit column stride, rows at least cols apart), and the leading dimension. */
static bool fits(const operand *x, bool column_major, int64_t *ld) {
  int64_t inner = column_major ? x->rows : x->cols, outer = column_major ? x->cols : x->rows;
  int64_t unit = column_major ? x->row_stride : x->col_stride;
  int64_t step = column_major ? x->col_stride : x->row_stride;
  if (inner > 1 && unit != 1) return false;
  *ld = outer <= 1 ? at_least_one(inner) : step;
  return *ld >= at_least_one(inner);
}

static void release_scratch(void *buffer) {
  tsri_buffer_release(buffer);
}

/* Gathers x's matrices into packed scratch, column-major when x steps along its rows the faster
   (a transposed view stays coalesced on both sides), with x's own batch axes only (a broadcast
   axis stays stride 0 and is not copied), and points x at it. The scratch goes back to the cache
   once the stream has passed the op (after_current). */
static tsr_status gather(const tsri_op *op, const tsri_matmul_geometry *g, operand *x) {
  tsri_view src = {.data = (void *)x->data, .dtype = x->dtype, .offset = x->offset};
  tsri_view dst = {.dtype = x->dtype};
  int own[TSR_MAX_NDIM], nown = 0;
  for (int i = 0; i < g->batch_ndim; i++)
    if (g->batch_shape[i] > 1 && x->batch_strides[i] != 0) own[nown++] = i;
  src.ndim = dst.ndim = nown + 2;
  bool column_major = llabs(x->row_stride) < llabs(x->col_stride);
  int64_t packed = x->rows * x->cols;
  src.shape[nown] = dst.shape[nown] = x->rows;
  src.shape[nown + 1] = dst.shape[nown + 1] = x->cols;
  src.strides[nown] = x->row_stride;
  src.strides[nown + 1] = x->col_stride;
  dst.strides[nown] = column_major ? 1 : x->cols;
  dst.strides[nown + 1] = column_major ? x->rows : 1;
  int64_t new_batch_strides[TSR_MAX_NDIM] = {0};
  for (int j = nown - 1; j >= 0; j--) {
    src.shape[j] = dst.shape[j] = g->batch_shape[own[j]];
    src.strides[j] = x->batch_strides[own[j]];
    dst.strides[j] = new_batch_strides[own[j]] = packed;
    packed *= g->batch_shape[own[j]];
  }
  src.size = dst.size = packed;
  uint64_t bytes = (uint64_t)packed * tsr_dtype_size(x->dtype);
  tsr_status status = tsri_buffer_alloc(op->device, bytes, &x->scratch);
  if (status != TSR_OK) {
    char message[TSR_ERROR_MAX];
    snprintf(message, sizeof message, "matmul: scratch of %llu bytes for a strided operand: %s",
             (unsigned long long)bytes, tsr_last_error());
    return tsri_error_copy(status, message);
  }
  dst.data = x->scratch->data;
  tsri_cuda_strided layout;
  tsri_cuda_strided_init(&layout, &dst);
  tsri_cuda_strided_add(&layout, &src);
  tsri_cuda_strided_add(&layout, &dst);
  char options[32];
  snprintf(options, sizeof options, "-DTSR_COPY_BYTES=%zu", tsr_dtype_size(x->dtype));
  void *args[] = {&layout, &src.data, &dst.data};
  unsigned block = 256;
  status = tsri_cuda_launch(op, "copy", options, tsri_dim3(tsri_cuda_blocks_for(packed, block)),
                            tsri_dim3(block), 0, args);
  x->data = dst.data;
  x->offset = 0;
  x->row_stride = dst.strides[nown];
  x->col_stride = dst.strides[nown + 1];
  memcpy(x->batch_strides, new_batch_strides, sizeof new_batch_strides);
  return status;
}

/* x as the cuBLASLt operand of op(L): a row-major matrix is its transpose stored column-major
   (used as is), a column-major one is itself (used transposed). Gathers x first when it fits
   neither. */
static tsr_status lt_operand(const tsri_op *op, const tsri_matmul_geometry *g, operand *x,
                             lt_matrix *m) {
  int64_t ld = 0;
  bool row_major = fits(x, false, &ld);
  if (!row_major && !fits(x, true, &ld)) {
    tsr_status status = gather(op, g, x);
    if (status != TSR_OK) return status;
    row_major = fits(x, false, &ld);
    if (!row_major) fits(x, true, &ld);
  }
  *m = (lt_matrix){.rows = row_major ? x->cols : x->rows,
                   .cols = row_major ? x->rows : x->cols,
                   .ld = ld,
                   .transposed = !row_major};
  return TSR_OK;
}

/* ---- batches and calls ---------------------------------------------------------------------- */

/* The batch axes [split, batch_ndim) run as one strided batch of `count` products: both operands
   step along all of them at one non-negative stride each (an axis of extent 1 joins any run).
   The axes before split are looped over, one call each. */
typedef struct {
  int split;
  int64_t count, stride_a, stride_b;
} batch_run;

static bool joins(int64_t stride, int64_t run_stride, int64_t count) {
  int64_t want = 0;
  return stride >= 0 && !__builtin_mul_overflow(run_stride, count, &want) && stride == want;
}

static batch_run split_batch(const tsri_matmul_geometry *g, const operand *a, const operand *b) {
  batch_run run = {.split = g->batch_ndim, .count = 1};
  for (int d = g->batch_ndim - 1; d >= 0; d--) {
    int64_t extent = g->batch_shape[d], sa = a->batch_strides[d], sb = b->batch_strides[d];
    if (extent > 1) {
      if (run.count > INT_MAX / extent) break; /* cuBLASLt's batch count is an int32 */
      if (run.count == 1) {
        if (sa < 0 || sb < 0) break;
        run.stride_a = sa;
        run.stride_b = sb;
      } else if (!joins(sa, run.stride_a, run.count) || !joins(sb, run.stride_b, run.count)) {
        break;
      }
      run.count *= extent;
    }
    run.split = d;
  }
  return run;
}

/* The largest power of two (at most 256) dividing the address and every batch step from it. */
static int64_t alignment(const void *data, int64_t batch, int64_t stride_elements, size_t element) {
  uint64_t bits = (uint64_t)(uintptr_t)data | 256u;
  if (batch > 1) bits |= (uint64_t)stride_elements * element;
  return (int64_t)(bits & (~bits + 1));
}

/* What one op's calls share: the plan's key without the pointers' alignment, and the operands. */
typedef struct {
  const tsri_op *op;
  tsri_cuda_context *ctx;
  cudaStream_t stream;
  plan_key key;
  const operand *a, *b;
  bool used_workspace;
} call_set;

/* One cublasLtMatmul over the run: a, b and out at these element offsets (matmul_lock held). */
static tsr_status call_at(call_set *calls, int64_t offset_a, int64_t offset_b, int64_t offset_out) {
  size_t element = tsr_dtype_size(calls->op->out.dtype);
  const unsigned char *a = (const unsigned char *)calls->a->data + offset_a * (int64_t)element;
  const unsigned char *b = (const unsigned char *)calls->b->data + offset_b * (int64_t)element;
  unsigned char *out = (unsigned char *)calls->op->out.data + offset_out * (int64_t)element;
  plan_key key = calls->key; /* cuBLASLt's A is tessera's b, its B tessera's a */
  key.a.align_bytes = alignment(b, key.batch, key.a.batch_stride, element);
  key.b.align_bytes = alignment(a, key.batch, key.b.batch_stride, element);
  key.d.align_bytes = alignment(out, key.batch, key.d.batch_stride, element);
  const plan *p = NULL;
  tsr_status status = plan_get(calls->ctx, &key, &p);
  if (status != TSR_OK) return status;
  void *workspace = NULL;
  tsri_cuda_matmul_state *state = calls->ctx->matmul;
  if (p->workspace_bytes > 0) {
    workspace = calls->ctx->workspace;
    if (!calls->used_workspace && state->workspace_stream &&
        state->workspace_stream != calls->stream) {
      status = tsri_cuda_status(cudaStreamWaitEvent(calls->stream, state->workspace_done, 0),
                                "matmul: cudaStreamWaitEvent (the workspace's last user)");
      if (status != TSR_OK) return status;
    }
    calls->used_workspace = true;
  }
  const float one = 1.0f, zero = 0.0f;
  cublasStatus_t lt = cublasLtMatmul((cublasLtHandle_t)calls->ctx->lt_handle, p->desc, &one, b,
                                     p->a, a, p->b, &zero, out, p->d, out, p->d, &p->algo,
                                     workspace, p->workspace_bytes, calls->stream);
  return lt == CUBLAS_STATUS_SUCCESS ? TSR_OK : lt_error(lt, "cublasLtMatmul", &key);
}

/* Every call of the op: the run's strided batch at each index of the axes before the split,
   walked like an odometer (matmul_lock held). */
static tsr_status run_calls(call_set *calls, const tsri_matmul_geometry *g, const batch_run *run) {
  int64_t index[TSR_MAX_NDIM] = {0};
  int64_t offset_a = calls->a->offset, offset_b = calls->b->offset, mn = g->m * g->n;
  int64_t outer = g->batch_count / run->count;
  tsr_status status = TSR_OK;
  for (int64_t i = 0; i < outer && status == TSR_OK; i++) {
    status = call_at(calls, offset_a, offset_b, i * run->count * mn);
    for (int d = run->split - 1; d >= 0; d--) {
      if (++index[d] < g->batch_shape[d]) {
        offset_a += calls->a->batch_strides[d];
        offset_b += calls->b->batch_strides[d];
        break;
      }
      offset_a -= (g->batch_shape[d] - 1) * calls->a->batch_strides[d];
      offset_b -= (g->batch_shape[d] - 1) * calls->b->batch_strides[d];
      index[d] = 0;
    }
  }
  if (calls->used_workspace) {
    tsri_cuda_matmul_state *state = calls->ctx->matmul;
    tsr_status recorded = tsri_cuda_status(cudaEventRecord(state->workspace_done, calls->stream),
                                           "matmul: cudaEventRecord (the workspace's last user)");
    state->workspace_stream = recorded == TSR_OK ? calls->stream : NULL;
    if (status == TSR_OK) status = recorded;
  }
  return status;
}

/* Runs the product of the placed operands on the device's cuBLASLt. */
static tsr_status run_product(const tsri_op *op, const tsri_matmul_geometry *g, const operand *a,
                              const operand *b, const lt_matrix *lt_a, const lt_matrix *lt_b) {
  tsri_cuda_context *ctx = NULL;
  tsr_status status = tsri_cuda_context_get(op->device.index, &ctx);
  if (status != TSR_OK) return status;
  batch_run run = split_batch(g, a, b);
  call_set calls = {.op = op, .ctx = ctx, .stream = tsri_cuda_op_stream(op), .a = a, .b = b};
  calls.key.dtype = op->out.dtype;
  calls.key.batch = run.count;
  calls.key.a = *lt_b; /* tessera's b */
  calls.key.b = *lt_a;
  calls.key.d = (lt_matrix){.rows = g->n, .cols = g->m, .ld = at_least_one(g->n)};
  if (run.count > 1) {
    calls.key.a.batch_stride = run.stride_b;
    calls.key.b.batch_stride = run.stride_a;
    calls.key.d.batch_stride = g->m * g->n;
  }
  pthread_mutex_lock(&ctx->matmul_lock);
  status = state_ready(ctx);
  if (status == TSR_OK) status = run_calls(&calls, g, &run);
  pthread_mutex_unlock(&ctx->matmul_lock);
  return status;
}

/* out = a b on cuBLASLt: each operand described (or packed into scratch), the product run; scratch
   goes back only once the stream has run the calls that read it, failed or not. */
static tsr_status multiply(const tsri_op *op, const tsri_matmul_geometry *g, operand *a,
                           operand *b) {
  lt_matrix lt_a, lt_b;
  tsr_status status = lt_operand(op, g, a, &lt_a);
  if (status == TSR_OK) status = lt_operand(op, g, b, &lt_b);
  if (status == TSR_OK) status = run_product(op, g, a, b, &lt_a, &lt_b);
  if (a->scratch) op->stream->iface->after_current(op->stream, release_scratch, a->scratch);
  if (b->scratch) op->stream->iface->after_current(op->stream, release_scratch, b->scratch);
  return status;
}

static tsr_status cuda_matmul(const tsri_op *op) {
  if (op->out.size == 0) return TSR_OK;
  tsri_matmul_geometry g = TSRI_PARAMS(op, tsri_matmul_params)->g;
  if (g.k == 0) { /* an empty sum: zeros (all-zero bits in every float dtype) */
    size_t bytes = (size_t)op->out.size * tsr_dtype_size(op->out.dtype);
    return tsri_cuda_status(cudaMemsetAsync(op->out.data, 0, bytes, tsri_cuda_op_stream(op)),
                            "matmul: cudaMemsetAsync");
  }
  operand a, b;
  operand_init(&a, &op->in[0], &g.a, g.batch_ndim, g.m, g.k);
  operand_init(&b, &op->in[1], &g.b, g.batch_ndim, g.k, g.n);
  fold_batches(&g, &a, &b);
  return multiply(op, &g, &a, &b);
}

tsr_status tsri_cuda_matmul_nt(const tsri_op *op, int64_t m, int64_t n, int64_t k, const void *a,
                               const void *b) {
  tsri_matmul_geometry g = {.m = m, .n = n, .k = k, .batch_count = 1};
  operand oa = {
      .data = a, .dtype = op->out.dtype, .rows = m, .cols = k, .row_stride = k, .col_stride = 1};
  operand ob = {.data = b,
                .dtype = op->out.dtype,
                .rows = k,
                .cols = n,
                .row_stride = 1,
                .col_stride = k}; /* b [n, k] row-major: the [k, n] operand column-major */
  return multiply(op, &g, &oa, &ob);
}

/* One float dtype for both operands and the output: cuBLASLt multiplies A and B of one type, and
   an integer or mixed product would need a conversion kernel first. */
static bool cuda_matmul_supports(const tsri_op *op) {
  cudaDataType type;
  return cuda_dtype(op->out.dtype, &type) && op->in[0].dtype == op->out.dtype &&
         op->in[1].dtype == op->out.dtype;
}

void tsri_cuda_register_matmul(tsri_kernel_fn *table, tsri_cuda_supports_fn *supports) {
  table[TSRI_PRIM_MATMUL] = cuda_matmul;
  supports[TSRI_PRIM_MATMUL] = cuda_matmul_supports;
}
