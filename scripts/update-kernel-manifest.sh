#!/usr/bin/env bash
# Rewrites src/cuda/kernels/SHA256SUMS, the one list of the sources embedded for the GPU kernels
# (every src/cuda/kernels/*.cuh and the base headers they include), after a kernel source changed.
# tools/check-kernel-sources then proves the library embeds exactly these bytes.
set -euo pipefail
cd "$(dirname "$0")/../src"
base_headers=$(grep -ho '#include "base/[a-z_]*\.h"' cuda/kernels/*.cuh | sed 's/#include "//; s/"$//' | sort -u)
sha256sum $base_headers $(ls cuda/kernels/*.cuh | sort) > cuda/kernels/SHA256SUMS
cat cuda/kernels/SHA256SUMS
