/* bench/notes/launch_costs.cu — what a kernel launch costs the host on this GPU, outside tessera:
 * cudaLaunchKernel / <<<>>> / cuLaunchKernel with small and 384-byte arguments, with a second
 * thread waiting in cudaEventSynchronize (spinning or blocking-sync events), and a chain of 1000
 * kernels launched on a stream, built as a graph and updated, stream-captured and updated, and
 * replayed. Not part of the build; on the GPU machine:
 *   nvcc -arch=sm_90 -cubin -o kern.cubin -x cu -DLAUNCH_COSTS_KERNELS bench/notes/launch_costs.cu
 *   nvcc -arch=sm_90 -O2 -o launch_costs bench/notes/launch_costs.cu -lcuda && ./launch_costs
 * (run it where kern.cubin is). Figures: bench/RESULTS.md, "CUDA graphs". */
/* The repository's style formats CUDA's <<<...>>> as C++03 (> > >): not formatted. */
// clang-format off
#ifdef LAUNCH_COSTS_KERNELS
struct Small {
  long long a;
};
struct Big {
  long long v[48];
};
extern "C" __global__ void k_small(Small s, float *out) {
  if (threadIdx.x == 0 && blockIdx.x == 0 && s.a == -1) out[0] = 1;
}
extern "C" __global__ void k_big(Big s, float *out) {
  if (threadIdx.x == 0 && blockIdx.x == 0 && s.v[0] == -1) out[0] = 1;
}
#else
#include <cuda.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <atomic>
struct Small {
  long long a;
};
struct Big {
  long long v[48];
};
__global__ void s_small(Small s, float *out) {
  if (threadIdx.x == 0 && blockIdx.x == 0 && s.a == -1) out[0] = 1;
}
__global__ void spin(long long cycles) {
  long long t = clock64();
  while (clock64() - t < cycles) {
  }
}
static double now() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
static cudaStream_t st;
static float *out;
static std::atomic<bool> stop_flag{false};
static std::atomic<int> mode_waiter{0};
static void *waiter(void *) {
  cudaSetDevice(0);
  while (!stop_flag) {
    if (!mode_waiter) {
      usleep(100);
      continue;
    }
    cudaEvent_t e;
    cudaEventCreateWithFlags(
        &e, cudaEventDisableTiming | (mode_waiter.load() == 2 ? cudaEventBlockingSync : 0));
    cudaEventRecord(e, st);
    cudaEventSynchronize(e);
    cudaEventDestroy(e);
  }
  return NULL;
}
enum { N = 500 };
template <class F>
static double per_launch(F f) {
  double best = 1e9;
  for (int r = 0; r < 7; r++) {
    spin<<<1, 1, 0, st>>>(2000000000LL / 20); /* ~50 ms at ~2 GHz */
    double t0 = now();
    for (int i = 0; i < N; i++)
      f();
    double t = (now() - t0) / N;
    cudaStreamSynchronize(st);
    if (t < best) best = t;
  }
  return best;
}
static int launch_main() {
  cudaSetDevice(0);
  cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  cudaMalloc(&out, 4096);
  cudaLibrary_t lib;
  cudaKernel_t kls, klb;
  if (cudaLibraryLoadFromFile(&lib, "kern.cubin", NULL, NULL, 0, NULL, NULL, 0) != cudaSuccess) {
    printf("lib load failed\n");
    return 1;
  }
  cudaLibraryGetKernel(&kls, lib, "k_small");
  cudaLibraryGetKernel(&klb, lib, "k_big");
  CUfunction fs, fb;
  cuKernelGetFunction(&fs, (CUkernel)kls);
  cuKernelGetFunction(&fb, (CUkernel)klb);
  Small sm = {1};
  Big bg = {};
  void *as[] = {&sm, &out}, *ab[] = {&bg, &out};
  pthread_t th;
  pthread_create(&th, NULL, waiter, NULL);
  const char *modes[] = {"no waiter", "waiter spinning in cudaEventSynchronize",
                         "waiter blocking-sync event"};
  for (int m = 0; m < 3; m++) {
    mode_waiter.store(m);
    usleep(20000);
    printf("== %s\n", modes[m]);
    printf("memsetAsync 64B                 %.2f us\n",
           per_launch([&] { cudaMemsetAsync(out, 0, 64, st); }));
    printf("<<<>>> static small             %.2f us\n",
           per_launch([&] { s_small<<<1, 32, 0, st>>>(sm, out); }));
    printf("cudaLaunchKernel lib small      %.2f us\n",
           per_launch([&] { cudaLaunchKernel((const void *)kls, dim3(1), dim3(32), as, 0, st); }));
    printf("cudaLaunchKernel lib big 384B   %.2f us\n",
           per_launch([&] { cudaLaunchKernel((const void *)klb, dim3(1), dim3(32), ab, 0, st); }));
    printf("cuLaunchKernel func small       %.2f us\n",
           per_launch([&] { cuLaunchKernel(fs, 1, 1, 1, 32, 1, 1, 0, (CUstream)st, as, NULL); }));
    printf("cuLaunchKernel func big         %.2f us\n",
           per_launch([&] { cuLaunchKernel(fb, 1, 1, 1, 32, 1, 1, 0, (CUstream)st, ab, NULL); }));
    printf("cudaGetDevice                   %.2f us\n", per_launch([&] {
             int d;
             cudaGetDevice(&d);
           }));
    printf("cudaGetLastError                %.2f us\n",
           per_launch([&] { (void)cudaGetLastError(); }));
  }
  stop_flag = true;
  mode_waiter = 0;
  pthread_join(th, NULL);
  return 0;
}

