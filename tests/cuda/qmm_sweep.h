/* tests/cuda/qmm_sweep.h — the case generator of test_qmm_sweep.c: the table of kernel
 * specializations a case may use, and each case's parameters drawn from (seed, index) alone, so
 * one case reruns by itself. What a case is: a mode, bits and group size, a transpose, x's and
 * w's dtypes (one entry of the table), M, N and K, a batch layout with its shapes and index
 * arrays, and now and then NaN/Inf inputs or an unusual size. No library call but dtype names;
 * the data and the runs are test_qmm_sweep.c's. */
#ifndef TSR_TESTS_CUDA_QMM_SWEEP_H
#define TSR_TESTS_CUDA_QMM_SWEEP_H

#include "check.h"
#include "cuda/quant_gpu.h"

/* ---- the kernel specializations ---------------------------------------------------------------
 * cuda/qmm.c compiles one module per (mode, bits, group size, x dtype, scale dtype, out dtype)
 * and kernel: qmv per M in 1..8 (transpose, M <= 8), qmm per transpose (everything else); the out
 * dtype follows from the other two. NVRTC takes about 0.5 s for a qmm or an M = 1 qmv and up to
 * 1.5 s for an M = 8 qmv (measured on this project's 2-core build machine), one at a time. Every
 * case uses exactly one entry of this table, so the compiles are bounded by its size (207),
 * whatever the case count. Per format: qmm both ways and qmv at M = 1 in two dtypes each (affine:
 * one qmm of each way with mixed dtypes, e.g. float16 x with bfloat16 scales, on alternate
 * formats); qmv at every M for the fp modes (every x dtype at M = 1) and for three affine formats
 * (4/64, 3/32 straddling words, 6/128), at two rotating M (one with mixed dtypes) for the other
 * affine formats. The rotations give every format every x dtype, and every M several formats of
 * every bit width. */
#define QMM_T 0  /* qmm.cuh, transpose */
#define QMM_N -1 /* qmm.cuh, not transposed */
typedef struct {
  int format;
  tsr_dtype x_dtype, w_dtype; /* w_dtype: affine scales' (w is quantized from it); 0: any */
  int kernel;                 /* 1..8: qmv at that M; QMM_T; QMM_N */
} spec;

#define MAX_SPECS 256
static spec specs[MAX_SPECS];
static int spec_count;

static void add_spec(int format, tsr_dtype x, tsr_dtype w, int kernel) {
  CHECK(spec_count < MAX_SPECS);
  specs[spec_count++] = (spec){format, x, w, kernel};
}

static void build_specs(void) {
  for (int f = 0; f < FORMAT_COUNT; f++) {
    if (FORMATS[f].mode != TSR_QUANT_AFFINE) {
      for (int d = 0; d < 3; d++) {
        add_spec(f, FLOATS[d], TSR_UINT8, QMM_T);
        add_spec(f, FLOATS[d], TSR_UINT8, QMM_N);
        add_spec(f, FLOATS[d], TSR_UINT8, 1);
      }
      for (int m = 2; m <= 8; m++)
        add_spec(f, FLOATS[(f + m) % 3], TSR_UINT8, m);
      continue;
    }
    /* same[d]: x and scales alike; mixed[j]: the six pairs that differ. */
    tsr_dtype mixed_x[6], mixed_w[6];
    for (int j = 0; j < 6; j++) {
      mixed_x[j] = FLOATS[j / 2];
      mixed_w[j] = FLOATS[(j / 2 + 1 + j % 2) % 3];
    }
    int i = f, a = i % 3, b = (i + 1) % 3, c = (i + 2) % 3, mx = (i + 5) % 6;
    add_spec(f, FLOATS[a], FLOATS[a], QMM_T);
    if (i % 2 == 0)
      add_spec(f, mixed_x[i % 6], mixed_w[i % 6], QMM_T);
    else
      add_spec(f, FLOATS[b], FLOATS[b], QMM_T);
    add_spec(f, FLOATS[b], FLOATS[b], QMM_N);
    if (i % 2 == 1)
      add_spec(f, mixed_x[(i + 3) % 6], mixed_w[(i + 3) % 6], QMM_N);
    else
      add_spec(f, FLOATS[c], FLOATS[c], QMM_N);
    add_spec(f, FLOATS[a], FLOATS[a], 1);
    add_spec(f, FLOATS[c], FLOATS[c], 1);
    int bits = FORMATS[f].bits, gs = FORMATS[f].group_size;
    bool every_m = (bits == 4 && gs == 64) || (bits == 3 && gs == 32) || (bits == 6 && gs == 128);
    for (int m = 2; m <= 8; m++) {
      if (every_m || m == 2 + i % 7) add_spec(f, FLOATS[(i + m) % 3], FLOATS[(i + m) % 3], m);
    }
    if (!every_m) add_spec(f, mixed_x[mx], mixed_w[mx], 2 + (i + 3) % 7);
  }
}

