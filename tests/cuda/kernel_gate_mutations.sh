#!/usr/bin/env bash
# tests/cuda/kernel_gate_mutations.sh GATE SRC — the gate's mutation tests: a copy of the kernel
# sources passes the gate unchanged; each mutation below must make it fail (exit 1) and name the
# damage. The library under test embeds the real sources, so every mutation is a tree that no
# longer matches the library (and, for the manifest ones, no longer matches itself).
set -uo pipefail
gate=$1 src=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/tsr-gate.XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0 count=0

# A fresh copy of exactly what the manifest covers: the kernel folder and the files it lists.
fresh() {
  rm -rf "$work/src" && mkdir -p "$work/src/cuda"
  cp -R "$src/cuda/kernels" "$work/src/cuda/kernels"
  while read -r _ name; do
    mkdir -p "$work/src/$(dirname "$name")"
    cp "$src/$name" "$work/src/$name"
  done < "$src/cuda/kernels/SHA256SUMS"
}

# expect_fail NAME PATTERN: the gate on $work/src exits 1 and its output matches PATTERN.
expect_fail() {
  local name=$1 pattern=$2 out rc
  count=$((count + 1))
  out=$("$gate" --src "$work/src" 2>&1); rc=$?
  if [ $rc -ne 1 ]; then
    echo "FAIL: $name: the gate exited $rc, want 1"; echo "$out"; failures=$((failures + 1))
  elif ! grep -Eq "$pattern" <<<"$out"; then
    echo "FAIL: $name: no message matching '$pattern'"; echo "$out"; failures=$((failures + 1))
  else
    echo "ok: $name"
  fi
}

k=cuda/kernels/dequantize.cuh
h=base/quant_format.h

fresh
if ! "$gate" --src "$work/src"; then echo "FAIL: the unmutated copy does not pass"; exit 1; fi

fresh; printf '\x01' | dd of="$work/src/$k" bs=1 seek=100 conv=notrunc status=none
expect_fail "flipped byte in a kernel" "$k: .*(differ|stale)"
fresh; printf 'X' | dd of="$work/src/$h" bs=1 seek=10 conv=notrunc status=none
expect_fail "flipped byte in the shared format header" "$h: .*differ"
fresh; truncate -s -7 "$work/src/$k"
expect_fail "truncation" "$k: .*differ"
fresh; printf '\n' >> "$work/src/$k"
expect_fail "appended byte" "$k: .*differ"
fresh; a=cuda/kernels/common.cuh; mv "$work/src/$a" "$work/tmp"; mv "$work/src/$k" "$work/src/$a"
mv "$work/tmp" "$work/src/$k"
expect_fail "two kernels swapped" "$a: .*differ"
fresh; sed -i "s|^[0-9a-f]\{8\}\(.*  $k\)$|00000000\1|" "$work/src/cuda/kernels/SHA256SUMS"
expect_fail "stale hash in the manifest" "$k: .*stale hash"
fresh; rm "$work/src/$k"
expect_fail "missing file" "$k: listed in the manifest but missing"
fresh; cp "$work/src/$k" "$work/src/cuda/kernels/extra.cuh"
expect_fail "extra file" "extra.cuh: in the kernel folder but not in the manifest"
fresh; sed -i 's/$/\r/' "$work/src/$k"
expect_fail "CRLF line ends" "$k: has CR bytes"
fresh; { printf '\xef\xbb\xbf'; cat "$src/$k"; } > "$work/src/$k"
expect_fail "UTF-8 BOM" "$k: starts with a UTF-8 BOM"
fresh; : > "$work/src/$k"
expect_fail "empty file" "$k: empty file"
fresh; mv "$work/src/$k" "$work/src/cuda/kernels/dequant.cuh"
expect_fail "renamed kernel" "dequant.cuh: in the kernel folder but not in the manifest"
fresh; sed -i "\|  $k\$|d" "$work/src/cuda/kernels/SHA256SUMS"
expect_fail "manifest line removed" "$k: embedded in the library but not in the manifest"
fresh; tail -n 1 "$src/cuda/kernels/SHA256SUMS" >> "$work/src/cuda/kernels/SHA256SUMS"
expect_fail "manifest line duplicated" "listed twice"
fresh; printf 'not a checksum line\n' >> "$work/src/cuda/kernels/SHA256SUMS"
expect_fail "malformed manifest line" "malformed line"
fresh; rm "$work/src/cuda/kernels/SHA256SUMS"
expect_fail "missing manifest" "the manifest is missing"

echo "$((count - failures)) of $count mutations caught"
[ $failures -eq 0 ]
