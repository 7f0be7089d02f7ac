#!/usr/bin/env python3
"""tools/gen_glm_golden.py — golden data for tessera's GLM runner: tiny random GLM4 / GLM4-MoE
models, transformers' fp32 and float64 logits, and mlx-lm's conversions and logits.

It is NOT part of the build and never runs in CI: the C tests read the committed files under
tests/data/glm/ and need neither Python, torch nor MLX. Run it by hand (CPU only, ~5 minutes):

    python3 tools/gen_glm_golden.py                  # rewrites tests/data/glm/
    python3 tools/gen_glm_golden.py --out /tmp/glm   # elsewhere (e.g. to diff against the commit)

The first run creates two virtual environments (ignored by .gitignore, under .cache/):
  .cache/venv-glm      torch, transformers 5.x, mlx + mlx-cpu, mlx-lm, numpy, safetensors
                       (PYPI_PINS); the script re-runs itself with that interpreter. PyPI's Linux
                       torch wheel pulls the nvidia CUDA wheels (~3 GB): they are installed but
                       never used (everything runs on the CPU, float32/float64).
  .cache/venv-glm-tf4  transformers 4.57.6 alone (no torch), only to write config.v4.json the
                       way transformers 4.5x writes a GLM config.
--venv / --venv-tf4 choose other places. Every input is seeded; the summary prints a SHA-256
over all arrays written.

What it writes, per model NAME in {dense (glm4), moe (glm4_moe, n_group 1), moe_g2 (n_group 2,
topk_group 1)}, configs of glm-spec.md §5, every parameter re-randomized (norms uniform(0.5,1.5),
other weights and biases normal(0,0.15), e_score_correction_bias normal(0,0.05)):
  NAME/hf/                  model.safetensors, config.json, generation_config.json as
                            transformers 5.x save_pretrained writes them (rope_parameters form)
  NAME/hf/config.v4.json    dense and moe only: the same config as transformers 4.57.6 writes it
                            (top-level rope_theta / partial_rotary_factor, no rope_parameters)
  NAME/tokens.npy           int32 [12] the prompt, ids in [2, 256)
  NAME/logits_full.npy      float32 [12,256] HF fp32, eager attention, one 12-token forward
  NAME/logits_decode.npy    float32 [12,256] HF fp32: prefill of tokens 0..7 (rows 0..7), then
                            tokens 8..11 one at a time with past_key_values (rows 8..11)
  NAME/logits_f64.npy       float64 [12,256] the same model and forward in float64
  NAME/experts.npy          (MoE) int32 [2,12,2] HF fp32 selected experts per MoE layer (layers 1
                            and 2) and token, sorted ascending
  NAME/expert_margin.npy    (MoE) float64 [2,12] selection margin: K-th minus (K+1)-th biased
                            score among the kept experts (and, for n_group>1, the kept group's
                            score minus the best dropped one's, whichever is smaller)
  NAME/VARIANT/             mlx-lm's conversion of NAME/hf (config patched first as glm-spec §4.6
                            says; no tokenizer): config.json, model.safetensors,
                            model.safetensors.index.json, generation_config.json. Variants:
                            dense: mlx-f32 (unquantized, float32), mlx-q4g64;
                            moe: mlx-q4g64, mlx-q8g32, mlx-mxfp4, mlx-q4g32-bf16 (dtype bfloat16);
                            moe_g2: mlx-q4g64. Affine g64 leaves the experts' down_proj (in = 32)
                            unquantized, as mlx-lm does.
  NAME/VARIANT/logits_full.npy    float32 [12,256] mlx-lm's full forward (cast from its dtype)
  NAME/VARIANT/greedy.npy         int32 [16] mlx-lm greedy tokens after the prompt (KV cache)
  NAME/VARIANT/logits_greedy.npy  float32 [16,256] row i = the logits whose argmax is greedy[i]
                                  (row 0: last prompt position; row i: after feeding greedy[i-1])
  NAME/VARIANT/logits_dq_f64.npy  float64 [12,256] HF float64 forward with mlx-lm's dequantized
                                  weights (mx.dequantize of the file's own tensors): the exact
                                  answer for the quantized model
  NAME/VARIANT/logits_dqx_f64.npy (half-precision scales only) the same with each weight s*q + b
                                  not rounded to the scales' dtype: what a factored qmv computes
  NAME/VARIANT/experts.npy, expert_margin.npy  (MoE) mlx-lm's own routing, as above
  manifest.json             versions, seeds, configs, every file's dtype/shape, and the measured
                            differences and margins (see its "notes").

The implementation lives in tools/glm_golden/ (common.py: configs, writer, routing analysis;
hf_models.py: transformers side; mlx_refs.py: mlx-lm side; v4config.py: the 4.5x config writer).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ beside the sources

PYPI_PINS = ["torch==2.11.0", "transformers==5.17.0", "mlx==0.32.4", "mlx-cpu==0.32.4",
             "mlx-lm==0.32.2", "numpy==2.4.6", "safetensors==0.8.0"]
TF4_PINS = ["transformers==4.57.6", "numpy==2.4.6"]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _pinned(pins):
    import importlib.metadata as md

    for pin in pins:
        name, version = pin.split("==")
        try:
            if md.version(name) != version:
                return False
        except md.PackageNotFoundError:
            return False
    return True


def _make_venv(venv_dir, pins):
    python = os.path.join(venv_dir, "bin", "python")
    if not os.path.exists(python):
        print(f"gen_glm_golden: creating {venv_dir}", file=sys.stderr)
        subprocess.check_call([sys.executable, "-m", "venv", venv_dir])
    try:
        subprocess.check_call([python, "-m", "pip", "install", "--quiet", *pins])
    except subprocess.CalledProcessError:
        sys.exit("gen_glm_golden: pip could not install " + " ".join(pins) +
                 " (is PyPI reachable?); no golden data was written")
    return python


def ensure_environment(args):
    """Re-runs this script inside .cache/venv-glm, creating both venvs if needed."""
    tf4_python = os.path.join(args.venv_tf4, "bin", "python")
    check = "import importlib.metadata as m,sys; sys.exit(m.version('transformers')!='4.57.6')"
    if not (os.path.exists(tf4_python) and subprocess.call([tf4_python, "-c", check]) == 0):
        _make_venv(args.venv_tf4, TF4_PINS)
    python = os.path.join(args.venv, "bin", "python")
    if os.path.abspath(sys.executable) == os.path.abspath(python):
        if not _pinned(PYPI_PINS):
            sys.exit(f"gen_glm_golden: {args.venv} does not provide " + " ".join(PYPI_PINS))
        return
    here = os.path.dirname(os.path.abspath(__file__))
    probe = f"import sys; sys.path.insert(0, {here!r}); import gen_glm_golden as g; sys.exit(not g._pinned(g.PYPI_PINS))"
    if not (os.path.exists(python) and subprocess.call([python, "-c", probe]) == 0):
        _make_venv(args.venv, PYPI_PINS)
    os.execv(python, [python, os.path.abspath(__file__), *sys.argv[1:]])


def max_abs(a, b):
    import numpy as np

    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "data", "glm"))
    ap.add_argument("--venv", default=os.path.join(REPO, ".cache", "venv-glm"))
    ap.add_argument("--venv-tf4", default=os.path.join(REPO, ".cache", "venv-glm-tf4"))
    args = ap.parse_args()
    ensure_environment(args)

    import importlib.metadata as md
    import platform
    import shutil

    import numpy as np
    import torch
    import transformers

    import mlx.core as mx

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from glm_golden import hf_models as H
    from glm_golden import mlx_refs as M
    from glm_golden.common import (MLX_VARIANTS, MODELS, N_GREEDY, N_PREFILL, N_TOKENS,
                                   ROUTING_MIN_MARGIN, Writer, top2_margins, write_json)

    mx.set_default_device(mx.cpu)
    out = os.path.abspath(args.out)
    for name in MODELS:
        if os.path.isdir(os.path.join(out, name)):
            shutil.rmtree(os.path.join(out, name))
    os.makedirs(out, exist_ok=True)
    W = Writer(out, np)
    log = lambda s: print(s, flush=True)  # noqa: E731
    work = tempfile.mkdtemp(prefix="gen_glm_golden-")
    tf4_python = os.path.join(args.venv_tf4, "bin", "python")
    tf4_version = None

    manifest_models = {}
    for name, (model_type, extra, base_seed) in MODELS.items():
        log(f"== {name} ({model_type})")
        is_moe = model_type == "glm4_moe"
        seed, model, tokens, rejected = H.pick_seed(model_type, extra, base_seed, log)
        entry = {"model_type": model_type, "seed": seed, "seeds_rejected": rejected,
                 "config_kwargs": H.config_kwargs(model_type, extra), "files": {}}
        files = entry["files"]
        hf_dir = os.path.join(out, name, "hf")
        H.save_hf(model, hf_dir)
        files["hf"] = sorted(os.listdir(hf_dir))

        files["tokens.npy"] = W.save(f"{name}/tokens.npy", tokens, "<i4")
        full, tap = H.forward_full(model, tokens, tap=is_moe)
        decode = H.forward_decode(model, tokens)
        m64 = H.to_f64(model)
        full64, tap64 = H.forward_full(m64, tokens, tap=is_moe)
        decode64 = H.forward_decode(m64, tokens)
        files["logits_full.npy"] = W.save(f"{name}/logits_full.npy", full, "<f4")
        files["logits_decode.npy"] = W.save(f"{name}/logits_decode.npy", decode, "<f4")
        files["logits_f64.npy"] = W.save(f"{name}/logits_f64.npy", full64, "<f8")
        margins = top2_margins(np, full)
        fig = entry["figures"] = {
            "logits_max_abs": float(np.abs(full).max()),
            "hf_fp32_vs_f64_max_abs": max_abs(full, full64),
            "decode_vs_full_fp32_max_abs": max_abs(decode, full),
            "decode_vs_f64_max_abs": max_abs(decode, full64),
            "decode_vs_full_f64_max_abs": max_abs(decode64, full64),
            "argmax_fp32_equals_f64": bool(np.array_equal(full.argmax(-1), full64.argmax(-1))),
            "min_top2_margin_fp32": float(margins.min()),
        }
        if is_moe:
            experts, emargin, kth = tap.analyse()
            experts64, emargin64, _ = tap64.analyse()
            files["experts.npy"] = W.save(f"{name}/experts.npy", experts, "<i4")
            files["expert_margin.npy"] = W.save(f"{name}/expert_margin.npy", emargin, "<f8")
            entry["routing"] = {
                "moe_layers": [l for l in range(model.config.num_hidden_layers)
                               if l >= model.config.first_k_dense_replace],
                "min_margin": float(emargin.min()),
                "min_margin_f64": float(emargin64.min()),
                "experts_f64_equal": bool(np.array_equal(experts, experts64)),
                "min_kth_kept_score": kth,
            }
        # transformers 4.5x form of the config, and a check that 5.x reads it to the same model
        if name in ("dense", "moe"):
            v4_path = os.path.join(hf_dir, "config.v4.json")
            r = subprocess.run([tf4_python, os.path.join(os.path.dirname(H.__file__), "v4config.py"),
                                model_type, v4_path], input=json.dumps(H.config_kwargs(model_type, extra)),
                               capture_output=True, text=True, check=True)
            tf4_version = r.stdout.strip().splitlines()[-1]
            with open(v4_path) as f:
                v4 = json.load(f)
            assert "rope_parameters" not in v4 and "rope_theta" in v4, v4
            mv4 = H.load_hf_with_config(hf_dir, v4_path, work)
            fv4, _ = H.forward_full(mv4, tokens)
            fig["config_v4_reload_vs_full_max_abs"] = max_abs(fv4, full)
            files["hf"] = sorted(os.listdir(hf_dir))

        # ---- mlx-lm conversions
        entry["variants"] = {}
        src, added = M.patched_source(hf_dir, work, model_type)
        entry["mlx_config_patch"] = added
        for variant, kwargs in MLX_VARIANTS[name]:
            log(f"-- {name}/{variant} {kwargs}")
            dest = os.path.join(out, name, variant)
            dropped = M.convert(src, dest, work, kwargs)
            mlx_model, mlx_cfg = M.load(dest)
            lf, dtype, greedy, lg, mroute = M.run(mlx_model, tokens, is_moe)
            v = {"convert_kwargs": kwargs, "mlx_compute_dtype": dtype,
                 "quantization": mlx_cfg.get("quantization"),
                 "convert_output_dropped": dropped,
                 "model_files": sorted(f for f in os.listdir(dest)),
                 "tensor_dtype_counts": M.safetensors_summary(dest), "files": {}}
            vf = v["files"]
            rel = f"{name}/{variant}"
            vf["logits_full.npy"] = W.save(f"{rel}/logits_full.npy", lf, "<f4")
            vf["greedy.npy"] = W.save(f"{rel}/greedy.npy", greedy, "<i4")
            vf["logits_greedy.npy"] = W.save(f"{rel}/logits_greedy.npy", lg, "<f4")
            # the exact answer for the quantized weights: HF in float64 with mlx's dequantized weights
            mdq = H.model_with_weights_f64(model, M.dequantized_weights(mlx_model))
            dq_full, dq_tap = H.forward_full(mdq, tokens, tap=is_moe)
            seq = np.concatenate([tokens, greedy[:-1]])
            dq_seq = H.forward_tokens(mdq, seq)[N_TOKENS - 1:]
            hf_seq = H.forward_tokens(model, seq)[N_TOKENS - 1:]
            vf["logits_dq_f64.npy"] = W.save(f"{rel}/logits_dq_f64.npy", dq_full, "<f8")
            if dtype != "float32":
                # half-precision scales: the answer for weights s*q + b not rounded to the scales'
                # dtype, which is what a factored qmv (tessera's decode) computes with
                mdqx = H.model_with_weights_f64(model, M.dequantized_weights(mlx_model, True))
                dqx_full, dqx_tap = H.forward_full(mdqx, tokens, tap=is_moe)
                vf["logits_dqx_f64.npy"] = W.save(f"{rel}/logits_dqx_f64.npy", dqx_full, "<f8")
                v["unrounded"] = {"dqx_vs_dq_f64_max_abs": max_abs(dqx_full, dq_full)}
                if is_moe:
                    v["unrounded"]["min_routing_margin_dqx"] = float(dqx_tap.analyse()[1].min())
            mf, mg = top2_margins(np, lf), top2_margins(np, lg)
            v["figures"] = {
                "mlx_vs_hf_fp32_max_abs": max_abs(lf, full),
                "mlx_vs_dq_f64_max_abs": max_abs(lf, dq_full),
                "mlx_greedy_steps_vs_dq_f64_max_abs": max_abs(lg, dq_seq),
                "mlx_greedy_steps_vs_hf_fp32_max_abs": max_abs(lg, hf_seq),
                "dq_f64_vs_hf_fp32_max_abs": max_abs(dq_full, full),
                "argmax_mlx_equals_dq_f64": bool(np.array_equal(lf.argmax(-1), dq_full.argmax(-1))),
                "greedy_equals_dq_f64_argmax": bool(np.array_equal(greedy, dq_seq.argmax(-1))),
                "greedy_equals_hf_fp32_argmax": bool(np.array_equal(greedy, hf_seq.argmax(-1))),
                "min_top2_margin_full": float(mf.min()),
                "min_top2_margin_greedy": float(mg.min()),
                "top2_margin_greedy": [float(x) for x in mg],
                "greedy": [int(t) for t in greedy],
            }
            if is_moe:
                e, em, kth, agree = mroute
                e_dq, em_dq, _ = dq_tap.analyse()
                vf["experts.npy"] = W.save(f"{rel}/experts.npy", e, "<i4")
                vf["expert_margin.npy"] = W.save(f"{rel}/expert_margin.npy", em, "<f8")
                v["routing"] = {
                    "min_margin": float(em.min()),
                    "min_margin_dq_f64": float(em_dq.min()),
                    "recomputed_f64_agrees": agree,
                    "experts_equal_dq_f64": bool(np.array_equal(e, e_dq)),
                    "tokens_layers_differing_from_dq_f64": int(np.sum(np.any(e != e_dq, -1))),
                    "experts_equal_hf_fp32": bool(np.array_equal(e, experts)),
                    "tokens_layers_differing_from_hf_fp32": int(np.sum(np.any(e != experts, -1))),
                    "min_kth_kept_score": kth,
                }
            entry["variants"][variant] = v
            log(f"   dtype {dtype}, vs HF fp32 {v['figures']['mlx_vs_hf_fp32_max_abs']:.3g}, "
                f"vs dq_f64 {v['figures']['mlx_vs_dq_f64_max_abs']:.3g}, min top2 "
                f"{v['figures']['min_top2_margin_greedy']:.3g}")
        manifest_models[name] = entry
        log(f"   figures {json.dumps(fig)}")
        if is_moe:
            log(f"   routing {json.dumps(entry['routing'])}")

    shutil.rmtree(work)
    manifest = {
        "generator": "tools/gen_glm_golden.py",
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "transformers_for_config_v4": tf4_version,
            "mlx": mx.__version__,
            "mlx_cpu": md.version("mlx-cpu"),
            "mlx_lm": md.version("mlx-lm"),
            "numpy": np.__version__,
            "safetensors": md.version("safetensors"),
        },
        "device": "cpu (torch.set_num_threads(1))",
        "notes": {
            "storage": "One .npy per array, C order, little endian; paths relative to this folder. "
                       "'dtype' is numpy's dtype string (<f4 float32, <f8 float64, <i4 int32).",
            "logits_decode": f"rows 0..{N_PREFILL - 1}: one forward over tokens 0..{N_PREFILL - 1}; "
                             f"rows {N_PREFILL}..{N_TOKENS - 1}: one token each, with the KV cache.",
            "greedy": f"{N_GREEDY} tokens; logits_greedy row 0 is the last prompt position of a "
                      "cached prefill, row i>0 the step that fed greedy[i-1]; greedy[i] = "
                      "argmax(row i) computed by mx.argmax in mlx-lm's dtype.",
            "logits_dq_f64": "HF float64 forward (eager attention, eager experts) with mlx-lm's "
                             "dequantized weights (mx.dequantize to float32, then float64): what a "
                             "float64 implementation of the quantized model gives.",
            "routing": "experts: sorted selected expert ids [moe_layers, tokens, K] of the 12-token "
                       "forward; expert_margin: min(K-th minus (K+1)-th biased score among kept "
                       "experts, kept group minus best dropped group when n_group>1), float64 "
                       "from the router logits of that run. HF's router logits are fp32; mlx-lm's "
                       "are x @ W^T in its dtype, cast to float32. min_kth_kept_score > 0 means "
                       "HF 5.x's -inf group mask and MLX's 0.0 group mask select the same experts.",
            "seed": f"first seed from the base on whose HF fp32 routing margin >= {ROUTING_MIN_MARGIN}",
            "mlx_compute_dtype": "the dtype of mlx-lm's logits (activations) for that conversion",
        },
        "models": manifest_models,
    }
    write_json(os.path.join(out, "manifest.json"), manifest)
    total = 0
    for root, _, fs in os.walk(out):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in fs)
    log(f"gen_glm_golden: torch {torch.__version__}, transformers {transformers.__version__}, "
        f"mlx {mx.__version__}, mlx-lm {md.version('mlx-lm')}")
    log(f"  {total} bytes ({total / 2**20:.2f} MiB) in {out}")
    log(f"  sha256 of all arrays: {W.digest.hexdigest()}")


if __name__ == "__main__":
    main()
