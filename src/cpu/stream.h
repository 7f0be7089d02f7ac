/* cpu/stream.h — the CPU backend's streams: a worker thread per stream (cpu/stream.c). */
#ifndef TSR_CPU_STREAM_H
#define TSR_CPU_STREAM_H

#include "core/stream.h"

extern const tsri_stream_iface tsri_cpu_streams;

#endif