/* ---- cases ------------------------------------------------------------------------------------
 */

typedef struct {
  uint64_t state;
} rng;

static uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static uint32_t rnd(rng *r) { /* xorshift64* */
  r->state ^= r->state >> 12;
  r->state ^= r->state << 25;
  r->state ^= r->state >> 27;
  return (uint32_t)((r->state * 0x2545f4914f6cdd1dull) >> 32);
}

/* Uniform in [lo, hi] (integers) and [lo, hi) (reals); a percentage chance. */
static int64_t between(rng *r, int64_t lo, int64_t hi) {
  return lo + (int64_t)(rnd(r) % (uint32_t)(hi - lo + 1));
}
static double uniform(rng *r, double lo, double hi) {
  return lo + (hi - lo) * (rnd(r) / 4294967296.0);
}
static bool chance(rng *r, int percent) {
  return (int)(rnd(r) % 100) < percent;
}

enum { PLAIN, VECTOR, X_BATCHED, BROADCAST, W_BATCHED, GATHER };
static const char *const LAYOUT_NAMES[] = {
    "plain", "1-D x", "batched x over 2-D w", "broadcast", "2-D x over batched w", "gather"};
enum { SORTED, RANDOM, SAME, CYCLE, DESCENDING };
static const char *const PATTERN_NAMES[] = {"sorted", "unsorted", "repeated", "cycling",
                                            "descending"};
enum { CLEAN, NAN_X, INF_X, BAD_SCALE };
static const char *const NONFINITE_NAMES[] = {"", "NaN in x", "Inf in x", "non-finite scale"};

/* One index array of a gather: logical shape, dtype, values (row-major), and how it is stored. */
typedef struct {
  bool present, strided;
  int ndim, pattern;
  int64_t shape[2], count;
  tsr_dtype dtype;
  int64_t values[4400];
} sweep_index;

typedef struct {
  int64_t index;
  uint64_t seed; /* the sweep's; the case's generator starts from splitmix64(seed ^ index) */
  int spec, format, bits, group_size, layout, nonfinite;
  tsr_quant_mode mode;
  bool transpose, x_strided, gather, sorted;
  bool offset_views; /* x (unless strided), w_q, scales, biases start 1..3 elements into a buffer */
  tsr_dtype x_dtype, w_dtype;
  int64_t M, N, K;
  int x_ndim, w_batch_ndim;
  int64_t x_shape[TSR_MAX_NDIM], w_batch[2];
  sweep_index lhs, rhs;
  const char *special; /* "" or what made the shape unusual */
} sweep_case;

static char *shape_text(const int64_t *shape, int ndim, char *buf, size_t size) {
  int n = snprintf(buf, size, "[");
  for (int i = 0; i < ndim && n > 0 && (size_t)n < size; i++)
    n += snprintf(buf + n, size - (size_t)n, "%s%lld", i ? "," : "", (long long)shape[i]);
  if (n > 0 && (size_t)n < size) snprintf(buf + n, size - (size_t)n, "]");
  return buf;
}

static void describe_index(const char *name, const sweep_index *s, FILE *f) {
  char buf[64];
  if (!s->present) {
    fprintf(f, ", %s none", name);
    return;
  }
  fprintf(f, ", %s %s %s %s%s", name, shape_text(s->shape, s->ndim, buf, sizeof buf),
          tsr_dtype_name(s->dtype), PATTERN_NAMES[s->pattern], s->strided ? " strided" : "");
}

