#!/usr/bin/env bash
# Sourced by the GPU machine's scripts (test-gpu.sh, gpu-profile.sh) from the repository root, with
# the caller's name as $1 (for messages): checks that .gpu-bundle was carried, unpacks it
# (scripts/gpu-env.sh), and defines `build` (BUILD, default build-gpu), `out` ($OUT, the device
# tool's output folder, or empty), `log FILE` (stdin to stdout, and to $out/FILE when out is set)
# and `gpu_build` (configures and builds tessera with CUDA, warnings as errors, on every core;
# AOT_EXTRA=<file> adds that file's specializations to the AOT set, cmake/kernels.cmake).
[ -d .gpu-bundle/debs ] || {
  echo "$1: no .gpu-bundle/debs (run scripts/gpu-bundle.sh here and carry .gpu-bundle)" >&2
  exit 2
}
. scripts/gpu-env.sh
build=${BUILD:-build-gpu}
out=${OUT:-}
log() { if [ -n "$out" ]; then tee -a "$out/$1"; else cat; fi; }
gpu_build() {
  cmake -S . -B "$build" -DTSR_CUDA=ON -DTSR_WERROR=ON -DPKG_CONFIG_EXECUTABLE="$PKG_CONFIG_EXECUTABLE" \
    -DTSR_AOT_EXTRA="${AOT_EXTRA:-}"
  cmake --build "$build" -j"$(nproc)"
}
