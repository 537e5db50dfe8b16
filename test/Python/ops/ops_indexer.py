# RUN: %python %s
# REQUIRES: numpy
#
# Indexer-side op numerics on the CPU path. A synthetic flow (G = 3, D = 8,
# block_size 4, budget max(5, n/4), bos = eos = 1) computes every op of the
# catalog the shipped flows do not all cover and saves each result into a
# field of its own; after one cache step and two indexer steps the fields
# (the rows [0, n - eos) of the rows that need selection, per the save
# contract) are compared with python/vortex/semantics/reference.py to rtol = atol =
# 1e-5, and the selection up to ties.
#
# Covered: gemm (batched x and paged x), gemv, softmax (scale; [1, 3] and
# [3, 8] channels), normalize (both shapes), conv1d (K = 3 on [1, 3], K = 4
# on [3, 8]), relu / sigmoid / silu / abs / add_mul / exp / log with
# non-default alpha, beta, the six where_* masks, minimum, maximum,
# add(alpha, beta), multiply, mask_slice on dims 1 and 2, transpose,
# reshape, kron over dims {2} and {1, 2}, reductions mean / max / min / sum
# / l2norm over dims 1 and 2 of a ragged value and over dim 0 (ragged ->
# batched, broadcast back with add), load.

import sys

import numpy as np

import vortex
from vortex.semantics import reference as ref
from vortex import testing

CONFIG = ("block_size = 4, page_size = 4, head_dim = 8, group_size = 3, "
          "topk_val = 3, topk_ratio = 2.500000e-01 : f64, reserved_bos = 1, "
          "reserved_eos = 1, intermediate_dtype = f32, kv_dtype = f32")


def f32(x):
    return f"{x:.6e} : f32"


CACHE_FIELDS = [("c", 1, 8), ("mx", 2, 8)]
CACHE_BODY = """
  %cm = vortex.mean %k {dim = 1 : i64} : !kv -> !R1x8
  vortex.write %cm into %c : !R1x8 into !P1x8
  %mi = vortex.max_interleave %k {dim = 1 : i64, factor = 2 : i64} : !kv -> !R2x8
  vortex.write %mi into %mx : !R2x8 into !P2x8
"""

UNARY = [("relu", 0.1, -0.5), ("sigmoid", 0.2, -1.0), ("silu", 0.0, -1.0),
         ("abs", 0.5, 2.0), ("add_mul", 1.0, -2.0), ("exp", 0.0, 0.1)]
WHERE = [("eq", "ma", "mb"), ("ne", "g", "ma"), ("gt", "g", "ma"),
         ("ge", "ma", "mb"), ("lt", "g", "mb"), ("le", "ma", "mb")]
REDUCE = ["mean", "max", "min", "sum", "l2norm"]
CONV_W = [[[0.5, 1.0, -1.0]], [[0.25, 2.0, 0.5]], [[1.5, -0.5, 0.125]]]
# A [K = 4, 3, 8] kernel (multiples of 1/4: exact in float32), longer than
# the scored range of the shortest rows that need selection.
CONV_W38 = (np.random.default_rng(0).integers(-8, 9, (4, 3, 8)) / 4).tolist()

body = [
    "  %g = vortex.gemm %q, %c : (!q, !P1x8) -> !R1x3",
    f"  %sm = vortex.softmax %g {{scale = {f32(0.5)}}} : !R1x3 -> !R1x3",
    "  %nm = vortex.normalize %g : !R1x3 -> !R1x3",
    "  %cv = vortex.conv1d %g {weight = dense<" + str(CONV_W)
    + "> : tensor<3x1x3xf32>} : !R1x3 -> !R1x3",
]
probes = [("o_gemm", 1, 3, "g"), ("o_softmax", 1, 3, "sm"),
          ("o_norm", 1, 3, "nm"), ("o_conv", 1, 3, "cv")]
