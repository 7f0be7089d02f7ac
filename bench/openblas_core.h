/* bench/openblas_core.h — the OpenBLAS core a benchmark names for its sgemm baseline or for the
 * library's own float32 GEMMs: the widest the CPU runs. The dev VM's environment once set
 * OPENBLAS_CORETYPE=Haswell (AVX2 kernels on an AVX-512 CPU), and OpenBLAS 0.3.21 does not
 * recognize newer Xeons (Sapphire and Emerald Rapids: the dev VM and the H200 host) and falls back
 * to Prescott's SSE3 kernels — either way a weak baseline. OpenBLAS reads the variable when it
 * loads, so a benchmark sets it for a process it starts (or re-executes itself). */
#ifndef TSR_BENCH_OPENBLAS_CORE_H
#define TSR_BENCH_OPENBLAS_CORE_H

#include <stddef.h>

/* "Cooperlake" (SkylakeX's sgemm and the bfloat16 kernels), "SkylakeX", "Haswell", or NULL
   (leave OpenBLAS to choose). */
static inline const char *widest_openblas_core(void) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512bf16")) return "Cooperlake";
  if (__builtin_cpu_supports("avx512f")) return "SkylakeX";
  if (__builtin_cpu_supports("avx2")) return "Haswell";
#endif
  return NULL;
}

#endif
