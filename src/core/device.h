/* core/device.h — the process-wide default device. */
#ifndef TSR_CORE_DEVICE_H
#define TSR_CORE_DEVICE_H

#include "tessera/array.h"

/* A device that exists and has a backend in this build. */
bool tsri_device_usable(tsr_device d);

/* Adds fn to what tsr_shutdown runs after the streams have stopped and before the backends shut
 * down (the distributed layer finalizes MPI there). Process-wide, at most 4; the same fn twice is
 * kept once. */
void tsri_shutdown_hook_add(void (*fn)(void));

#endif