/* Every parameter of the case, and how to run it alone. */
static void describe(const sweep_case *c, FILE *f) {
  const int kernel = specs[c->spec].kernel;
  char xs[96], ws[64];
  fprintf(f,
          "case %lld (rerun alone: TSR_SWEEP_SEED=%llu TSR_SWEEP_ONLY=%lld): %s bits %d group %d "
          "transpose %d, x %s, w and scales %s, M %lld N %lld K %lld (kernel %s); %s: x %s%s, "
          "w batch %s",
          (long long)c->index, (unsigned long long)c->seed, (long long)c->index,
          MODE_NAMES[c->mode], c->bits, c->group_size, c->transpose, tsr_dtype_name(c->x_dtype),
          tsr_dtype_name(c->w_dtype), (long long)c->M, (long long)c->N, (long long)c->K,
          kernel == QMM_T   ? "qmm transpose"
          : kernel == QMM_N ? "qmm"
                            : "qmv",
          LAYOUT_NAMES[c->layout], shape_text(c->x_shape, c->x_ndim, xs, sizeof xs),
          c->x_strided ? " strided" : "", shape_text(c->w_batch, c->w_batch_ndim, ws, sizeof ws));
  if (c->offset_views) fprintf(f, ", operands at an offset");
  if (c->gather) {
    describe_index("lhs", &c->lhs, f);
    describe_index("rhs", &c->rhs, f);
    if (c->sorted) fprintf(f, ", sorted_indices");
  }
  if (*c->special) fprintf(f, "; %s", c->special);
  if (c->nonfinite) fprintf(f, "; %s", NONFINITE_NAMES[c->nonfinite]);
  fprintf(f, "\n");
}

/* M for the case's kernel: its own for qmv; beyond 8 (qmm transpose) or anywhere (qmm), often at
   the 64-row tile's edges. */
static int64_t draw_m(rng *r, int kernel) {
  if (kernel > 0) return kernel;
  if (kernel == QMM_N && chance(r, 30)) return between(r, 1, 8);
  int roll = (int)between(r, 0, 99);
  if (roll < 35) return between(r, 9, 20);
  if (roll < 70) return 64 * between(r, 1, 2) + between(r, -1, 1);
  return between(r, 9, 200);
}

/* The axis that is not grouped: anything from 1, often at a 32-multiple's edge. */
static int64_t draw_free(rng *r) {
  int roll = (int)between(r, 0, 99);
  if (roll < 35) return between(r, 1, 300);
  if (roll < 70) return 32 * between(r, 1, 8) + between(r, -1, 1);
  if (roll < 90) return between(r, 1, 8);
  return between(r, 1, 40);
}

/* The grouped axis: whole groups, an odd count as often as not (nvfp4: K = 16 mod 32). */
static int64_t draw_grouped(rng *r, int group_size) {
  int64_t most = 320 / group_size;
  if (chance(r, 40)) return group_size * (2 * between(r, 0, (most - 1) / 2) + 1);
  return group_size * between(r, 1, most);
}

/* qmv's x tile (cuda/kernels/qmv.cuh's TILE_K): a longer K takes two tiles. */
static int64_t qmv_tile_k(int64_t m) {
  return m == 1 ? 8192 : m == 2 ? 4096 : m <= 4 ? 2048 : 1024;
}

/* A copy of `from` (a batch shape) whose axes are each 1 now and then, its first axis dropped
   now and then: it broadcasts against from. */
static int derive_shape(rng *r, const int64_t *from, int ndim, int64_t *out) {
  int first = ndim > 1 && chance(r, 25) ? 1 : 0, n = 0;
  for (int i = first; i < ndim; i++)
    out[n++] = chance(r, 30) ? 1 : from[i];
  return n;
}

static int64_t product(const int64_t *shape, int ndim) {
  int64_t p = 1;
  for (int i = 0; i < ndim; i++)
    p *= shape[i];
  return p;
}

