"""tools/glm_golden/mlx_refs.py — the mlx-lm half: converts a saved tiny HF model with mlx-lm's
own `mlx_lm.convert.convert`, loads the result with `mlx_lm.utils.load_model`, and computes
mlx-lm's logits, greedy tokens and MoE routing. Runs inside the venv of tools/gen_glm_golden.py."""

import json
import os
import shutil
from pathlib import Path

import mlx.core as mx
import numpy as np

from .common import N_GREEDY, routing

# what convert writes besides the model: the trivial tokenizer and a model card (README.md)
DROPPED_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                 "chat_template.jinja", "chat_template.json", "README.md")


def patched_source(hf_dir, work, model_type):
    """A copy of hf_dir that mlx-lm 0.32.2 can load (glm-spec §4.6): the 5.x config gains a
    top-level rope_theta (and rope_scaling for glm4_moe). convert() also insists on a tokenizer
    (mlx_lm.utils.load -> AutoTokenizer), so a trivial 256-entry WordLevel tokenizer is added;
    it is not copied into the committed output."""
    src = os.path.join(work, "src")
    if os.path.isdir(src):
        shutil.rmtree(src)
    os.makedirs(src)
    for f in os.listdir(hf_dir):
        if f != "config.json" and not f.startswith("config."):
            shutil.copy(os.path.join(hf_dir, f), src)
    with open(os.path.join(hf_dir, "config.json")) as f:
        cfg = json.load(f)
    added = {}
    rp = cfg.get("rope_parameters") or {}
    if "rope_theta" not in cfg:
        added["rope_theta"] = rp["rope_theta"]
    if "partial_rotary_factor" not in cfg:
        added["partial_rotary_factor"] = rp["partial_rotary_factor"]
    if model_type == "glm4_moe" and "rope_scaling" not in cfg:
        added["rope_scaling"] = None
    cfg.update(added)
    with open(os.path.join(src, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)

    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {f"<t{i}>": i for i in range(cfg["vocab_size"])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<t0>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.save(os.path.join(src, "tokenizer.json"))
    with open(os.path.join(src, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 512,
                   "unk_token": "<t0>"}, f)
    return src, added


def convert(src, dest, work, kwargs):
    """mlx_lm.convert.convert into a scratch folder, then the model files (no tokenizer) to dest."""
    from mlx_lm.convert import convert as mlx_convert

    tmp_out = os.path.join(work, "converted")
    if os.path.isdir(tmp_out):
        shutil.rmtree(tmp_out)
    mlx_convert(hf_path=src, mlx_path=tmp_out, **kwargs)
    if os.path.isdir(dest):
        shutil.rmtree(dest)
    os.makedirs(dest)
    dropped = []
    for f in sorted(os.listdir(tmp_out)):
        if f in DROPPED_FILES:
            dropped.append(f)
            continue
        shutil.copy(os.path.join(tmp_out, f), dest)
    return dropped


class GateTap:
    """Records mlx-lm's router inputs and choices (glm4_moe MoEGate) during a forward pass."""

    def __init__(self, model):
        import mlx_lm.models.glm4_moe as gm

        self.gm = gm
        self.layer_of = {}
        for i, layer in enumerate(model.layers):
            if isinstance(layer.mlp, gm.MoE):
                self.layer_of[id(layer.mlp.gate)] = i
        self.calls = {}
        self.orig = gm.MoEGate.__call__
        tap = self

        def tapped(gate, x):
            inds, scores = tap.orig(gate, x)
            z = (x @ gate.weight.T).astype(mx.float32)  # the same product mlx-lm routes on
            tap.calls.setdefault(tap.layer_of[id(gate)], []).append((
                np.array(z).reshape(-1, z.shape[-1]).astype(np.float64),
                np.array(inds).reshape(-1, inds.shape[-1]),
                np.array(gate.e_score_correction_bias.astype(mx.float32)).astype(np.float64),
                gate.top_k, gate.n_group, gate.topk_group))
            return inds, scores

        gm.MoEGate.__call__ = tapped

    def close(self):
        self.gm.MoEGate.__call__ = self.orig

    def analyse(self):
        experts, margins, kth_min, agree = [], [], np.inf, True
        for layer in sorted(self.calls):
            (z, idx, bias, k, ng, tg), = self.calls[layer]
            e, m, kth = routing(np, z, bias, k, ng, tg)
            agree &= bool(np.array_equal(e, np.sort(idx, axis=-1)))
            experts.append(np.sort(idx, axis=-1))
            margins.append(m)
            kth_min = min(kth_min, float(kth.min()))
        return np.array(experts, dtype=np.int32), np.array(margins), kth_min, agree


def load(dest):
    from mlx_lm.utils import load_model

    model, config = load_model(Path(dest))
    return model, config


def run(model, tokens, is_moe):
    """-> logits_full f32 [T,V], compute dtype, greedy int32 [N], logits_greedy f32 [N,V], routing."""
    from mlx_lm.models.cache import make_prompt_cache

    prompt = mx.array(np.asarray(tokens, dtype=np.int32))[None]
    tap = GateTap(model) if is_moe else None
    try:
        full = model(prompt)
        mx.eval(full)
    finally:
        if tap is not None:
            tap.close()
    dtype = str(full.dtype).replace("mlx.core.", "")
    logits_full = np.array(full[0].astype(mx.float32))

    cache = make_prompt_cache(model)
    step = model(prompt, cache=cache)[0, -1]
    greedy, rows = [], []
    for i in range(N_GREEDY):
        mx.eval(step)
        tok = int(mx.argmax(step).item())  # mlx-lm's greedy sampler is mx.argmax
        rows.append(np.array(step.astype(mx.float32)))
        greedy.append(tok)
        if i + 1 < N_GREEDY:
            step = model(mx.array([[tok]], dtype=mx.int32), cache=cache)[0, -1]
    return (logits_full, dtype, np.array(greedy, dtype=np.int32), np.stack(rows),
            tap.analyse() if tap is not None else None)


def dequantized_weights(model, unrounded=False):
    """Every parameter as float64 numpy, quantized modules dequantized by mx.dequantize (to
    float32, from MLX's own packed weights, scales and biases). MLX names. With `unrounded`,
    affine scales and biases are widened to float32 first, so a weight is s*q + b in float32
    instead of rounded to the scales' dtype (bfloat16/float16): the weights tessera's
    quantized_matmul computes with (quant-spec Part A section 4); the embedding, which is looked
    up through dequantize, stays rounded."""
    from mlx.utils import tree_flatten

    out, skip = {}, set()
    for name, mod in model.named_modules():
        if "scales" in mod and "weight" in mod:
            scales, biases = mod["scales"], mod.get("biases")
            # the embedding is looked up and dequantized (rounded, as mx.dequantize), never
            # multiplied, so it keeps the rounded weights
            if unrounded and biases is not None and not name.endswith("embed_tokens"):
                scales, biases = scales.astype(mx.float32), biases.astype(mx.float32)
            w = mx.dequantize(mod["weight"], scales, biases, mod.group_size,
                              mod.bits, mode=mod.mode, dtype=mx.float32)
            out[f"{name}.weight"] = np.array(w).astype(np.float64)
            skip.update({f"{name}.weight", f"{name}.scales", f"{name}.biases"})
    for name, v in tree_flatten(model.parameters()):
        if name in skip:
            continue
        out[name] = np.array(v.astype(mx.float32)).astype(np.float64)
    return out


def safetensors_summary(dest):
    """safetensors dtype -> number of tensors mlx-lm wrote with it (from the file headers)."""
    import struct

    summary = {}
    for f in sorted(os.listdir(dest)):
        if f.endswith(".safetensors"):
            with open(os.path.join(dest, f), "rb") as fh:
                n = struct.unpack("<Q", fh.read(8))[0]
                head = json.loads(fh.read(n))
            for k, v in head.items():
                if k != "__metadata__":
                    summary[v["dtype"]] = summary.get(v["dtype"], 0) + 1
    return dict(sorted(summary.items()))
