/* cuda/kernels/common.cuh — what every kernel source shares: the entry-point naming. Each module
 * gets its own symbol names (TSR_KERNEL_SUFFIX, set by the loader: _jit_... or _aot_...), so a JIT
 * and an AOT module of the same kernel can be loaded in one process without colliding. */
#ifndef TSR_CUDA_KERNELS_COMMON_CUH
#define TSR_CUDA_KERNELS_COMMON_CUH

/* NVRTC has no libc headers: the fixed-width integers base/quant_format.h uses come from the
 * stand-in; include this file before base headers. nvcc (the AOT modules) has the real one. */
#ifdef __CUDACC_RTC__
#include "cuda/kernels/rtc_libc.cuh"
#else
#include <stdint.h>
#endif

#ifndef TSR_KERNEL_SUFFIX
#error "TSR_KERNEL_SUFFIX must be defined: the module loader gives every module its own names"
#endif

#define TSR_KERNEL_CAT_(a, b) a##b
#define TSR_KERNEL_CAT(a, b) TSR_KERNEL_CAT_(a, b)
/* extern "C" so the loader finds the entry by its plain name (no C++ mangling). */
#define TSR_KERNEL_ENTRY(name) extern "C" __global__ void TSR_KERNEL_CAT(name, TSR_KERNEL_SUFFIX)

#endif
