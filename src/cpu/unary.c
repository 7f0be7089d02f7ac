/* cpu/unary.c — CPU kernels of ops/unary.c. */
#include "cpu/kernels.h"

void tsri_cpu_register_unary(tsri_kernel_fn *table) { (void)table; }
