#!/usr/bin/env python3
"""tools/gen_npy_fixtures.py — the tiny .npy files under tests/data/npy/, written by numpy itself.

tests/io/test_npy.c reads them to prove tessera's reader agrees with numpy's writer (and that
tessera's writer produces numpy's bytes). Not part of the build; run by hand:

    python3 tools/gen_npy_fixtures.py        # uses .cache/venv-golden/ like gen_quant_golden.py

The values are fixed (no randomness), so the files never change. index.txt lists each file with
its dtype, shape and values as the C test expects them.
"""

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NUMPY_PIN = "numpy==2.4.6"


def ensure_numpy(venv_dir):
    try:
        import numpy  # noqa: F401

        return
    except ImportError:
        pass
    python = os.path.join(venv_dir, "bin", "python")
    if os.path.abspath(sys.executable) == os.path.abspath(python):
        sys.exit("gen_npy_fixtures: numpy is missing from " + venv_dir)
    if not os.path.exists(python):
        subprocess.check_call([sys.executable, "-m", "venv", venv_dir])
    subprocess.check_call([python, "-m", "pip", "install", "--quiet", NUMPY_PIN])
    os.execv(python, [python, os.path.abspath(__file__), *sys.argv[1:]])


def main():
    ensure_numpy(os.path.join(REPO, ".cache", "venv-golden"))
    import numpy as np
    from numpy.lib import format as npy_format

    out = os.path.join(REPO, "tests", "data", "npy")
    os.makedirs(out, exist_ok=True)
    bf16_bits = np.array([0x3F80, 0xC020, 0x7F80, 0x0001], dtype=np.uint16)  # 1, -2.5, inf, tiny
    arrays = {
        "f4_2x3.npy": (np.arange(6, dtype=np.float32).reshape(2, 3) * 0.5 - 1, (1, 0)),
        "f2_4.npy": (np.array([1.0, -0.5, 65504.0, 2.0**-24], dtype=np.float16), (1, 0)),
        "i8_scalar.npy": (np.array(-1234567890123, dtype=np.int64), (1, 0)),
        "u1_0x5.npy": (np.zeros((0, 5), dtype=np.uint8), (1, 0)),
        "b1_7.npy": (np.array([1, 0, 0, 1, 1, 0, 1], dtype=bool), (1, 0)),
        "u2_bf16_4.npy": (bf16_bits, (1, 0)),
        "i4_2x2x2_v2.npy": (np.arange(-4, 4, dtype=np.int32).reshape(2, 2, 2), (2, 0)),
        "u4_3_v3.npy": (np.array([0, 1, 0xFFFFFFFF], dtype=np.uint32), (3, 0)),
        "i1_fortran_2x3.npy": (np.asfortranarray(np.arange(6, dtype=np.int8).reshape(2, 3)), (1, 0)),
    }
    lines = ["# file dtype shape values (C order) — written by tools/gen_npy_fixtures.py with numpy "
             + np.__version__]
    for name, (arr, version) in arrays.items():
        with open(os.path.join(out, name), "wb") as f:
            npy_format.write_array(f, arr, version=version, allow_pickle=False)
        values = " ".join(repr(v) for v in np.ascontiguousarray(arr).ravel().tolist())
        lines.append(f"{name} {arr.dtype.str} {arr.shape} {values}")
    with open(os.path.join(out, "index.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"gen_npy_fixtures: {len(arrays)} files in {out}")


if __name__ == "__main__":
    main()
