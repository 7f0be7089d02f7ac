#!/usr/bin/env bash
# Gathers what the GPU machine lacks to build tessera (its image has nvcc, NCCL and CMake but not
# OpenBLAS, cJSON, PCRE2's headers, pkg-config or OpenMPI) as Debian 12 packages in .gpu-bundle/debs/, a
# folder git ignores. Run it here, once; then carry .gpu-bundle to the GPU machine and run
# `make test-gpu` there (scripts/gpu-env.sh unpacks the packages into .gpu-bundle/prefix with
# dpkg -x: nothing is installed into the system). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(
  libopenblas-dev libopenblas-pthread-dev libopenblas0-pthread libopenblas0 libgfortran5
  libcjson-dev libcjson1
  libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3
  pkgconf pkgconf-bin libpkgconf3
  # OpenMPI for the mpi and nccl groups (tests/dist, bench/gpu_allsum): the library, its launcher
  # and the shared objects it loads, without the compilers and Fortran its -dev package pulls in
  libopenmpi-dev libopenmpi3 openmpi-bin openmpi-common libpmix2 libhwloc15 libevent-core-2.1-7
  libevent-pthreads-2.1-7 libevent-2.1-7 libfabric1 libucx0 libibverbs1 librdmacm1 libpsm2-2
  libpsm-infinipath1 libnl-3-200 libnl-route-3-200 libmunge2 libltdl7 libnuma1 libxnvctrl0
  libpciaccess0 ocl-icd-libopencl1
)
mkdir -p .gpu-bundle/debs
cd .gpu-bundle/debs
for p in "${packages[@]}"; do
  ls "${p}"_*.deb >/dev/null 2>&1 || apt-get download "$p" 2>/dev/null
done
ls -1 *.deb | wc -l | xargs printf 'gpu-bundle: %s packages in .gpu-bundle/debs\n'
