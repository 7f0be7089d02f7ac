/* cpu/indexing.c — CPU kernels of ops/indexing.c. */
#include "cpu/kernels.h"

void tsri_cpu_register_indexing(tsri_kernel_fn *table) { (void)table; }
