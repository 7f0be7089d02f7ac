/* tessera/step.h — a step: one evaluation recorded once and replayed, for work repeated with the
 * same shapes over changing values (a language model's decode step: hundreds of small kernels
 * per token, whose host cost would otherwise exceed the device's).
 *
 * A step is made of inputs (evaluated arrays whose values change from run to run) and outputs
 * (lazy arrays computed from them). Its first run evaluates the outputs as tsr_eval does and
 * records what ran: each kernel with its operands, and on a GPU its launches as one CUDA graph.
 * The step keeps every buffer of that graph, so each later run replays the recording at the same
 * addresses: no graph walk, no allocation, and on a GPU one graph launch. Before each run the
 * values given for the inputs are copied into them; afterwards the outputs (and every array of
 * the graph) hold that run's results: read them with tsr_array_read.
 *
 *   tsr_step *step = NULL;
 *   tsr_array *inputs[2] = {x, position}, *outputs[1] = {logits};  // logits lazy, from x, position
 *   if (tsr_step_new(&step, inputs, 2, outputs, 1) != TSR_OK) goto fail;
 *   for (each token) {
 *     tsr_array *values[2] = {next_x, next_position};
 *     if (tsr_step_run(step, values, 2) != TSR_OK) goto fail;
 *     tsr_array_read(logits, host, bytes);
 *   }
 *   tsr_step_free(step);
 *
 * What a step's graph may hold: nodes on one stream; no copies between devices; work whose
 * shapes and arguments do not change between runs — a position that changes comes from an
 * input array through the ops that read it on the device (tsr_rope_dynamic,
 * tsr_slice_update_dynamic, tsr_sdpa_dynamic). A kernel that reads values back to the host
 * (an index check without a known range) still replays correctly, but op by op instead of as one
 * graph.
 *
 * The exception to "an evaluated array is immutable": the step's arrays (its inputs, outputs and
 * everything between) change at each run. Read them between runs; a graph built on them and
 * evaluated later sees the values of the latest run. The arrays stay valid after
 * tsr_step_free (holding the last run's values). Not thread-safe: one thread runs a step, and
 * a graph on another stream that reads the step's arrays is ordered after the first run only
 * (runs are synchronous: build it after the run whose values it needs). The step holds every
 * intermediate array of its graph for its life (a decode step's are a few MB).
 */
#ifndef TESSERA_STEP_H
#define TESSERA_STEP_H

#include "tessera/array.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tsr_step tsr_step;

/* The most inputs a step has. */
#define TSR_STEP_MAX_INPUTS 8

/* A step over `inputs` (0 to TSR_STEP_MAX_INPUTS evaluated arrays on the outputs' device, made
 * by tessera: wrapped caller memory is never written) computing `outputs` (at least one, every
 * one lazy). Nothing runs yet. TSR_ERR_INVALID for NULL arguments, counts out of range, an input
 * not evaluated (or failed, or wrapped), an output already evaluated; TSR_ERR_UNSUPPORTED for a
 * graph a step cannot hold (nodes on several streams, a copy between devices), naming the node.
 * Integer inputs lose the value range known from their data (core/value_range.h): their values
 * will change. */
TSR_API tsr_status tsr_step_new(tsr_step **out, tsr_array *const *inputs, size_t ninputs,
                                tsr_array *const *outputs, size_t noutputs);
/* Copies values[i] into input i (same dtype and shape; n is 0 with values NULL to keep the
 * inputs as they are, else the step's input count), then runs the step: the first run
 * evaluates and records it, later runs replay the recording. Returns once the run has finished.
 * TSR_ERR_INVALID for a value of another dtype or shape (both named) or a wrong count, nothing
 * run; the first run's evaluation error (TSR_ERR_CAP, TSR_ERR_NOMEM, ...) is returned as
 * tsr_eval would, and the step is then done for (later runs: TSR_ERR_STATE naming it), as when
 * part of its graph was evaluated since tsr_step_new (TSR_ERR_STATE); a replay's error is
 * returned and the next run tries again (a kernel's refusal of a bad index passes; a GPU fault
 * fails the stream, and every later run with it). */
TSR_API tsr_status tsr_step_run(tsr_step *step, tsr_array *const *values, size_t n);
/* Whether the step's runs after the first replay one CUDA graph (false before the first run, on
 * the CPU, and when the recording had to fall back to replaying op by op). NULL: false. */
TSR_API bool tsr_step_is_graph(const tsr_step *step);
/* Frees the step and its recording; its arrays stay the caller's, with the last run's values.
 * NULL is fine. */
TSR_API void tsr_step_free(tsr_step *step);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_STEP_H */
