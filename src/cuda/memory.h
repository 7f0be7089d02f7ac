/* cuda/memory.h — the GPUs' system allocator (cuda/memory.c), registered with the memory layer by
 * the CUDA backend. */
#ifndef TSR_CUDA_MEMORY_H
#define TSR_CUDA_MEMORY_H

#include "memory/buffer.h"

extern const tsri_system_allocator tsri_cuda_allocator;

#endif
