#!/usr/bin/env bash
# On the GPU machine: where a GPU decode step's host time goes. Builds like scripts/test-gpu.sh
# (no tests), then runs bench/gpu_basics (its last table: the host cost of each kind of decode
# op; BASICS=0 skips it) and bench/generate on the GPU with TSR_PROFILE=1 (core/profile.h: host time
# per primitive, the inline launch on the submitting thread for CUDA ops) and lists, with
# TSR_LOG=debug, the JIT specializations `make run`'s model path loads (the candidates for the
# AOT set, cmake/kernels.cmake). LAYERS (default 8) and STEPS (16) size the run. Results go to
# stdout and, when $OUT is set (the device tool's output folder), to $OUT/gpu_basics.txt,
# $OUT/profile.txt and $OUT/jit_specializations.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu-build.sh gpu-profile
gpu_build >"${out:-/tmp}/gpu-profile-build.txt" 2>&1
[ "${BASICS:-1}" = 0 ] || "./$build/bench/gpu_basics" 2>&1 | log gpu_basics.txt
TSR_PROFILE=1 TSR_LOG=info "./$build/bench/generate" --device gpu --layers "${LAYERS:-8}" \
  --steps "${STEPS:-16}" 2>&1 | log profile.txt
model="$build/demo-model"
[ -f "$model/config.json" ] || "./$build/tessera" demo-model -o "$model" >/dev/null
TSR_LOG=debug "./$build/tessera" generate -m "$model" --chat -p "What is the capital of France?" \
  -n 8 2>&1 | grep -i "specialization\|jit" | sort -u | log jit_specializations.txt
