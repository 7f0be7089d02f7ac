/* model/progress.h — the progress bar the loader and the converter draw on stderr: bytes and
 * tensors done, rate and ETA, redrawn at most ten times a second, only when stderr is a
 * terminal. Internal to src/model. */
#ifndef TSR_MODEL_PROGRESS_H
#define TSR_MODEL_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tessera/safetensors.h>

typedef struct {
  const char *label; /* "loading", "converting" */
  bool on;           /* asked for and stderr is a terminal */
  uint64_t total_bytes, done_bytes;
  size_t done_tensors;
  double start_s, last_draw_s;
} progress_bar;

/* The bytes of every tensor in a checkpoint: what a bar over reading it all counts. */
uint64_t progress_checkpoint_bytes(tsr_safetensors *ckpt);
/* Starts a bar over `total_bytes`; it draws only when `wanted` and stderr is a terminal. */
void progress_begin(progress_bar *bar, const char *label, bool wanted, uint64_t total_bytes);
/* One more tensor of `bytes` done. */
void progress_tick(progress_bar *bar, uint64_t bytes);
/* Draws the final state (at 100%: the total becomes what was done) and ends the line. */
void progress_end(progress_bar *bar);

#endif
