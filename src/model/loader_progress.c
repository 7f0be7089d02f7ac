/* model/loader_progress.c — the loader's progress bar: the bytes of every tensor in the
 * checkpoint, ticked as each (or this rank's slice of it) is loaded. */
#include "model/glm_loader.h"

void loader_progress_begin(glm_loader *ld) {
  uint64_t total = progress_checkpoint_bytes(ld->ckpt);
  ld->done_bytes = 0;
  /* A tensor-parallel rank loads about 1/N of the bytes (a little more: the embedding and the
     norms are replicated); the bar ends at what was loaded, so the estimate only sets its pace. */
  int ranks = ld->shard->ranks;
  progress_begin(&ld->bar, ranks > 1 ? "loading this rank's shard" : "loading", ld->progress,
                 total / (uint64_t)ranks);
}

void loader_progress_tick(glm_loader *ld, uint64_t bytes) {
  ld->done_bytes += bytes;
  progress_tick(&ld->bar, bytes);
}

void loader_progress_end(glm_loader *ld) {
  progress_end(&ld->bar);
}
