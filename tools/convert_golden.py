#!/usr/bin/env python3
"""tools/convert_golden.py — golden check of `tessera convert` against mlx-lm's own converter.

Not part of the build or CI (the C test tests/model/test_convert.c checks the committed
conversions without Python). Run it by hand, CPU only, a minute or two:

    python3 tools/convert_golden.py                    # tessera at build/tessera
    python3 tools/convert_golden.py --tessera build-cpu/tessera --out /tmp/convert_golden.json

It runs inside the virtual environment of tools/gen_glm_golden.py (.cache/venv-glm: torch,
transformers 5.17.0, mlx + mlx-cpu 0.32.4, mlx-lm 0.32.2; --venv chooses another one; it is
created and filled from PyPI if missing) and, for each case below:

  1. makes a fresh tiny random GLM with transformers (glm-spec §5 configs, tools/glm_golden's
     builder, seeds other than the committed models'), saved as transformers 5.x saves it:
     float32 or float16 in one file, or bfloat16 in several shards (save_pretrained
     max_shard_size);
  2. converts it with mlx-lm (mlx_lm.convert.convert, on the copy whose config gets the top-level
     rope keys mlx-lm 0.32.2 needs, glm-spec §4.6) and with `tessera convert` (on the folder as
     transformers wrote it);
  3. compares the two outputs tensor by tensor: the same names, dtypes, shapes and bytes, and
     the same config.json (as JSON values) and index metadata;
  4. runs `tessera logits` on both folders: tessera reads mlx-lm's conversion and its own to the
     same logits, bit for bit;
  5. loads both with mlx-lm (mlx_lm.utils.load_model) and generates 16 greedy tokens after the
     same 12-token prompt: the token ids must be equal.

It prints one line per case and writes a JSON summary (versions, per case: tensors compared,
equal, greedy ids) to --out (default tests/data/glm/convert_golden.json). Exit status 1 if any
case differs.
"""

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# (name, model key of glm_golden.common.MODELS, base seed, dtype of the saved model,
#  max_shard_size for save_pretrained or None, tessera flags, mlx_lm.convert kwargs)
CASES = [
    ("dense-f32-q4g64", "dense", 7000, "float32", None, [],
     dict(quantize=True, q_bits=4, q_group_size=64, q_mode="affine")),
    ("moe-f32-q4g64", "moe", 7100, "float32", None, [],
     dict(quantize=True, q_bits=4, q_group_size=64, q_mode="affine")),
    ("moe-f32-q8g32", "moe", 7100, "float32", None, ["--bits", "8", "--group-size", "32"],
     dict(quantize=True, q_bits=8, q_group_size=32, q_mode="affine")),
    ("moe-f32-mxfp4", "moe", 7100, "float32", None, ["--mode", "mxfp4"],
     dict(quantize=True, q_bits=4, q_group_size=32, q_mode="mxfp4")),
    ("moe-f32-mxfp8", "moe", 7100, "float32", None, ["--mode", "mxfp8"],
     dict(quantize=True, q_bits=8, q_group_size=32, q_mode="mxfp8")),
    ("moe-f32-nvfp4", "moe", 7100, "float32", None, ["--mode", "nvfp4"],
     dict(quantize=True, q_bits=4, q_group_size=16, q_mode="nvfp4")),
    ("dense-f32-q3g32", "dense", 7000, "float32", None, ["--bits", "3", "--group-size", "32"],
     dict(quantize=True, q_bits=3, q_group_size=32, q_mode="affine")),
    ("moe_g2-f32-q4g64", "moe_g2", 7200, "float32", None, [],
     dict(quantize=True, q_bits=4, q_group_size=64, q_mode="affine")),
    # bfloat16 in shards: g32, since mlx-cpu runs a float expert (g64 leaves down_proj float)
    # through gather_mm in float32 only
    ("moe-bf16-shards-q4g32", "moe", 7300, "bfloat16", "100KB", ["--group-size", "32"],
     dict(quantize=True, q_bits=4, q_group_size=32, q_mode="affine")),
    ("dense-bf16-shards-q4g64", "dense", 7400, "bfloat16", "60KB", [],
     dict(quantize=True, q_bits=4, q_group_size=64, q_mode="affine")),
    ("dense-f16-q8g64", "dense", 7500, "float16", None, ["--bits", "8"],
     dict(quantize=True, q_bits=8, q_group_size=64, q_mode="affine")),
]


def ensure_environment(venv):
    import gen_glm_golden as g

    python = os.path.join(venv, "bin", "python")
    if os.path.abspath(sys.executable) == os.path.abspath(python):
        if not g._pinned(g.PYPI_PINS):
            sys.exit(f"convert_golden: {venv} does not provide " + " ".join(g.PYPI_PINS))
        return
    probe = ("import sys; sys.path.insert(0, %r); import gen_glm_golden as g; "
             "sys.exit(not g._pinned(g.PYPI_PINS))" % os.path.dirname(os.path.abspath(__file__)))
    if not (os.path.exists(python) and subprocess.call([python, "-c", probe]) == 0):
        g._make_venv(venv, g.PYPI_PINS)
    os.execv(python, [python, os.path.abspath(__file__), *sys.argv[1:]])


def tensors(folder):
    """name -> (dtype, shape, bytes) over every *.safetensors file of a folder."""
    out = {}
    for f in sorted(os.listdir(folder)):
        if not f.endswith(".safetensors"):
            continue
        with open(os.path.join(folder, f), "rb") as fh:
            n = struct.unpack("<Q", fh.read(8))[0]
            head = json.loads(fh.read(n))
            data = fh.read()
        for k, v in head.items():
            if k != "__metadata__":
                b, e = v["data_offsets"]
                out[k] = (v["dtype"], tuple(v["shape"]), data[b:e])
    return out


