/* tests/quant/test_qmm_faults.c — tsr_quantized_matmul with each allocation of its evaluation
 * failing in turn (tessera/testing.h): a failed output gives TSR_ERR_NOMEM naming the op; a failed
 * kernel scratch (the fused GEMM's packed panels, the sgemm tiles) falls back to the next path and
 * still gives the product; nothing leaks either way (the ledger returns to the inputs' bytes).
 *
 * Tolerance against the product evaluated without faults: both are float32 sums over K of the
 * same exactly dequantized products in different orders, each within gamma_K * sum |x w| of the
 * exact sum (gamma_K = K u / (1 - K u), u = 2^-24), so they differ by at most twice that. */
#include <math.h>
#include <tessera/testing.h>

#include "check.h"

enum { M = 40, N = 300, K = 512, GROUP = 64, BITS = 4, MAX_FAULTS = 32 };

static const tsr_device cpu = {TSR_CPU, 0};

static float uniform(uint32_t *state) { /* [-1, 1) */
  *state = *state * 1664525u + 1013904223u;
  return (float)(*state >> 8) * 0x1p-23f - 1.0f;
}

static tsr_array *product(tsr_array *x, tsr_array *w_q, tsr_array *scales, tsr_array *biases) {
  tsr_array *y = NULL;
  CHECK_OK(
      tsr_quantized_matmul(&y, x, w_q, scales, biases, true, GROUP, BITS, TSR_QUANT_AFFINE, NULL));
  return y;
}

/* Sum over k of |x[i][k] w[j][k]| for every output, from the dequantized weights. */
static void magnitudes(const float *x, const float *w, double *out) {
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double sum = 0.0;
      for (int k = 0; k < K; k++)
        sum += fabs((double)x[i * K + k] * (double)w[j * K + k]);
      out[i * N + j] = sum;
    }
}

int main(void) {
  CHECK_OK(tsr_memory_set_cache_limit(cpu, 0)); /* every buffer is a system allocation */
  static float xs[M * K], ws[N * K], dense[N * K], want[M * N], got[M * N];
  static double bound[M * N];
  uint32_t state = 7u;
  for (int i = 0; i < M * K; i++)
    xs[i] = uniform(&state);
  for (int i = 0; i < N * K; i++)
    ws[i] = uniform(&state);
  int64_t x_shape[2] = {M, K}, w_shape[2] = {N, K};
  tsr_array *x = NULL, *w = NULL, *w_q = NULL, *scales = NULL, *biases = NULL, *wd = NULL;
  CHECK_OK(tsr_array_from_data(&x, xs, TSR_FLOAT32, x_shape, 2));
  CHECK_OK(tsr_array_from_data(&w, ws, TSR_FLOAT32, w_shape, 2));
  CHECK_OK(tsr_quantize(&w_q, &scales, &biases, w, GROUP, BITS, TSR_QUANT_AFFINE, NULL));
  CHECK_OK(
      tsr_dequantize(&wd, w_q, scales, biases, GROUP, BITS, TSR_QUANT_AFFINE, TSR_FLOAT32, NULL));
  CHECK_OK(tsr_array_read(wd, dense, sizeof dense));
  tsr_array_release(wd);
  tsr_array_release(w);
  magnitudes(xs, dense, bound);
  const double u = 0x1p-24, gamma = K * u / (1.0 - K * u);

  tsr_array *y = product(x, w_q, scales, biases);
  CHECK_OK(tsr_array_read(y, want, sizeof want));
  tsr_array_release(y);
  const uint64_t inputs_active = tsr_memory_active(cpu);

  int failed_outputs = 0, fallbacks = 0;
  uint64_t k = 1;
  for (; k <= MAX_FAULTS; k++) {
    CHECK_OK(tsr_testing_fail_allocation(cpu, k));
    y = product(x, w_q, scales, biases);
    tsr_status status = tsr_eval(&y, 1);
    bool fired = tsr_testing_fail_allocation_pending(cpu) == 0;
    CHECK_OK(tsr_testing_fail_allocation(cpu, 0));
    if (status != TSR_OK) {
      CHECK_STATUS(status, TSR_ERR_NOMEM);
      CHECK_MESSAGE("quantized_matmul");
      failed_outputs++;
    } else {
      CHECK_OK(tsr_array_read(y, got, sizeof got));
      for (int i = 0; i < M * N; i++)
        if (!(fabs((double)got[i] - (double)want[i]) <= 2.0 * gamma * bound[i]))
          CHECK_FAIL_("fault %llu: y[%d] = %.9g, without faults %.9g, bound %.3g",
                      (unsigned long long)k, i, (double)got[i], (double)want[i],
                      2.0 * gamma * bound[i]);
      fallbacks += fired;
    }
    tsr_array_release(y);
    CHECK_EQ_U64(tsr_memory_active(cpu), inputs_active);
    if (!fired) break; /* past the evaluation's last allocation */
  }
  CHECK(k <= MAX_FAULTS);
  CHECK(failed_outputs >= 1); /* the output's own buffer */
  CHECK(fallbacks >= 1);      /* a kernel scratch, replaced by the next path */
  printf("test_qmm_faults: %llu allocations, %d failed outputs, %d fallbacks\n",
         (unsigned long long)(k - 1), failed_outputs, fallbacks);

  tsr_array *inputs[] = {x, w_q, scales, biases};
  for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++)
    tsr_array_release(inputs[i]);
  CHECK_NO_LEAKS();
  tsr_shutdown();
  return 0;
}
