/* cuda/backend.h — the CUDA backend (streams, allocator, kernel table), registered by
 * src/backends.c in builds with CUDA. */
#ifndef TSR_CUDA_BACKEND_H
#define TSR_CUDA_BACKEND_H

#include "core/backend.h"

const tsri_backend *tsri_cuda_backend(void);

#endif
