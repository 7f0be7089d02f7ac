/* core/step.h — what dispatch needs of a step (tessera/step.h, core/step.c): recording a node's
 * run during a step's first run, and running a step node (primitive STEP) at later ones. */
#ifndef TSR_CORE_STEP_H
#define TSR_CORE_STEP_H

#include "core/array.h"

typedef struct tsri_step_recording tsri_step_recording;

/* Appends a node's run to the recording: a copy of its descriptor (the parameters owned by the
 * recording), the node and its inputs held so every buffer it names keeps its address. Called on
 * the node's stream once its kernel returned TSR_OK; out of host memory, the recording is marked
 * failed (the step's first run then fails with TSR_ERR_NOMEM). */
void tsri_step_record_op(tsri_step_recording *r, tsr_array *node, const tsri_op *op);

/* Runs a step node on its stream: copies the node's inputs (the run's values) into the step's
 * inputs, then replays the recording (the first run's step node only copies). */
tsr_status tsri_step_dispatch(tsr_array *node);

#endif