/* An index array of `shape` over [0, matrices): a pattern, a dtype, sometimes stored transposed. */
static void draw_index(rng *r, sweep_index *s, const int64_t *shape, int ndim, int64_t matrices) {
  static const tsr_dtype dtypes[] = {TSR_INT32,  TSR_INT32, TSR_INT64,
                                     TSR_UINT32, TSR_UINT8, TSR_INT8};
  s->present = true;
  s->ndim = ndim;
  memcpy(s->shape, shape, sizeof(int64_t) * (size_t)ndim);
  s->count = product(shape, ndim);
  CHECK(s->count <= (int64_t)(sizeof s->values / sizeof s->values[0]));
  s->dtype = dtypes[rnd(r) % 6];
  s->strided = ndim == 2 && chance(r, 25);
  s->pattern = (int)between(r, 0, 4);
  int64_t same = between(r, 0, matrices - 1);
  for (int64_t i = 0; i < s->count; i++)
    s->values[i] = s->pattern == SAME    ? same
                   : s->pattern == CYCLE ? i % matrices
                                         : between(r, 0, matrices - 1);
  if (s->pattern == SORTED || s->pattern == DESCENDING)
    for (int64_t i = 1; i < s->count; i++) /* insertion sort: the arrays are short */
      for (int64_t j = i; j > 0 && (s->values[j - 1] > s->values[j]) == (s->pattern == SORTED);
           j--) {
        int64_t t = s->values[j];
        s->values[j] = s->values[j - 1];
        s->values[j - 1] = t;
      }
}

/* gather_qmm: experts (w's batch), an output batch [P] or [T, k], and each side either an index
   array broadcasting to it or (absent) its operand's batch shaped to broadcast. */
static void draw_gather(rng *r, sweep_case *c) {
  int64_t out[2], side[2];
  int out_ndim = chance(r, 50) ? 1 : 2;
  if (out_ndim == 1)
    out[0] = between(r, 1, 12);
  else
    out[0] = between(r, 1, 6), out[1] = between(r, 1, 4);
  c->rhs.present = !chance(r, 15);
  c->lhs.present = !c->rhs.present || chance(r, 40);
  int64_t experts;
  if (c->rhs.present) {
    c->w_batch_ndim = chance(r, 15) ? 2 : 1;
    c->w_batch[0] = c->w_batch_ndim == 2 ? between(r, 1, 4) : between(r, 1, 16);
    c->w_batch[1] = between(r, 1, 4);
    experts = product(c->w_batch, c->w_batch_ndim);
    int n = derive_shape(r, out, out_ndim, side);
    draw_index(r, &c->rhs, side, n, experts);
  } else { /* the default rhs: an arange over w's batch, which must broadcast */
    c->w_batch_ndim = derive_shape(r, out, out_ndim, c->w_batch);
  }
  int x_batch = 0;
  if (c->lhs.present) {
    x_batch = chance(r, 20) ? 2 : 1;
    c->x_shape[0] = between(r, 1, 6);
    c->x_shape[1] = between(r, 1, 3);
    int n = derive_shape(r, out, out_ndim, side);
    draw_index(r, &c->lhs, side, n, product(c->x_shape, x_batch));
  } else if (!chance(r, 20)) { /* else a 2-D x: every product uses its one matrix */
    x_batch = derive_shape(r, out, out_ndim, c->x_shape);
  }
  c->x_ndim = x_batch + 2;
  c->sorted = c->rhs.present && c->rhs.pattern == SORTED && chance(r, 50);
}

/* Enough products for qmv's and qmm's grid-stride loops (cuda/launch.c caps a grid at 4224
   blocks): a 2-D x against rhs [P] with P * blocks per product > 4224, K one group. */
