/* model/progress.c — the progress bar on stderr: bytes and tensors done, rate and ETA, redrawn
 * at most ten times a second, and only when stderr is a terminal. */
#include "model/progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void draw(progress_bar *bar, double t) {
  double elapsed = t - bar->start_s;
  double fraction = bar->total_bytes ? (double)bar->done_bytes / (double)bar->total_bytes : 1.0;
  if (fraction > 1) fraction = 1;
  double rate = elapsed > 0 ? (double)bar->done_bytes / elapsed : 0;
  double left =
      bar->total_bytes > bar->done_bytes ? (double)(bar->total_bytes - bar->done_bytes) : 0;
  double eta = rate > 0 ? left / rate : 0;
  char cells[31];
  int filled = (int)(fraction * 30);
  for (int i = 0; i < 30; i++)
    cells[i] = i < filled ? '#' : '.';
  cells[30] = '\0';
  fprintf(stderr, "\r%s [%s] %5.1f%%  %.0f/%.0f MiB  %zu tensors  %.0f MiB/s  ETA %.0fs ",
          bar->label, cells, fraction * 100, (double)bar->done_bytes / 1048576.0,
          (double)bar->total_bytes / 1048576.0, bar->done_tensors, rate / 1048576.0, eta);
  bar->last_draw_s = t;
}

uint64_t progress_checkpoint_bytes(tsr_safetensors *ckpt) {
  uint64_t total = 0;
  size_t count = tsr_safetensors_count(ckpt);
  for (size_t i = 0; i < count; i++) {
    tsr_tensor_info info;
    if (tsr_safetensors_info(ckpt, i, &info) == TSR_OK) total += info.nbytes;
  }
  return total;
}

void progress_begin(progress_bar *bar, const char *label, bool wanted, uint64_t total_bytes) {
  *bar = (progress_bar){.label = label,
                        .on = wanted && isatty(STDERR_FILENO),
                        .total_bytes = total_bytes,
                        .start_s = now_s()};
}

void progress_tick(progress_bar *bar, uint64_t bytes) {
  bar->done_bytes += bytes;
  bar->done_tensors++;
  if (!bar->on) return;
  double t = now_s();
  if (t - bar->last_draw_s >= 0.1) draw(bar, t);
}

void progress_end(progress_bar *bar) {
  if (!bar->on) return;
  bar->total_bytes = bar->done_bytes; /* tensors that were skipped (MTP layers) count as done */
  draw(bar, now_s());
  fputc('\n', stderr);
}
