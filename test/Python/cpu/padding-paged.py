# RUN: %python %s
# REQUIRES: numpy
#
# Regression: a PAGED operand (k, v or a field) reduced or contracted over a
# padded inner axis (head_dim 6 -> 8, a field [1, 6] -> [1, 8]). Its lane
# mask (vortex.mask_lanes) must keep the pool's leading extent, since it is
# gathered by block id afterwards; it was once sized by the consumer's
# ragged extent, so block ids past that extent read garbage. Covers the
# cache-side reductions and interleaves, gemm(k, v), and the indexer-side
# reductions of a field and gemm(q, field).

import sys

import numpy as np

import vortex
from vortex.semantics import reference as ref
from vortex import testing

CONFIG = ("block_size = 4, page_size = 4, head_dim = 6, group_size = 3, "
          "topk_val = 3, topk_ratio = 2.500000e-01 : f64, reserved_bos = 1, "
          "reserved_eos = 1, intermediate_dtype = f32, kv_dtype = f32")
KINDS = ["max", "min", "mean", "l2norm"]

cache_fields, cache_body = [("c", 1, 6)], [
    "  %cm = vortex.mean %k {dim = 1 : i64} : !kv -> !R1x6",
    "  vortex.write %cm into %c : !R1x6 into !P1x6"]


def cache_out(name, r, c, line):
    cache_fields.append((name, r, c))
    cache_body.append(line)
    cache_body.append(f"  vortex.write %{name}_v into %{name} : !R{r}x{c} "
                      f"into !P{r}x{c}")


for kind in KINDS:
    cache_out(f"k2_{kind}", 4, 1, f"  %k2_{kind}_v = vortex.{kind} %k "
              "{dim = 2 : i64} : !kv -> !R4x1")
    cache_out(f"ki3_{kind}", 4, 2, f"  %ki3_{kind}_v = vortex.{kind}_interleave"
              " %k {dim = 2 : i64, factor = 3 : i64} : !kv -> !R4x2")
    cache_out(f"ki2_{kind}", 4, 3, f"  %ki2_{kind}_v = vortex.{kind}_interleave"
              " %v {dim = 2 : i64, factor = 2 : i64} : !kv -> !R4x3")
cache_out("kv_gemm", 4, 4, "  %kv_gemm_v = vortex.gemm %k, %v : (!kv, !kv) "
          "-> !R4x4")

body = ["  %g = vortex.gemm %q, %c : (!q, !P1x6) -> !R1x3"]
probes = [("o_g", 1, 3, "g")]
for kind in KINDS + ["sum"]:
    body.append(f"  %c2_{kind} = vortex.{kind} %c {{dim = 2 : i64}} : !P1x6 "
                "-> !R1x1")
    probes.append((f"o_c2_{kind}", 1, 1, f"c2_{kind}"))
body.append("  %sc = vortex.max %g {dim = 2 : i64} : !R1x3 -> !R1x1")

TEXT = testing.probe_flow_text("padding_paged", CONFIG, (4, 6), 3,
                               cache_fields, "\n".join(cache_body), probes,
                               "\n".join(body), "sc")


def cache_fn(k, v, cfg):
    o = {"c": ref.reduce(k, 1, "mean"), "kv_gemm": ref.gemm(k, v)}
    for kind in KINDS:
        o[f"k2_{kind}"] = ref.reduce(k, 2, kind)
        o[f"ki3_{kind}"] = ref.interleave(k, 2, 3, kind)
        o[f"ki2_{kind}"] = ref.interleave(v, 2, 2, kind)
    return o


def indexer_fn(c):
    C = c.field("c")
    g = ref.gemm(c.rows(c.q), C)
    c.save("o_g", g)
    for kind in KINDS + ["sum"]:
        c.save(f"o_c2_{kind}", ref.reduce(C, 2, kind))
    return ref.reduce(g, 2, "max")


FLOW_REF = ref.FlowRef([f for f, _, _ in cache_fields], cache_fn, indexer_fn)


def main():
    flow = vortex.compile_flow(TEXT)
    failures = 0
    for q_sign, k_sign in ((0, 0), (-1, -1)):
        p = testing.make_problem(flow, [0, 1, 5, 6, 7, 12, 40], seed=8,
                                 q_sign=q_sign, k_sign=k_sign)
        failures += testing.print_reports(
            testing.run_and_check(flow, p, indexer_steps=1, flow_ref=FLOW_REF),
            f"q_sign={q_sign:+d} k_sign={k_sign:+d}", limit=30)
    # The smallest case: one completed block whose id is past len(block_ids).
    nb = 12
    cache = {n: np.random.default_rng(0).standard_normal(s).astype(np.float32)
             for n, s in flow.cache_shapes(nb).items()}
    flow.cache_step(cache, [9])
    got = cache["k2_max"][9, :, 0]
    want = cache["k"][9].max(axis=1)
    ok = np.allclose(got, want, rtol=1e-5, atol=1e-5)
    print(("PASS" if ok else "FAIL") + f" cache_step(block_ids=[9]) of "
          f"max(k, dim=2): got {got}, want {want}")
    failures += not ok
    return failures


if __name__ == "__main__":
    sys.exit(1 if main() else 0)
