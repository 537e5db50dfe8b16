# RUN: %python %s
# REQUIRES: numpy
#
# PARAMETER tensors on the CPU path. A flow with three learned parameters
# (w [3, 8], scale [1, 8] and a non-power-of-two b6 [3, 6]) is compiled with
# vortex.compile(text, target="cpu") and run through vortex.runtime.cpu.load(...)
# .run_step with numpy arrays: the parameters are step arguments of both
# steps, bound at each call like fields. The cache step scales k by `scale`
# and projects it by `w` (a parameter as gemm's x on the cache side); the
# indexer forms the learned query multiply(mean(q), w) and scores it against
# the centroids, and probes (saved into fields) cover a parameter as gemm's
# x, as gemm's y (the standalone compute_param path), as gemv's x, in kron,
# in binary ops with another parameter, under a unary op, a reduction and
# the layout ops (transpose, a padded reshape, mask_slice), a cache-side
# interleave of a parameter, and a padded parameter reduced with max (a
# masked parameter). Everything
# is compared with a float64 numpy model written below; changing the
# parameter values between two calls changes the results accordingly.
#
# Data are small multiples of 1/4 (exact in float32), so scores and the
# selection must match exactly; exp is compared to rtol = 1e-5.

import sys

import numpy as np

import vortex
from vortex.runtime import cpu

BS, D, G = 4, 8, 2
TOPK, RATIO, BOS, EOS = 2, 0.25, 1, 1
CONFIG = (f"block_size = {BS}, page_size = {BS}, head_dim = {D}, "
          f"group_size = {G}, topk_val = {TOPK}, topk_ratio = {RATIO:e} : f64, "
          f"reserved_bos = {BOS}, reserved_eos = {EOS}, "
          "intermediate_dtype = f32, kv_dtype = f32")

PARAMS = [("w", 3, 8), ("scale", 1, 8), ("b6", 3, 6)]
# name, r, c, the indexer value saved into it
PROBES = [("o_g", 1, 3, "g"), ("o_sum", 1, 3, "sum"), ("o_sc", 1, 1, "sc"),
          ("o_gx", 1, 3, "gx"), ("o_h", 1, 3, "h"), ("o_gv", 1, 1, "gv"),
          ("o_kr", 1, 24, "kr"), ("o_ew", 3, 1, "ewm"), ("o_pp", 3, 8, "pp"),
          ("o_b6", 3, 1, "bx"), ("o_tr", 8, 3, "tr"), ("o_rs", 4, 6, "rs"),
          ("o_ms", 3, 8, "ms")]
CACHE_FIELDS = [("c", 1, 8), ("dsc", 1, 3), ("wi", 3, 4)]
FIELDS = CACHE_FIELDS + [(f, r, c) for f, r, c, _ in PROBES]


