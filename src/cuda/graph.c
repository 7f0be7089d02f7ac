/* cuda/graph.c — kernel launches batched into CUDA graphs (cuda/graph.h). */
#include "cuda/graph.h"

#include "base/env.h"
#include "base/log.h"
#include "core/profile.h"

/* Launched directly before a batch starts capturing: an evaluation of a few kernels costs more
   as a graph (begin, end, update and graph launch: ~10 µs) than launched one by one. */
enum { DIRECT_FIRST = 4 };

cudaError_t tsri_cuda_graph_launch(tsri_cuda_graph_batch *b, cudaStream_t stream,
                                   cudaKernel_t kernel, dim3 grid, dim3 block, void **args,
                                   size_t shared_bytes) {
  if (!b->capturing && (!tsri_env()->cuda_graphs || b->direct < DIRECT_FIRST)) {
    b->direct++;
    return cudaLaunchKernel((const void *)kernel, grid, block, args, shared_bytes, stream);
  }
  if (!b->capturing) {
    /* Relaxed: allocations and frees by this or other threads stay allowed meanwhile (buffers
       are allocated between the captured launches; the release thread frees). */
    cudaError_t err = cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed);
    if (err != cudaSuccess) { /* no graph this time: launch as usual */
      (void)cudaGetLastError();
      b->direct++;
      return cudaLaunchKernel((const void *)kernel, grid, block, args, shared_bytes, stream);
    }
    b->capturing = true;
    b->captured = 0;
  }
  cudaError_t err = cudaLaunchKernel((const void *)kernel, grid, block, args, shared_bytes, stream);
  if (err == cudaSuccess) b->captured++;
  return err;
}

/* The cached executable for `nodes` kernels updated to `graph`, or a new one instantiated (and
   cached in place of the least recently used). */
static cudaError_t executable_for(tsri_cuda_graph_batch *b, cudaGraph_t graph, unsigned nodes,
                                  cudaGraphExec_t *out) {
  int slot = 0;
  for (int i = 0; i < TSRI_CUDA_GRAPH_CACHE; i++) {
    if (b->cache[i].nodes == nodes) {
      cudaGraphExecUpdateResultInfo info = {0};
      b->cache[i].used = ++b->clock;
      uint64_t start = tsri_profile_now();
      cudaError_t err = cudaGraphExecUpdate(b->cache[i].exec, graph, &info);
      tsri_profile_phase_add(TSRI_PROFILE_GRAPH_UPDATE, start);
      if (err == cudaSuccess) {
        *out = b->cache[i].exec;
        return cudaSuccess;
      }
      (void)cudaGetLastError(); /* not updatable (e.g. a kernel's attributes): instantiate anew */
      tsri_log(TSRI_LOG_DEBUG, "graph of %u kernels: no update (%s, result %d), instantiated anew",
               nodes, cudaGetErrorName(err), (int)info.result);
      slot = i;
      break;
    }
    if (b->cache[i].used < b->cache[slot].used) slot = i;
  }
  if (b->cache[slot].nodes) cudaGraphExecDestroy(b->cache[slot].exec);
  b->cache[slot].nodes = 0;
  b->cache[slot].used = 0; /* free: the first to be taken */
  uint64_t start = tsri_profile_now();
  cudaError_t err = cudaGraphInstantiate(out, graph, 0);
  tsri_profile_phase_add(TSRI_PROFILE_GRAPH_INSTANTIATE, start);
  if (err != cudaSuccess) return err;
  b->cache[slot].nodes = nodes;
  b->cache[slot].exec = *out;
  b->cache[slot].used = ++b->clock;
  return cudaSuccess;
}

cudaError_t tsri_cuda_graph_end(tsri_cuda_graph_batch *b, cudaStream_t stream) {
  b->direct = 0;
  if (!b->capturing) return cudaSuccess;
  b->capturing = false;
  uint64_t start = tsri_profile_now();
  cudaGraph_t graph = NULL;
  cudaError_t err = cudaStreamEndCapture(stream, &graph);
  if (err == cudaSuccess && b->captured > 0) {
    cudaGraphExec_t exec = NULL;
    err = executable_for(b, graph, b->captured, &exec);
    if (err == cudaSuccess) err = cudaGraphLaunch(exec, stream);
  }
  if (graph) cudaGraphDestroy(graph);
  b->captured = 0;
  tsri_profile_phase_add(TSRI_PROFILE_GRAPH_END, start);
  return err;
}

void tsri_cuda_graph_destroy(tsri_cuda_graph_batch *b) {
  for (int i = 0; i < TSRI_CUDA_GRAPH_CACHE; i++)
    if (b->cache[i].nodes) cudaGraphExecDestroy(b->cache[i].exec);
  *b = (tsri_cuda_graph_batch){0};
}
