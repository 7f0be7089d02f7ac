/* base/build_info.c — tsr_build_info_get: what CMake and the compiler told this build. */
#include <string.h>

#include "tessera/base.h"

#ifndef TSR_BUILD_TYPE
#define TSR_BUILD_TYPE "unknown"
#endif
#ifndef TSR_SANITIZERS
#define TSR_SANITIZERS ""
#endif

void tsr_build_info_get(tsr_build_info *out) {
  if (!out) return;
  memset(out, 0, sizeof *out);
  out->version = tsr_version();
  out->build_type = TSR_BUILD_TYPE;
  out->sanitizers = TSR_SANITIZERS;
#if defined(__clang__)
  out->compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
  out->compiler = "gcc " __VERSION__;
#else
  out->compiler = "unknown";
#endif
#ifdef TSR_HAVE_CUDA
  out->cuda = true;
  out->cuda_toolkit_version = TSR_CUDA_TOOLKIT_VERSION;
#endif
}
