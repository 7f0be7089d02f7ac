/* cuda/kernels/rms_norm.cuh — x * (1 / sqrt(mean(x^2) + eps)) * weight over the last axis
 * (cpu/nn.c), bit for bit with the CPU: the sum of squares in its exact float32 order
 * (lines.cuh), then correctly rounded division and square root and the two products rounded in
 * the CPU's order, x * r first. Specialized by TSR_NORM_X (x's and the output's dtype) and
 * TSR_NORM_W (the weight's dtype, -1 without one). Operand 0 of the lines is x, 1 the output,
 * 2 the weight (broadcast to x). */
#include "cuda/kernels/common.cuh" /* first: NVRTC's libc stand-in */
#include "cuda/kernels/dtype_io.cuh"
#include "cuda/kernels/lines.cuh"

#if !defined(TSR_NORM_X) || !defined(TSR_NORM_W)
#error "rms_norm.cuh is specialized by TSR_NORM_X and TSR_NORM_W (-1: no weight)"
#endif

TSR_KERNEL_ENTRY(tsr_rms_norm)(tsr_lines l, const void *x, const void *weight, void *y, float eps) {
  __shared__ float sum_shared[TSR_LINES_BLOCK / 8];
  const tsr_group g = tsr_group_of(l.lanes);
  const int64_t tiles = (l.lines + g.per_block - 1) / g.per_block;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t line = tile * g.per_block + g.slot;
    if (line >= l.lines) continue; /* the same for the whole group: its line */
    int64_t offsets[TSR_LINES_MAX_OPERANDS];
    tsr_lines_offsets(l, line, offsets);
    const int64_t x_at = offsets[0], x_step = l.step[0], y_at = offsets[1], y_step = l.step[1];
    float sum = tsr_group_cpu_sum(g, l.n, sum_shared, [&](int64_t i) {
      float v = tsr_load_f32<TSR_NORM_X>(x, x_at + i * x_step);
      return __fmul_rn(v, v);
    });
    /* 1 / sqrtf(sum / n + eps), each step correctly rounded as the CPU's */
    const float r = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(__fdiv_rn(sum, (float)l.n), eps)));
    for (int64_t i = g.lane; i < l.n; i += g.lanes) {
      float v = __fmul_rn(tsr_load_f32<TSR_NORM_X>(x, x_at + i * x_step), r);
#if TSR_NORM_W >= 0
      v = __fmul_rn(v, tsr_load_f32<TSR_NORM_W>(weight, offsets[2] + i * l.step[2]));
#else
      (void)weight;
#endif
      tsr_store_f32<TSR_NORM_X>(y, y_at + i * y_step, v);
    }
  }
}
