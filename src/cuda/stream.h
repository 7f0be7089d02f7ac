/* cuda/stream.h — the CUDA backend's streams: a cudaStream_t each, events recorded lazily
 * (cuda/stream.c). */
#ifndef TSR_CUDA_STREAM_H
#define TSR_CUDA_STREAM_H

#include <cuda_runtime_api.h>

#include "core/stream.h"

extern const tsri_stream_iface tsri_cuda_streams;

/* How long a settle waits for the device work its releases wait on. Only a cycle can make it
 * wait that long (a host function on a stream that waits for the settling thread); the normal
 * case is the queued kernels' own time. */
#define TSRI_CUDA_SETTLE_MS 10000u

/* Hands every CUDA stream's pending releases to the release thread and waits (bounded) until
 * they and every batch before them have run: memory held only until queued work finishes is back
 * on the ledger. The caller's current device is left as it was. From a CUDA host function or the
 * release thread it waits for nothing (the work it would wait for may be queued behind the caller).
 */
void tsri_cuda_settle_all(void);

/* Launches a kernel on s in stream order, possibly captured into a graph with the kernels around
 * it (cuda/graph.h; TSR_CUDA_GRAPHS=0: always directly). Kernels go through here; everything
 * else a kernel function enqueues goes on the raw stream from s's native handle, which queues
 * the captured kernels first. An error while capturing fails the stream (the earlier captured
 * kernels are lost with the capture). */
cudaError_t tsri_cuda_stream_launch(tsri_stream *s, cudaKernel_t kernel, dim3 grid, dim3 block,
                                    void **args, size_t shared_bytes);

#endif
