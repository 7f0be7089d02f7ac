/* cuda/kernels/cumsum.cuh — running sums along one axis (cpu/sort.c's cumsum), inclusive or
 * exclusive, forward or reversed, of any dtype: floats accumulate in float64 and round once to
 * their dtype, integers and bool (read as their byte) in int64, wrapping. A line per thread
 * (lanes 1) adds in the CPU's order, bit for bit; a warp or block per line scans tiles of
 * lanes * TSR_CUMSUM_RUN elements (each thread a run of consecutive ones, then a scan of the
 * runs' totals), exact for integers and within float64 rounding of the CPU's sum for floats
 * (so nearly always its bits after the rounding to float32). Specialized by TSR_CUMSUM_IN (the
 * input dtype; the output is that float dtype, or int64). Operand 0 of the lines is x, 1 the
 * output. */
#include "cuda/kernels/common.cuh" /* first: NVRTC's libc stand-in */
#include "cuda/kernels/dtype_io.cuh"
#include "cuda/kernels/lines.cuh"

#ifndef TSR_CUMSUM_IN
#error "cumsum.cuh is specialized by TSR_CUMSUM_IN (the input dtype)"
#endif

#define TSR_CUMSUM_RUN 8

#if TSR_DT_IS_FLOAT(TSR_CUMSUM_IN)
typedef double tsr_sum_t;
static __device__ inline tsr_sum_t tsr_cumsum_load(const void *x, int64_t at) {
  return (double)tsr_load_f32<TSR_CUMSUM_IN>(x, at);
}
static __device__ inline void tsr_cumsum_store(void *y, int64_t at, tsr_sum_t v) {
  tsr_store_f32<TSR_CUMSUM_IN>(y, at, (float)v); /* as the CPU: to float32, then its dtype */
}
#else
typedef uint64_t tsr_sum_t; /* wraps like two's complement */
static __device__ inline tsr_sum_t tsr_cumsum_load(const void *x, int64_t at) {
  return (uint64_t)tsr_load_i64<TSR_CUMSUM_IN>(x, at);
}
static __device__ inline void tsr_cumsum_store(void *y, int64_t at, tsr_sum_t v) {
  ((int64_t *)y)[at] = (int64_t)v;
}
#endif

/* One line in one thread, in the CPU's order. */
static __device__ void tsr_cumsum_serial(const tsr_lines &l, const int64_t *offsets, const void *x,
                                         void *y, bool reverse, bool inclusive) {
  tsr_sum_t total = 0;
  for (int64_t step = 0; step < l.n; step++) {
    int64_t i = reverse ? l.n - 1 - step : step;
    tsr_sum_t v = tsr_cumsum_load(x, offsets[0] + i * l.step[0]);
    tsr_cumsum_store(y, offsets[1] + i * l.step[1], inclusive ? total + v : total);
    total += v;
  }
}

/* The sum of the group's `run`s before this lane's (exclusive), and of all of them. `shared`
 * holds the 8 warp totals of a block-wide group. */
static __device__ inline tsr_sum_t tsr_cumsum_scan(const tsr_group &g, tsr_sum_t run,
                                                   tsr_sum_t *total, tsr_sum_t *shared) {
  const int warp_lane = (int)threadIdx.x % 32;
  tsr_sum_t inclusive = run;
  for (int s = 1; s < 32; s <<= 1) {
    tsr_sum_t other = __shfl_up_sync(TSR_FULL_MASK, inclusive, s);
    if (warp_lane >= s) inclusive += other;
  }
  tsr_sum_t before = __shfl_up_sync(TSR_FULL_MASK, inclusive, 1);
  if (warp_lane == 0) before = 0;
  tsr_sum_t warp_total = __shfl_sync(TSR_FULL_MASK, inclusive, 31);
  if (g.lanes == 32) {
    *total = warp_total;
    return before;
  }
  if (warp_lane == 31) shared[threadIdx.x / 32] = warp_total;
  __syncthreads();
  tsr_sum_t warps_before = 0, all = 0;
  for (int w = 0; w < TSR_LINES_BLOCK / 32; w++) {
    if (w == (int)threadIdx.x / 32) warps_before = all;
    all += shared[w];
  }
  __syncthreads();
  *total = all;
  return warps_before + before;
}

/* One line in a warp or block: tiles of lanes * TSR_CUMSUM_RUN elements in scan order. */
static __device__ void tsr_cumsum_group(const tsr_group &g, const tsr_lines &l,
                                        const int64_t *offsets, const void *x, void *y,
                                        bool reverse, bool inclusive, tsr_sum_t *shared) {
  tsr_sum_t carry = 0;
  const int64_t span = (int64_t)g.lanes * TSR_CUMSUM_RUN;
  for (int64_t start = 0; start < l.n; start += span) {
    const int64_t first = start + (int64_t)g.lane * TSR_CUMSUM_RUN;
    tsr_sum_t partial[TSR_CUMSUM_RUN], run = 0;
    for (int k = 0; k < TSR_CUMSUM_RUN; k++) {
      int64_t step = first + k, i = reverse ? l.n - 1 - step : step;
      tsr_sum_t v = step < l.n ? tsr_cumsum_load(x, offsets[0] + i * l.step[0]) : 0;
      partial[k] = inclusive ? run + v : run;
      run += v;
    }
    tsr_sum_t total;
    const tsr_sum_t before = carry + tsr_cumsum_scan(g, run, &total, shared);
    for (int k = 0; k < TSR_CUMSUM_RUN; k++) {
      int64_t step = first + k, i = reverse ? l.n - 1 - step : step;
      if (step < l.n) tsr_cumsum_store(y, offsets[1] + i * l.step[1], before + partial[k]);
    }
    carry += total;
  }
}

TSR_KERNEL_ENTRY(tsr_cumsum)(tsr_lines l, const void *x, void *y, int reverse, int inclusive) {
  __shared__ tsr_sum_t shared[TSR_LINES_BLOCK / 32];
  const tsr_group g = tsr_group_of(l.lanes);
  const int64_t tiles = (l.lines + g.per_block - 1) / g.per_block;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t line = tile * g.per_block + g.slot;
    if (line >= l.lines) continue; /* the same for the whole group: its line */
    int64_t offsets[TSR_LINES_MAX_OPERANDS];
    tsr_lines_offsets(l, line, offsets);
    if (g.lanes == 1)
      tsr_cumsum_serial(l, offsets, x, y, reverse != 0, inclusive != 0);
    else
      tsr_cumsum_group(g, l, offsets, x, y, reverse != 0, inclusive != 0, shared);
  }
}
