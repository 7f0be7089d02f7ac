/* cpu/backend.c — the CPU backend: its streams (cpu/stream.c), its kernel table, one entry per
 * primitive (core/primitive.h), filled once by each kernel area's registration function
 * (cpu/kernels.h), and its shutdown, which releases the device's context (cpu/context.h). A
 * missing entry is TSR_ERR_UNSUPPORTED at evaluation, never a crash. The table is constant once
 * filled and the same for every CPU device, so it is filled once per process; what a device's
 * kernels share at run time lives in the device's context instead. */
#include "cpu/backend.h"

#include <pthread.h>

#include "core/collective.h"
#include "cpu/context.h"
#include "cpu/kernels.h"
#include "cpu/stream.h"

static tsri_backend cpu_backend = {
    .name = "cpu", .streams = &tsri_cpu_streams, .shutdown = tsri_cpu_contexts_release};
static pthread_once_t cpu_backend_once = PTHREAD_ONCE_INIT;

static void fill_table(void) {
  tsri_kernel_fn *k = cpu_backend.kernels;
  tsri_cpu_register_copy(k);
  tsri_cpu_register_creation(k);
  tsri_cpu_register_layout(k);
  tsri_cpu_register_indexing(k);
  tsri_cpu_register_binary(k);
  tsri_cpu_register_unary(k);
  tsri_cpu_register_reduce(k);
  tsri_cpu_register_sort(k);
  tsri_cpu_register_matmul(k);
  tsri_cpu_register_nn(k);
  tsri_cpu_register_random(k);
  tsri_cpu_register_quant(k);
  tsri_cpu_register_qmm(k);
  tsri_register_collectives(k); /* all_sum, all_gather: the group's transport runs them */
}

const tsri_backend *tsri_cpu_backend(void) {
  pthread_once(&cpu_backend_once, fill_table);
  return &cpu_backend;
}