def compare_folders(ours, theirs):
    """-> (count, list of differences) between two converted folders."""
    a, b = tensors(ours), tensors(theirs)
    diffs = [f"only in tessera's: {k}" for k in sorted(set(a) - set(b))]
    diffs += [f"only in mlx-lm's: {k}" for k in sorted(set(b) - set(a))]
    diffs += [f"differs: {k} {a[k][:2]} vs {b[k][:2]}" for k in sorted(set(a) & set(b))
              if a[k] != b[k]]
    for f, key in (("config.json", None), ("model.safetensors.index.json", "metadata")):
        with open(os.path.join(ours, f)) as fa, open(os.path.join(theirs, f)) as fb:
            ja, jb = json.load(fa), json.load(fb)
        if key:
            ja, jb = ja[key], jb[key]
        if ja != jb:
            keys = sorted(k for k in set(ja) | set(jb) if ja.get(k) != jb.get(k))
            diffs.append(f"{f} differs in {keys}")
    return len(a), diffs


def tessera_logits(tessera, folder, tokens, work, tag):
    import numpy as np

    out = os.path.join(work, f"{tag}.npy")
    ids = ",".join(str(int(t)) for t in tokens)
    subprocess.run([tessera, "logits", "-m", folder, "--tokens", ids, "-o", out,
                    "--device", "cpu"], check=True, capture_output=True, text=True)
    return np.load(out)


def run_case(case, args, work, H, M, log):
    import numpy as np
    import torch

    from glm_golden.common import MODELS

    name, key, base_seed, dtype, shard, flags, kwargs = case
    model_type, extra, _ = MODELS[key]
    seed, model, tokens, _ = H.pick_seed(model_type, extra, base_seed, lambda s: None)
    hf = os.path.join(work, name, "hf")
    if dtype != "float32":
        model = model.to(getattr(torch, dtype))
    save = dict(max_shard_size=shard) if shard else {}
    model.save_pretrained(hf, **save)
    mlx_dir = os.path.join(work, name, "mlx")
    src, _ = M.patched_source(hf, os.path.join(work, name), model_type)
    M.convert(src, mlx_dir, os.path.join(work, name), kwargs)
    ours = os.path.join(work, name, "tessera")
    r = subprocess.run([args.tessera, "convert", "--hf", hf, "-o", ours, *flags],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"tessera convert failed ({r.returncode}): {r.stderr}")
    count, diffs = compare_folders(ours, mlx_dir)
    la = tessera_logits(args.tessera, ours, tokens, work, name + "-ours")
    lb = tessera_logits(args.tessera, mlx_dir, tokens, work, name + "-mlx")
    logits_equal = bool(np.array_equal(la.view(np.uint32), lb.view(np.uint32)))
    greedy = {}
    for tag, folder in (("tessera", ours), ("mlx_lm", mlx_dir)):
        m, _ = M.load(folder)
        greedy[tag] = [int(t) for t in M.run(m, tokens, model_type == "glm4_moe")[2]]
    shards = sorted(f for f in os.listdir(hf) if f.endswith(".safetensors"))
    result = {
        "model_type": model_type, "seed": seed, "source_dtype": dtype,
        "source_files": shards, "tessera_flags": flags, "mlx_convert_kwargs": kwargs,
        "tensors": count, "tensor_differences": diffs,
        "tessera_logits_equal": logits_equal,
        "greedy_tessera_conversion": greedy["tessera"],
        "greedy_mlx_conversion": greedy["mlx_lm"],
        "greedy_equal": greedy["tessera"] == greedy["mlx_lm"],
        "prompt": [int(t) for t in tokens],
    }
    ok = not diffs and logits_equal and result["greedy_equal"]
    log(f"{'ok  ' if ok else 'FAIL'} {name}: {count} tensors {'equal' if not diffs else diffs[:3]}, "
        f"tessera logits {'equal' if logits_equal else 'DIFFER'}, mlx-lm greedy "
        f"{'equal' if result['greedy_equal'] else 'DIFFER'} {greedy['tessera']}")
    return ok, result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tessera", default=os.path.join(REPO, "build", "tessera"))
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "data", "glm",
                                                  "convert_golden.json"))
    ap.add_argument("--venv", default=os.path.join(REPO, ".cache", "venv-glm"))
    args = ap.parse_args()
    args.tessera = os.path.abspath(args.tessera)
    if not os.access(args.tessera, os.X_OK):
        sys.exit(f"convert_golden: no tessera program at {args.tessera} (build it, or --tessera)")
    ensure_environment(os.path.abspath(args.venv))

    import importlib.metadata as md

    import mlx.core as mx

    from glm_golden import hf_models as H
    from glm_golden import mlx_refs as M

    mx.set_default_device(mx.cpu)
    log = lambda s: print(s, flush=True)  # noqa: E731
    work = tempfile.mkdtemp(prefix="convert_golden-")
    results, all_ok = {}, True
    try:
        for case in CASES:
            ok, results[case[0]] = run_case(case, args, work, H, M, log)
            all_ok &= ok
    finally:
        shutil.rmtree(work)
    version = subprocess.run([args.tessera, "--version"], capture_output=True, text=True).stdout
    summary = {
        "generator": "tools/convert_golden.py",
        "versions": {k: md.version(k) for k in ("torch", "transformers", "mlx", "mlx-cpu",
                                                 "mlx-lm", "numpy")},
        "tessera": version.strip(),
        "all_equal": all_ok,
        "cases": results,
    }
    with open(args.out, "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    log(f"convert_golden: {'all cases equal' if all_ok else 'DIFFERENCES'}; wrote {args.out}")
    sys.exit(0 if all_ok else 1)


if __name__ == "__main__":
    main()