static void draw_grid_stride(rng *r, sweep_case *c) {
  c->layout = GATHER;
  c->gather = true;
  c->lhs.present = false;
  c->special = "grid-stride (more blocks than the grid)";
  bool qmv = specs[c->spec].kernel > 0;
  if (!qmv && c->M > 12) c->M = between(r, c->transpose ? 9 : 1, 12);
  int64_t per_product = 1, grouped = c->group_size, free_axis = between(r, 1, qmv ? 64 : 8);
  c->K = c->transpose ? grouped : free_axis;
  c->N = c->transpose ? free_axis : grouped;
  if (qmv) per_product = (c->N + 31) / 32;
  c->w_batch_ndim = 1;
  c->w_batch[0] = between(r, 1, 16);
  int64_t shape[1] = {4300 / per_product + between(r, 1, 64)};
  draw_index(r, &c->rhs, shape, 1, c->w_batch[0]);
  c->sorted = c->rhs.pattern == SORTED;
  c->x_ndim = 2;
}

/* The non-gather layouts' batch axes. */
static void draw_batches(rng *r, sweep_case *c) {
  int64_t out[2] = {between(r, 1, 4), between(r, 1, 3)};
  int out_ndim = chance(r, 60) ? 1 : 2, x_batch = 0;
  switch (c->layout) {
    case X_BATCHED:
      x_batch = out_ndim;
      memcpy(c->x_shape, out, sizeof out);
      break;
    case BROADCAST:
      x_batch = derive_shape(r, out, out_ndim, c->x_shape);
      c->w_batch_ndim = derive_shape(r, out, out_ndim, c->w_batch);
      break;
    case W_BATCHED: /* MLX's rule: a 2-D x uses w's first matrix */
      c->w_batch_ndim = 1;
      c->w_batch[0] = between(r, 2, 4);
      break;
    default:
      break;
  }
  c->x_ndim = c->layout == VECTOR ? 1 : x_batch + 2;
}

/* Output products times M, N and K: the float64 product's work. */
static int64_t batch_count(const sweep_case *c);
static int64_t case_cost(const sweep_case *c) {
  return batch_count(c) * c->M * c->N * c->K;
}

/* Shrinks the free axis, then M, then the grouped axis until the float64 product stays small
   (at most 2 * 10^6 multiply-adds, 10^6 dequantized weights): the sweep's time goes to cases. */
static void fit(sweep_case *c) {
  int64_t *free_axis = c->transpose ? &c->N : &c->K, *grouped = c->transpose ? &c->K : &c->N;
  int64_t min_m = specs[c->spec].kernel == QMM_T ? 9 : 1;
  int64_t weights = (c->w_batch_ndim ? product(c->w_batch, c->w_batch_ndim) : 1);
  while (case_cost(c) > 2000000 || weights * c->K * c->N > 1000000) {
    if (*free_axis > 8)
      *free_axis = *free_axis / 2 + 1;
    else if (specs[c->spec].kernel <= 0 && c->M > min_m + 8)
      c->M = c->M / 2 + 1;
    else if (*grouped > c->group_size)
      *grouped -= c->group_size;
    else
      break;
  }
}

/* The shapes: M, N, K, the layout and its batch axes or indices. */
static void draw_shapes(rng *r, sweep_case *c) {
  const spec *sp = &specs[c->spec];
  c->M = draw_m(r, sp->kernel);
  int64_t grouped = draw_grouped(r, c->group_size), free_axis = draw_free(r);
  int roll = (int)between(r, 0, 99);
  c->layout = roll < 35   ? PLAIN
              : roll < 40 ? VECTOR
              : roll < 52 ? X_BATCHED
              : roll < 67 ? BROADCAST
              : roll < 72 ? W_BATCHED
                          : GATHER;
  /* A 1-D x is M = 1: only where that is the specialization's M. */
  if (c->layout == VECTOR && sp->kernel != 1 && sp->kernel != QMM_N) c->layout = PLAIN;
  if (c->layout == VECTOR) c->M = 1;
  if (c->transpose && chance(r, 4)) { /* past qmv's x tile (or many qmm K steps), one product */
    grouped = qmv_tile_k(c->M) + c->group_size * (2 * between(r, 0, 3) + 1);
    free_axis = between(r, 1, 40);
    if (c->layout != VECTOR) c->layout = PLAIN;
    c->special = "K past qmv's x tile";
  } else if (c->transpose && c->M <= 8 && chance(r, 8)) {
    /* x staged by qmv_mma.cuh (TSR_QMV_MMA) at about 48 KiB of shared memory with its static
       reduction space: the launch must opt in past the default on both sides of the edge. */
    int64_t per_window = c->M * 272 + 32, windows = (44 * 1024) / per_window + between(r, -4, 12);
    grouped = windows * 128 - c->group_size * between(r, 0, 128 / c->group_size - 1);
    grouped = grouped < c->group_size ? c->group_size : grouped;
    free_axis = between(r, 1, 24);
    if (c->layout != VECTOR) c->layout = PLAIN;
    c->special = "K at qmv_mma's shared-memory edge";
  }
  c->K = c->transpose ? grouped : free_axis;
  c->N = c->transpose ? free_axis : grouped;
  if (c->layout == GATHER) {
    c->gather = true;
    draw_gather(r, c);
  } else {
    draw_batches(r, c);
  }
  c->x_strided = c->x_ndim == 2 && chance(r, 15);
  c->offset_views = chance(r, 8);
}

