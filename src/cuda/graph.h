/* cuda/graph.h — a stream's kernel launches batched into CUDA graphs (cuda/graph.c), when
 * TSR_CUDA_GRAPHS=1 (off by default). On the H200 a kernel launched on a stream costs 3–5 µs of
 * host time; captured into a graph, ~1 µs to capture and ~0.1 µs to update a cached executable
 * (bench/notes/launch_costs.cu). Yet a decode step captured and launched chunk by chunk ran no
 * faster than launched kernel by kernel (bench/RESULTS.md, "CUDA graphs"): the rest of a node's
 * host path costs more than the launch, and the GPU waits for each chunk's capture. What this
 * gives is the mechanism a replayed decode step will stand on.
 *
 * A batch starts capturing after a few direct launches (a tiny evaluation gains nothing from a
 * graph), collects kernels until the stream needs its work queued for real (an event, a copy, a
 * host function, raw use of the stream by cuBLAS or a memset, the end of an evaluation's
 * submission) or the chunk is full, then ends the capture and launches the graph. The executable
 * is cached per stream by node count: a captured batch is a chain of kernel nodes, so any two
 * batches of the same length have the same topology and cudaGraphExecUpdate swaps in the new
 * kernels, grids and arguments without a new instantiation.
 *
 * Not thread-safe: the stream's mutex guards a batch (cuda/stream.c). */
#ifndef TSR_CUDA_GRAPH_H
#define TSR_CUDA_GRAPH_H

#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stdint.h>

/* Executables kept per stream (different batch lengths: a decode step, a prefill chunk, the
   tails of long evaluations). */
#define TSRI_CUDA_GRAPH_CACHE 8

/* A capture this long is ended and launched (by the stream, cuda/stream.c), so that the device
   starts on an evaluation while the rest of it is still being captured: a whole decode step
   captured before its graph is launched leaves the GPU idle meanwhile (8 layers: 287 tok/s
   against 401 launched directly); in chunks of 32, 64, 128 and 256 kernels: 352, 379, 360, 337
   (H200, 2026-12-03). */
#define TSRI_CUDA_GRAPH_CHUNK 64u

typedef struct {
  bool capturing;
  unsigned captured; /* kernels in the open capture */
  unsigned direct;   /* kernels launched directly since the batch last ended */
  struct {
    unsigned nodes; /* 0: free slot */
    cudaGraphExec_t exec;
    uint64_t used; /* for least-recently-used eviction */
  } cache[TSRI_CUDA_GRAPH_CACHE];
  uint64_t clock;
} tsri_cuda_graph_batch;

/* Launches a kernel on `stream` in stream order: directly, or into the batch's capture (begun
 * here when due). An error while capturing has lost the capture's earlier kernels too: the
 * caller must end the batch and treat the stream as failed when there were any. The caller ends
 * a batch that reaches TSRI_CUDA_GRAPH_CHUNK kernels. */
cudaError_t tsri_cuda_graph_launch(tsri_cuda_graph_batch *b, cudaStream_t stream,
                                   cudaKernel_t kernel, dim3 grid, dim3 block, void **args,
                                   size_t shared_bytes);
/* Ends the batch: an open capture is ended and its graph launched on `stream`, before anything
 * the caller enqueues next. cudaSuccess when nothing was open. */
cudaError_t tsri_cuda_graph_end(tsri_cuda_graph_batch *b, cudaStream_t stream);
/* Frees the cached executables (the stream is done; in-flight launches finish on their own). */
void tsri_cuda_graph_destroy(tsri_cuda_graph_batch *b);

#endif
