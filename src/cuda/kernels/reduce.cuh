/* cuda/kernels/reduce.cuh — sum, mean, max, min and argmax over any set of axes (cpu/reduce.c).
 *
 * The host merges and orders the axes (cuda/reduce.c): the kept ones walk the output (packed,
 * row-major), the reduced ones are a flat index r in the CPU's row-major order. `lanes` threads
 * take one output, lane k folding r = k, k + lanes, ...: consecutive lanes (a warp's 1 to 32,
 * combined by shuffles) when the reduced axes are the contiguous ones, or lanes strided over the
 * block (combined by a shared-memory tree) when neighbouring outputs are neighbours in memory or
 * a block takes one output.
 *
 * The arithmetic is the CPU's: floats (and the mean of integers) sum in float64 and round once,
 * so the result is the CPU's bits unless the two float64 sums straddle a rounding boundary of
 * the output dtype; integer sums wrap in int64 (exact in any order). max, min and argmax carry
 * the flat index of their element and keep, among equal values, the first (so -0 and +0 come
 * out as on the CPU), and a NaN beats everything (argmax: the first NaN): exact.
 *
 * Specialized by TSR_REDUCE_OP (0 sum, 1 mean, 2 max, 3 min, 4 argmax) and TSR_REDUCE_IN (the
 * input dtype); the output dtype follows (ops/reduce.c). */
#include "cuda/kernels/common.cuh" /* first: NVRTC's libc stand-in */
#include "cuda/kernels/dtype_io.cuh"

#if !defined(TSR_REDUCE_OP) || !defined(TSR_REDUCE_IN)
#error "reduce.cuh is specialized by TSR_REDUCE_OP and TSR_REDUCE_IN"
#endif

#define TSR_SUM 0
#define TSR_MEAN 1
#define TSR_MAX 2
#define TSR_MIN 3
#define TSR_ARGMAX 4
#define TSR_REDUCE_BLOCK 256
#define TSR_REDUCE_MAX_NDIM 8

#define TSR_IN_FLOAT TSR_DT_IS_FLOAT(TSR_REDUCE_IN)
#define TSR_IS_SUM (TSR_REDUCE_OP == TSR_SUM || TSR_REDUCE_OP == TSR_MEAN)

/* The accumulator: float64 for float sums and every mean, int64 bits (wrapping) for integer
 * sums, the element's own value (float32 or int64) for max, min and argmax. */
#if TSR_IS_SUM && (TSR_IN_FLOAT || TSR_REDUCE_OP == TSR_MEAN)
typedef double tsr_value;
#elif TSR_IS_SUM
typedef uint64_t tsr_value;
#elif TSR_IN_FLOAT
typedef float tsr_value;
#else
typedef int64_t tsr_value;
#endif

/* Passed by value; cuda/reduce.c fills the same layout. */
struct tsr_reduce_args {
  int64_t kept_shape[TSR_REDUCE_MAX_NDIM], kept_strides[TSR_REDUCE_MAX_NDIM];
  int64_t reduced_shape[TSR_REDUCE_MAX_NDIM], reduced_strides[TSR_REDUCE_MAX_NDIM];
  int64_t offset;  /* the input's, in elements */
  int64_t outputs; /* output elements */
  int64_t count;   /* input elements per output (the mean divides by it) */
  int nkept, nreduced;
  int lanes;         /* threads per output: 1, 2, ..., 32, or 256 */
  int lanes_strided; /* 0: lane = thread % lanes (shuffles); 1: lane = thread / (256 / lanes) */
};
static_assert(sizeof(tsr_reduce_args) == 296, "cuda/reduce.c mirrors this layout");

/* A partial result: its value and, for max, min and argmax, the flat reduced index it came
 * from (INT64_MAX for none yet). */
struct tsr_partial {
  tsr_value v;
  int64_t i;
};

static __device__ inline tsr_partial tsr_identity() {
  tsr_partial p;
  p.i = 0x7fffffffffffffffLL;
#if TSR_IS_SUM
  p.v = 0;
#elif TSR_IN_FLOAT
  p.v = __uint_as_float(TSR_REDUCE_OP == TSR_MIN ? 0x7f800000u : 0xff800000u); /* +-inf */
#else
  p.v = TSR_REDUCE_OP == TSR_MIN ? 0x7fffffffffffffffLL : -0x7fffffffffffffffLL - 1;
#endif
  return p;
}

#if !TSR_IS_SUM
/* Whether a's value wins over b's outright (max and argmax: greater; min: less). */
static __device__ inline bool tsr_beats(tsr_value a, tsr_value b) {
  return TSR_REDUCE_OP == TSR_MIN ? a < b : a > b;
}
#endif

/* a and b cover disjoint elements: the sum, or the element a scan in the CPU's order keeps
 * (a NaN over anything, a better value, the first of equals). */
static __device__ inline tsr_partial tsr_combine(tsr_partial a, tsr_partial b) {
#if TSR_IS_SUM
  a.v += b.v; /* float64, or int64 bits wrapping */
  return a;
#else
#if TSR_IN_FLOAT
  const bool a_nan = a.v != a.v, b_nan = b.v != b.v;
  if (a_nan || b_nan) return a_nan && b_nan ? (a.i <= b.i ? a : b) : (a_nan ? a : b);
#endif
  if (tsr_beats(b.v, a.v)) return b;
  if (tsr_beats(a.v, b.v)) return a;
  return a.i <= b.i ? a : b;
#endif
}

