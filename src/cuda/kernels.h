/* cuda/kernels.h — each CUDA kernel area (a file under src/cuda/ with its sources under
 * src/cuda/kernels/) fills its primitives' entries of the GPU kernel table; cuda/backend.c calls
 * them all once. A primitive left empty is refused at construction on a GPU stream
 * (TSR_ERR_UNSUPPORTED), so the backend grows op by op. */
#ifndef TSR_CUDA_KERNELS_H
#define TSR_CUDA_KERNELS_H

#include "core/backend.h"

void tsri_cuda_register_copy(tsri_kernel_fn *table); /* cuda/copy.c */

#endif
