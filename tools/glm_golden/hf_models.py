"""tools/glm_golden/hf_models.py — the transformers half: builds the tiny random GLM4 / GLM4-MoE
models of glm-spec.md §5, saves them, and computes the fp32 / float64 reference logits and the
MoE routing. Runs inside the venv that tools/gen_glm_golden.py sets up (torch on the CPU)."""

import copy
import os
import shutil

import numpy as np
import torch

from .common import COMMON, N_PREFILL, N_TOKENS, ROUTING_MIN_MARGIN, TOKEN_HIGH, TOKEN_LOW, routing

torch.set_num_threads(1)  # deterministic summation order, and the machine is shared


def config_kwargs(model_type, extra):
    kw = dict(COMMON)
    kw.update(extra)
    return kw


def build(model_type, extra, seed):
    """A model with every parameter re-randomized (glm-spec §5): norms uniform(0.5, 1.5), other
    weights and the linear biases normal(0, 0.15), e_score_correction_bias normal(0, 0.05)."""
    from transformers import Glm4Config, Glm4ForCausalLM, Glm4MoeConfig, Glm4MoeForCausalLM

    cfg_cls, model_cls = {
        "glm4": (Glm4Config, Glm4ForCausalLM),
        "glm4_moe": (Glm4MoeConfig, Glm4MoeForCausalLM),
    }[model_type]
    torch.manual_seed(seed)
    model = model_cls(cfg_cls(**config_kwargs(model_type, extra)))
    model.set_attn_implementation("eager")
    assert model.config._attn_implementation == "eager"
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.uniform_(0.5, 1.5, generator=g)
            else:
                p.normal_(0.0, 0.15, generator=g)
        for name, b in model.named_buffers():
            if name.endswith("e_score_correction_bias"):
                b.normal_(0.0, 0.05, generator=g)
    model.eval()
    return model


def tokens_for(seed):
    rng = np.random.default_rng(seed)
    return rng.integers(TOKEN_LOW, TOKEN_HIGH, size=N_TOKENS).astype(np.int32)


class RouterTap:
    """Records each MoE router's logits and chosen experts during a forward pass."""

    def __init__(self, model):
        self.calls = {}
        self.handles = []
        for name, mod in model.named_modules():
            if type(mod).__name__.endswith("TopkRouter"):
                layer = int(name.split(".")[2])
                self.handles.append(mod.register_forward_hook(self._hook(layer, mod)))

    def _hook(self, layer, mod):
        def fn(_m, _inp, out):
            logits, _w, idx = out
            self.calls.setdefault(layer, []).append(
                (logits.detach().double().numpy().copy(), idx.detach().numpy().copy(),
                 mod.e_score_correction_bias.detach().double().numpy().copy(),
                 mod.top_k, mod.num_group, mod.topk_group))
        return fn

    def close(self):
        for h in self.handles:
            h.remove()

    def analyse(self):
        """-> experts int32 [layers, T, K] (sorted), margin float64 [layers, T], min kth score."""
        experts, margins, kth_min = [], [], np.inf
        for layer in sorted(self.calls):
            (z, idx, bias, k, ng, tg), = self.calls[layer]
            e, m, kth = routing(np, z, bias, k, ng, tg)
            assert np.array_equal(e, np.sort(idx, axis=-1)), f"routing recomputation differs, layer {layer}"
            experts.append(e)
            margins.append(m)
            kth_min = min(kth_min, float(kth.min()))
        return np.array(experts, dtype=np.int32), np.array(margins), kth_min


def forward_full(model, tokens, tap=False):
    ids = torch.tensor(tokens, dtype=torch.long)[None]
    t = RouterTap(model) if tap else None
    with torch.no_grad():
        logits = model(ids, use_cache=False).logits[0]
    if t is not None:
        t.close()
    return logits.numpy().copy(), t


