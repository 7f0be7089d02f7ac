/* cpu/nn.c — CPU kernels of ops/nn.c. */
#include "cpu/kernels.h"

void tsri_cpu_register_nn(tsri_kernel_fn *table) { (void)table; }
