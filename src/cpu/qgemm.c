/* cpu/qgemm.c — the fused quantized GEMM (cpu/qgemm.h): packing x, dequantizing weight blocks
 * into micro-kernel panels, the loops around the micro-kernel and their split across threads.
 * Not the micro-kernel or the dequantization themselves (the instruction set's). */
#include "cpu/qgemm.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/context.h"
#include "cpu/gemm.h"
#include "cpu/parallel.h"

enum {
  /* Columns of y one thread packs together: a multiple of every group size (so a block of a
     row of codes without transpose is whole groups) and of the micro-kernel's nr. */
  BLOCK = 128,
  /* Values of k per packed panel: an nr = 32 panel of 256 is 32 KiB, which stays in L1 while
     the micro-kernel walks x's panels past it. A multiple of 128, so of every group size. */
  KC = 256,
  /* The largest tile a micro-kernel may have (for the edge tiles, computed aside). */
  MAX_TILE = 16 * 64
};

typedef struct {
  const tsri_qmm_problem *p;
  const tsri_qmm_isa *isa;
  const tsri_qgemm_kernel *kernel;
  const float *xp;  /* panel i of mr rows of x at xp + i * mr * K, element (k, r) at k * mr + r */
  int64_t x_panels; /* ceil(M / mr) */
  float *slots;     /* scratch slots, one per thread that may run chunks at once */
  int64_t slot_floats;
  atomic_bool *slot_busy;
  int slot_count;
} qgemm_job;

/* ---- x ----------------------------------------------------------------------------------------
 */

typedef struct {
  const tsri_qmm_problem *p;
  float *xp;
  int mr;
} pack_x_job;

static void pack_x_panels(int64_t begin, int64_t end, void *ctx) {
  const pack_x_job *job = ctx;
  const tsri_qmm_problem *p = job->p;
  const int mr = job->mr;
  for (int64_t panel = begin; panel < end; panel++) {
    float *dst = job->xp + panel * mr * p->k;
    for (int r = 0; r < mr; r++) {
      int64_t row = panel * mr + r;
      if (row >= p->m) { /* the last panel's padding rows */
        for (int64_t k = 0; k < p->k; k++)
          dst[k * mr + r] = 0.0f;
        continue;
      }
      const float *x = p->x + row * p->x_row_stride;
      for (int64_t k = 0; k < p->k; k++)
        dst[k * mr + r] = x[k];
    }
  }
}

/* ---- weights ------------------------------------------------------------------------------------
 */

/* Asks for the codes and scales of span [begin, begin + count) of packed row `row` ahead of
   their dequantization: the spans of one block lie a row apart, a stride the hardware
   prefetchers do not follow (perf showed the dequantization waiting on its loads). */
static void prefetch_span(const tsri_qmm_problem *p, int64_t row, int64_t begin, int64_t count) {
  const char *codes = (const char *)(p->w + row * p->w_row_words) + begin * p->bits / 8;
  for (int64_t at = 0; at < count * p->bits / 8; at += 64)
    __builtin_prefetch(codes + at);
  int64_t scale_size = p->mode == TSRI_QF_AFFINE ? (int64_t)tsr_dtype_size(p->scale_dtype) : 1;
  int64_t scale_at = (row * p->scale_row_stride + begin / p->group_size) * scale_size;
  __builtin_prefetch((const char *)p->scales + scale_at);
  if (p->biases) __builtin_prefetch((const char *)p->biases + scale_at);
}

/* Columns [n0, n0 + cols) x values of k [k0, k0 + kc) of W into panels of nr columns, panel q
   at bp + q * kc * nr, zero past N. With transpose each column is a packed row of K codes:
   dequantized into `rows` (nr x kc), then transposed. */
static void pack_block_transposed(const qgemm_job *job, int64_t n0, int64_t cols, int64_t k0,
                                  int64_t kc, float *bp, float *rows) {
  const int nr = job->kernel->nr;
  for (int64_t q = 0; q * nr < cols; q++) {
    for (int64_t j = 0; j < nr; j++) {
      if (q * nr + j < cols) {
        if (k0 + KC < job->p->k) prefetch_span(job->p, n0 + q * nr + j, k0 + KC, kc);
        job->isa->dequantize_span(job->p, n0 + q * nr + j, k0, kc, rows + j * kc);
      } else
        memset(rows + j * kc, 0, (size_t)kc * sizeof *rows);
    }
    job->kernel->transpose_panel(rows, kc, kc, bp + q * kc * nr);
  }
}

/* The same without transpose: W's rows are values of k, each a row of N codes whose span
   [n0, n0 + cols) is whole groups (n0 and N are multiples of the group size). */
static void pack_block_plain(const qgemm_job *job, int64_t n0, int64_t cols, int64_t k0, int64_t kc,
                             float *bp, float *row) {
  const int nr = job->kernel->nr;
  int64_t panels = (cols + nr - 1) / nr;
  memset(row + cols, 0, (size_t)(panels * nr - cols) * sizeof *row);
  for (int64_t k = 0; k < kc; k++) {
    if (k0 + k + KC < job->p->k) prefetch_span(job->p, k0 + k + KC, n0, cols);
    job->isa->dequantize_span(job->p, k0 + k, n0, cols, row);
    for (int64_t q = 0; q < panels; q++)
      memcpy(bp + (q * kc + k) * nr, row + q * nr, (size_t)nr * sizeof *row);
  }
}

