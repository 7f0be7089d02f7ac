/* cpu/sort.c — CPU kernels of ops/sort.c. */
#include "cpu/kernels.h"

void tsri_cpu_register_sort(tsri_kernel_fn *table) { (void)table; }
