/* model/loader_progress.c — the loader's progress bar: the bytes of every tensor in the
 * checkpoint, ticked as each (or this rank's slice of it) is loaded. */
#include "model/glm_loader.h"

void loader_progress_begin(glm_loader *ld) {
  uint64_t total = 0;
  size_t count = tsr_safetensors_count(ld->ckpt);
  for (size_t i = 0; i < count; i++) {
    tsr_tensor_info info;
    if (tsr_safetensors_info(ld->ckpt, i, &info) == TSR_OK) total += info.nbytes;
  }
  ld->done_bytes = 0;
  /* A tensor-parallel rank loads about 1/N of the bytes (a little more: the embedding and the
     norms are replicated); the bar ends at what was loaded, so the estimate only sets its pace. */
  int ranks = ld->shard ? ld->shard->ranks : 1;
  progress_begin(&ld->bar, ranks > 1 ? "loading this rank's shard" : "loading", ld->progress,
                 total / (uint64_t)(ranks > 1 ? ranks : 1));
}

void loader_progress_tick(glm_loader *ld, uint64_t bytes) {
  ld->done_bytes += bytes;
  progress_tick(&ld->bar, bytes);
}

void loader_progress_end(glm_loader *ld) {
  progress_end(&ld->bar);
}