static void draw_case(int64_t index, uint64_t seed, sweep_case *c) {
  rng r = {splitmix64(seed ^ splitmix64((uint64_t)index))};
  memset(c, 0, sizeof *c);
  c->index = index;
  c->seed = seed;
  c->special = "";
  c->spec = (int)(rnd(&r) % (uint32_t)spec_count);
  const spec *sp = &specs[c->spec];
  c->format = sp->format;
  c->mode = FORMATS[sp->format].mode;
  c->bits = FORMATS[sp->format].bits;
  c->group_size = FORMATS[sp->format].group_size;
  c->transpose = sp->kernel != QMM_N;
  c->x_dtype = sp->x_dtype;
  c->w_dtype = c->mode == TSR_QUANT_AFFINE ? sp->w_dtype : FLOATS[rnd(&r) % 3];
  draw_shapes(&r, c);
  if (index % 997 == 100) /* about ten in 10^4, one in a few hundred */
    draw_grid_stride(&r, c);
  else
    fit(c);
  if (c->x_ndim >= 2) {
    c->x_shape[c->x_ndim - 2] = c->M;
    c->x_shape[c->x_ndim - 1] = c->K;
  } else {
    c->x_shape[0] = c->K;
  }
  int roll = (int)between(&r, 0, 99);
  c->nonfinite = roll < 2 ? NAN_X : roll < 4 ? INF_X : roll < 6 ? BAD_SCALE : CLEAN;
}

/* ---- the expected batch and output --------------------------------------------------------- */

/* broadcast(a, b), right-aligned (both come from derive_shape, so they broadcast). */
static int broadcast(const int64_t *a, int na, const int64_t *b, int nb, int64_t *out) {
  int n = na > nb ? na : nb;
  for (int i = 0; i < n; i++) {
    int ia = na - n + i, ib = nb - n + i;
    int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    CHECK(da == db || da == 1 || db == 1);
    out[i] = da == 1 ? db : da;
  }
  return n;
}

/* The output's batch axes, by ops/quant_matmul.c's rule (quant-spec Part B §4.1, §4.2). */
static int batch_shape(const sweep_case *c, int64_t *shape) {
  int x_batch = c->x_ndim > 2 ? c->x_ndim - 2 : 0;
  bool w_batched = c->gather || (x_batch > 0 && c->w_batch_ndim > 0);
  const int64_t *l = c->lhs.present ? c->lhs.shape : c->x_shape;
  int nl = c->lhs.present ? c->lhs.ndim : x_batch;
  const int64_t *r = c->rhs.present ? c->rhs.shape : c->w_batch;
  int nr = c->rhs.present ? c->rhs.ndim : w_batched ? c->w_batch_ndim : 0;
  return broadcast(l, nl, r, nr, shape);
}

static int64_t batch_count(const sweep_case *c) {
  int64_t shape[TSR_MAX_NDIM];
  return product(shape, batch_shape(c, shape));
}

/* Affine: x's dtype promoted with the scales' (float16 with bfloat16 is float32); else x's. */
static tsr_dtype out_dtype(const sweep_case *c) {
  if (c->mode != TSR_QUANT_AFFINE || c->x_dtype == c->w_dtype) return c->x_dtype;
  return TSR_FLOAT32;
}

#endif
