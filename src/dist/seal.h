/* dist/seal.h — the seal every collective passes before its data moves (tessera/dist.h). */
#ifndef TSR_DIST_SEAL_H
#define TSR_DIST_SEAL_H

#include "dist/group.h"

/* Agrees with every other rank on this call (the group's next sequence number, count, dtype,
 * op), blocking on the calling thread until all have arrived or the group's timeout passes.
 * TSR_OK and the call's data ticket (dist/group.h); TSR_ERR_DIST when the ranks disagree (every
 * rank gets it; the group stays usable) or a rank did not arrive (the group is then broken);
 * TSR_ERR_STATE for a broken group. A REFUSED call gives TSR_OK and no ticket when the others
 * agreed with nothing (they all fail): the caller then returns its own error. */
tsr_status tsri_seal(tsr_group *g, const char *what, tsri_seal_op op, uint64_t count,
                     tsr_dtype dtype, uint64_t *ticket);
/* The dtypes an all-sum takes: float32, float16, bfloat16, int32, int64. */
bool tsri_seal_sums(tsr_dtype dtype);

#endif
