# RUN: %python %s
# REQUIRES: numpy
#
# Non-power-of-two inner shapes on the CPU path (head_dim 6, G = 3, fields
# [1, 3], [3, 6], [2, 9], ...): whatever padding the pipeline introduces,
# padded lanes must not leak into reductions of ragged and batched values
# (max / min over all-negative / all-positive data, sum, mean, l2norm over
# dims 1 and 2), softmax, kron, transpose, reshape, mask_slice, gemm of a
# ragged operand, or
# the cache side's elementwise ops. Every value is saved (indexer) or
# written (cache) into a field of its own and compared with
# python/vortex/semantics/reference.py to rtol = atol = 1e-5, for the four sign
# combinations of (q, k) and unsigned data. Reductions whose operand is a
# paged tensor (k, v, a field) over a padded axis are in padding-paged.py.

import sys

import vortex
from vortex.semantics import reference as ref
from vortex import testing

CONFIG = ("block_size = 4, page_size = 4, head_dim = 6, group_size = 3, "
          "topk_val = 3, topk_ratio = 2.500000e-01 : f64, reserved_bos = 1, "
          "reserved_eos = 1, intermediate_dtype = f32, kv_dtype = f32")
REDUCE = ["max", "min", "sum", "mean", "l2norm"]

cache_fields, cache_body = [("c", 1, 6)], [
    "  %cm = vortex.mean %k {dim = 1 : i64} : !kv -> !R1x6",
    "  vortex.write %cm into %c : !R1x6 into !P1x6"]


def cache_out(name, r, c, line):
    cache_fields.append((name, r, c))
    cache_body.append(line)
    cache_body.append(f"  vortex.write %{name}_v into %{name} : !R{r}x{c} "
                      f"into !P{r}x{c}")


cache_out("km", 4, 6, "  %km_v = vortex.multiply %k, %v : (!kv, !kv) -> !R4x6")

body = ["  %m = vortex.multiply %q, %c : (!q, !P1x6) -> !R3x6",
        "  %g = vortex.gemm %q, %m : (!q, !R3x6) -> !R3x3"]
probes = [("o_g", 3, 3, "g"), ("o_m", 3, 6, "m")]
for kind in REDUCE:
    body += [
        f"  %g2_{kind} = vortex.{kind} %g {{dim = 2 : i64}} : !R3x3 -> !R3x1",
        f"  %m2_{kind} = vortex.{kind} %m {{dim = 2 : i64}} : !R3x6 -> !R3x1",
        f"  %m1_{kind} = vortex.{kind} %m {{dim = 1 : i64}} : !R3x6 -> !R1x6",
        f"  %q1_{kind} = vortex.{kind} %q {{dim = 1 : i64}} : !q -> !B1x6",
        f"  %q1r_{kind} = vortex.multiply %q1_{kind}, %c : (!B1x6, !P1x6) "
        "-> !R1x6",
    ]
    probes += [(f"o_g2_{kind}", 3, 1, f"g2_{kind}"),
               (f"o_m2_{kind}", 3, 1, f"m2_{kind}"),
               (f"o_m1_{kind}", 1, 6, f"m1_{kind}"),
               (f"o_q1_{kind}", 1, 6, f"q1r_{kind}")]
body += [
    "  %sm = vortex.softmax %m {scale = 5.000000e-01 : f32} : !R3x6 -> !R3x6",
    "  %kr2 = vortex.kron %q, %c {dims = array<i64: 2>} : (!q, !P1x6) -> "
    "!R3x36",
    "  %kr1 = vortex.kron %q, %c {dims = array<i64: 1>} : (!q, !P1x6) -> "
    "!R3x6",
    "  %tr = vortex.transpose %m : !R3x6 -> !R6x3",
    "  %rs = vortex.reshape %m : !R3x6 -> !R2x9",
    "  %ms = vortex.mask_slice %m {start = 1 : i64, end = 5 : i64, dim = 2 : "
    "i64, alpha = 1.000000e+00 : f32, beta = -2.000000e+00 : f32} : !R3x6 -> "
    "!R3x6",
    "  %mm = vortex.multiply %m, %ms : (!R3x6, !R3x6) -> !R3x6",
    "  %mx = vortex.maximum %m, %mm : (!R3x6, !R3x6) -> !R3x6",
    "  %sc0 = vortex.max %m2_max {dim = 1 : i64} : !R3x1 -> !R1x1",
]
probes += [("o_sm", 3, 6, "sm"), ("o_kr2", 3, 36, "kr2"),
           ("o_kr1", 3, 6, "kr1"), ("o_tr", 6, 3, "tr"), ("o_rs", 2, 9, "rs"),
           ("o_mm", 3, 6, "mm"), ("o_mx", 3, 6, "mx")]

TEXT = testing.probe_flow_text("padding", CONFIG, (4, 6), 3, cache_fields,
                               "\n".join(cache_body), probes, "\n".join(body),
                               "sc0")


def cache_fn(k, v, cfg):
    return {"c": ref.reduce(k, 1, "mean"), "km": ref.multiply(k, v)}


def indexer_fn(c):
    q, C = c.rows(c.q), c.field("c")
    m = ref.multiply(q, C)
    g = ref.gemm(q, m)
    vals = {"g": g, "m": m}
    for kind in REDUCE:
        vals[f"g2_{kind}"] = ref.reduce(g, 2, kind)
        vals[f"m2_{kind}"] = ref.reduce(m, 2, kind)
        vals[f"m1_{kind}"] = ref.reduce(m, 1, kind)
        vals[f"q1r_{kind}"] = ref.multiply(c.rows(ref.reduce(c.q, 1, kind)), C)
    mm = ref.multiply(m, ref.mask_slice(m, 1, 5, 2, 1.0, -2.0))
    vals.update(sm=ref.softmax_rows(m, c.csr, c.cfg, 0.5),
                kr2=ref.kron(q, C, (2,)), kr1=ref.kron(q, C, (1,)),
                tr=ref.transpose(m), rs=ref.reshape(m, 2, 9), mm=mm,
                mx=ref.maximum(m, mm))
    for field, _, _, value in probes:
        c.save(field, vals[value])
    return ref.reduce(vals["m2_max"], 1, "max")


FLOW_REF = ref.FlowRef([f for f, _, _ in cache_fields], cache_fn, indexer_fn)


def main():
    flow = vortex.compile_flow(TEXT)
    failures = 0
    for q_sign, k_sign in testing.SIGN_CASES:
        p = testing.make_problem(flow, [0, 1, 5, 6, 7, 12, 40], seed=8,
                                 q_sign=q_sign, k_sign=k_sign)
        failures += testing.print_reports(
            testing.run_and_check(flow, p, indexer_steps=1, flow_ref=FLOW_REF),
            f"q_sign={q_sign:+d} k_sign={k_sign:+d}", limit=12)
    return failures


if __name__ == "__main__":
    sys.exit(1 if main() else 0)
