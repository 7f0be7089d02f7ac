/* cpu/creation.c — CPU kernels of ops/creation.c. */
#include "cpu/kernels.h"

void tsri_cpu_register_creation(tsri_kernel_fn *table) { (void)table; }