for op, a, b in UNARY:
    body.append(f"  %u_{op} = vortex.{op} %g {{alpha = {f32(a)}, beta = "
                f"{f32(b)}}} : !R1x3 -> !R1x3")
    probes.append((f"o_{op}", 1, 3, f"u_{op}"))
body.append(f"  %u_log = vortex.log %u_abs {{alpha = {f32(1.0)}, beta = "
            f"{f32(1.0)}}} : !R1x3 -> !R1x3")
probes.append(("o_log", 1, 3, "u_log"))
body.append("  %ma = vortex.mask_slice %g {start = 0 : i64, end = 2 : i64, "
            f"dim = 2 : i64, alpha = {f32(1)}, beta = {f32(0)}}} : !R1x3 -> !R1x3")
body.append("  %mb = vortex.mask_slice %g {start = 1 : i64, end = 3 : i64, "
            f"dim = 2 : i64, alpha = {f32(1)}, beta = {f32(0)}}} : !R1x3 -> !R1x3")
for pred, x, y in WHERE:
    body.append(f"  %w_{pred} = vortex.where_{pred} %{x}, %{y} : "
                "(!R1x3, !R1x3) -> !R1x3")
    probes.append((f"o_where_{pred}", 1, 3, f"w_{pred}"))
body += [
    "  %mn = vortex.minimum %q, %c : (!q, !P1x8) -> !R3x8",
    f"  %ad = vortex.add %q, %c {{alpha = {f32(0.5)}, beta = {f32(-2.0)}}} : "
    "(!q, !P1x8) -> !R3x8",
    "  %sm2 = vortex.softmax %ad : !R3x8 -> !R3x8",
    "  %nm2 = vortex.normalize %ad : !R3x8 -> !R3x8",
    "  %cv2 = vortex.conv1d %ad {weight = dense<" + str(CONV_W38)
    + "> : tensor<4x3x8xf32>} : !R3x8 -> !R3x8",
    "  %mxm = vortex.maximum %c, %mx : (!P1x8, !P2x8) -> !R2x8",
    "  %tr = vortex.transpose %g : !R1x3 -> !R3x1",
    "  %rs = vortex.reshape %ad : !R3x8 -> !R4x6",
    "  %kr2 = vortex.kron %q, %c {dims = array<i64: 2>} : (!q, !P1x8) -> !R3x64",
    "  %kr12 = vortex.kron %g, %mx {dims = array<i64: 1, 2>} : "
    "(!R1x3, !P2x8) -> !R2x24",
    "  %gr = vortex.gemm %c, %mx : (!P1x8, !P2x8) -> !R2x1",
    "  %m1 = vortex.mask_slice %ad {start = 1 : i64, end = 2 : i64, dim = 1 : "
    f"i64, alpha = {f32(2.0)}, beta = {f32(-1.0)}}} : !R3x8 -> !R3x8",
    "  %adm = vortex.multiply %ad, %m1 : (!R3x8, !R3x8) -> !R3x8",
]
probes += [("o_min", 3, 8, "mn"), ("o_add", 3, 8, "ad"),
           ("o_softmax38", 3, 8, "sm2"), ("o_norm38", 3, 8, "nm2"),
           ("o_conv38", 3, 8, "cv2"), ("o_maximum", 2, 8, "mxm"),
           ("o_tr", 3, 1, "tr"), ("o_rs", 4, 6, "rs"), ("o_kr2", 3, 64, "kr2"),
           ("o_kr12", 2, 24, "kr12"), ("o_gr", 2, 1, "gr"),
           ("o_m1", 3, 8, "adm")]
for kind in REDUCE:
    body += [
        f"  %r1_{kind} = vortex.{kind} %ad {{dim = 1 : i64}} : !R3x8 -> !R1x8",
        f"  %r2_{kind} = vortex.{kind} %ad {{dim = 2 : i64}} : !R3x8 -> !R3x1",
        f"  %r0_{kind} = vortex.{kind} %g {{dim = 0 : i64}} : !R1x3 -> !B1x3",
        f"  %r0b_{kind} = vortex.add %g, %r0_{kind} {{alpha = {f32(0.0)}, "
        f"beta = {f32(1.0)}}} : (!R1x3, !B1x3) -> !R1x3",
    ]
    probes += [(f"o_r1_{kind}", 1, 8, f"r1_{kind}"),
               (f"o_r2_{kind}", 3, 1, f"r2_{kind}"),
               (f"o_r0_{kind}", 1, 3, f"r0b_{kind}")]