/* ---- the loops around the micro-kernel ---------------------------------------------------------
 */

/* y[rows of panel i][n0, n0 + nr) += the product of x panel i and B panel b over [k0, k0 + kc):
   straight into y for a whole tile, through a tile aside at the edges of y. */
static void multiply_tile(const qgemm_job *job, int64_t i, int64_t n0, int64_t k0, int64_t kc,
                          const float *b) {
  const tsri_qmm_problem *p = job->p;
  const int mr = job->kernel->mr, nr = job->kernel->nr;
  const float *a = job->xp + i * mr * p->k + k0 * mr;
  float *y = p->y + i * mr * p->y_row_stride + n0;
  int64_t rows = p->m - i * mr < mr ? p->m - i * mr : mr;
  int64_t cols = p->n - n0 < nr ? p->n - n0 : nr;
  if (rows == mr && cols == nr) {
    job->kernel->multiply(kc, a, b, y, p->y_row_stride, k0 > 0);
    return;
  }
  float tile[MAX_TILE];
  job->kernel->multiply(kc, a, b, tile, nr, false);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++)
      y[r * p->y_row_stride + c] = (k0 > 0 ? y[r * p->y_row_stride + c] : 0.0f) + tile[r * nr + c];
}

/* A free slot: at most slot_count chunks run at once (one per thread), so one is always free. */
static int acquire_slot(qgemm_job *job) {
  for (;;)
    for (int i = 0; i < job->slot_count; i++)
      if (!atomic_exchange(&job->slot_busy[i], true)) return i;
}

static void multiply_blocks(int64_t begin, int64_t end, void *ctx) {
  qgemm_job *job = ctx;
  const tsri_qmm_problem *p = job->p;
  const int nr = job->kernel->nr;
  int slot = acquire_slot(job);
  float *bp = job->slots + slot * job->slot_floats;
  float *aside = bp + (int64_t)BLOCK * KC;
  for (int64_t block = begin; block < end; block++) {
    int64_t n0 = block * BLOCK, cols = p->n - n0 < BLOCK ? p->n - n0 : BLOCK;
    for (int64_t k0 = 0; k0 < p->k; k0 += KC) {
      int64_t kc = p->k - k0 < KC ? p->k - k0 : KC;
      if (p->transpose)
        pack_block_transposed(job, n0, cols, k0, kc, bp, aside);
      else
        pack_block_plain(job, n0, cols, k0, kc, bp, aside);
      for (int64_t q = 0; q * nr < cols; q++)
        for (int64_t i = 0; i < job->x_panels; i++)
          multiply_tile(job, i, n0 + q * nr, k0, kc, bp + q * kc * nr);
    }
  }
  atomic_store(&job->slot_busy[slot], false);
}

bool tsri_qgemm_run(const tsri_qmm_isa *isa, const tsri_qmm_problem *p) {
  const tsri_qgemm_kernel *kernel = isa->gemm();
  const int mr = kernel->mr, nr = kernel->nr;
  const int64_t blocks = (p->n + BLOCK - 1) / BLOCK, x_panels = (p->m + mr - 1) / mr;
  /* Chunks of single blocks, claimed as the pool's threads come free: with one chunk per thread,
     a worker that woke late left its chunk to the caller, and the product took twice as long
     (a third of bench/qmm_cpu's M = 64 runs on the dev VM). */
  tsri_parallel_pool *pool = p->cpu->pool;
  int threads = tsri_parallel_threads(pool);
  /* A slot: BLOCK x KC packed weights and the rows dequantized aside (nr x KC, or a row). */
  int64_t aside = (int64_t)nr * KC > BLOCK ? (int64_t)nr * KC : BLOCK;
  int64_t slot_floats = (int64_t)BLOCK * KC + aside, x_floats = x_panels * mr * p->k;
  tsri_buffer *scratch = NULL;
  if (tsri_cpu_scratch(p->device, x_floats + threads * slot_floats, &scratch) != TSR_OK)
    return false;
  atomic_bool *slot_busy = calloc((size_t)threads, sizeof *slot_busy);
  if (!slot_busy) {
    tsri_buffer_release(scratch);
    return false;
  }
  for (int i = 0; i < threads; i++)
    atomic_init(&slot_busy[i], false);
  float *xp = (float *)scratch->data;
  pack_x_job pack = {p, xp, mr};
  tsri_parallel_for(pool, x_panels, 1, pack_x_panels, &pack);
  qgemm_job job = {p, isa, kernel, xp, x_panels, xp + x_floats, slot_floats, slot_busy, threads};
  tsri_parallel_for(pool, blocks, 1, multiply_blocks, &job);
  free(slot_busy);
  tsri_buffer_release(scratch);
  return true;
}
