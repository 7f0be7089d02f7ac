/* cpu/backend.h — the CPU backend's kernel table, registered by src/backends.c. */
#ifndef TSR_CPU_BACKEND_H
#define TSR_CPU_BACKEND_H

#include "core/backend.h"

const tsri_backend *tsri_cpu_backend(void);

#endif
