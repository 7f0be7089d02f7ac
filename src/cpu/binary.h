/* cpu/binary.h — elementwise binary kernels. */
#ifndef TSR_CPU_BINARY_H
#define TSR_CPU_BINARY_H

#include "core/array.h"

tsr_status tsri_cpu_add(tsr_array *node);

#endif
