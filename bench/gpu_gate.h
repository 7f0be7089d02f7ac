/* bench/gpu_gate.h — what bench/gpu_qmm and bench/gpu_basics share: a gate that holds a CUDA
 * stream (a host function spinning on a flag) while the host enqueues a measurement's work, so
 * the events around it time the GPU running that work back to back, not the host's launches. A
 * gate opens itself after 2 s (an enqueue that waited for the stream would otherwise never
 * return) and says so: the run then timed its launches too. */
#ifndef TSR_BENCH_GPU_GATE_H
#define TSR_BENCH_GPU_GATE_H

#include <cuda_runtime_api.h>
#include <sched.h>
#include <stdbool.h>
#include <time.h>

static int gate_open, gate_forced;

static void CUDART_CB gate_fn(void *ctx) {
  (void)ctx;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (!__atomic_load_n(&gate_open, __ATOMIC_ACQUIRE)) {
    clock_gettime(CLOCK_MONOTONIC, &t);
    if ((double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec) > 2.0) {
      __atomic_store_n(&gate_forced, 1, __ATOMIC_RELEASE);
      return;
    }
    sched_yield();
  }
}

/* Holds `stream` from here until gate_release. */
static cudaError_t gate_hold(cudaStream_t stream) {
  __atomic_store_n(&gate_open, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&gate_forced, 0, __ATOMIC_RELEASE);
  return cudaLaunchHostFunc(stream, gate_fn, NULL);
}

static void gate_release(void) {
  __atomic_store_n(&gate_open, 1, __ATOMIC_RELEASE);
}

/* After the stream passed the gate: whether it opened itself (the measurement is host-bound). */
static bool gate_opened_itself(void) {
  return __atomic_load_n(&gate_forced, __ATOMIC_ACQUIRE) != 0;
}

#endif