/* The input element at `at`, with flat reduced index r, folded into p. */
static __device__ inline void tsr_fold(tsr_partial &p, const void *in, int64_t at, int64_t r) {
#if TSR_IS_SUM && TSR_IN_FLOAT
  p.v += (double)tsr_load_f32<TSR_REDUCE_IN>(in, at);
#elif TSR_IS_SUM && TSR_REDUCE_OP == TSR_MEAN
  p.v += (double)tsr_load_i64<TSR_REDUCE_IN>(in, at); /* through int64, as the CPU */
#elif TSR_IS_SUM
  p.v += (uint64_t)tsr_load_i64<TSR_REDUCE_IN>(in, at);
#else
  tsr_partial e;
#if TSR_IN_FLOAT
  e.v = tsr_load_f32<TSR_REDUCE_IN>(in, at);
#else
  e.v = tsr_load_i64<TSR_REDUCE_IN>(in, at);
#endif
  e.i = r;
  p = tsr_combine(p, e);
#endif
}

/* The offset of the reduced axes but the last at their flat index q. */
static __device__ inline int64_t tsr_outer_offset(const tsr_reduce_args &a, int64_t q) {
  int64_t offset = 0;
  for (int d = a.nreduced - 2; d >= 0; d--) {
    offset += (q % a.reduced_shape[d]) * a.reduced_strides[d];
    q /= a.reduced_shape[d];
  }
  return offset;
}

/* This lane's fold of output o's elements r = lane, lane + lanes, ... */
static __device__ tsr_partial tsr_fold_output(const tsr_reduce_args &a, const void *in, int64_t o,
                                              int lane) {
  tsr_partial p = tsr_identity();
  int64_t base = a.offset;
  for (int d = a.nkept - 1; d >= 0; d--) {
    base += (o % a.kept_shape[d]) * a.kept_strides[d];
    o /= a.kept_shape[d];
  }
  const int last = a.nreduced - 1;
  const int64_t inner = last >= 0 ? a.reduced_shape[last] : 1;
  const int64_t inner_stride = last >= 0 ? a.reduced_strides[last] : 0;
  if (lane >= a.count) return p; /* (also every lane when an axis is empty) */
  int64_t r = lane, j = r % inner, q = r / inner;
  int64_t row = base + tsr_outer_offset(a, q);
  for (;;) {
    tsr_fold(p, in, row + j * inner_stride, r);
    r += a.lanes;
    if (r >= a.count) return p;
    j += a.lanes;
    if (j >= inner) { /* onto a later row of the last reduced axis */
      q += j / inner;
      j %= inner;
      row = base + tsr_outer_offset(a, q);
    }
  }
}

/* Lane 0 gets the group's result: shuffles down a group of consecutive lanes. */
static __device__ inline tsr_partial tsr_combine_shuffle(tsr_partial p, int lanes) {
  for (int s = lanes / 2; s >= 1; s >>= 1) {
    tsr_partial other;
    other.v = __shfl_down_sync(0xffffffffu, p.v, s, lanes);
    other.i = TSR_IS_SUM ? p.i : __shfl_down_sync(0xffffffffu, p.i, s, lanes);
    p = tsr_combine(p, other);
  }
  return p;
}

/* Lane 0 gets the group's result: a tree over shared memory, lanes `per_block` threads apart. */
static __device__ inline tsr_partial tsr_combine_tree(tsr_partial p, int lane, int lanes,
                                                      int per_block, tsr_partial *shared) {
  shared[threadIdx.x] = p;
  __syncthreads();
  for (int s = lanes / 2; s >= 1; s >>= 1) {
    if (lane < s) {
      p = tsr_combine(p, shared[threadIdx.x + s * per_block]);
      shared[threadIdx.x] = p;
    }
    __syncthreads();
  }
  return p;
}

static __device__ inline void tsr_store_result(void *out, int64_t o, tsr_partial p, int64_t count) {
#if TSR_REDUCE_OP == TSR_ARGMAX
  (void)count;
  ((int32_t *)out)[o] = (int32_t)p.i;
#elif TSR_REDUCE_OP == TSR_MEAN
  double mean = count > 0 ? p.v / (double)count : __longlong_as_double(0x7ff8000000000000LL);
  tsr_store_f32<TSR_IN_FLOAT ? TSR_REDUCE_IN : TSR_DT_FLOAT32>(out, o, (float)mean);
#elif TSR_REDUCE_OP == TSR_SUM && TSR_IN_FLOAT
  (void)count;
  tsr_store_f32<TSR_REDUCE_IN>(out, o, (float)p.v); /* as the CPU: to float32, then its dtype */
#elif TSR_REDUCE_OP == TSR_SUM
  (void)count;
  ((int64_t *)out)[o] = (int64_t)p.v;
#elif TSR_IN_FLOAT
  (void)count;
  tsr_store_f32<TSR_REDUCE_IN>(out, o, p.v);
#else
  (void)count;
  tsr_store_i64<TSR_REDUCE_IN>(out, o, p.v);
#endif
}

TSR_KERNEL_ENTRY(tsr_reduce)(tsr_reduce_args a, const void *in, void *out) {
  __shared__ tsr_partial shared[TSR_REDUCE_BLOCK];
  const int per_block = TSR_REDUCE_BLOCK / a.lanes, t = (int)threadIdx.x;
  const int lane = a.lanes_strided ? t / per_block : t % a.lanes;
  const int slot = a.lanes_strided ? t % per_block : t / a.lanes;
  const int64_t tiles = (a.outputs + per_block - 1) / per_block;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t o = tile * per_block + slot;
    /* every thread takes part in the combining, whether or not its output exists */
    tsr_partial p = o < a.outputs ? tsr_fold_output(a, in, o, lane) : tsr_identity();
    if (a.lanes_strided)
      p = tsr_combine_tree(p, lane, a.lanes, per_block, shared);
    else
      p = tsr_combine_shuffle(p, a.lanes);
    if (lane == 0 && o < a.outputs) tsr_store_result(out, o, p, a.count);
  }
}
