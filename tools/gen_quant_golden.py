#!/usr/bin/env python3
"""tools/gen_quant_golden.py — golden vectors for tessera's quantized formats, computed by MLX.

It is NOT part of the build and never runs in CI: the C tests read the committed .npy files under
tests/data/quant/ and need neither Python nor MLX. Run it by hand when the case list changes:

    python3 tools/gen_quant_golden.py                 # writes tests/data/quant/
    python3 tools/gen_quant_golden.py --out /tmp/q    # elsewhere (e.g. to diff against the commit)

The first run creates a virtual environment (default .cache/venv-golden/ under the repository,
which .gitignore already ignores; --venv DIR to choose) and installs the pinned wheels there:
mlx==0.32.4 with its CPU backend mlx-cpu==0.32.4, and numpy (PYPI_PINS below). It then re-runs
itself with that interpreter. Everything is seeded, so two runs write identical bytes.

What it writes (see tests/data/quant/manifest.json, whose "cases" list describes every file):
  quantize/     mx.quantize on random matrices and on the tricky groups of quant-spec.md Part B §7,
                every mode x bits x group size x input dtype (float32, float16, bfloat16)
  dequantize/   mx.dequantize of every quantize case, and of packed inputs built code by code
                (every fp4/fp8 element code, E8M0 codes 0..255 incl. 0 and 255, every E4M3 scale
                code incl. 0x7F/0xFF and negative ones, arbitrary affine scales and biases)
  qmm/          mx.quantized_matmul over many geometries (M 1..129, N and K off every tile,
                K = 16 mod 32 for nvfp4, N = 16 mod 32 with transpose=False, NaN rows and NaN/Inf
                groups next to clean ones, batch broadcasting, 1-D x)
  gather/       mx.gather_qmm with lhs and/or rhs indices, sorted and unsorted

Storage: numpy has no bfloat16, so a bfloat16 array is stored as its '<u2' bit patterns and the
manifest gives its logical "dtype": "bfloat16" (tessera reads it with tsr_npy_load_as(...,
TSR_BFLOAT16)). float16 arrays are '<f2', indices '<i4', packed weights '<u4', fp scales '|u1'.

Rows that MLX computes with undefined behaviour (NaN or Inf inside a group: integer conversion of
NaN, a whole group poisoned) are listed per case under "undefined_rows"; tessera defines its own
rule there (quant-spec.md Part A §2) and its tests skip those rows when comparing bits.
Every matmul case also records MLX's error against a float64 product of the dequantized weights
("mlx_max_abs_err_vs_f64", relative to |x| @ |w_hat|): MLX's CPU accumulates float16/bfloat16
in that dtype. An array written twice (same bytes) is stored once and referenced by both cases.

The case lists live in tools/quant_golden/ (common.py: writer and MLX wrappers; formats.py:
quantize/dequantize; matmul.py: quantized_matmul/gather_qmm); tools/README.md lists what MLX
0.32.4 does differently from quant-spec.md.
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the sources

MLX_VERSION = "0.32.4"
PYPI_PINS = ["mlx==0.32.4", "mlx-cpu==0.32.4", "numpy==2.4.6"]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def ensure_environment(venv_dir):
    """Re-runs this script inside a venv holding the pinned wheels, creating it if needed."""
    try:
        import mlx.core as mx  # noqa: F401
        import numpy  # noqa: F401

        if mx.__version__ == MLX_VERSION:
            return
    except ImportError:
        pass
    python = os.path.join(venv_dir, "bin", "python")
    if os.path.abspath(sys.executable) == os.path.abspath(python):
        sys.exit(f"gen_quant_golden: {venv_dir} does not provide mlx {MLX_VERSION}")
    if not os.path.exists(python):
        print(f"gen_quant_golden: creating {venv_dir}", file=sys.stderr)
        subprocess.check_call([sys.executable, "-m", "venv", venv_dir])
    try:
        subprocess.check_call([python, "-m", "pip", "install", "--quiet", *PYPI_PINS])
    except subprocess.CalledProcessError:
        sys.exit("gen_quant_golden: pip could not install " + " ".join(PYPI_PINS) +
                 " (is PyPI reachable?); no golden data was written")
    os.execv(python, [python, os.path.abspath(__file__), *sys.argv[1:]])


# ---- main -------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "data", "quant"))
    ap.add_argument("--venv", default=os.path.join(REPO, ".cache", "venv-golden"))
    args = ap.parse_args()
    ensure_environment(args.venv)

    import importlib.metadata as md
    import platform

    import mlx.core as mx
    import numpy as np

    from quant_golden.common import Writer, ensure_row_independence
    from quant_golden.formats import gen_dequantize_codes, gen_quantize_random, gen_quantize_tricky
    from quant_golden.matmul import gen_gather, gen_qmm

    mx.set_default_device(mx.cpu)
    out = os.path.abspath(args.out)
    for sub in ("quantize", "dequantize", "qmm", "gather"):
        folder = os.path.join(out, sub)
        if os.path.isdir(folder):
            for f in os.listdir(folder):
                if f.endswith(".npy"):
                    os.remove(os.path.join(folder, f))
    W = Writer(out, mx, np)
    ensure_row_independence(mx, np)
    gen_quantize_random(W, mx, np)
    gen_quantize_tricky(W, mx, np)
    gen_dequantize_codes(W, mx, np)
    G = gen_qmm(W, mx, np)
    gen_gather(G, mx, np)

    counts = {}
    for c in W.cases:
        key = c["kind"] + (":" + c.get("source", "").split(",")[0].split(" ")[0] if c["kind"] in ("quantize",) else "")
        counts[key] = counts.get(key, 0) + 1
    manifest = {
        "generator": "tools/gen_quant_golden.py",
        "mlx_version": mx.__version__,
        "mlx_cpu_version": md.version("mlx-cpu"),
        "numpy_version": np.__version__,
        "python_version": platform.python_version(),
        "device": "cpu",
        "storage": ("One .npy per array, C order. 'dtype' is the logical dtype; bfloat16 arrays are "
                    "stored as their uint16 bit patterns ('<u2'), float16 as '<f2'. Paths are "
                    "relative to this folder."),
        "undefined_rows": ("Row indices (along the second-to-last axis, batch flattened) whose "
                           "input holds NaN/Inf or overflows the dtype: MLX's result there is "
                           "undefined (quant-spec.md Part A §2)."),
        "matmul_error": ("mlx_max_abs_err_vs_f64 = max over finite outputs of |mlx - ref| / "
                         "(|x| @ |w_hat|), with ref = float64 x @ w_hat and w_hat = MLX's float32 "
                         "dequantize; MLX's CPU accumulates float16/bfloat16 in that dtype."),
        "nan_positions": ("mlx_nan_positions_differ counts outputs that are NaN in MLX and not "
                          "in the float64 product of the dequantized weights, or the reverse "
                          "(e.g. MLX's transposed fp kernels factor the scale out of the group "
                          "sum, so an Inf scale over zero codes gives Inf where x @ w_hat.T "
                          "gives NaN)."),
        "counts": counts,
        "mlx_suspect": G.suspect,
        "mlx_nan_positions_differ": G.nan_cases,
        "cases": W.cases,
    }
    path = os.path.join(out, "manifest.json")
    with open(path, "w") as f:  # one case per line: small, and diffs stay readable
        head = {k: v for k, v in manifest.items() if k != "cases"}
        text = json.dumps(head, indent=1)[:-2]
        f.write(text + ',\n "cases": [\n')
        f.write(",\n".join("  " + json.dumps(c, separators=(",", ":")) for c in W.cases))
        f.write("\n ]\n}\n")
    total = W.bytes + os.path.getsize(path)
    digest = hashlib.sha256()
    for c in W.cases:
        for a in c["arrays"].values():
            with open(os.path.join(out, a["file"]), "rb") as fh:
                digest.update(fh.read())
    print(f"gen_quant_golden: MLX {mx.__version__} (mlx-cpu {md.version('mlx-cpu')}), numpy {np.__version__}")
    for key in sorted(counts):
        print(f"  {key:24s} {counts[key]:5d} cases")
    print(f"  {len(W.cases)} cases, {W.files} files, {total} bytes ({total / 2**20:.2f} MiB) in {out}")
    print(f"  suspect MLX matmul outputs: {len(G.suspect)} {G.suspect[:10]}")
    print(f"  MLX NaN placement differs from float64: {len(G.nan_cases)} {G.nan_cases[:10]}")
    print(f"  sha256 of all arrays: {digest.hexdigest()}")


if __name__ == "__main__":
    main()
