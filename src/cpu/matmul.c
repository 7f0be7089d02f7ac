/* cpu/matmul.c — CPU kernels of ops/matmul.c. */
#include "cpu/kernels.h"

void tsri_cpu_register_matmul(tsri_kernel_fn *table) { (void)table; }
