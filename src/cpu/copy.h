/* cpu/copy.h — copies into a fresh contiguous buffer. */
#ifndef TSR_CPU_COPY_H
#define TSR_CPU_COPY_H

#include "core/array.h"

tsr_status tsri_cpu_copy(tsr_array *node);

#endif
