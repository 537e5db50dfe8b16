"""Compile a flow for the CPU, run it on random data and compare with the
numpy reference.

    python -m vortex demo [examples/<flow>.mlir] [--seed N]

Compiles the flow (`vortex-compile --target=cpu`: lib<flow>.so and its
manifest, cached by content), builds a random pool (k, v ~ N(0, 1)) and
ragged rows (one within budget, one of a single block, the others 40-80
blocks, over the shipped budget of 32), runs the cache step on every block
of the rows and then one indexer step, and prints each row's selected
blocks next to the reference's.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

from ..semantics import reference as ref
from .. import testing
from ..runtime.cpu import compile_flow

DEFAULT_FLOW = os.path.join(testing.EXAMPLES, "block_sparse_attention.mlir")


def _fmt(ids, limit=12):
    ids = [int(i) for i in ids]
    if len(ids) <= limit:
        return str(ids)
    return "[" + ", ".join(map(str, ids[:limit])) + f", ... ({len(ids)})]"


def _flow_sides(path: str):
    """The ops of the flow's cache and indexer regions, as written in
    `path` (types dropped): what the demo shows of the flow."""
    sides = {"cache": [], "indexer": []}
    side = None
    with open(path) as f:
        for line in f:
            code = line.split("//", 1)[0].strip()
            for name in sides:
                if code.startswith(name + "("):
                    side = name
            if side and "vortex." in code and not code.startswith(
                    ("cache(", "indexer(")):
                sides[side].append(_drop_types(code))
    return sides


def _drop_types(code: str) -> str:
    """`code` up to its top-level ` : ` (the types), attributes kept."""
    depth = 0
    for i, c in enumerate(code):
        depth += {"{": 1, "[": 1, "(": 1, "}": -1, "]": -1, ")": -1}.get(c, 0)
        if depth == 0 and code.startswith(" : ", i):
            return code[:i]
    return code


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m vortex.testing.demo",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("flow", nargs="?", default=DEFAULT_FLOW,
                    help="a .mlir file holding one vortex.flow "
                         "(default: examples/block_sparse_attention.mlir)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rows", type=int, default=5,
                    help="number of (request, KV head) rows")
    args = ap.parse_args(argv)

    print(f"flow {args.flow}:")
    for side, ops in _flow_sides(args.flow).items():
        print(f"  {side + ' side:':14s}" + "\n  ".ljust(17).join(ops))
    # A fresh compile each run, so that the time shown is the compiler's.
    with tempfile.TemporaryDirectory(prefix="vortex-demo-") as work:
        t0 = time.time()
        flow = compile_flow(args.flow, workdir=os.path.join(work, "out"))
        took = time.time() - t0
        return _run(flow, args, took)


def _run(flow, args, took: float) -> int:
    cfg = ref.Config.from_dict(flow.config)
    print(f"compiled @{flow.name} for the CPU in {took:.2f} s "
          f"(vortex-compile: vortex-to-cpu, then a shared object)")
    print(f"  config: {flow.config}")
    print(f"  fields: {flow.fields}")
    flow_ref = ref.FLOWS.get(flow.name)
    if flow_ref is None:
        print(f"  (no reference model for @{flow.name}; showing the compiled "
              "selection only)")

    rng = np.random.default_rng(args.seed)
    budget_short = max(2, cfg.budget(0) // 2)
    lengths = [budget_short, 1] + [int(n) for n in
                                   rng.integers(40, 81, max(args.rows - 2, 0))]
    lengths = lengths[:max(args.rows, 1)]
    p = testing.make_problem(flow, lengths, seed=args.seed)
    print(f"  rows (blocks per row): {lengths}; budgets "
          f"{[cfg.budget(n) for n in lengths]}; pool of "
          f"{p.cache['k'].shape[0]} blocks")

    want_cache = {n: a.astype(np.float64) for n, a in p.cache.items()}
    flow.cache_step(p.cache, p.indices)
    field_problems = []
    if flow_ref is not None:
        flow_ref.cache_step(want_cache, p.indices, cfg)
        field_problems = [f"after the cache step: {x}" for x in
                          ref.compare_fields(p.cache, want_cache,
                                             flow.cache_names)]
    t1 = time.time()
    got_ptr, got_idx = flow.indexer(p.q, p.cache, p.indptr, p.indices)
    t_idx = time.time() - t1
    print(f"cache step on {len(p.indices)} blocks, then one indexer step "
          f"({t_idx * 1e3:.1f} ms)")

    if flow_ref is None:
        for r in range(len(lengths)):
            print(f"row {r} (n={lengths[r]}): "
                  f"{_fmt(got_idx[got_ptr[r]:got_ptr[r + 1]])}")
        return 0

    want = flow_ref.indexer(p.q.astype(np.float64), want_cache, p.indptr,
                            p.indices, cfg)
    field_problems += [f"after the indexer step: {x}" for x in
                       ref.compare_fields(p.cache, want_cache,
                                          flow.cache_names)]
    ok = not field_problems
    for r in range(len(lengths)):
        n = lengths[r]
        got = got_idx[got_ptr[r]:got_ptr[r + 1]]
        exp = want.indices[want.indptr[r]:want.indptr[r + 1]]
        sub_ptr = np.array([0, len(got)])
        one = ref.IndexerResult(want.score[p.indptr[r]:p.indptr[r + 1]],
                                np.array([0, len(exp)]), exp)
        probs = ref.compare_selection(sub_ptr, got, one, [0, n],
                                      p.indices[p.indptr[r]:p.indptr[r + 1]],
                                      cfg)
        exact = len(got) == len(exp) and (got == exp).all()
        verdict = ("match" if exact else
                   "match up to ties" if not probs else "MISMATCH")
        ok &= not probs
        kind = "selects" if cfg.needs_selection(n) else "keeps all"
        print(f"row {r} (n={n}, budget {cfg.budget(n)}, {kind}): {verdict}")
        print(f"    compiled : {_fmt(got)}")
        print(f"    reference: {_fmt(exp)}")
        for prob in probs:
            print(f"    {prob}")
    for prob in field_problems:
        print(f"fields: {prob}")
    print("OK: the compiled flow agrees with the reference" if ok else
          "FAILED: the compiled flow disagrees with the reference")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
