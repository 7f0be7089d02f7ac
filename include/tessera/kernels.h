/* tessera/kernels.h — the CUDA kernel sources this library embeds.
 *
 * Every build (CPU-only included) carries the sources of its CUDA kernels and the shared format
 * header as byte strings, each with the SHA-256 computed when the library was built; the JIT
 * compiles from exactly these bytes, and tools/check-kernel-sources proves they equal the files
 * in the source tree. Names are paths relative to the source tree's src/ folder.
 *
 *   for (size_t i = 0; i < tsr_kernel_source_count(); i++) {
 *     const char *name = tsr_kernel_source_name(i);
 *     size_t len;
 *     const char *bytes = tsr_kernel_source(name, &len);
 *     printf("%s  %s (%zu bytes)\n", tsr_kernel_source_sha256(name), name, len);
 *     (void)bytes;
 *   }
 *
 * All four functions only read constant data: they never fail beyond what is stated, never
 * allocate, and any thread may call them at any time (before any other call, after
 * tsr_shutdown). The returned strings live as long as the library is loaded.
 */
#ifndef TESSERA_KERNELS_H
#define TESSERA_KERNELS_H

#include <stddef.h>

#include "tessera/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How many sources are embedded (the same in every build of one source tree). */
TSR_API size_t tsr_kernel_source_count(void);
/* The i-th name, e.g. "cuda/kernels/dequantize.cuh", in the manifest's order; NULL when
 * i >= tsr_kernel_source_count(). */
TSR_API const char *tsr_kernel_source_name(size_t i);
/* The embedded bytes (followed by a NUL not counted in *len, so they are also a C string), or
 * NULL for an unknown or NULL name. len may be NULL; it is set to 0 for an unknown name. */
TSR_API const char *tsr_kernel_source(const char *name, size_t *len);
/* The SHA-256 of those bytes as 64 lowercase hex digits; NULL for an unknown or NULL name. */
TSR_API const char *tsr_kernel_source_sha256(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_KERNELS_H */