def forward_decode(model, tokens):
    """Prefill N_PREFILL tokens, then one token at a time with past_key_values."""
    ids = torch.tensor(tokens, dtype=torch.long)[None]
    with torch.no_grad():
        out = model(ids[:, :N_PREFILL], use_cache=True)
        rows = [out.logits[0]]
        pkv = out.past_key_values
        for t in range(N_PREFILL, ids.shape[1]):
            out = model(ids[:, t:t + 1], past_key_values=pkv, use_cache=True)
            pkv = out.past_key_values
            rows.append(out.logits[0])
    return torch.cat(rows, 0).numpy().copy()


def to_f64(model):
    m = copy.deepcopy(model).to(torch.float64)
    if hasattr(m, "set_experts_implementation") and m.config.model_type == "glm4_moe":
        m.set_experts_implementation("eager")  # grouped_mm rejects float64 (glm-spec §3)
    m.eval()
    return m


def pick_seed(model_type, extra, base_seed, log):
    """The first seed from base_seed on whose fp32 routing has no near-tie."""
    tried = []
    for seed in range(base_seed, base_seed + 50):
        model = build(model_type, extra, seed)
        tokens = tokens_for(seed)
        if model_type != "glm4_moe":
            return seed, model, tokens, tried
        _, tap = forward_full(model, tokens, tap=True)
        _, margin, _ = tap.analyse()
        if margin.min() >= ROUTING_MIN_MARGIN:
            return seed, model, tokens, tried
        tried.append({"seed": seed, "min_routing_margin": float(margin.min())})
        log(f"  seed {seed}: routing margin {margin.min():.3g} < {ROUTING_MIN_MARGIN}, next seed")
    raise RuntimeError("no seed without a routing near-tie")


def save_hf(model, folder):
    if os.path.isdir(folder):
        shutil.rmtree(folder)
    model.save_pretrained(folder)  # safetensors, config.json in the transformers 5.x form


def load_hf_with_config(folder_weights, config_path, tmp):
    """Loads the saved weights with another config.json (the 4.5x form), eager attention."""
    from transformers import AutoModelForCausalLM

    d = os.path.join(tmp, "hf-v4-load")
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    shutil.copy(os.path.join(folder_weights, "model.safetensors"), d)
    shutil.copy(config_path, os.path.join(d, "config.json"))
    m = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32, attn_implementation="eager")
    m.eval()
    return m


def model_with_weights_f64(model, weights):
    """A float64 copy of the HF model holding `weights` (MLX names, numpy float arrays, e.g.
    mlx-lm's dequantized weights), mapped to transformers 5.x's in-memory names."""
    m = to_f64(model)
    sd = {}
    for name, w in weights.items():
        if ".switch_mlp." in name:
            continue
        sd[name] = torch.from_numpy(np.asarray(w, dtype=np.float64))
    for name in list(weights):
        if name.endswith(".switch_mlp.gate_proj.weight"):
            p = name[: -len(".switch_mlp.gate_proj.weight")]
            gate = np.asarray(weights[name], np.float64)
            up = np.asarray(weights[p + ".switch_mlp.up_proj.weight"], np.float64)
            sd[p + ".experts.gate_up_proj"] = torch.from_numpy(np.concatenate([gate, up], axis=1))
            sd[p + ".experts.down_proj"] = torch.from_numpy(
                np.asarray(weights[p + ".switch_mlp.down_proj.weight"], np.float64))
    own = m.state_dict()
    missing = [k for k in own if k not in sd and "rotary_emb" not in k]
    extra = [k for k in sd if k not in own]
    assert not missing and not extra, (missing, extra)
    for k, v in sd.items():
        assert tuple(own[k].shape) == tuple(v.shape), (k, own[k].shape, v.shape)
    m.load_state_dict(sd, strict=False)
    return m


def forward_tokens(model, tokens):
    """Logits of a full forward over arbitrary tokens (used to check mlx-lm's greedy steps)."""
    ids = torch.tensor(np.asarray(tokens), dtype=torch.long)[None]
    with torch.no_grad():
        return model(ids, use_cache=False).logits[0].numpy().copy()
