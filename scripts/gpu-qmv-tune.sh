#!/usr/bin/env bash
# On the GPU machine: builds tessera (scripts/gpu-build.sh), then runs bench/gpu_qmm's dense
# decode rows once per shape of the tensor-core decode kernel (TSR_QMV_MMA, src/base/env.h: "off"
# is the earlier qmma kernel), each into $OUT/qmv_<shape>.txt, and the GPU quantized-matmul tests
# under the default choice and under each of SWEEP_SHAPES (default: the staged and unstaged
# shapes and the largest block; each into $OUT/tests_<shape>.txt).
# SHAPES, SWEEP_SHAPES, FORMATS ("affine4,affine8") and MS ("1,2,4,8") narrow or widen a run;
# TEST_REGEX narrows the tests; TESTS=0 skips them.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu-build.sh gpu-qmv-tune
gpu_build >"$build/build.log" 2>&1 || { tail -30 "$build/build.log" | log build.txt; exit 1; }
for shape in ${SHAPES:-off 1,8,2,0 1,8,2,1}; do
  TSR_QMV_MMA=$shape TSR_BENCH_TABLES=dense TSR_BENCH_FORMATS="${FORMATS:-affine4,affine8}" \
    TSR_BENCH_M="${MS:-1,2,4,8}" timeout 120 "./$build/bench/gpu_qmm" >"$build/qmv.txt" 2>&1
  status=$?
  log "qmv_$shape.txt" <"$build/qmv.txt" >/dev/null
  echo "gpu-qmv-tune: $shape done (status $status)"
done
[ "${TESTS:-1}" = 0 ] && exit 0
failed=0
for shape in default ${SWEEP_SHAPES:-1,8,2,1 1,8,2,0 2,16,1,1}; do
  if [ "$shape" = default ]; then unset TSR_QMV_MMA; else export TSR_QMV_MMA=$shape; fi
  (cd "$build" && TSR_KERNELS=jit timeout 400 ctest -R "${TEST_REGEX:-quant_gpu|qmm_sweep|conformance}" \
    --output-on-failure -j4) 2>&1 | log "tests_$shape.txt" | tail -3 || failed=1
done
exit $failed
