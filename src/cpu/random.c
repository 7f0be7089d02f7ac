/* cpu/random.c — CPU kernels of ops/random.c. */
#include "cpu/kernels.h"

void tsri_cpu_register_random(tsri_kernel_fn *table) { (void)table; }
