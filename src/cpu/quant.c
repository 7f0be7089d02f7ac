/* cpu/quant.c — CPU kernels of the quantized formats. */
#include "cpu/kernels.h"

void tsri_cpu_register_quant(tsri_kernel_fn *table) {
  (void)table;
}
