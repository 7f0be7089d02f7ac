"""tools/quant_golden/formats.py — quantize and dequantize cases: random matrices, the tricky
groups of quant-spec.md Part B §7, and packed inputs built code by code."""

from quant_golden.common import (DTYPES, MODES, MX_ELEMENT_MAX, configs, dequantize, dtype_name,
                                 finite_max, mx_dtype, quantize)

# ---- quantize: random matrices ----------------------------------------------------------------

def random_rows(rng, np, rows, cols):
    """Rows of different character: spreads, signs, magnitudes, heavy tails, exact zeros."""
    kinds = [
        ("normal", lambda: rng.normal(size=cols)),
        ("uniform(-1,1)", lambda: rng.uniform(-1, 1, size=cols)),
        ("normal*1e-3", lambda: rng.normal(size=cols) * 1e-3),
        ("normal*100", lambda: rng.normal(size=cols) * 100),
        ("uniform(0,1) all positive", lambda: rng.uniform(0, 1, size=cols)),
        ("-uniform(0,1) all negative", lambda: -rng.uniform(0, 1, size=cols)),
        ("student-t(2) heavy tails", lambda: rng.standard_t(2, size=cols)),
        ("normal, half exact zeros", lambda: rng.normal(size=cols) * (rng.uniform(size=cols) < 0.5)),
    ]
    data, names = [], []
    for r in range(rows):
        name, fn = kinds[r % len(kinds)]
        data.append(fn())
        names.append(name)
    return np.array(data, dtype=np.float32), names


def emit_quantize(W, mx, np, cid, mode, gs, bits, dtype, w32, rows, source, global_scale=None,
                  undefined_rows=()):
    """Quantizes w32 (float32 numpy, cast by MLX to dtype) and records w, w_q, scales, biases,
    plus the dequantize case that reads them back."""
    w = mx.array(w32).astype(mx_dtype(mx, dtype))
    w_q, scales, biases = quantize(mx, w, gs, bits, mode, global_scale)
    sdt = dtype if mode == "affine" else "uint8"
    arrays = {
        "w": W.save(f"quantize/{cid}_w.npy", w, dtype),
        "w_q": W.save(f"quantize/{cid}_wq.npy", w_q, "uint32"),
        "scales": W.save(f"quantize/{cid}_scales.npy", scales, sdt),
    }
    if biases is not None:
        arrays["biases"] = W.save(f"quantize/{cid}_biases.npy", biases, dtype)
    W.add({"id": cid, "kind": "quantize", "source": source, "mode": mode, "bits": bits,
           "group_size": gs, "dtype": dtype, "global_scale": global_scale, "rows": rows,
           "undefined_rows": list(undefined_rows), "arrays": arrays})
    out = dequantize(mx, w_q, scales, biases, gs, bits, mode, mx_dtype(mx, dtype), global_scale)
    darrays = {k: v for k, v in arrays.items() if k != "w"}
    darrays["out"] = W.save(f"dequantize/{cid}_out.npy", out, dtype_name(mx, out))
    W.add(dequantize_case("dq_" + cid, "quantize case " + cid, mode, bits, gs, dtype, dtype,
                          dtype_name(mx, out), global_scale, undefined_rows, darrays))


def dequantize_case(cid, source, mode, bits, gs, dtype, requested, got, global_scale, undefined,
                    arrays):
    case = {"id": cid, "kind": "dequantize", "source": source, "mode": mode, "bits": bits,
            "group_size": gs, "dtype": dtype, "out_dtype": got, "global_scale": global_scale,
            "undefined_rows": list(undefined), "arrays": arrays}
    if requested != got:
        # MLX 0.32.4: nvfp4 dequantize with a global_scale ignores `dtype` and returns float32.
        case["requested_dtype"] = requested
        case["note"] = (f"MLX returned {got} although dtype={requested} was asked for; "
                        f"rounding this output to {requested} gives the requested result")
    return case


