#!/usr/bin/env bash
# Installs what building and testing tessera needs, from Debian's packages, and only what is
# missing: running it twice does nothing the second time. Called by `make run` and `make test`.
set -euo pipefail

packages=(
  build-essential   # gcc, make
  cmake
  pkg-config
  libopenblas-dev   # CPU dense GEMM
  libopenmpi-dev    # distributed groups over MPI
  openmpi-bin       # mpirun for the multi-rank tests
  libcjson-dev      # JSON: config.json, safetensors headers, `tessera info --json`
  libpcre2-dev      # the tokenizer's pre-split regex
  binutils          # readelf, for the CI check that nothing links libcuda
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "deps.sh: installing ${missing[*]}" >&2
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo_cmd=(sudo)
  else
    echo "deps.sh: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
