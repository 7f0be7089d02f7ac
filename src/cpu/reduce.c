/* cpu/reduce.c — CPU kernels of ops/reduce.c. */
#include "cpu/kernels.h"

void tsri_cpu_register_reduce(tsri_kernel_fn *table) { (void)table; }