def gen_quantize_random(W, mx, np):
    for ci, (mode, gs, bits) in enumerate(configs()):
        for di, dtype in enumerate(DTYPES):
            rng = np.random.default_rng(1000 + 10 * ci + di)
            w32, names = random_rows(rng, np, 8, max(2 * gs, 64))
            if dtype == "float16":
                w32 = np.clip(w32, -60000, 60000)
            cid = f"{mode}_b{bits}_g{gs}_{dtype}_random"
            emit_quantize(W, mx, np, cid, mode, gs, bits, dtype, w32, names, "random")
            if mode == "nvfp4":
                g = float(np.abs(w32).max())
                emit_quantize(W, mx, np, cid + "_gscale", mode, gs, bits, dtype, w32, names,
                              "random, global_scale = max|w|", global_scale=g)
    # A batched (3-D) input for every mode: quantize works on the last axis of any rank.
    for mode, gs, bits in [("affine", 64, 4), ("affine", 32, 3), ("mxfp4", 32, 4),
                           ("mxfp8", 32, 8), ("nvfp4", 16, 4)]:
        rng = np.random.default_rng(1900 + bits + gs)
        w32 = rng.normal(size=(2, 3, 128)).astype(np.float32)
        cid = f"{mode}_b{bits}_g{gs}_float32_batched"
        emit_quantize(W, mx, np, cid, mode, gs, bits, "float32", w32,
                      ["batch %d row %d" % (b, r) for b in range(2) for r in range(3)], "random 3-D")


# ---- quantize: tricky groups (quant-spec.md Part B §7) ----------------------------------------

def affine_tricky_rows(np, gs, bits, dtype):
    n = 2**bits - 1
    big = 0.6 * finite_max(dtype)
    rows = []  # (description, values, undefined)

    def row(desc, vals, undefined=False):
        v = np.zeros(gs, dtype=np.float64)
        vals = np.asarray(vals, dtype=np.float64).ravel()[:gs]
        v[: len(vals)] = vals
        rows.append((desc, v, undefined))

    row("spec example: [2.5, -0.5, 1, 0...] (q0 = rint(-2.5) tie)", [2.5, -0.5, 1.0])
    row("q0 tie, scale negative: range [-0.5, n-0.5]", [-0.5, n - 0.5] + [0.25 * k for k in range(gs - 2)])
    row("q0 tie, scale positive: range [-(n-0.5), 0.5]", [-(n - 0.5), 0.5] + [-0.25 * k for k in range(gs - 2)])
    row("code ties: range [0, n], elements at k+0.5", [0.0, float(n)] + [k + 0.5 for k in range(gs - 2)])
    row("all negative [-1, -0.5]", np.linspace(-1.0, -0.5, gs))
    row("all positive [0.5, 1]", np.linspace(0.5, 1.0, gs))
    row("constant 0.3", np.full(gs, 0.3))
    row("constant -0.7", np.full(gs, -0.7))
    row("all zero (scale -1e-7)", np.zeros(gs))
    row("tiny range around 1 (scale clamped to eps)", 1.0 + np.arange(gs) * 1e-9)
    row("tiny range around 0 (scale clamped to eps)", np.arange(gs) * 1e-9 - 5e-9)
    row("|max| == |min| (negative scale)", [-1.0, 1.0] + list(np.linspace(-0.9, 0.9, gs - 2)))
    row("|min| > |max| (positive scale)", [-2.0, 1.0] + list(np.linspace(-1.9, 0.9, gs - 2)))
    row("edge not representable in half: [0.1, 0.37]", np.linspace(0.1, 0.37, gs))
    row("large magnitude +-0.6*max(dtype) (range may overflow float32)", [-big, big] + list(np.linspace(-big / 2, big / 2, gs - 2)))
    row("tiny magnitudes 1e-30..1e-29", np.linspace(1e-30, 1e-29, gs))
    row("float32 subnormals", np.linspace(-3e-40, 1e-40, gs))
    row("one NaN", [float("nan"), 0.5, -0.25, 1.0], undefined=True)
    row("one +Inf", [float("inf"), 0.5, -0.25], undefined=True)
    row("one -Inf", [float("-inf"), 0.5, -0.25], undefined=True)
    return rows


FP4_POINTS = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0]
E4M3_TIES = [2.0**-10, 3 * 2.0**-10, 5 * 2.0**-10, 1.0625, 1.1875, 432.0, 464.0, 2.0**-6 * (1 - 2.0**-4)]


def neighbours(np, x):
    x = np.float32(x)
    return [float(np.nextafter(x, np.float32(0))), float(x), float(np.nextafter(x, np.float32(np.inf)))]


