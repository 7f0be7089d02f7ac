/* cuda/lines.h — the host side of cuda/kernels/lines.cuh: an array's 1-d lines along one axis as
 * a layout passed to a kernel by value (each operand's strides over the other axes and along the
 * line), and the choice of how many threads walk one line. */
#ifndef TSR_CUDA_LINES_H
#define TSR_CUDA_LINES_H

#include "core/op.h"

#define TSRI_CUDA_LINES_MAX_OPERANDS 3
/* The threads of every block of a lines kernel (TSR_LINES_BLOCK). */
#define TSRI_CUDA_LINES_BLOCK 256

/* The same layout as the kernels' struct tsr_lines. */
typedef struct {
  int64_t lines, n;
  int64_t shape[TSR_MAX_NDIM];
  int64_t strides[TSRI_CUDA_LINES_MAX_OPERANDS][TSR_MAX_NDIM];
  int64_t offset[TSRI_CUDA_LINES_MAX_OPERANDS];
  int64_t step[TSRI_CUDA_LINES_MAX_OPERANDS];
  int ndim, noperands;
  int lanes;
  int unused;
} tsri_cuda_lines;

/* The lines of `shape` (a view: its shape and size) along `axis`, over `noperands` operands,
 * each broadcast to that shape (right-aligned; stride 0 on its size-1 and missing axes).
 * Operand 0 decides the lanes (tsri_cuda_lines_pick_lanes). */
void tsri_cuda_lines_init(tsri_cuda_lines *l, const tsri_view *shape, int axis,
                          const tsri_view *const *operands, int noperands);
/* Threads per line: 1 when operand 0's lines lie side by side (its step is not 1 and one of the
 * other axes has stride 1: neighbouring threads then read neighbouring elements) and there are
 * enough of them to fill a block, or when they are shorter than 16; else a warp, or a whole
 * block for lines longer than `block_from`. */
void tsri_cuda_lines_pick_lanes(tsri_cuda_lines *l, int64_t block_from);
/* Blocks of TSRI_CUDA_LINES_BLOCK threads for the lines (grid-stride beyond the cap). */
unsigned tsri_cuda_lines_blocks(const tsri_cuda_lines *l);

#endif
