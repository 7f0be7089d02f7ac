"""tools/quant_golden/common.py — what every part of the golden generator shares: the modes, the
.npy writer with its manifest, and MLX's quantize/dequantize wrapped around MLX 0.32.4's nvfp4
size limitation. Runs inside the venv that tools/gen_quant_golden.py sets up."""

import hashlib
import io
import os

MODES = {  # mode -> (group sizes, bits) of quant-spec.md Part B §1
    "affine": ([32, 64, 128], [2, 3, 4, 5, 6, 8]),
    "mxfp4": ([32], [4]),
    "mxfp8": ([32], [8]),
    "nvfp4": ([16], [4]),
}
DTYPES = ["float32", "float16", "bfloat16"]
MX_ELEMENT_MAX = {"mxfp4": 6.0, "mxfp8": 448.0, "nvfp4": 6.0}


def configs():
    """Every (mode, group_size, bits) the spec supports."""
    for mode, (sizes, widths) in MODES.items():
        for gs in sizes:
            for bits in widths:
                yield mode, gs, bits


class Writer:
    """Saves arrays as .npy under one folder and builds the manifest."""

    def __init__(self, out_dir, mx, np):
        self.out, self.mx, self.np = out_dir, mx, np
        self.cases, self.bytes, self.files = [], 0, 0
        self.written = {}  # sha256 of the .npy bytes -> the file that holds them
        self.paths = set()

    def to_numpy(self, a, dtype):
        mx, np = self.mx, self.np
        if isinstance(a, mx.array):
            assert dtype_name(mx, a) == dtype, f"array is {a.dtype}, not {dtype}"
            if dtype == "bfloat16":
                return np.array(a.view(mx.uint16))
            return np.array(a)
        return np.asarray(a)

    def save(self, rel, a, dtype):
        """Writes one array; an array already written (same bytes) is referenced, not repeated."""
        arr = self.np.ascontiguousarray(self.to_numpy(a, dtype))
        buf = io.BytesIO()
        self.np.save(buf, arr, allow_pickle=False)
        data = buf.getvalue()
        key = hashlib.sha256(data).hexdigest()
        if key not in self.written:
            assert rel not in self.paths, f"two different arrays named {rel}"
            self.paths.add(rel)
            path = os.path.join(self.out, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
            self.bytes += len(data)
            self.files += 1
            self.written[key] = rel
        return {"file": self.written[key], "dtype": dtype, "shape": list(arr.shape)}

    def add(self, case):
        self.cases.append(case)
        return case


def dtype_name(mx, a):
    return str(a.dtype).replace("mlx.core.", "")


def mx_dtype(mx, name):
    return {"float32": mx.float32, "float16": mx.float16, "bfloat16": mx.bfloat16}[name]


def finite_max(name):
    return {"float32": 3.4028234663852886e38, "float16": 65504.0, "bfloat16": 3.3895313892515355e38}[name]


def quantize(mx, w, gs, bits, mode, global_scale=None):
    """mx.quantize that also works for nvfp4 when w.size is not a multiple of 32.

    MLX 0.32.4's CPU nvfp4 quantize reshapes the whole array into (-1, 4, 8) and fails on a
    size = 16 mod 32 (e.g. one row of 16). Groups never cross rows, so a zero row is appended
    and dropped again; ensure_row_independence() checks that this changes no bit."""
    kw = {"global_scale": mx.array(global_scale, dtype=mx.float32)} if global_scale is not None else {}
    pad = mode == "nvfp4" and w.size % 32 != 0
    if pad:
        zeros = mx.zeros((*w.shape[:-2], 1, w.shape[-1]), dtype=w.dtype)
        w = mx.concatenate([w, zeros], axis=-2)
    res = mx.quantize(w, gs, bits, mode, **kw)
    mx.eval(res)
    if pad:
        res = [r[..., :-1, :] for r in res]
    if mode != "affine":
        res = list(res[:2]) + [None]
    return list(res)


def dequantize(mx, w_q, scales, biases, gs, bits, mode, dtype, global_scale=None):
    """mx.dequantize, with the same zero-row padding as quantize() for nvfp4 (MLX 0.32.4 fails
    there too when the element count is 16 mod 32)."""
    kw = {"global_scale": mx.array(global_scale, dtype=mx.float32)} if global_scale is not None else {}
    pad = mode == "nvfp4" and w_q.size % 4 != 0
    if pad:
        w_q = mx.concatenate([w_q, mx.zeros((*w_q.shape[:-2], 1, w_q.shape[-1]), w_q.dtype)], axis=-2)
        scales = mx.concatenate([scales, mx.zeros((*scales.shape[:-2], 1, scales.shape[-1]), scales.dtype)], axis=-2)
    out = mx.dequantize(w_q, scales, biases, gs, bits, mode, dtype=dtype, **kw)
    if pad:
        out = out[..., :-1, :]
    mx.eval(out)
    return out


def ensure_row_independence(mx, np):
    rng = np.random.default_rng(7)
    w = mx.array(rng.normal(size=(6, 48)).astype(np.float32))
    a = quantize(mx, w[:3], 16, 4, "nvfp4")
    b = quantize(mx, w, 16, 4, "nvfp4")
    for x, y in zip(a[:2], b[:2]):
        assert np.array_equal(np.array(x), np.array(y)[:3]), "nvfp4 rows are not independent"