def fp_tricky_rows(np, mode, dtype):
    gs = 16 if mode == "nvfp4" else 32
    M = MX_ELEMENT_MAX[mode]
    rows = []

    def row(desc, vals, undefined=False):
        v = np.zeros(gs, dtype=np.float64)
        vals = np.asarray(vals, dtype=np.float64).ravel()[:gs]
        v[: len(vals)] = vals
        rows.append((desc, v, undefined))

    # Elements at the encoder's thresholds, with amax = M so the scale is exactly 1.
    points = FP4_POINTS if mode != "mxfp8" else E4M3_TIES
    flat = []
    for p in points:
        flat += neighbours(np, p) + [-q for q in neighbours(np, p)]
    flat += [-0.0, -0.1, 0.1, M, -M]
    per = gs - 1
    for i in range(0, len(flat), per):
        row(f"amax = {M:g} (scale 1); element thresholds part {i // per}", [M] + flat[i:i + per])
    # Scale codes.
    for k in [-3, 0, 4]:
        s = 2.0**k
        row(f"amax = {M:g}*2^{k} exactly", [M * s, 0.5 * s, -0.75 * s])
        row(f"amax = {M:g}*2^{k} plus one ulp (scale rounding)", [float(np.nextafter(np.float32(M * s), np.float32(np.inf))), 0.5 * s])
        row(f"amax = {M:g}*2^{k} minus one ulp", [float(np.nextafter(np.float32(M * s), np.float32(0))), -0.5 * s])
        row(f"amax = {M:g}*sqrt(2)*2^{k} (nearest vs up)", [M * 2**0.5 * s, 1.0 * s, -3.0 * s])
    row("all zero", np.zeros(gs))
    row("amax/M < 2^-127 (E8M0 below range)", [M * 2.0**-130, M * 2.0**-131])
    row("amax/M subnormal in float16", [M * 2.0**-20, M * 2.0**-22])
    row("amax/M underflows float16", [M * 2.0**-26, -M * 2.0**-27])
    row("amax near max(dtype)", [0.9 * finite_max(dtype), -0.5 * finite_max(dtype)])
    row("float32 subnormal elements", [1e-40, -2e-40, 3e-39])
    if mode == "nvfp4":
        for d in E4M3_TIES:
            row(f"amax/6 = {d:g} (E4M3 scale rounding)", [6 * d, 3 * d, -d])
        row("amax/6 > 448 (E4M3 scale saturates)", [3000.0, -1500.0, 700.0])
        row("amax/6 = 2^-10 (scale rounds to 0)", [6 * 2.0**-10, 3 * 2.0**-10])
        row("amax/6 < 2^-10 (scale 0)", [1e-5, -3e-6])
    row("one NaN", [float("nan"), 0.5, -0.25, 1.0], undefined=True)
    row("one +Inf", [float("inf"), 0.5, -0.25], undefined=True)
    row("one -Inf", [float("-inf"), 0.5, -0.25], undefined=True)
    return rows


def emit_tricky(W, mx, np, cid, mode, gs, bits, dtype, rows, global_scale=None):
    if mode == "nvfp4" and len(rows) % 2:
        rows.append(("padding: all zero", np.zeros(gs), False))
    with np.errstate(over="ignore"):
        w32 = np.array([r[1] for r in rows], dtype=np.float32)
    undefined = [i for i, r in enumerate(rows) if r[2]]
    # Values that overflow the input dtype become Inf there: mark those rows undefined too.
    wd = np.array(mx.array(w32).astype(mx_dtype(mx, dtype)).astype(mx.float32))
    undefined = sorted(set(undefined) | {i for i in range(len(rows)) if not np.all(np.isfinite(wd[i]))})
    emit_quantize(W, mx, np, cid, mode, gs, bits, dtype, w32, [r[0] for r in rows], "tricky",
                  global_scale, undefined)


def gen_quantize_tricky(W, mx, np):
    for mode, gs, bits in configs():
        for dtype in DTYPES:
            cid = f"{mode}_b{bits}_g{gs}_{dtype}_tricky"
            if mode == "affine":
                rows = affine_tricky_rows(np, gs, bits, dtype)
            else:
                rows = fp_tricky_rows(np, mode, dtype)
            emit_tricky(W, mx, np, cid, mode, gs, bits, dtype, rows)
            if mode == "nvfp4":
                for g in [1.0, 2688.0, 0.37, 1e-3, 1e6]:
                    emit_tricky(W, mx, np, f"{cid}_gscale{g:g}", mode, gs, bits, dtype,
                                fp_tricky_rows(np, mode, dtype), global_scale=g)


# ---- dequantize: packed inputs built code by code ---------------------------------------------

