/* cpu/layout.h — the strided block copy the CPU layout and indexing kernels share. */
#ifndef TSR_CPU_LAYOUT_H
#define TSR_CPU_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

/* One strided operand: a buffer's bytes, its element offset and per-axis strides (elements). */
typedef struct {
  unsigned char *base;
  int64_t offset;
  const int64_t *strides;
} tsri_cpu_block;

/* Copies the `shape` block of `src` into `dst` element by element (bytes of `element` each, both
 * of one dtype); rows whose last strides are both 1 move with one memcpy. Zero-size shapes copy
 * nothing. The blocks must not overlap. */
void tsri_cpu_copy_block(const tsri_cpu_block *dst, const tsri_cpu_block *src, const int64_t *shape,
                         int ndim, size_t element);

#endif
