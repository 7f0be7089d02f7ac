/* cuda/copy.c — the GPU's copy kernel: any layout of an array on the device into a packed one
 * (cuda/kernels/copy.cuh). Copies between host and device are core's (core/dispatch.c), through
 * the stream's copy. */
#include "cuda/kernels.h"

#include <stdio.h>

#include "cuda/launch.h"
#include "cuda/strided.h"

static tsr_status cuda_copy(const tsri_op *op) {
  const tsri_view *in = &op->in[0], *out = &op->out;
  if (out->size == 0) return TSR_OK;
  tsri_cuda_strided layout;
  tsri_cuda_strided_init(&layout, out);
  tsri_cuda_strided_add(&layout, in);
  tsri_cuda_strided_add(&layout, out);
  char options[32];
  snprintf(options, sizeof options, "-DTSR_COPY_BYTES=%zu", tsr_dtype_size(out->dtype));
  void *args[] = {&layout, (void *)&in->data, (void *)&out->data};
  unsigned block = 256;
  return tsri_cuda_launch(op, "copy", options, tsri_dim3(tsri_cuda_blocks_for(out->size, block)),
                          tsri_dim3(block), 0, args);
}

void tsri_cuda_register_copy(tsri_kernel_fn *table, tsri_cuda_supports_fn *supports) {
  (void)supports; /* every dtype: the copy moves words of the dtype's size */
  table[TSRI_PRIM_COPY] = cuda_copy;
}
