/* cpu/sgemm.c — OpenBLAS's sgemm on the CPU device's pool (cpu/sgemm.h): one thread for OpenBLAS,
 * set before each product, and the product cut into as many column (or row) blocks as the pool has
 * threads. Not a GEMM of its own. */
#include "cpu/sgemm.h"

#include <cblas.h>

#include "cpu/parallel.h"

enum {
  /* Below this many multiply-adds a product runs as one call on the calling thread: waking the
     pool and packing the shared operand twice would cost more than the second core saves. */
  SPLIT_MIN_MACS = 1 << 21,
  /* Blocks are whole multiples of these (OpenBLAS's register tiles are at most 16 x 16 or so:
     a block edge of this size wastes no partial tiles inside). */
  COLUMN_STEP = 64,
  ROW_STEP = 16
};

/* OpenBLAS at one thread for tessera's calls: set before each product where something (the
   program, for its own calls) set it otherwise; reading the count is a plain load. */
static void one_blas_thread(void) {
  if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
}

typedef struct {
  bool transpose_a, transpose_b, by_columns;
  int64_t m, n, k, step;
  float alpha, beta;
  const float *a, *b;
  int64_t lda, ldb, ldc;
  float *c;
} product;

static void call_sgemm(const product *p, int64_t m, int64_t n, const float *a, const float *b,
                       float *c) {
  cblas_sgemm(CblasRowMajor, p->transpose_a ? CblasTrans : CblasNoTrans,
              p->transpose_b ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)p->k, p->alpha, a,
              (int)p->lda, b, (int)p->ldb, p->beta, c, (int)p->ldc);
}

/* Blocks [first, end) of `step` columns (or rows) of C: one call. */
static void run_blocks(int64_t first, int64_t end, void *ctx) {
  const product *p = ctx;
  int64_t begin = first * p->step, extent = p->by_columns ? p->n : p->m;
  int64_t count = (end * p->step < extent ? end * p->step : extent) - begin;
  if (p->by_columns) /* op(b)'s columns: b's rows when transposed */
    call_sgemm(p, p->m, count, p->a, p->b + (p->transpose_b ? begin * p->ldb : begin),
               p->c + begin);
  else /* op(a)'s rows: a's columns when transposed */
    call_sgemm(p, count, p->n, p->a + (p->transpose_a ? begin : begin * p->lda), p->b,
               p->c + begin * p->ldc);
}

void tsri_sgemm(tsri_parallel_pool *pool, bool transpose_a, bool transpose_b, int64_t m, int64_t n,
                int64_t k, float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                float beta, float *c, int64_t ldc) {
  one_blas_thread();
  product p = {transpose_a, transpose_b, false, m, n, k, 0, alpha, beta, a, b, lda, ldb, ldc, c};
  int64_t threads = tsri_parallel_threads(pool);
  p.by_columns = n >= threads * COLUMN_STEP || n >= m;
  p.step = p.by_columns ? COLUMN_STEP : ROW_STEP;
  int64_t blocks = ((p.by_columns ? n : m) + p.step - 1) / p.step;
  if (threads == 1 || blocks < 2 || (double)m * (double)n * (double)k < SPLIT_MIN_MACS) {
    call_sgemm(&p, m, n, a, b, c);
    return;
  }
  /* One contiguous run of blocks per thread: each call then packs the shared operand once. */
  tsri_parallel_for(pool, blocks, (blocks + threads - 1) / threads, run_blocks, &p);
}
