"""tools/quant_golden/matmul.py — quantized_matmul and gather_qmm cases: the geometry sweep,
NaN/Inf next to clean data, batch broadcasting, 1-D x, and gathers with lhs/rhs indices."""

from quant_golden.common import DTYPES, configs, dequantize, mx_dtype, quantize

# ---- quantized_matmul and gather_qmm ----------------------------------------------------------

M_SWEEP = [1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 31, 32, 33, 34, 63, 64, 65, 127, 128, 129]
N_ODD = [1, 3, 5, 7, 9, 10, 17, 31, 33, 47, 67, 100, 130, 257]


def tol_for(dtype, k):
    """A loose bound on MLX's error against float64, used only to flag suspicious outputs."""
    eps = {"float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8}[dtype]
    return (k + 2) * eps


class MatmulGen:
    def __init__(self, W, mx, np):
        self.W, self.mx, self.np = W, mx, np
        self.n = 0
        self.suspect, self.nan_cases = [], []
        self.nan_differs = 0

    def weights(self, rng, mode, gs, bits, dtype, rows, cols, batch=()):
        """Quantized weights of logical shape (*batch, rows, cols), groups along cols."""
        mx, np = self.mx, self.np
        w32 = (rng.normal(size=(*batch, rows, cols)) / np.sqrt(max(cols, 1))).astype(np.float32)
        w = mx.array(w32).astype(mx_dtype(mx, dtype))
        return quantize(mx, w, gs, bits, mode)

    def emit(self, kind, mode, gs, bits, dtype, transpose, x, wq, sc, bi, note, lhs=None, rhs=None,
             sorted_indices=False):
        mx, np, W = self.mx, self.np, self.W
        self.n += 1
        cid = f"{kind}_{self.n:04d}"
        folder = "qmm" if kind == "qmm" else "gather"
        if kind == "qmm":
            y = mx.quantized_matmul(x, wq, sc, bi, transpose, gs, bits, mode)
        else:
            y = mx.gather_qmm(x, wq, sc, bi, lhs, rhs, transpose, gs, bits, mode,
                              sorted_indices=sorted_indices)
        mx.eval(y)
        sdt = dtype if mode == "affine" else "uint8"
        arrays = {"x": W.save(f"{folder}/{cid}_x.npy", x, dtype),
                  "w_q": W.save(f"{folder}/{cid}_wq.npy", wq, "uint32"),
                  "scales": W.save(f"{folder}/{cid}_scales.npy", sc, sdt)}
        if bi is not None:
            arrays["biases"] = W.save(f"{folder}/{cid}_biases.npy", bi, sdt)
        if lhs is not None:
            arrays["lhs_indices"] = W.save(f"{folder}/{cid}_lhs.npy", lhs, "int32")
        if rhs is not None:
            arrays["rhs_indices"] = W.save(f"{folder}/{cid}_rhs.npy", rhs, "int32")
        arrays["out"] = W.save(f"{folder}/{cid}_out.npy", y, dtype)
        with np.errstate(invalid="ignore", over="ignore"):
            err, k = self.check(kind, mode, gs, bits, dtype, transpose, x, wq, sc, bi, lhs, rhs, y)
        case = {"id": cid, "kind": "quantized_matmul" if kind == "qmm" else "gather_qmm",
                "mode": mode, "bits": bits, "group_size": gs, "dtype": dtype,
                "transpose": transpose, "note": note, "M": int(x.shape[-2]) if x.ndim > 1 else 1,
                "K": k, "N": int(y.shape[-1]), "mlx_max_abs_err_vs_f64": err, "arrays": arrays}
        if kind == "gather":
            case["sorted_indices"] = sorted_indices
        if self.nan_differs:
            # Outputs that are NaN in MLX but not in the float64 product, or the reverse.
            case["mlx_nan_positions_differ"] = self.nan_differs
            self.nan_cases.append(cid)
        if err is not None and err > tol_for(dtype, k) * 4:
            case["mlx_suspect"] = True
            self.suspect.append(cid)
        W.add(case)

    def check(self, kind, mode, gs, bits, dtype, transpose, x, wq, sc, bi, lhs, rhs, y):
        """MLX's max |error| against float64 on the finite outputs, relative to sum |x||w|."""
        mx, np = self.mx, self.np
        wd = np.array(dequantize(mx, wq, sc, bi, gs, bits, mode, mx.float32)).astype(np.float64)
        if transpose:
            wd = np.swapaxes(wd, -1, -2)
        xd = np.array(x.astype(mx.float32)).astype(np.float64)
        k = int(xd.shape[-1])
        if kind == "gather":
            li = np.array(lhs) if lhs is not None else None
            ri = np.array(rhs) if rhs is not None else None
            xb = xd.reshape(-1, *xd.shape[-2:])
            wb = wd.reshape(-1, *wd.shape[-2:])
            li = li if li is not None else np.arange(xb.shape[0]).reshape(xd.shape[:-2])
            ri = ri if ri is not None else np.arange(wb.shape[0]).reshape(wd.shape[:-2])
            li, ri = np.broadcast_arrays(li, ri)
            ref = np.stack([xb[a] @ wb[b] for a, b in zip(li.ravel(), ri.ravel())])
            ref = ref.reshape(*li.shape, *ref.shape[-2:])
            mag = np.stack([np.abs(xb[a]) @ np.abs(wb[b]) for a, b in zip(li.ravel(), ri.ravel())])
            mag = mag.reshape(ref.shape)
        elif xd.ndim > 2 and wd.ndim > 2:
            ref, mag = xd @ wd, np.abs(xd) @ np.abs(wd)
        else:  # a 1-D or 2-D x multiplies the first w matrix only (MLX)
            w2 = wd.reshape(-1, *wd.shape[-2:])[0]
            ref, mag = xd @ w2, np.abs(xd) @ np.abs(w2)
        got = np.array(y.astype(mx.float32)).astype(np.float64)
        ok = np.isfinite(ref) & np.isfinite(mag)
        if got.shape != ref.shape:
            raise SystemExit(f"shape mismatch {got.shape} vs {ref.shape} in {kind} {mode}")
        self.nan_differs = int(np.count_nonzero(np.isnan(got) != np.isnan(ref)))
        if not ok.any():
            return None, k
        rel = np.abs(got[ok] - ref[ok]) / np.maximum(mag[ok], 1e-30)
        return float(rel.max()), k


def make_x(mx, np, rng, dtype, shape):
    return mx.array(rng.normal(size=shape).astype(np.float32)).astype(mx_dtype(mx, dtype))


def geometries(mode, gs, transpose, index):
    """(M, K, N) triples for one (mode, gs, transpose): M from the sweep, K and N off the tiles."""
    if transpose:  # groups run along K
        if mode == "nvfp4":
            ks = [16, 48, 80, 112, 144, 208, 272]
        else:
            ks = [gs * m for m in (1, 3, 5, 7, 9) if gs * m <= 300] or [gs]
        ns = N_ODD
    else:  # groups run along N
        if mode == "nvfp4":
            ns = [16, 48, 80, 112, 144, 208]
        else:
            ns = [gs * m for m in (1, 3, 5, 7) if gs * m <= 300] or [gs]
        ks = [1, 3, 7, 17, 33, 50, 67, 100, 129, 200]
    out = []
    for j in range(4):
        m = M_SWEEP[(index * 5 + j * 7) % len(M_SWEEP)]
        # Keep each case small: M*K and M*N at most 2048 elements, N*K at most 16384.
        kk = [v for v in ks if m * v <= 2048] or ks[:1]
        k = kk[(index + j) % len(kk)]
        nn = [v for v in ns if m * v <= 2048 and v * k <= 16384] or ns[:1]
        n = nn[(index * 3 + j * 5) % len(nn)]
        out.append((m, k, n))
    return out


FP_EXTRA = [
    ("nvfp4", 16, 4, True, (1, 16, 7)), ("nvfp4", 16, 4, True, (33, 16, 33)),
    ("nvfp4", 16, 4, True, (65, 272, 5)), ("nvfp4", 16, 4, True, (40, 208, 17)),
    ("nvfp4", 16, 4, True, (34, 112, 48)), ("nvfp4", 16, 4, False, (33, 37, 16)),
    ("nvfp4", 16, 4, False, (1, 272, 48)), ("nvfp4", 16, 4, False, (65, 17, 112)),
    ("nvfp4", 16, 4, False, (40, 50, 144)), ("mxfp4", 32, 4, True, (33, 32, 7)),
    ("mxfp4", 32, 4, True, (1, 288, 1)), ("mxfp4", 32, 4, False, (33, 7, 32)),
    ("mxfp4", 32, 4, False, (1, 300, 96)), ("mxfp8", 32, 8, True, (34, 96, 31)),
    ("mxfp8", 32, 8, True, (2, 288, 3)), ("mxfp8", 32, 8, False, (33, 5, 64)),
    ("mxfp8", 32, 8, False, (6, 129, 160)),
]


def gen_qmm(W, mx, np):
    G = MatmulGen(W, mx, np)
    idx = 0
    for mode, gs, bits in configs():
        for transpose in (True, False):
            for (m, k, n) in geometries(mode, gs, transpose, idx):
                dtype = DTYPES[idx % 3]
                rng = np.random.default_rng(5000 + idx)
                idx += 1
                rows, cols = (n, k) if transpose else (k, n)
                wq, sc, bi = G.weights(rng, mode, gs, bits, dtype, rows, cols)
                x = make_x(mx, np, rng, dtype, (m, k))
                G.emit("qmm", mode, gs, bits, dtype, transpose, x, wq, sc, bi, f"geometry M={m} K={k} N={n}")
    # The fp modes' own edges (quant-spec Part B §7.10): one nvfp4 group (K = 16), K = 16 mod 32
    # and N = 16 mod 32 at M >= 33 where MLX's GPUs take the qmm and split-K paths.
    for mode, gs, bits, transpose, (m, k, n) in FP_EXTRA:
        dtype = DTYPES[idx % 3]
        rng = np.random.default_rng(5000 + idx)
        idx += 1
        rows, cols = (n, k) if transpose else (k, n)
        wq, sc, bi = G.weights(rng, mode, gs, bits, dtype, rows, cols)
        x = make_x(mx, np, rng, dtype, (m, k))
        G.emit("qmm", mode, gs, bits, dtype, transpose, x, wq, sc, bi, f"fp edge M={m} K={k} N={n}")
    gen_qmm_special(G, mx, np)
    return G


def gen_qmm_special(G, mx, np):
    """NaN/Inf next to clean data, batch broadcasting, 1-D x, the 2-D x with 3-D w quirk."""
    special = [("affine", 64, 4), ("affine", 32, 3), ("affine", 128, 8), ("affine", 32, 5),
               ("affine", 64, 6), ("affine", 32, 2), ("mxfp4", 32, 4), ("mxfp8", 32, 8),
               ("nvfp4", 16, 4)]
    for si, (mode, gs, bits) in enumerate(special):
        for transpose in (True, False):
            dtype = DTYPES[si % 3]
            rng = np.random.default_rng(7000 + 2 * si + transpose)
            k = 48 if (mode == "nvfp4" and transpose) else (2 * gs if transpose else 37)
            n = 7 if transpose else (48 if mode == "nvfp4" else gs * 2)
            rows, cols = (n, k) if transpose else (k, n)
            # NaN in one row of x: only that output row may be NaN.
            wq, sc, bi = G.weights(rng, mode, gs, bits, dtype, rows, cols)
            xn = np.array(make_x(mx, np, rng, "float32", (9, k)))
            xn[4, gs // 2 if k > gs else 0] = np.nan
            xn[6, -1] = np.inf
            x = mx.array(xn).astype(mx_dtype(mx, dtype))
            G.emit("qmm", mode, gs, bits, dtype, transpose, x, wq, sc, bi,
                   "x row 4 has a NaN and row 6 an Inf; other rows clean")
            # A poisoned group (NaN affine scale / E8M0 255 = Inf / E4M3 0x7F = 480) in the middle.
            if mode == "affine":
                sf = np.array(sc.astype(mx.float32))
                sf[rows // 2, 1 % sf.shape[1]] = np.nan
                sc2 = mx.array(sf).astype(sc.dtype)
                note = f"scale of group (row {rows // 2}, group {1 % sf.shape[1]}) is NaN; neighbours clean"
            else:
                s_np = np.array(sc).copy()
                s_np[rows // 2, 0] = 255 if mode != "nvfp4" else 0x7F
                sc2 = mx.array(s_np)
                note = f"scale code of group (row {rows // 2}, group 0) set to {int(s_np[rows // 2, 0])}"
            x = make_x(mx, np, rng, dtype, (9, k))
            G.emit("qmm", mode, gs, bits, dtype, transpose, x, wq, sc2, bi, note)
            # Batch broadcasting: x (2, 1, M, K) with w (1, 3, rows, cols) -> (2, 3, M, N).
            wq, sc, bi = G.weights(rng, mode, gs, bits, dtype, rows, cols, batch=(1, 3))
            x = make_x(mx, np, rng, dtype, (2, 1, 5, k))
            G.emit("qmm", mode, gs, bits, dtype, transpose, x, wq, sc, bi,
                   "batch broadcast x (2,1,M,K) with w batch (1,3)")
            # Matching batches (3, M, K) x (3, ...).
            wq, sc, bi = G.weights(rng, mode, gs, bits, dtype, rows, cols, batch=(3,))
            x = make_x(mx, np, rng, dtype, (3, 2, k))
            G.emit("qmm", mode, gs, bits, dtype, transpose, x, wq, sc, bi, "batched x (3,M,K), w batch (3,)")
            # 1-D x.
            wq, sc, bi = G.weights(rng, mode, gs, bits, dtype, rows, cols)
            x = make_x(mx, np, rng, dtype, (k,))
            G.emit("qmm", mode, gs, bits, dtype, transpose, x, wq, sc, bi, "1-D x (K,)")
    # MLX quirk (quant-spec Part B §4.1): a 2-D x with a 3-D w uses only w[0], without an error.
    rng = np.random.default_rng(7999)
    wq, sc, bi = G.weights(rng, "affine", 64, 4, "float32", 9, 128, batch=(2,))
    x = make_x(mx, np, rng, "float32", (3, 128))
    G.emit("qmm", "affine", 64, 4, "float32", True, x, wq, sc, bi,
           "MLX quirk: 2-D x with 3-D w silently uses w[0]; tessera may reject it instead")


def gen_gather(G, mx, np):
    cfgs = [("affine", 64, 4), ("affine", 32, 3), ("affine", 128, 8), ("affine", 32, 6),
            ("affine", 64, 2), ("affine", 32, 5), ("mxfp4", 32, 4), ("mxfp8", 32, 8),
            ("nvfp4", 16, 4)]
    for ci, (mode, gs, bits) in enumerate(cfgs):
        for transpose in (True, False):
            dtype = DTYPES[(ci + transpose) % 3]
            rng = np.random.default_rng(9000 + 2 * ci + transpose)
            experts = 4
            k = (80 if mode == "nvfp4" else 2 * gs) if transpose else 45
            n = 11 if transpose else (48 if mode == "nvfp4" else gs)
            rows, cols = (n, k) if transpose else (k, n)
            wq, sc, bi = G.weights(rng, mode, gs, bits, dtype, rows, cols, batch=(experts,))
            i32 = lambda a: mx.array(np.asarray(a, dtype=np.int32))  # noqa: E731
            # MoE decode: x (T, 1, 1, K), rhs (T, top_k) unsorted.
            t, top = 5, 2
            rhs = rng.integers(0, experts, size=(t, top))
            x = make_x(mx, np, rng, dtype, (t, 1, 1, k))
            G.emit("gather", mode, gs, bits, dtype, transpose, x, wq, sc, bi,
                   "x (T,1,1,K), rhs (T,top_k) unsorted", rhs=i32(rhs))
            # Sorted rhs over x rows (T, 1, K) — the sorted_indices path.
            t = 9
            rhs = np.sort(rng.integers(0, experts, size=(t,)))
            x = make_x(mx, np, rng, dtype, (t, 1, k))
            G.emit("gather", mode, gs, bits, dtype, transpose, x, wq, sc, bi,
                   "x (T,1,K), rhs (T,) sorted, sorted_indices=True", rhs=i32(rhs), sorted_indices=True)
            G.emit("gather", mode, gs, bits, dtype, transpose, x, wq, sc, bi,
                   "same indices, sorted_indices=False", rhs=i32(rhs))
            # lhs and rhs both given, M > 1.
            b = 3
            x = make_x(mx, np, rng, dtype, (b, 4, k))
            lhs = rng.integers(0, b, size=(6,))
            rhs = rng.integers(0, experts, size=(6,))
            G.emit("gather", mode, gs, bits, dtype, transpose, x, wq, sc, bi,
                   "x (3,M,K), lhs (6,) and rhs (6,)", lhs=i32(lhs), rhs=i32(rhs))
            # lhs only (w batch defaults to arange over its 4 matrices; lhs has 4 entries).
            lhs = rng.integers(0, b, size=(experts,))
            G.emit("gather", mode, gs, bits, dtype, transpose, x, wq, sc, bi,
                   "lhs only (4,), rhs defaults to arange(4)", lhs=i32(lhs))
            # lhs sorted with sorted_indices.
            lhs = np.sort(rng.integers(0, b, size=(experts,)))
            G.emit("gather", mode, gs, bits, dtype, transpose, x, wq, sc, bi,
                   "lhs only, sorted, sorted_indices=True", lhs=i32(lhs), sorted_indices=True)