/* ---- a chain of 1000 kernels: stream, graph built and updated, captured and updated, replayed */
__global__ void s_big(Big s, float *out) {
  if (threadIdx.x == 0 && blockIdx.x == 0 && s.v[0] == -1) out[0] = 1;
}
static double now_us() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
static int graph_main() {
  cudaSetDevice(0);
  cudaStream_t st;
  cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  float *out;
  cudaMalloc(&out, 4096);
  const int N = 1000;
  Big bg = {};
  // 1. stream launches: host time and total time
  for (int rep = 0; rep < 3; rep++) {
    cudaStreamSynchronize(st);
    double t0 = now_us();
    for (int i = 0; i < N; i++) {
      bg.v[1] = i;
      s_big<<<64, 256, 0, st>>>(bg, out);
    }
    double t1 = now_us();
    cudaStreamSynchronize(st);
    double t2 = now_us();
    printf("stream: host %.2f us/kernel, total %.2f us/kernel\n", (t1 - t0) / N, (t2 - t0) / N);
  }
  // 2. graph built by API each "token", exec updated, launched
  cudaGraphExec_t exec = NULL;
  for (int rep = 0; rep < 6; rep++) {
    cudaStreamSynchronize(st);
    double t0 = now_us();
    cudaGraph_t g;
    cudaGraphCreate(&g, 0);
    cudaGraphNode_t prev = NULL;
    for (int i = 0; i < N; i++) {
      bg.v[1] = i + rep;
      void *args[] = {&bg, &out};
      cudaKernelNodeParams p = {};
      p.func = (void *)s_big;
      p.gridDim = dim3(64 + (i & 1));
      p.blockDim = dim3(256);
      p.kernelParams = args;
      cudaGraphNode_t n;
      cudaGraphAddKernelNode(&n, g, prev ? &prev : NULL, prev ? 1 : 0, &p);
      prev = n;
    }
    double t1 = now_us();
    const char *how = "update";
    if (exec) {
      cudaGraphExecUpdateResultInfo info;
      if (cudaGraphExecUpdate(exec, g, &info) != cudaSuccess) {
        (void)cudaGetLastError();
        cudaGraphExecDestroy(exec);
        exec = NULL;
        how = "update failed";
      }
    }
    if (!exec) {
      cudaGraphInstantiate(&exec, g, 0);
      if (rep == 0) how = "instantiate";
    }
    double t2 = now_us();
    cudaGraphLaunch(exec, st);
    double t3 = now_us();
    cudaStreamSynchronize(st);
    double t4 = now_us();
    cudaGraphDestroy(g);
    printf("graph (%s): add %.2f us/node, %s %.2f us/node, launch %.1f us, total %.2f us/kernel\n",
           how, (t1 - t0) / N, how, (t2 - t1) / N, t3 - t2, (t4 - t0) / N);
  }
  // 3. stream capture each token + update
  for (int rep = 0; rep < 4; rep++) {
    cudaStreamSynchronize(st);
    double t0 = now_us();
    cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal);
    for (int i = 0; i < N; i++) {
      bg.v[1] = i;
      s_big<<<64, 256, 0, st>>>(bg, out);
    }
    cudaGraph_t g;
    cudaStreamEndCapture(st, &g);
    double t1 = now_us();
    cudaGraphExecUpdateResultInfo info;
    cudaError_t e = cudaGraphExecUpdate(exec, g, &info);
    double t2 = now_us();
    cudaGraphLaunch(exec, st);
    cudaStreamSynchronize(st);
    double t4 = now_us();
    cudaGraphDestroy(g);
    printf("capture: %.2f us/kernel, update(%d) %.2f us/node, total %.2f us/kernel\n",
           (t1 - t0) / N, (int)e, (t2 - t1) / N, (t4 - t0) / N);
  }
  // 4. replay only (graph exec launched as is)
  for (int rep = 0; rep < 3; rep++) {
    double t0 = now_us();
    cudaGraphLaunch(exec, st);
    double t1 = now_us();
    cudaStreamSynchronize(st);
    double t2 = now_us();
    printf("replay: launch %.1f us, total %.2f us/kernel\n", t1 - t0, (t2 - t0) / N);
  }
  return 0;
}

int main() {
  return launch_main() || graph_main();
}
#endif
// clang-format on
