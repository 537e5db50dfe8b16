# RUN: %python %s
# REQUIRES: numpy
#
# Cache-side op numerics on the CPU path. A synthetic flow (block_size 4,
# D = 8) writes the result of each cache op into a field of its own; the
# cache step runs on the rows' blocks in random order (spare pool blocks
# hold garbage and must stay untouched), and every field is compared with
# python/vortex/semantics/reference.py to rtol = atol = 1e-5.
#
# Covered: max / min / mean / l2norm over dims 1 and 2, the four *_interleave
# ops over dims 1 (factor 2) and 2 (factor 4), gemm (k, v) per block,
# reshape, where_gt, add(alpha, beta), multiply (broadcast),
# exp / sigmoid / relu / silu / abs / add_mul / log, mask_slice,
# maximum, minimum, a chain (l2norm then mean: venergy), fill with a nonzero
# value, and write.

import sys

import numpy as np
import vortex
from vortex import testing
from vortex.semantics import reference as ref

CONFIG = ("block_size = 4, page_size = 4, head_dim = 8, group_size = 2, "
          "topk_val = 3, topk_ratio = 2.500000e-01 : f64, reserved_bos = 1, "
          "reserved_eos = 1, intermediate_dtype = f32, kv_dtype = f32")
def f32(x): return f"{x:.6e} : f32"

FIELDS = []
body = []
def out(name, r, c, line_value):
    FIELDS.append((name, r, c))
    body.append(line_value)
    body.append(f"  vortex.write %v_{name} into %{name} : !R{r}x{c} into !P{r}x{c}")

for kind in ["max", "min", "mean", "l2norm"]:
    out(f"i1_{kind}", 2, 8, f"  %v_i1_{kind} = vortex.{kind}_interleave %k {{dim = 1 : i64, factor = 2 : i64}} : !kv -> !R2x8")
    out(f"i2_{kind}", 4, 2, f"  %v_i2_{kind} = vortex.{kind}_interleave %v {{dim = 2 : i64, factor = 4 : i64}} : !kv -> !R4x2")
    out(f"d2_{kind}", 4, 1, f"  %v_d2_{kind} = vortex.{kind} %v {{dim = 2 : i64}} : !kv -> !R4x1")
    out(f"d1_{kind}", 1, 8, f"  %v_d1_{kind} = vortex.{kind} %k {{dim = 1 : i64}} : !kv -> !R1x8")
out("gemm", 4, 4, "  %v_gemm = vortex.gemm %k, %v : (!kv, !kv) -> !R4x4")
out("rs", 2, 16, "  %v_rs = vortex.reshape %k : !kv -> !R2x16")
out("wgt", 4, 8, "  %v_wgt = vortex.where_gt %k, %v : (!kv, !kv) -> !R4x8")
out("add", 4, 8, f"  %v_add = vortex.add %k, %v {{alpha = {f32(0.5)}, beta = {f32(-1.5)}}} : (!kv, !kv) -> !R4x8")
out("exp", 4, 8, f"  %v_exp = vortex.exp %k {{alpha = {f32(0.25)}, beta = {f32(0.5)}}} : !kv -> !R4x8")
out("sig", 4, 8, f"  %v_sig = vortex.sigmoid %k {{alpha = {f32(0.0)}, beta = {f32(-1.0)}}} : !kv -> !R4x8")
out("msk", 4, 8, f"  %v_msk = vortex.mask_slice %k {{start = 2 : i64, end = 6 : i64, dim = 2 : i64, alpha = {f32(3.0)}, beta = {f32(-2.0)}}} : !kv -> !R4x8")
for op, a, b in [("relu", 0.2, -3.0), ("silu", 0.0, -1.0), ("abs", -0.5, 1.5),
                 ("add_mul", 2.0, 0.25)]:
    out(op, 4, 8, f"  %v_{op} = vortex.{op} %v {{alpha = {f32(a)}, beta = {f32(b)}}} : !kv -> !R4x8")
