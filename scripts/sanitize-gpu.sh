#!/usr/bin/env bash
# On the GPU machine: runs the quantized-op GPU tests under compute-sanitizer (issue 13: the
# sweep once under memcheck) — test_qmm_sweep with a lowered case count, then test_quant_gpu —
# with every CUDA quantized output poisoned (TSR_DEBUG_POISON=1, which the sweep also sets itself).
# Builds those two tests in $BUILD (default build-gpu, scripts/test-gpu.sh's) when they are not
# there yet, against the packages of .gpu-bundle as test-gpu.sh does. Output goes to stdout and
# to $OUT/sanitize_<tool>_<test>.txt (the device tool's output folder; $BUILD/sanitize/ when
# $OUT is unset), one line per run in sanitize_summary.txt.
#
#   CASES=300 (TSR_SWEEP_CASES of the sweep), SEED=1 (TSR_SWEEP_SEED),
#   TOOLS="memcheck" (also racecheck, synccheck, initcheck), TESTS="test_qmm_sweep test_quant_gpu",
#   DEVICE_TESTS="" (tests that use the default device, run with TSR_DEFAULT_DEVICE=gpu and
#   TSR_SANITIZED=1, e.g. "test_qmm_geometry": Step 3's geometry cases on the GPU),
#   SANITIZER_FLAGS="..." (more compute-sanitizer options).
# The JIT disk cache makes a run after `make test-gpu` (or test_qmm_sweep alone) on the same
# machine skip the compiles; the sweep's parallel warm-up is off here (TSR_SWEEP_JOBS=1), so that
# only one process runs under the sanitizer.
# compute-sanitizer needs the Firecracker runtime (on gVisor it refuses the device: the device
# folder's KINDS.md); the script says so and fails when it does not start.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d .gpu-bundle/debs ] || { echo "sanitize-gpu: no .gpu-bundle/debs (run scripts/gpu-bundle.sh here and carry .gpu-bundle)" >&2; exit 2; }
. scripts/gpu-env.sh
build=${BUILD:-build-gpu}
out=${OUT:-$build/sanitize}
mkdir -p "$out"
log() { tee -a "$out/$1"; }
tests=${TESTS:-test_qmm_sweep test_quant_gpu}
device_tests=${DEVICE_TESTS:-}
missing=""
for t in $tests $device_tests; do [ -x "$build/$t" ] || missing="$missing $t"; done
if [ -n "$missing" ]; then
  {
    cmake -S . -B "$build" -DTSR_CUDA=ON -DTSR_WERROR=ON -DPKG_CONFIG_EXECUTABLE="$PKG_CONFIG_EXECUTABLE"
    # shellcheck disable=SC2086 # one target per word
    cmake --build "$build" -j"$(nproc)" --target $missing
  } 2>&1 | log sanitize_build.txt
fi
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$sanitizer" ] || { echo "sanitize-gpu: compute-sanitizer not found" | log sanitize_summary.txt; exit 2; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | log sanitize_summary.txt || true
failed=0
for tool in ${TOOLS:-memcheck}; do
  for t in $tests $device_tests; do
    start=$(date +%s)
    status=0
    device=()
    case " $device_tests " in *" $t "*) device=(TSR_DEFAULT_DEVICE=gpu TSR_SANITIZED=1) ;; esac
    # shellcheck disable=SC2086 # SANITIZER_FLAGS: one option per word
    env "${device[@]}" TSR_DEBUG_POISON=1 TSR_SWEEP_CASES=${CASES:-300} TSR_SWEEP_SEED=${SEED:-1} TSR_SWEEP_JOBS=1 \
      "$sanitizer" --tool "$tool" --error-exitcode 3 --print-limit 20 ${SANITIZER_FLAGS:-} \
      "./$build/$t" 2>&1 | log "sanitize_${tool}_$t.txt" || status=$?
    summary=$(grep -h "ERROR SUMMARY\|RACECHECK SUMMARY\|Device not supported" \
      "$out/sanitize_${tool}_$t.txt" | tail -1 || true)
    echo "sanitize: $tool $t: exit $status in $(( $(date +%s) - start )) s${summary:+; $summary}" |
      log sanitize_summary.txt
    [ "$status" = 0 ] || failed=1
  done
done
exit $failed
