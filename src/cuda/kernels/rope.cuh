/* cuda/kernels/rope.cuh — rotary position embedding of x [..., T, D] (cpu/nn.c): pair i of row t
 * (i and i + dims/2, or 2i and 2i + 1 when traditional) rotated by the angle
 * float32(offset + t) * inv_freq[i] in float32, the elements from dims on copied. inv_freq comes
 * from the host, computed by the CPU's own expression (1 / powf(base, 2i / dims)) and libm, so
 * the angles are the CPU's bits; past TSR_ROPE_TABLE entries it is computed here with a float64
 * pow rounded to float32 (within an ulp of glibc's powf). cos and sin are float64 rounded to
 * float32, so they are correctly rounded (glibc's cosf/sinf nearly always are); the rotation is
 * the CPU's rounded products and sums. A block takes one t and up to TSR_ROPE_ROWS rows (of
 * the leading axes) with it, so a pair's cos and sin are computed once for all its rows.
 * Specialized by TSR_ROPE_DTYPE (x's and the output's dtype); the output is packed. The offset is
 * either args.position or, for tsr_rope_dynamic, read here from the device (`offset`, an int32 or
 * int64 of offset_bytes), so a recorded graph replays with whatever offset the step wrote. */
#include "cuda/kernels/common.cuh" /* first: NVRTC's libc stand-in */
#include "cuda/kernels/dtype_io.cuh"
#include "cuda/kernels/position.cuh"

#ifndef TSR_ROPE_DTYPE
#error "rope.cuh is specialized by TSR_ROPE_DTYPE (float16, bfloat16 or float32)"
#endif

#define TSR_ROPE_TABLE 256
#define TSR_ROPE_ROWS 64
#define TSR_ROPE_LEAD 6
#define TSR_ROPE_BLOCK 256

/* Passed by value; cuda/nn.c fills the same layout. */
struct tsr_rope_args {
  int64_t lead_shape[TSR_ROPE_LEAD], lead_strides[TSR_ROPE_LEAD]; /* x's axes before [T, D] */
  int64_t x_offset, x_stride_t, x_stride_d;
  int64_t lead, t_count, d, position;       /* row t's position is position + t */
  int64_t rows_per_block;                   /* at most TSR_ROPE_ROWS */
  int nlead, dims, traditional, table_size; /* inv_freq[0, table_size) is given */
  float base;
  float inv_freq[TSR_ROPE_TABLE];
};
static_assert(sizeof(tsr_rope_args) == 1208, "cuda/nn.c mirrors this layout");

/* x's element offset of leading row `row` (row-major over the leading axes). */
static __device__ inline int64_t tsr_rope_lead_offset(const tsr_rope_args &a, int64_t row) {
  int64_t offset = 0;
  for (int d = a.nlead - 1; d >= 0; d--) {
    offset += (row % a.lead_shape[d]) * a.lead_strides[d];
    row /= a.lead_shape[d];
  }
  return offset;
}

static __device__ inline float tsr_rope_inv_freq(const tsr_rope_args &a, int i) {
  if (i < a.table_size) return a.inv_freq[i];
  float exponent = __fdiv_rn((float)(2 * i), (float)a.dims);
  return __fdiv_rn(1.0f, (float)pow((double)a.base, (double)exponent));
}

TSR_KERNEL_ENTRY(tsr_rope)
(tsr_rope_args a, const void *x, void *y, const void *offset, int offset_bytes) {
  __shared__ int64_t row_at[TSR_ROPE_ROWS]; /* x's offset of each of the tile's rows at t */
  const int half = a.dims / 2;
  /* positions wrap in int64 (a dynamic offset may be anything), as on the CPU */
  const uint64_t first_position =
      (uint64_t)(offset ? tsr_position_load(offset, offset_bytes) : a.position);
  /* threads per pass over the pairs (whole warps), and the groups of rows they split */
  const int pass = half < TSR_ROPE_BLOCK ? (half + 31) / 32 * 32 : TSR_ROPE_BLOCK;
  const int groups = TSR_ROPE_BLOCK / pass, group = (int)threadIdx.x / pass;
  const int64_t chunks = (a.lead + a.rows_per_block - 1) / a.rows_per_block;
  const int64_t tiles = a.t_count * chunks, rest = a.d - a.dims;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t t = tile % a.t_count, first = tile / a.t_count * a.rows_per_block;
    const int64_t rows = a.lead - first < a.rows_per_block ? a.lead - first : a.rows_per_block;
    __syncthreads(); /* the previous tile is done with row_at */
    for (int64_t r = threadIdx.x; r < rows; r += TSR_ROPE_BLOCK)
      row_at[r] = a.x_offset + tsr_rope_lead_offset(a, first + r) + t * a.x_stride_t;
    __syncthreads();
    /* to nearest, as the CPU's cast */
    const float position = (float)(int64_t)(first_position + (uint64_t)t);
    for (int i = (int)threadIdx.x % pass; group < groups && i < half; i += pass) {
      const float angle = __fmul_rn(position, tsr_rope_inv_freq(a, i));
      double sin_angle, cos_angle;
      sincos((double)angle, &sin_angle, &cos_angle);
      const float c = (float)cos_angle, s = (float)sin_angle;
      const int64_t i0 = a.traditional ? 2 * i : i, i1 = a.traditional ? 2 * i + 1 : i + half;
      for (int64_t r = group; r < rows; r += groups) {
        const int64_t at = row_at[r], out = ((first + r) * a.t_count + t) * a.d;
        const float x0 = tsr_load_f32<TSR_ROPE_DTYPE>(x, at + i0 * a.x_stride_d);
        const float x1 = tsr_load_f32<TSR_ROPE_DTYPE>(x, at + i1 * a.x_stride_d);
        tsr_store_f32<TSR_ROPE_DTYPE>(y, out + i0, __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s)));
        tsr_store_f32<TSR_ROPE_DTYPE>(y, out + i1, __fadd_rn(__fmul_rn(x1, c), __fmul_rn(x0, s)));
      }
    }
    for (int64_t f = threadIdx.x; f < rows * rest; f += TSR_ROPE_BLOCK) {
      const int64_t r = f / rest, e = a.dims + f % rest;
      const float v = tsr_load_f32<TSR_ROPE_DTYPE>(x, row_at[r] + e * a.x_stride_d);
      tsr_store_f32<TSR_ROPE_DTYPE>(y, ((first + r) * a.t_count + t) * a.d + e, v);
    }
  }
}
