/* base/kernel_sources.h — the CUDA kernel sources embedded in the library at build time
 * (cmake/embed_kernels.cmake writes the table from src/cuda/kernels/SHA256SUMS), and the hash of
 * a source's include closure, which keys JIT modules and is what AOT modules record. Plain bytes:
 * every build has them, CPU-only included, so the gate and `tessera info` work everywhere. */
#ifndef TSR_BASE_KERNEL_SOURCES_H
#define TSR_BASE_KERNEL_SOURCES_H

#include <stdbool.h>
#include <stddef.h>

#include "base/sha256.h"

typedef struct {
  const char *name;           /* relative to src/, e.g. "cuda/kernels/dequantize.cuh" */
  const unsigned char *bytes; /* `length` bytes, then a NUL not counted in `length` */
  size_t length;
  const char *sha256; /* lowercase hex of the bytes, computed by CMake's file(SHA256) */
} tsri_kernel_source_entry;

/* The generated table, in the manifest's order. */
extern const tsri_kernel_source_entry tsri_kernel_source_table[];
extern const size_t tsri_kernel_source_table_count;

/* NULL when no embedded source has that name. */
const tsri_kernel_source_entry *tsri_kernel_source_find(const char *name);

/* Each embedded source that `name` includes with `#include "X"`, transitively, `name` itself
 * included: in_closure[i] for table entry i. Includes of names that are not embedded (the libc
 * headers, <...> includes) are not part of it. False when `name` is not embedded. */
bool tsri_kernel_source_closure(const char *name, bool *in_closure);

/* SHA-256 over "NAME\nSHA256HEX\n" for every source of the closure, in table order: changes
 * whenever any byte the kernel can see changes. cmake/embed_kernels.cmake computes the same for
 * the AOT modules' records. False when `name` is not embedded. */
bool tsri_kernel_source_closure_sha256(const char *name, char hex[TSRI_SHA256_HEX]);

#endif
