/* model/progress.c — the loading progress bar on stderr: bytes and tensors done, rate and ETA,
 * redrawn at most ten times a second, and only when stderr is a terminal. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "model/glm_loader.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void draw(glm_loader *ld, double t) {
  double elapsed = t - ld->start_s;
  double fraction = ld->total_bytes ? (double)ld->done_bytes / (double)ld->total_bytes : 1.0;
  if (fraction > 1) fraction = 1;
  double rate = elapsed > 0 ? (double)ld->done_bytes / elapsed : 0;
  double eta = rate > 0 ? (double)(ld->total_bytes - ld->done_bytes) / rate : 0;
  char bar[31];
  int filled = (int)(fraction * 30);
  for (int i = 0; i < 30; i++)
    bar[i] = i < filled ? '#' : '.';
  bar[30] = '\0';
  fprintf(stderr, "\rloading [%s] %5.1f%%  %.0f/%.0f MiB  %zu tensors  %.0f MiB/s  ETA %.0fs ", bar,
          fraction * 100, (double)ld->done_bytes / 1048576.0, (double)ld->total_bytes / 1048576.0,
          ld->done_tensors, rate / 1048576.0, eta);
  ld->last_draw_s = t;
}

void loader_progress_begin(glm_loader *ld) {
  ld->progress = ld->progress && isatty(STDERR_FILENO);
  ld->start_s = now_s();
  ld->last_draw_s = 0;
  ld->total_bytes = 0;
  size_t count = tsr_safetensors_count(ld->ckpt);
  for (size_t i = 0; i < count; i++) {
    tsr_tensor_info info;
    if (tsr_safetensors_info(ld->ckpt, i, &info) == TSR_OK) ld->total_bytes += info.nbytes;
  }
  ld->total_tensors = count;
}

void loader_progress_tick(glm_loader *ld, uint64_t bytes) {
  ld->done_bytes += bytes;
  ld->done_tensors++;
  if (!ld->progress) return;
  double t = now_s();
  if (t - ld->last_draw_s >= 0.1) draw(ld, t);
}

void loader_progress_end(glm_loader *ld) {
  if (!ld->progress) return;
  ld->total_bytes = ld->done_bytes; /* tensors the model does not use (MTP layers) are skipped */
  draw(ld, now_s());
  fputc('\n', stderr);
}
