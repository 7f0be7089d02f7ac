/* cuda/stream.h — the CUDA backend's streams: a cudaStream_t each, events recorded lazily
 * (cuda/stream.c). */
#ifndef TSR_CUDA_STREAM_H
#define TSR_CUDA_STREAM_H

#include "core/stream.h"

extern const tsri_stream_iface tsri_cuda_streams;

#endif
