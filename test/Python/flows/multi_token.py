# RUN: %python %s
# REQUIRES: numpy
#
# Multi-token queries on the CPU (docs/contract.md, "Multi-token queries"):
# every shipped flow retargeted to T = 4 query tokens per row (q = [rows,
# 4 x G, D], token-major) with vortex-set-config, at G = 2 and G = 3, runs
# its cache step and indexer steps against the float64 numpy reference on
# the same q (rtol = atol = 1e-5 for fields, selections up to ties: the
# tolerances of the shipped-flow tests). Then the T = 1 equivalence: a
# T = 4 step whose four tokens are equal selects what the T = 1 flow
# selects for that one token, for flows whose ops over q are means or
# maxima (block_sparse_attention, gqa_quest_sparse_attention); the Python
# authoring form (FlowConfig(query_tokens=4)) traces the same IR; and the
# verifier's refusal of a q whose D0 is not a multiple of G.

import glob
import os
import subprocess
import sys

import numpy as np

import vortex
from vortex import testing
from vortex.compiler.driver import find_tool

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "..", "examples")
OPT = find_tool("vortex-opt")


def retarget(path, options):
    return subprocess.run([OPT, path, f"--vortex-set-config={options}"],
                          check=True, capture_output=True, text=True).stdout


failures = 0
for path in sorted(glob.glob(os.path.join(EXAMPLES, "*.mlir"))):
    if path.endswith("_g5.mlir"):
        continue
    for g in (2, 3):
        text = retarget(path, f"query-tokens=4 group-size={g}")
        failures += testing.check_shipped_flow(
            text, seeds=(g,), lengths=(0, 1, 3, 9, 17, 40), indexer_steps=1,
            out=lambda line, g=g: print(line.replace(" seed=", f" T=4 G={g} "
                                                      "seed=")))

# T = 4 with four equal tokens selects as T = 1 does (means and maxima over
# q's rows are unchanged by repeating them).
for name in ("block_sparse_attention", "gqa_quest_sparse_attention"):
    path = os.path.join(EXAMPLES, name + ".mlir")
    one = vortex.compile_flow(retarget(path, "query-tokens=1 group-size=2"))
    four = vortex.compile_flow(retarget(path, "query-tokens=4 group-size=2"))
    p = testing.make_problem(one, [5, 40, 33], seed=7)
    one.cache_step(p.cache, p.indices)
    q4 = np.concatenate([p.q] * 4, axis=1)
    a = one.indexer(p.q, p.cache, p.indptr, p.indices)
    b = four.indexer(q4, p.cache, p.indptr, p.indices)
    ok = all(np.array_equal(x, y) for x, y in zip(a, b))
    failures += not ok
    print(f"{'PASS' if ok else 'FAIL'} {name}: T = 4 of one repeated token "
          "selects as T = 1")

# Authoring: FlowConfig(query_tokens=4) traces the same IR as the retarget.
from vortex.frontend.verify import canonical_ir  # noqa: E402
traced = vortex.trace("block_sparse_attention", query_tokens=4, group_size=2)
same = canonical_ir(traced) == canonical_ir(retarget(
    os.path.join(EXAMPLES, "block_sparse_attention.mlir"),
    "query-tokens=4 group-size=2"))
failures += not same
print(f"{'PASS' if same else 'FAIL'} FlowConfig(query_tokens=4) traces the "
      "retargeted IR")

bad = retarget(os.path.join(EXAMPLES, "block_sparse_attention.mlir"),
               "group-size=2").replace("?x2x128xbf16", "?x3x128xbf16")
proc = subprocess.run([OPT, "-"], input=bad, capture_output=True, text=True)
ok = proc.returncode != 0 and "[?, T x 2, 128] (T >= 1 query tokens)" in \
    proc.stderr
failures += not ok
print(f"{'PASS' if ok else 'FAIL'} refused: q of 3 rows at G = 2 "
      f"({proc.stderr.strip().splitlines()[0] if proc.stderr else 'accepted'})")
sys.exit(1 if failures else 0)
