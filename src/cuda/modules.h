/* cuda/modules.h — CUDA kernel modules: the AOT fatbins built by nvcc, JIT compilation with NVRTC
 * from the embedded sources (cached in memory and on disk), and the choice between them
 * (TSR_KERNELS). A kernel is src/cuda/kernels/<kernel>.cuh with the entry tsr_<kernel>; a
 * specialization is its options, "-DNAME=VALUE" words separated by single spaces. Loading goes
 * through the runtime's cudaLibrary* API (never libcuda). Not the launch: callers launch the
 * cudaKernel_t with cudaLaunchKernel. */
#ifndef TSR_CUDA_MODULES_H
#define TSR_CUDA_MODULES_H

#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/disk_cache.h"
#include "base/env.h"
#include "base/sha256.h"
#include "tessera/base.h"

/* One AOT module (the generated table, cmake/kernels.cmake's TSR_AOT_SPECIALIZATIONS): its
 * record is the kernel, the options, the entry symbol and the SHA-256 of the include closure its
 * fatbin was compiled from. */
typedef struct {
  const char *kernel, *options, *symbol, *closure_sha256;
  const unsigned char *image;
  size_t image_bytes;
} tsri_kernel_aot_module;

extern const tsri_kernel_aot_module tsri_kernel_aot_table[];
extern const size_t tsri_kernel_aot_table_count;
/* major * 10 + minor of the oldest GPU the fatbins run on (sm_90 code + compute_90 PTX: 90). */
extern const int tsri_kernel_aot_min_cc;

/* The module for exactly (kernel, options), or NULL. */
const tsri_kernel_aot_module *tsri_cuda_aot_find(const char *kernel, const char *options);
/* TSR_OK when the module's record equals the closure hash of the embedded sources; otherwise
 * TSR_ERR_STATE with both hashes named (the module is stale and must not be loaded). */
tsr_status tsri_cuda_aot_check(const tsri_kernel_aot_module *module);

/* ---- JIT (cuda/jit.c): NVRTC needs no GPU, so compiling and caching work on any machine ---- */

typedef enum {
  TSRI_JIT_COMPILED = 0, /* no disk entry (or no cache folder): compiled, then stored */
  TSRI_JIT_DISK_HIT,     /* a sound disk entry was used; nothing compiled */
  TSRI_JIT_REBUILT       /* a corrupt or truncated disk entry was found, compiled and replaced */
} tsri_jit_origin;

typedef struct {
  unsigned char *image; /* the CUBIN (malloc'ed; tsri_cuda_jit_module_free) */
  size_t image_bytes;
  char symbol[128];               /* tsr_<kernel>_jit_<12 hex of SHA-256(options)> */
  uint8_t key[TSRI_SHA256_BYTES]; /* the disk cache key */
  tsri_jit_origin origin;
} tsri_jit_module;

/* The disk cache key: SHA-256 over the include closure's hash, every NVRTC option (the
 * specialization, the symbol suffix, the architecture), the compute capability and NVRTC's
 * version. TSR_ERR_INVALID for an unknown kernel or malformed options. */
tsr_status tsri_cuda_jit_key(const char *kernel, const char *options, int cc_major, int cc_minor,
                             uint8_t key[TSRI_SHA256_BYTES]);

/* Compiles (kernel, options) for sm_<cc_major><cc_minor>, or takes it from `cache_dir` (NULL or
 * "": no disk cache). TSR_ERR_INVALID for an unknown kernel or malformed options, TSR_ERR_DEVICE
 * when NVRTC fails (its log in the message), TSR_ERR_NOMEM. A failure to store the entry is only
 * warned about. Any thread. */
tsr_status tsri_cuda_jit_compile(const char *kernel, const char *options, int cc_major,
                                 int cc_minor, const char *cache_dir, tsri_jit_module *out);
void tsri_cuda_jit_module_free(tsri_jit_module *module);

/* The folder JIT entries go to: "<TSR_CACHE_DIR or its default>/kernels", "" when none. */
const char *tsri_cuda_jit_cache_dir(void);

/* ---- loading (cuda/modules.c) ----------------------------------------------------------- */

/* The kernel for (kernel, options) on `device`, loaded once per process and path and kept until
 * tsri_cuda_modules_release. `path` AUTO: the AOT module when one was built for the
 * specialization and loads on the device, JIT otherwise (a stale AOT module is refused with a
 * warning); JIT: always NVRTC; AOT: the AOT module or an error (TSR_ERR_UNSUPPORTED when none
 * was built or the GPU is older than the fatbins, TSR_ERR_STATE when it is stale, TSR_ERR_DEVICE
 * when it does not load). *used_aot (may be NULL) says which ran. Any thread. */
tsr_status tsri_cuda_kernel_get_via(const char *kernel, const char *options, int device,
                                    tsri_env_kernels path, cudaKernel_t *out, bool *used_aot);
/* The same with the path TSR_KERNELS chose. */
tsr_status tsri_cuda_kernel_get(const char *kernel, const char *options, int device,
                                cudaKernel_t *out);
/* Unloads every module (the device backend's teardown calls it; kernels got before are then
 * invalid). */
void tsri_cuda_modules_release(void);

#endif
