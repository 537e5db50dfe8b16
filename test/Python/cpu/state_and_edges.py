# RUN: %python %s %examples
# REQUIRES: numpy
#
# Indexer state and degenerate inputs on the CPU path:
# * every vortex.load of a field reads the value the field had before the
#   step, even after a vortex.save of it in the same step; with two saves of
#   one field the later one wins; fill on the cache side resets the state;
#   three steps chained;
# * softmax is numerically stable: scale * score around 200 (exp overflows
#   float32 unless the row maximum is subtracted) still matches the
#   reference;
# * no rows, rows with no blocks, an empty pool and an empty block_ids list
#   run and return an empty selection.

import os
import sys

import numpy as np

import vortex
from vortex.semantics import reference as ref
from vortex import testing

failures = 0


def run(flow, problem, steps, flow_ref=None, label=""):
    global failures
    failures += testing.print_reports(
        testing.run_and_check(flow, problem, indexer_steps=steps,
                              flow_ref=flow_ref), label, limit=10)


# --- load / save ordering --------------------------------------------------
CONFIG = ("block_size = 4, page_size = 4, head_dim = 8, group_size = 2, "
          "topk_val = 3, topk_ratio = 2.500000e-01 : f64, reserved_bos = 1, "
          "reserved_eos = 1, intermediate_dtype = f32, kv_dtype = f32")
TEXT = testing.probe_flow_text(
    "load_save", CONFIG, (4, 8), 2, [("c", 1, 8), ("st", 1, 1)],
    "  %cm = vortex.mean %k {dim = 1 : i64} : !kv -> !R1x8\n"
    "  vortex.write %cm into %c : !R1x8 into !P1x8\n"
    "  vortex.fill %st {value = 1.000000e+00 : f32} : !P1x1",
    [],
    "  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !B1x8\n"
    "  %sc = vortex.gemv %qm, %c : (!B1x8, !P1x8) -> !R1x1\n"
    "  %l1 = vortex.load %st : !P1x1 -> !R1x1\n"
    "  %x = vortex.add %l1, %sc {alpha = 2.000000e+00 : f32, "
    "beta = 1.000000e+00 : f32} : (!R1x1, !R1x1) -> !R1x1\n"
    "  vortex.save %x into %st : !R1x1 into !P1x1\n"
    "  %l2 = vortex.load %st : !P1x1 -> !R1x1\n"
    "  %y = vortex.add %l2, %sc {alpha = -3.000000e+00 : f32, "
    "beta = 1.000000e+00 : f32} : (!R1x1, !R1x1) -> !R1x1\n"
    "  vortex.save %y into %st : !R1x1 into !P1x1",
    "y")


def _cache(k, v, cfg):
    return {"c": ref.reduce(k, 1, "mean"), "st": np.ones((k.shape[0], 1, 1))}


def _indexer(c):
    sc = ref.gemv(c.rows(ref.reduce(c.q, 1, "mean")), c.field("c"))
    before = ref.load(c.cache["st"], c.csr)     # both loads: pre-step value
    c.save("st", ref.add(before, sc, 2.0, 1.0))
    y = ref.add(before, sc, -3.0, 1.0)
    c.save("st", y)                             # the later save wins
    return y


flow = vortex.compile_flow(TEXT)
run(flow, testing.make_problem(flow, [0, 1, 5, 6, 9, 40, 90], seed=4), 3,
    ref.FlowRef(["c", "st"], _cache, _indexer), "load/save")

# --- softmax stability -------------------------------------------------------
examples = sys.argv[1]
gqa = vortex.compile_flow(os.path.join(examples,
                                       "gqa_block_sparse_attention.mlir"))
p = testing.make_problem(gqa, [40, 80, 33, 5], seed=2)
p.q *= 30
p.cache["k"] *= 30
run(gqa, p, 1, label="softmax with |scale * score| ~ 200")

# --- degenerate shapes -----------------------------------------------------
cases = [
    ("no rows", 4, np.zeros((0, 8, 128)), [0], []),
    ("rows without blocks", 4, np.zeros((2, 8, 128)), [0, 0, 0], []),
    ("empty pool", 0, np.zeros((1, 8, 128)), [0, 0], []),
]
for label, nb, q, indptr, indices in cases:
    c = gqa.allocate_cache(nb)
    try:
        gqa.cache_step(c, [])
        sp, si = gqa.indexer(q, c, indptr, indices)
        ok = sp.tolist() == [0] * len(indptr) and si.size == 0
        print(("PASS" if ok else "FAIL") + f" {label}: {sp.tolist()} "
              f"{si.tolist()}")
        failures += not ok
    except Exception as err:  # noqa: BLE001
        print(f"FAIL {label}: {type(err).__name__}: {err}")
        failures += 1

sys.exit(1 if failures else 0)