out("log", 4, 8, f"  %v_log = vortex.log %v_abs {{alpha = {f32(1.0)}, beta = {f32(1.0)}}} : !R4x8 -> !R4x8")
out("maxi", 4, 8, "  %v_maxi = vortex.maximum %k, %v : (!kv, !kv) -> !R4x8")
out("mini", 4, 8, "  %v_mini = vortex.minimum %k, %v : (!kv, !kv) -> !R4x8")
body.append("  %l2 = vortex.l2norm %v {dim = 2 : i64} : !kv -> !R4x1")
body.append("  %cm = vortex.mean %k {dim = 1 : i64} : !kv -> !R1x8")
out("mul", 4, 8, "  %v_mul = vortex.multiply %v, %cm : (!kv, !R1x8) -> !R4x8")
out("ven", 1, 1, "  %v_ven = vortex.mean %l2 {dim = 1 : i64} : !R4x1 -> !R1x1")
FIELDS.append(("filled", 1, 1))
body.append(f"  vortex.fill %filled {{value = {f32(2.5)}}} : !P1x1")
FIELDS.append(("c", 1, 8))
body.append("  vortex.write %cm into %c : !R1x8 into !P1x8")

TEXT = testing.probe_flow_text(
    "probe_cache", CONFIG, (4, 8), 2, FIELDS, "\n".join(body), [],
    "  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !B1x8\n"
    "  %sc = vortex.gemv %qm, %c : (!B1x8, !P1x8) -> !R1x1", "sc")

def cache_fn(k, v, cfg):
    o = {}
    for kind in ["max", "min", "mean", "l2norm"]:
        o[f"i1_{kind}"] = ref.interleave(k, 1, 2, kind)
        o[f"i2_{kind}"] = ref.interleave(v, 2, 4, kind)
        o[f"d2_{kind}"] = ref.reduce(v, 2, kind)
        o[f"d1_{kind}"] = ref.reduce(k, 1, kind)
    o["gemm"] = ref.gemm(k, v)
    o["rs"] = ref.reshape(k, 2, 16)
    o["wgt"] = ref.where(k, v, "gt")
    o["add"] = ref.add(k, v, 0.5, -1.5)
    o["exp"] = ref.unary(k, "exp", 0.25, 0.5)
    o["sig"] = ref.unary(k, "sigmoid", 0.0, -1.0)
    o["msk"] = ref.mask_slice(k, 2, 6, 2, 3.0, -2.0)
    for op, a, b in [("relu", 0.2, -3.0), ("silu", 0.0, -1.0),
                     ("abs", -0.5, 1.5), ("add_mul", 2.0, 0.25)]:
        o[op] = ref.unary(v, op, a, b)
    o["log"] = ref.unary(o["abs"], "log", 1.0, 1.0)
    o["maxi"] = ref.maximum(k, v)
    o["mini"] = ref.minimum(k, v)
    l2 = ref.reduce(v, 2, "l2norm")
    cm = ref.reduce(k, 1, "mean")
    o["mul"] = ref.multiply(v, cm)
    o["ven"] = ref.reduce(l2, 1, "mean")
    o["filled"] = np.full((k.shape[0], 1, 1), 2.5)
    o["c"] = cm
    return o

def indexer_fn(c):
    return ref.gemv(c.rows(ref.reduce(c.q, 1, "mean")), c.field("c"))

FLOW_REF = ref.FlowRef([f for f, _, _ in FIELDS], cache_fn, indexer_fn)

def main():
    flow = vortex.compile_flow(TEXT)
    assert flow.info.cache_writes == [f for f, _, _ in FIELDS], \
        flow.info.cache_writes
    failures = 0
    for seed in (5, 6):
        p = testing.make_problem(flow, [0, 1, 6, 12, 40], seed=seed, spare=9)
        failures += testing.print_reports(
            testing.run_and_check(flow, p, indexer_steps=1, flow_ref=FLOW_REF),
            f"seed={seed}")
    return failures


if __name__ == "__main__":
    sys.exit(1 if main() else 0)
