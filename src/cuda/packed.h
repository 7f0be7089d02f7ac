/* cuda/packed.h — an operand for a GPU kernel that reads packed (row-major, gap-free) data: the
 * view's own bytes when it is contiguous, else a packed copy the copy kernel gathers into ledger
 * scratch (cuda/kernels/copy.cuh); and device scratch of any size. Both go back stream-ordered:
 * to the cache once the op's stream has passed every kernel launched before the release
 * (core/stream.h, after_current). Used by the quantized ops (cuda/quant.c, cuda/qmm.c), whose
 * kernels take packed operands only. */
#ifndef TSR_CUDA_PACKED_H
#define TSR_CUDA_PACKED_H

#include "core/op.h"
#include "memory/buffer.h"

typedef struct {
  const void *data;     /* the first element; NULL for an empty view */
  tsri_buffer *scratch; /* the gathered copy, or NULL when the view was read in place */
} tsri_cuda_packed;

/* `v` (an input of op) as packed data on op's device and stream: in place when contiguous, else
 * gathered (a copy kernel queued on the op's stream). On failure the status with the message
 * naming `what`; pass *out to tsri_cuda_packed_done whatever the result. */
tsr_status tsri_cuda_packed_get(const tsri_op *op, const tsri_view *v, const char *what,
                                tsri_cuda_packed *out);
/* Releases p's scratch once the op's stream has passed what is launched so far. */
void tsri_cuda_packed_done(const tsri_op *op, tsri_cuda_packed *p);

/* `bytes` of scratch on op's device (message naming `what` on failure). */
tsr_status tsri_cuda_scratch_alloc(const tsri_op *op, uint64_t bytes, const char *what,
                                   tsri_buffer **out);
/* Releases scratch (NULL is fine) once the op's stream has passed what is launched so far. */
void tsri_cuda_scratch_done(const tsri_op *op, tsri_buffer *scratch);

#endif
