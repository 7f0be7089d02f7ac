/* cuda/kernels/softmax.cuh — softmax along one axis of a float array (cpu/nn.c's three passes):
 * the line's maximum (NaN skipped), the float32 sum of exp(x - max) in the CPU's exact order,
 * then exp(x - max) * (1 / sum). Only expf differs from the CPU's (CUDA's is within 2 ulps,
 * glibc's within 1), so the results agree within the harness's softmax bound, not bit for bit.
 * A NaN anywhere, or a line of -inf only, gives a line of NaN, as on the CPU. Specialized by
 * TSR_SOFTMAX_DTYPE (x's and the output's dtype). Operand 0 of the lines is x, 1 the output. */
#include "cuda/kernels/common.cuh" /* first: NVRTC's libc stand-in */
#include "cuda/kernels/dtype_io.cuh"
#include "cuda/kernels/lines.cuh"

#ifndef TSR_SOFTMAX_DTYPE
#error "softmax.cuh is specialized by TSR_SOFTMAX_DTYPE (float16, bfloat16 or float32)"
#endif

TSR_KERNEL_ENTRY(tsr_softmax)(tsr_lines l, const void *x, void *y) {
  __shared__ float max_shared[TSR_LINES_BLOCK / 32];
  __shared__ float sum_shared[TSR_LINES_BLOCK / 8];
  const tsr_group g = tsr_group_of(l.lanes);
  const int64_t tiles = (l.lines + g.per_block - 1) / g.per_block;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t line = tile * g.per_block + g.slot;
    if (line >= l.lines) continue; /* the same for the whole group: its line */
    int64_t offsets[TSR_LINES_MAX_OPERANDS];
    tsr_lines_offsets(l, line, offsets);
    const int64_t x_at = offsets[0], x_step = l.step[0], y_at = offsets[1], y_step = l.step[1];
    float max = __uint_as_float(0xff800000u); /* -inf */
    for (int64_t i = g.lane; i < l.n; i += g.lanes)
      max = fmaxf(max, tsr_load_f32<TSR_SOFTMAX_DTYPE>(x, x_at + i * x_step));
    max = tsr_group_max(g, max, max_shared);
    float sum = tsr_group_cpu_sum(g, l.n, sum_shared, [&](int64_t i) {
      return expf(__fsub_rn(tsr_load_f32<TSR_SOFTMAX_DTYPE>(x, x_at + i * x_step), max));
    });
    const float inverse = __fdiv_rn(1.0f, sum);
    for (int64_t i = g.lane; i < l.n; i += g.lanes) {
      float e = expf(__fsub_rn(tsr_load_f32<TSR_SOFTMAX_DTYPE>(x, x_at + i * x_step), max));
      tsr_store_f32<TSR_SOFTMAX_DTYPE>(y, y_at + i * y_step, __fmul_rn(e, inverse));
    }
  }
}