def flow_text():
    shapes = {(r, c) for _, r, c in FIELDS} | {(r, c) for _, r, c in PARAMS}
    shapes |= {(BS, D), (BS, 3), (3, 1), (1, 1), (1, 8), (3, 8), (1, 3)}
    lines = []
    for r, c in sorted(shapes):
        for tag, fmt in (("P", "paged"), ("R", "ragged"), ("B", "batched")):
            lines.append(f"!{tag}{r}x{c} = !vortex.vtensor<?x{r}x{c}xf32, "
                         f"#vortex.format<{fmt}>>")
    for name, r, c in PARAMS:
        lines.append(f"!W_{name} = !vortex.vtensor<1x{r}x{c}xf32, "
                     "#vortex.format<parameter>>")
    lines += [f"!kv = !vortex.vtensor<?x{BS}x{D}xf32, #vortex.format<paged>>",
              f"!q = !vortex.vtensor<?x{G}x{D}xf32, #vortex.format<batched>>",
              "!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>"]
    decl = ", ".join(f"{f} = [{r}, {c}]" for f, r, c in FIELDS)
    pdecl = ", ".join(f"{p} = [{r}, {c}]" for p, r, c in PARAMS)
    args = ", ".join([f"%{f}: !P{r}x{c}" for f, r, c in FIELDS] +
                     [f"%{p}: !W_{p}" for p, _, _ in PARAMS])
    lines += [
        f"vortex.flow @params_probe config = #vortex.config<{CONFIG}>",
        f"    fields({decl}) params({pdecl})",
        f"cache(%k: !kv, %v: !kv, {args}) {{",
        # k scaled per channel by a parameter, then its mean.
        f"  %ks = vortex.multiply %k, %scale : (!kv, !W_scale) -> !R{BS}x{D}",
        f"  %cm = vortex.mean %ks {{dim = 1 : i64}} : !R{BS}x{D} -> !R1x8",
        "  vortex.write %cm into %c : !R1x8 into !P1x8",
        # A parameter as gemm's x: D[s, a, j] = sum_k k[s, a, k] w[j, k].
        f"  %d = vortex.gemm %w, %k : (!W_w, !kv) -> !R{BS}x3",
        f"  %dm = vortex.max %d {{dim = 1 : i64}} : !R{BS}x3 -> !R1x3",
        "  vortex.write %dm into %dsc : !R1x3 into !P1x3",
        # A cache-side interleave of a parameter alone (every block gets it).
        "  %wi2 = vortex.max_interleave %w {dim = 2 : i64, factor = 2 : i64} "
        ": !W_w -> !R3x4",
        "  vortex.write %wi2 into %wi : !R3x4 into !P3x4",
        "}",
        f"indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, {args}) {{",
    ]
    for f, r, c in FIELDS[2:]:      # c and dsc are read below
        lines.append(f"  %{f}__old = vortex.load %{f} : !P{r}x{c} -> !R{r}x{c}")
    lines += [
        "  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !B1x8",
        # The learned query: a batched value times a parameter stays batched.
        "  %qw = vortex.multiply %qm, %w : (!B1x8, !W_w) -> !B3x8",
        "  %g = vortex.gemm %qw, %c : (!B3x8, !P1x8) -> !R1x3",
        "  %dl = vortex.load %dsc : !P1x3 -> !R1x3",
        "  %sum = vortex.add %g, %dl {alpha = 1.000000e+00 : f32, "
        "beta = 5.000000e-01 : f32} : (!R1x3, !R1x3) -> !R1x3",
        "  %sc = vortex.max %sum {dim = 2 : i64} : !R1x3 -> !R1x1",
        # A parameter as gemm's x against a paged field: ragged.
        "  %gx = vortex.gemm %w, %c : (!W_w, !P1x8) -> !R1x3",
        # A parameter as gemm's y (standalone): batched x, batched result.
        "  %qp = vortex.gemm %qm, %w : (!B1x8, !W_w) -> !B3x1",
        "  %qpt = vortex.transpose %qp : !B3x1 -> !B1x3",
        "  %h = vortex.multiply %g, %qpt : (!R1x3, !B1x3) -> !R1x3",
        # gemv and kron with a parameter.
        "  %gv = vortex.gemv %scale, %c : (!W_scale, !P1x8) -> !R1x1",
        "  %kr = vortex.kron %g, %scale {dims = array<i64: 2>} : "
        "(!R1x3, !W_scale) -> !R1x24",
        # Ops of parameters alone: ragged (every position holds the value).
        "  %ew = vortex.exp %w {beta = 2.500000e-01 : f32} : !W_w -> !R3x8",
        "  %ewm = vortex.sum %ew {dim = 2 : i64} : !R3x8 -> !R3x1",
        "  %pp = vortex.maximum %w, %scale : (!W_w, !W_scale) -> !R3x8",
        # A padded parameter ([3, 6] -> [4, 8]) reduced with max: its padded
        # lanes are masked with -inf.
        "  %bx = vortex.max %b6 {dim = 2 : i64} : !W_b6 -> !R3x1",
        # Layout ops of a parameter (a reshape needing padding is
        # standalone).
        "  %tr = vortex.transpose %w : !W_w -> !R8x3",
        "  %rs = vortex.reshape %w : !W_w -> !R4x6",
        "  %ms = vortex.mask_slice %w {start = 1 : i64, end = 3 : i64, "
        "dim = 2 : i64, alpha = 2.000000e+00 : f32, beta = -1.000000e+00 : f32}"
        " : !W_w -> !R3x8",
    ]
    for f, r, c, value in PROBES:
        lines.append(f"  vortex.save %{value} into %{f} : !R{r}x{c} into "
                     f"!P{r}x{c}")
    lines += ["  vortex.topk %sc into %o : !R1x1 into !o", "}"]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# The float64 model