def pack_codes(np, codes, bits):
    """Packs integer codes (rows x K) LSB-first into uint32 words, as MLX stores them."""
    rows, k = codes.shape
    words = np.zeros((rows, k * bits // 32), dtype=np.uint64)
    for i in range(k):
        bit = i * bits
        for b in range(bits):
            pos = bit + b
            words[:, pos // 32] |= ((codes[:, i].astype(np.uint64) >> np.uint64(b)) & np.uint64(1)) << np.uint64(pos % 32)
    return words.astype(np.uint32)


def emit_dequantize(W, mx, np, cid, mode, gs, bits, codes, scales, biases, sdt, out_dtypes, note,
                    global_scale=None):
    w_q = mx.array(pack_codes(np, codes, bits))
    if sdt == "uint8":
        s = mx.array(scales.astype(np.uint8))
        b = None
    else:
        s = mx.array(scales.astype(np.float32)).astype(mx_dtype(mx, sdt))
        b = mx.array(biases.astype(np.float32)).astype(mx_dtype(mx, sdt))
    base = {"w_q": W.save(f"dequantize/{cid}_wq.npy", w_q, "uint32"),
            "scales": W.save(f"dequantize/{cid}_scales.npy", s, sdt)}
    if b is not None:
        base["biases"] = W.save(f"dequantize/{cid}_biases.npy", b, sdt)
    for od in out_dtypes:
        out = dequantize(mx, w_q, s, b, gs, bits, mode, mx_dtype(mx, od), global_scale)
        arrays = dict(base)
        arrays["out"] = W.save(f"dequantize/{cid}_out_{od}.npy", out, dtype_name(mx, out))
        W.add(dequantize_case(f"dq_{cid}_{od}", note, mode, bits, gs,
                              sdt if sdt != "uint8" else None, od, dtype_name(mx, out),
                              global_scale, [], arrays))


def gen_dequantize_codes(W, mx, np):
    rng = np.random.default_rng(3000)
    # mxfp4: all 16 element codes under E8M0 scale codes that include 0 (2^-127) and 255 (Inf).
    e8 = np.array([0, 1, 2, 100, 126, 127, 128, 129, 142, 143, 200, 254, 255])
    codes = np.tile(np.arange(32) % 16, (len(e8), 1))
    emit_dequantize(W, mx, np, "mxfp4_codes", "mxfp4", 32, 4, codes, e8[:, None], None, "uint8",
                    DTYPES, "every fp4 code x E8M0 scale codes incl. 0 and 255")
    # mxfp8: all 256 element codes (0x7F/0xFF included) in 8 groups under several scale codes.
    codes = np.tile(np.arange(256), (4, 1))
    sc = np.array([[0, 1, 127, 128, 254, 255, 120, 134], [127] * 8,
                   [100, 110, 115, 118, 136, 140, 150, 160], [255, 0, 255, 0, 126, 127, 128, 129]])
    emit_dequantize(W, mx, np, "mxfp8_codes", "mxfp8", 32, 8, codes, sc, None, "uint8", DTYPES,
                    "every E4M3 code (0x7F/0xFF: +-480) x E8M0 scale codes incl. 0 and 255")
    # nvfp4: all 16 element codes under every E4M3 scale code (negative, 0x7F/0xFF included).
    codes = np.tile(np.arange(16), (256, 1))
    sc = np.arange(256)[:, None]
    emit_dequantize(W, mx, np, "nvfp4_codes", "nvfp4", 16, 4, codes, sc, None, "uint8", DTYPES,
                    "every fp4 code x every E4M3 scale code (incl. negative and 0x7F/0xFF)")
    for g in [2688.0, 0.37]:
        emit_dequantize(W, mx, np, f"nvfp4_codes_gscale{g:g}", "nvfp4", 16, 4, codes, sc, None,
                        "uint8", DTYPES, f"every fp4 code x every E4M3 scale code, global_scale {g:g}",
                        global_scale=g)
    # affine: every code with arbitrary (also negative, zero and large) scales and biases.
    for bits in MODES["affine"][1]:
        for gs in MODES["affine"][0]:
            for sdt in DTYPES:
                k = max(128, gs, 2**bits)
                codes = rng.integers(0, 2**bits, size=(6, k))
                codes[0, : 2**bits] = np.arange(2**bits)
                groups = k // gs
                scales = rng.normal(size=(6, groups)) * 0.1
                biases = rng.normal(size=(6, groups))
                scales[1], biases[1] = 0.0, 0.5
                scales[2], biases[2] = -1e-7, 0.0
                scales[3], biases[3] = 1000.0, -1000.0 * (2**bits - 1) / 2
                scales[4] = finite_max(sdt) / 2**bits
                emit_dequantize(W, mx, np, f"affine_b{bits}_g{gs}_{sdt}_codes", "affine", gs, bits,
                                codes, scales, biases, sdt, [sdt, "float32"] if sdt != "float32" else [sdt],
                                "random codes (row 0: every code) with built scales and biases")