body += ["  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !B1x8",
         "  %sc = vortex.gemv %qm, %c : (!B1x8, !P1x8) -> !R1x1"]

TEXT = testing.probe_flow_text("probe_indexer_ops", CONFIG, (4, 8), 3,
                               CACHE_FIELDS, CACHE_BODY, probes,
                               "\n".join(body), "sc")


def cache_fn(k, v, cfg):
    return {"c": ref.reduce(k, 1, "mean"), "mx": ref.interleave(k, 1, 2, "max")}


def indexer_fn(c):
    q, C, MX = c.rows(c.q), c.field("c"), c.field("mx")
    g = ref.gemm(q, C)
    vals = dict(g=g, sm=ref.softmax_rows(g, c.csr, c.cfg, 0.5),
                nm=ref.normalize_rows(g, c.csr, c.cfg),
                cv=ref.conv1d_rows(g, c.csr, c.cfg, CONV_W))
    for op, a, b in UNARY:
        vals[f"u_{op}"] = ref.unary(g, op, a, b)
    vals["u_log"] = ref.unary(vals["u_abs"], "log", 1.0, 1.0)
    env = {"g": g, "ma": ref.mask_slice(g, 0, 2, 2, 1.0, 0.0),
           "mb": ref.mask_slice(g, 1, 3, 2, 1.0, 0.0)}
    for pred, x, y in WHERE:
        vals[f"w_{pred}"] = ref.where(env[x], env[y], pred)
    ad = ref.add(q, C, 0.5, -2.0)
    vals.update(mn=ref.minimum(q, C), ad=ad,
                sm2=ref.softmax_rows(ad, c.csr, c.cfg),
                nm2=ref.normalize_rows(ad, c.csr, c.cfg),
                cv2=ref.conv1d_rows(ad, c.csr, c.cfg, CONV_W38),
                mxm=ref.maximum(C, MX), tr=ref.transpose(g),
                rs=ref.reshape(ad, 4, 6), kr2=ref.kron(q, C, (2,)),
                kr12=ref.kron(g, MX, (1, 2)), gr=ref.gemm(C, MX),
                adm=ref.multiply(ad, ref.mask_slice(ad, 1, 2, 1, 2.0, -1.0)))
    for kind in REDUCE:
        vals[f"r1_{kind}"] = ref.reduce(ad, 1, kind)
        vals[f"r2_{kind}"] = ref.reduce(ad, 2, kind)
        vals[f"r0b_{kind}"] = ref.add(
            g, c.rows(ref.reduce_rows(g, c.csr, c.cfg, kind)), 0.0, 1.0)
    for field, _, _, value in probes:
        c.save(field, vals[value])
    return ref.gemv(c.rows(ref.reduce(c.q, 1, "mean")), C)


FLOW_REF = ref.FlowRef([f for f, _, _ in CACHE_FIELDS], cache_fn, indexer_fn)


def main():
    flow = vortex.compile_flow(TEXT)
    assert flow.info.indexer_writes == [p[0] for p in probes], \
        flow.info.indexer_writes
    failures = 0
    # budget 5 up to n = 23, then n // 4: rows within budget (0..5), just
    # over (6, 7), well over (12, 40, 90).
    for seed in (3, 4):
        p = testing.make_problem(flow, [0, 1, 2, 5, 6, 7, 12, 40, 90],
                                 seed=seed)
        failures += testing.print_reports(
            testing.run_and_check(flow, p, flow_ref=FLOW_REF), f"seed={seed}")
    return failures


if __name__ == "__main__":
    sys.exit(1 if main() else 0)
