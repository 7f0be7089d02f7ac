#!/usr/bin/env bash
# On the GPU machine: builds tessera with CUDA against the packages scripts/gpu-bundle.sh gathered
# (unpacked by scripts/gpu-env.sh), runs the whole suite, then `make run`'s program steps.
# Results go to stdout and, when $OUT is set (the device tool's output folder), to $OUT/*.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu-build.sh test-gpu
jobs=$(nproc)
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  gpu_build
} 2>&1 | log build.txt
# TESTS=<regex> runs only the matching tests; BENCH="gpu_basics ..." runs those benchmarks after
# them (with the bundle's libraries on the path); RUN=0 skips the program steps below.
# EXCLUDE=<regex> leaves the matching tests out.
# KERNELS="jit aot" runs the suite once per kernel source (TSR_KERNELS), each into test_<k>.txt.
# The default AOT set (cmake/kernels.cmake) covers the model's common kernels, not every
# specialization the suite compiles, so under `aot` the rest fail by design; with AOT_SET=suite
# the jit pass records every specialization it loads (TSR_KERNEL_RECORD) and the library is
# rebuilt with all of them as AOT modules (TSR_AOT_EXTRA) before the aot pass; the list is kept
# in $OUT/suite-kernels.txt, and AOT_RECORD=<file> names one to use (KERNELS=aot alone then runs
# the aot pass of an earlier run's list, e.g. on another machine).
# A failing pass does not stop the benchmarks and program steps; the script's status reports it.
failed=0
record="${AOT_RECORD:-$PWD/$build/suite-kernels.txt}"
[ "${record#/}" = "$record" ] && record="$PWD/$record" # the tests run in $build
# the jit pass records when the aot pass needs a list and none was given
records=0
[ "${AOT_SET:-}" = suite ] && [ -z "${AOT_RECORD:-}" ] && records=1
for k in ${KERNELS:-auto}; do
  if [ "$k" = jit ] && [ $records = 1 ]; then
    rm -f "$record"
    export TSR_KERNEL_RECORD="$record"
  fi
  if [ "$k" = aot ] && [ "${AOT_SET:-}" = suite ]; then
    unset TSR_KERNEL_RECORD
    if [ ! -s "$record" ]; then
      echo "test-gpu: AOT_SET=suite needs a jit pass before the aot one, or AOT_RECORD" | log "test_$k.txt"
      failed=1
      continue
    fi
    # AOT options may not hold quotes, backslashes or ;: such a specialization stays JIT-only
    { grep -v '["\\;]' "$record" || true; } | sort -u >"$build/suite-kernels.aot"
    wc -l <"$build/suite-kernels.aot" | xargs printf 'test-gpu: %s specializations built as AOT modules\n' |
      log "test_$k.txt"
    if ! AOT_EXTRA="$PWD/$build/suite-kernels.aot" gpu_build >"$build/build_aot.log" 2>&1; then
      grep -v "^\[" "$build/build_aot.log" | tail -40 | log build_aot.txt
      failed=1
      continue
    fi
  fi
  (cd "$build" && TSR_KERNELS=$k ctest --output-on-failure -j"$jobs" ${TESTS:+-R "$TESTS"} ${EXCLUDE:+-E "$EXCLUDE"}) 2>&1 |
    log "test_$k.txt" || failed=1
  if [ "$k" = jit ] && [ $records = 1 ] && [ -n "$out" ] && [ -s "$record" ]; then
    sort -u "$record" >"$out/suite-kernels.txt"
  fi
done
unset TSR_KERNEL_RECORD
for b in ${BENCH:-}; do "./$build/bench/$b" 2>&1 | log "bench_$b.txt" || failed=1; done
[ "${RUN:-1}" = 0 ] && exit $failed
{
  "./$build/tessera" info
  "./$build/tessera" selfcheck
  [ -f "$build/demo-model/config.json" ] || "./$build/tessera" demo-model -o "$build/demo-model"
  "./$build/tessera" generate -m "$build/demo-model" --chat -p "What is the capital of France?" -n 48
} 2>&1 | log run.txt
exit $failed
