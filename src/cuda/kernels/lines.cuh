/* cuda/kernels/lines.cuh — the 1-d lines of an array along one axis (softmax, rms_norm, cumsum),
 * each operand with its own strides over the other axes and along the line, and the thread
 * groups that walk them: a line per thread (lanes 1: neighbouring threads take neighbouring
 * lines, for an axis whose lines lie side by side in memory), per warp (32) or per block (256,
 * long lines). Also the group reductions those kernels share, the float32 sum in the CPU's exact
 * order among them. Included by kernel sources; not a kernel itself. */
#ifndef TSR_CUDA_KERNELS_LINES_CUH
#define TSR_CUDA_KERNELS_LINES_CUH

#define TSR_LINES_MAX_NDIM 8
#define TSR_LINES_MAX_OPERANDS 3
/* Every lines kernel runs blocks of this many threads (the host side uses the same number). */
#define TSR_LINES_BLOCK 256
#define TSR_FULL_MASK 0xffffffffu

/* Passed by value; the host side (cuda/lines.h) fills the same layout. */
struct tsr_lines {
  int64_t lines, n;                  /* how many lines; elements per line */
  int64_t shape[TSR_LINES_MAX_NDIM]; /* the other axes, row-major */
  int64_t strides[TSR_LINES_MAX_OPERANDS][TSR_LINES_MAX_NDIM];
  int64_t offset[TSR_LINES_MAX_OPERANDS];
  int64_t step[TSR_LINES_MAX_OPERANDS]; /* each operand's stride along the line */
  int ndim, noperands;
  int lanes; /* threads per line: 1, 32 or 256 */
  int unused;
};
static_assert(sizeof(tsr_lines) == 336, "cuda/lines.h mirrors this layout");

/* The element offsets of line `line`'s first element in each operand (every slot: an unused
 * operand's strides and offset are 0, and constant indices keep `offsets` in registers). */
static __device__ inline void tsr_lines_offsets(const tsr_lines &l, int64_t line,
                                                int64_t *offsets) {
  for (int k = 0; k < TSR_LINES_MAX_OPERANDS; k++)
    offsets[k] = l.offset[k];
  for (int d = l.ndim - 1; d >= 0; d--) {
    int64_t extent = l.shape[d], i = line % extent;
    line /= extent;
    for (int k = 0; k < TSR_LINES_MAX_OPERANDS; k++)
      offsets[k] += i * l.strides[k][d];
  }
}

/* This thread's place: `lane` of `lanes` in the group of line `slot` of the block's tile. */
struct tsr_group {
  int lanes, lane, slot, per_block;
};

static __device__ inline tsr_group tsr_group_of(int lanes) {
  tsr_group g;
  g.lanes = lanes;
  g.lane = (int)threadIdx.x % lanes;
  g.slot = (int)threadIdx.x / lanes;
  g.per_block = TSR_LINES_BLOCK / lanes;
  return g;
}

/* Makes the group's shared-memory writes visible to the group. */
static __device__ inline void tsr_group_sync(const tsr_group &g) {
  if (g.lanes == TSR_LINES_BLOCK)
    __syncthreads();
  else if (g.lanes == 32)
    __syncwarp();
}

/* The largest of the group's values, on every lane, NaN skipped (fmaxf; a group of NaN gives
 * what the lanes started from). `shared` holds 8 floats; lanes 256 only. */
static __device__ inline float tsr_group_max(const tsr_group &g, float v, float *shared) {
  if (g.lanes == 1) return v;
  for (int s = 16; s >= 1; s >>= 1)
    v = fmaxf(v, __shfl_xor_sync(TSR_FULL_MASK, v, s));
  if (g.lanes == 32) return v;
  if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = v;
  __syncthreads();
  v = shared[0];
  for (int w = 1; w < TSR_LINES_BLOCK / 32; w++)
    v = fmaxf(v, shared[w]);
  __syncthreads();
  return v;
}

/* Sum over i in [0, n) of value(i) in float32, in exactly cpu/nn.c's order: chunks of 256
 * elements, each summed by 8 lanes over its whole blocks of 8 (lane j takes elements j, j + 8,
 * ...), the tail added into lane 0, the lanes folded 0 += 1, ..., 7, and the chunk sums added in
 * order to a running sum that starts at 0. Rounded adds (no fused multiply-add), so a value
 * function that rounds as the CPU does gives the CPU's bits. In a group each (chunk, lane) pair
 * is a thread's: a round takes lanes / 8 chunks. The result is on every lane. `shared` holds 32
 * floats (TSR_LINES_BLOCK / 8). */
template <typename Value>
static __device__ inline float tsr_group_cpu_sum(const tsr_group &g, int64_t n, float *shared,
                                                 Value value) {
  float sum = 0.0f;
  if (g.lanes == 1) {
    for (int64_t start = 0; start < n; start += 256) {
      int64_t len = n - start < 256 ? n - start : 256, i = 0;
      float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      for (; i + 8 <= len; i += 8)
        for (int j = 0; j < 8; j++)
          lane[j] = __fadd_rn(lane[j], value(start + i + j));
      for (; i < len; i++)
        lane[0] = __fadd_rn(lane[0], value(start + i));
      for (int j = 1; j < 8; j++)
        lane[0] = __fadd_rn(lane[0], lane[j]);
      sum = __fadd_rn(sum, lane[0]);
    }
    return sum;
  }
  const int64_t chunks = (n + 255) / 256;
  const int per_round = g.lanes / 8, j = g.lane % 8, first_slot = g.slot * per_round;
  for (int64_t round = 0; round < chunks; round += per_round) {
    int64_t chunk = round + g.lane / 8;
    float part = 0.0f;
    if (chunk < chunks) {
      int64_t start = chunk * 256, len = n - start < 256 ? n - start : 256, blocks = len / 8;
      for (int64_t b = 0; b < blocks; b++)
        part = __fadd_rn(part, value(start + b * 8 + j));
      if (j == 0)
        for (int64_t i = blocks * 8; i < len; i++)
          part = __fadd_rn(part, value(start + i));
    }
    float folded = part;
    for (int k = 1; k < 8; k++) { /* lanes j + k of the same chunk are this warp's */
      float other = __shfl_down_sync(TSR_FULL_MASK, part, k);
      if (j == 0) folded = __fadd_rn(folded, other);
    }
    if (j == 0) shared[threadIdx.x / 8] = folded;
    tsr_group_sync(g);
    int64_t valid = chunks - round < per_round ? chunks - round : per_round;
    for (int k = 0; k < valid; k++)
      sum = __fadd_rn(sum, shared[first_slot + k]);
    tsr_group_sync(g);
  }
  return sum;
}

#endif
