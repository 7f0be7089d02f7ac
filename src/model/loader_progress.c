/* model/loader_progress.c — the loader's progress bar: the bytes of every tensor in the
 * checkpoint, ticked as each is loaded. */
#include "model/glm_loader.h"

void loader_progress_begin(glm_loader *ld) {
  uint64_t total = 0;
  size_t count = tsr_safetensors_count(ld->ckpt);
  for (size_t i = 0; i < count; i++) {
    tsr_tensor_info info;
    if (tsr_safetensors_info(ld->ckpt, i, &info) == TSR_OK) total += info.nbytes;
  }
  ld->done_bytes = 0;
  progress_begin(&ld->bar, "loading", ld->progress, total);
}

void loader_progress_tick(glm_loader *ld, uint64_t bytes) {
  ld->done_bytes += bytes;
  progress_tick(&ld->bar, bytes);
}

void loader_progress_end(glm_loader *ld) {
  progress_end(&ld->bar);
}
