/* cpu/layout.c — CPU kernels of ops/layout.c. */
#include "cpu/kernels.h"

void tsri_cpu_register_layout(tsri_kernel_fn *table) { (void)table; }