# ---------------------------------------------------------------------------

def budget(n):
    return max(TOPK + BOS + EOS, int(n * RATIO))


def model_cache(k, params, blocks, fields):
    w, scale = params["w"][0], params["scale"][0]
    for b in blocks:
        kb = k[b]                                     # [BS, D]
        fields["c"][b] = (kb * scale).mean(axis=0, keepdims=True)
        fields["dsc"][b] = (kb @ w.T).max(axis=0, keepdims=True)
        fields["wi"][b] = w.reshape(3, 4, 2).max(axis=2)


def model_indexer(q, fields, params, indptr, indices):
    """Per CSR position: the probe values and the score; then the
    selection (contract: BOS, the best of [bos, n - eos) descending with
    ties to the lower position, EOS)."""
    w, scale, b6 = (params[n][0] for n in ("w", "scale", "b6"))
    rows = len(indptr) - 1
    probes = {f: np.zeros((len(indices), r, c)) for f, r, c, _ in PROBES}
    score = np.zeros(len(indices))
    for r in range(rows):
        qm = q[r].mean(axis=0)                        # [D]
        qw = qm[None, :] * w                          # [3, D]
        qp = w @ qm                                   # [3] = gemm(qm, w)^T
        for s in range(indptr[r], indptr[r + 1]):
            blk = indices[s]
            cb = fields["c"][blk][0]                  # [D]
            g = (qw @ cb)[None, :]                    # [1, 3]
            sm = g + 0.5 * fields["dsc"][blk]
            sc = sm.max()
            vals = {
                "g": g, "sum": sm, "sc": np.array([[sc]]),
                "gx": (w @ cb)[None, :],
                "h": g * qp[None, :],
                "gv": np.array([[scale @ cb]]),
                "kr": np.kron(g, scale[None, :]),
                "ewm": np.exp(0.25 * w).sum(axis=1, keepdims=True),
                "pp": np.maximum(w, scale[None, :]),
                "bx": b6.max(axis=1, keepdims=True),
                "tr": w.T, "rs": w.reshape(4, 6),
                "ms": np.where((np.arange(8) >= 1) & (np.arange(8) < 3),
                               2.0, -1.0)[None, :].repeat(3, axis=0),
            }
            for f, _, _, value in PROBES:
                probes[f][s] = vals[value]
            score[s] = sc
    sel_ptr, sel = [0], []
    for r in range(rows):
        start, end = indptr[r], indptr[r + 1]
        n = end - start
        bud = budget(n)
        if n <= bud:
            keep = list(range(start, end))
        else:
            mid = sorted(range(start + BOS, end - EOS),
                         key=lambda s: (-score[s], s))[:bud - BOS - EOS]
            keep = (list(range(start, start + BOS)) + mid +
                    list(range(end - EOS, end)))
        sel += [int(indices[s]) for s in keep]
        sel_ptr.append(len(sel))
    return probes, np.array(sel_ptr), np.array(sel)


# ---------------------------------------------------------------------------

def quarter(rng, shape, lo=-8, hi=8):
    return (rng.integers(lo, hi + 1, shape) / 4).astype(np.float32)


