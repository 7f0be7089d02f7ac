# Sourced on the GPU machine (by `make test-gpu`): unpacks .gpu-bundle/debs (made here by
# scripts/gpu-bundle.sh) into .gpu-bundle/prefix with dpkg -x, and points pkg-config, the
# compiler and the loader at it. Nothing is written outside the repository.
bundle="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.gpu-bundle"
prefix="$bundle/prefix"
# Unpacked again whenever the set of packages changed (a stamp lists them).
if [ "$(ls "$bundle"/debs)" != "$(cat "$prefix/.debs" 2>/dev/null)" ]; then
  rm -rf "$prefix"
  for deb in "$bundle"/debs/*.deb; do dpkg -x "$deb" "$prefix"; done
  ls "$bundle"/debs >"$prefix/.debs"
fi
lib="$prefix/usr/lib/x86_64-linux-gnu"
export PKG_CONFIG_SYSROOT_DIR="$prefix"
export PKG_CONFIG_PATH="$lib/pkgconfig:$lib/openblas-pthread/pkgconfig:$prefix/usr/share/pkgconfig"
export PKG_CONFIG_EXECUTABLE="$prefix/usr/bin/pkgconf"
export LD_LIBRARY_PATH="$lib:$lib/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LIBRARY_PATH="$lib:$lib/openblas-pthread"
# OpenMPI unpacked away from /usr finds its components and help files through OPAL_PREFIX; its
# launcher and compiler wrapper are only alternatives' links in Debian, so name them here.
export OPAL_PREFIX="$prefix/usr"
mkdir -p "$bundle/bin"
ln -sf "$prefix/usr/bin/orterun" "$bundle/bin/mpirun"
ln -sf "$prefix/usr/bin/opal_wrapper" "$bundle/bin/mpicc"
export PATH="$bundle/bin:$prefix/usr/bin:$PATH"
export NCCL_NVLS_ENABLE=0 # the machine's rule: NVLink multicast stays off
