/* core/device.h — the process-wide default device. */
#ifndef TSR_CORE_DEVICE_H
#define TSR_CORE_DEVICE_H

#include "tessera/array.h"

/* A device that exists and has a backend in this build. */
bool tsri_device_usable(tsr_device d);

#endif