def main():
    failures = 0

    def report(ok, what, detail=""):
        nonlocal failures
        print(("PASS " if ok else "FAIL ") + what)
        if not ok:
            failures += 1
            if detail:
                print("    " + str(detail))

    manifest_path = vortex.compile(flow_text(), target="cpu")
    flow = cpu.load(manifest_path)
    m = flow.manifest
    names = [p for p, _, _ in PARAMS]
    cache_names = ["k", "v"] + [f for f, _, _ in FIELDS]
    cache_fields = [f for f, _, _ in CACHE_FIELDS]
    report(m.steps["cache"].args == tuple(cache_names + names + ["block_ids"]),
           "manifest: cache args are k, v, the fields, the parameters, "
           "block_ids", m.steps["cache"].args)
    report(m.steps["indexer"].args ==
           tuple(["q"] + cache_names + names +
                 ["dense_kv_indptr", "dense_kv_indices", "sparse_kv_indptr",
                  "sparse_kv_indices"]),
           "manifest: indexer args put the parameters after the fields",
           m.steps["indexer"].args)
    report(all(m.tensors[p].role == "parameter" and m.tensors[p].dtype == "f32"
               and [str(d) for d in m.tensors[p].shape] == ["1", str(r), str(c)]
               for p, r, c in PARAMS),
           "manifest: parameters are f32 [1, r, c] of role 'parameter'")
    report(not (set(names) & set(m.steps["cache"].writes + m.steps["indexer"].writes)),
           "manifest: no step writes a parameter")
    report(m.cache_names() == cache_names,
           "manifest: parameters are not cache tensors", m.cache_names())

    rng = np.random.default_rng(7)
    lengths = [0, 1, 3, 5, 6, 9, 17, 30]      # budgets 4 .. 7
    num_blocks = sum(lengths) + 3
    k = quarter(rng, (num_blocks, BS, D))
    v = quarter(rng, (num_blocks, BS, D))
    rows = len(lengths)
    q = quarter(rng, (rows, G, D))
    perm = rng.permutation(num_blocks)[:sum(lengths)].astype(np.int32)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    blocks = np.arange(num_blocks, dtype=np.int32)

    def make_params(seed):
        prng = np.random.default_rng(seed)
        return {"w": quarter(prng, (1, 3, 8)),
                "scale": quarter(prng, (1, 1, 8), 1, 8),
                "b6": quarter(prng, (1, 3, 6), -8, -1)}   # all negative

    results = []
    for call, seed in enumerate((11, 12)):
        params = make_params(seed)
        fields = {f: np.zeros((num_blocks, r, c), np.float32)
                  for f, r, c in FIELDS}
        tensors = dict(k=k, v=v, **fields, **params)
        flow.run_step("cache", dict(tensors, block_ids=blocks))
        model = {f: np.zeros((num_blocks, r, c)) for f, r, c in FIELDS}
        model_cache(k.astype(np.float64),
                    {n: p.astype(np.float64) for n, p in params.items()},
                    blocks, model)
        for f in cache_fields:
            report(np.array_equal(fields[f], model[f]),
                   f"call {call}: cache step field {f!r} (parameters "
                   "scale and w)",
                   np.abs(fields[f] - model[f]).max())
        before = {n: p.copy() for n, p in params.items()}
        sparse_ptr = np.zeros(rows + 1, np.int32)
        sparse = np.zeros(len(perm), np.int32)
        flow.run_step("indexer", dict(tensors, q=q, dense_kv_indptr=indptr,
                                      dense_kv_indices=perm,
                                      sparse_kv_indptr=sparse_ptr,
                                      sparse_kv_indices=sparse))
        report(all(np.array_equal(before[n], params[n]) for n in names),
               f"call {call}: the parameters are not written")
        probes, want_ptr, want = model_indexer(
            q.astype(np.float64), {f: model[f] for f in cache_fields},
            {n: p.astype(np.float64) for n, p in params.items()},
            indptr, perm)
        # Saves cover the positions [0, n - eos) of rows that need selection.
        saved = []
        for r, n in enumerate(lengths):
            if n > budget(n):
                saved += list(range(indptr[r], indptr[r + 1] - EOS))
        ids = perm[saved]
        for f, _, _, value in PROBES:
            got, exp = fields[f][ids], probes[f][saved]
            ok = np.allclose(got, exp, rtol=1e-5, atol=0) if value == "ewm" \
                else np.array_equal(got, exp)
            report(ok, f"call {call}: probe {value}",
                   np.abs(got - exp).max() if got.size else "")
        report(np.array_equal(sparse_ptr, want_ptr),
               f"call {call}: sparse_kv_indptr", (sparse_ptr, want_ptr))
        report(np.array_equal(sparse[:sparse_ptr[-1]], want),
               f"call {call}: the selection", (sparse[:sparse_ptr[-1]], want))
        results.append((fields["o_sc"][ids].copy(), sparse.copy(),
                        fields["c"].copy()))
    report(not np.array_equal(results[0][0], results[1][0]) and
           not np.array_equal(results[0][2], results[1][2]),
           "new parameter values change the scores and the cache step")
    report(not np.array_equal(results[0][1], results[1][1]),
           "new parameter values change the selection")
    print(f"{failures} failure(s)")
    return failures


if __name__ == "__main__":
    sys.exit(1 if main() else 0)
