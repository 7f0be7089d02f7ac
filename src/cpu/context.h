/* cpu/context.h — the CPU device's context: what the CPU kernels of a device share instead of
 * process globals (shared/DESIGN.md, "per-device contexts"): the worker pool (cpu/parallel.h) and
 * the quantized-matmul kernels of the instruction set chosen for this CPU (cpu/qmm_fast.h). The
 * CPU backend's counterpart of cuda/runtime.h's tsri_cuda_context.
 *
 * Made on first use of the device (any thread, once), torn down by tsr_shutdown (the backend's
 * shutdown, after every stream has stopped: the pool's workers are joined) and made afresh by the
 * next use after that. Its settings are read when it is made: the pool's size is TSR_NUM_THREADS
 * (an integer in [1, 256], read once per process through base/env, which warns about and ignores
 * anything else) or else the number of online cores (tsri_discovery()->cpu.compute_units, at most
 * 256), the calling thread included; the instruction set is the widest the CPU has, capped by
 * TSR_CPU_ISA. Kernels reach it through their op's device: tsri_cpu_context_get(op->device). */
#ifndef TSR_CPU_CONTEXT_H
#define TSR_CPU_CONTEXT_H

#include "cpu/parallel.h"
#include "tessera/array.h"

struct tsri_qmm_isa; /* cpu/qmm_fast_isa.h, internal to the fast quantized-matmul files */

typedef struct tsri_cpu_context {
  tsr_device device;
  tsri_parallel_pool *pool;       /* every parallel loop of the device's kernels runs on it */
  const struct tsri_qmm_isa *isa; /* the fast quantized-matmul kernels (cpu/qmm_fast.c) */
} tsri_cpu_context;

/* The context of `device` (a CPU device), made on first use. TSR_ERR_DEVICE for a device the CPU
 * backend does not have, TSR_ERR_NOMEM (message set) when it cannot be made. */
tsr_status tsri_cpu_context_get(tsr_device device, const tsri_cpu_context **out);

/* Frees every CPU context, joining its pool's workers (the backend's shutdown, tsr_shutdown: no
 * kernel may be running meanwhile). The next tsri_cpu_context_get makes a new one. */
void tsri_cpu_contexts_release(void);

#endif
