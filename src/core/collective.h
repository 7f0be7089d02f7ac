/* core/collective.h — how a collective node (all_sum, all_gather) reaches its group without core
 * or a backend knowing the distributed layer: the node's parameters name the group (by serial
 * number, so a freed group is an error, not a dangling pointer) and the distributed layer's
 * function that runs it. Every backend puts tsri_collective_kernel in its table for the
 * collective primitives; whether a group can run on a device is decided when the node is built
 * (dist/lazy.c), so the GPU backend having these entries never means it can run every group. */
#ifndef TSR_CORE_COLLECTIVE_H
#define TSR_CORE_COLLECTIVE_H

#include "core/op.h"

typedef struct {
  uint64_t group_serial; /* the group's number (dist/group.c resolves it when the node runs) */
  tsri_kernel_fn run;    /* the distributed layer's runner: seal, then move the data */
  /* The distributed layer's refusal: takes part in the node's seal as a refusal (count and dtype
     of its input), for a node that fails before `run` could seal it. */
  void (*refuse)(uint64_t group_serial, tsri_primitive primitive, uint64_t count, tsr_dtype dtype);
} tsri_collective_params;

/* The kernel of every collective primitive on every backend: calls the node's runner. */
tsr_status tsri_collective_kernel(const tsri_op *op);
/* For a collective node that failed before its runner sealed it (an input failed, its output
 * could not be allocated): takes part in the seal as a refusal, so that every rank still makes
 * the same sequence of seals — the others fail at once naming this rank, instead of waiting out
 * the group's timeout or pairing their call with this rank's next one. Not when an input is a
 * failed collective (the group's previous one, which it runs after while that one has not run:
 * that failure was sealed on every rank, so every rank skips this one alike, and one refusal of
 * a rank that failed before its collectives covers the others' whole evaluation); nothing for
 * other nodes. Its inputs must have finished (eval waits for every input first). */
void tsri_collective_refuse(const tsr_array *node);
/* Puts tsri_collective_kernel in a backend's table for every collective primitive. */
void tsri_register_collectives(tsri_kernel_fn *table);

#endif
