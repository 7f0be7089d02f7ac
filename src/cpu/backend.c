/* cpu/backend.c — the CPU kernel table: one entry per primitive (core/primitive.h). A missing
 * entry is TSR_ERR_UNSUPPORTED at evaluation, never a crash. */
#include "cpu/backend.h"

#include "cpu/binary.h"
#include "cpu/copy.h"

static const tsri_backend cpu_backend = {
    .name = "cpu",
    .kernels =
        {
            [TSRI_PRIM_ADD] = tsri_cpu_add,
            [TSRI_PRIM_COPY] = tsri_cpu_copy,
        },
};

const tsri_backend *tsri_cpu_backend(void) {
  return &cpu_backend;
}
