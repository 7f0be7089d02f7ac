/* cuda/creation.c — full and arange on the GPU (cuda/kernels/creation.cuh), every dtype. full's
 * one value is converted here, on the host, by base/element.h (the CPU's own rule), and the
 * kernel repeats its bytes; arange converts each element on the device by the same rule. astype
 * is an elementwise op (cuda/elementwise.c). */
#include "cuda/kernels.h"

#include <stdio.h>

#include "base/element.h"
#include "cuda/launch.h"
#include "ops/creation.h"

static tsr_status launch(const tsri_op *op, const char *options, uint64_t pattern, double start,
                         double step) {
  int64_t n = op->out.size;
  void *args[] = {&n, &pattern, &start, &step, (void *)&op->out.data};
  unsigned block = 256;
  return tsri_cuda_launch(op, "creation", options, tsri_dim3(tsri_cuda_blocks_for(n, block)),
                          tsri_dim3(block), 0, args);
}

static tsr_status cuda_full(const tsri_op *op) {
  if (op->out.size == 0) return TSR_OK;
  const tsri_full_params *params = TSRI_PARAMS(op, tsri_full_params);
  /* The element's bytes are the low bytes of the word: the GPU is little-endian, and so is a
     host whose arrays it can read at all. */
  uint64_t pattern = 0;
  tsri_element_store_f64(&pattern, op->out.dtype, params->value);
  char options[40];
  snprintf(options, sizeof options, "-DTSR_CREATION_FILL_BYTES=%zu", tsr_dtype_size(op->out.dtype));
  return launch(op, options, pattern, 0.0, 0.0);
}

static tsr_status cuda_arange(const tsri_op *op) {
  if (op->out.size == 0) return TSR_OK;
  const tsri_arange_params *params = TSRI_PARAMS(op, tsri_arange_params);
  char options[48];
  snprintf(options, sizeof options, "-DTSR_CREATION_ARANGE=%s", tsr_dtype_name(op->out.dtype));
  return launch(op, options, 0, params->start, params->step);
}

void tsri_cuda_register_creation(tsri_kernel_fn *table, tsri_cuda_supports_fn *supports) {
  (void)supports; /* every dtype */
  table[TSRI_PRIM_FULL] = cuda_full;
  table[TSRI_PRIM_ARANGE] = cuda_arange;
}
