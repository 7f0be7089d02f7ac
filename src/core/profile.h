/* core/profile.h — TSR_PROFILE=1: where a program's host time goes, per device type and
 * primitive. A node's time is that of its task on the thread that runs it: on the CPU the
 * worker's whole run (the kernel's arithmetic included), on CUDA the submitting thread's inline
 * launch (argument setup, packing, allocation, lookup, cudaLaunchKernel: the host cost of a GPU
 * op, what makes a decode step host-bound). Also the time of evaluation's graph walk and
 * submission, and of its waits. Reported through the logger (info level, or warn when TSR_LOG
 * hides info, so TSR_PROFILE=1 alone shows it) by tsr_shutdown and at
 * exit, each time for what ran since the last report. Off: a few predictable branches per node
 * (each clock read and each add asks whether profiling is on). */
#ifndef TSR_CORE_PROFILE_H
#define TSR_CORE_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/primitive.h"
#include "tessera/array.h"

typedef enum {
  TSRI_PROFILE_SUBMIT, /* tsr_eval/tsr_async_eval: the graph walk and the submission (on CUDA
                          streams that includes every inline launch, counted per node too) */
  TSRI_PROFILE_WAIT,   /* tsr_eval waiting for its arrays */
  /* Parts of a node's task (inside its per-primitive time), to say where a launch's host time
     goes: */
  TSRI_PROFILE_INPUTS,  /* fences on inputs from other streams (before the node's clock) */
  TSRI_PROFILE_OUTPUT,  /* the output's allocation or donation */
  TSRI_PROFILE_RELEASE, /* handing the inputs' release to the stream (after_current) */
  TSRI_PROFILE_PRELUDE, /* a backend's own work before the task (CUDA: device, failure check) */
  TSRI_PROFILE_LOOKUP,  /* finding the kernel (CUDA: the loaded specialization) */
  TSRI_PROFILE_LAUNCH,  /* the runtime's launch call (cudaLaunchKernel; with graphs the capture,
                           and a full chunk's end) */
  /* CUDA graphs (cuda/graph.h): a batch's end (end of capture, update or instantiation, launch),
     and of it the update of a cached executable, or a new instantiation */
  TSRI_PROFILE_GRAPH_END,
  TSRI_PROFILE_GRAPH_UPDATE,
  TSRI_PROFILE_GRAPH_INSTANTIATE,
  TSRI_PROFILE_PHASES
} tsri_profile_phase;

bool tsri_profile_on(void);
/* Monotonic nanoseconds (0 when profiling is off, so callers need no branch of their own). */
uint64_t tsri_profile_now(void);
void tsri_profile_node(tsr_device_type type, tsri_primitive p, uint64_t start_ns);
void tsri_profile_phase_add(tsri_profile_phase phase, uint64_t start_ns);
/* Logs the table (largest total first) and clears it; nothing when profiling is off or empty. */
void tsri_profile_report(void);

#endif
