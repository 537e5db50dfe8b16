"""Random problems and end-to-end checks of compiled flows against
`vortex.semantics.reference` (used by test/Python and
`python -m vortex.testing.demo`)."""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import numpy as np

from ..semantics import reference as ref
from ..runtime.cpu import CompiledFlow
from ..environment import install_prefix, source_root

class Tally:
    """The PASS/FAIL lines of a lit test script and its exit status."""

    def __init__(self) -> None:
        self.failures = 0

    def __call__(self, ok: bool, what: str, detail: object = "") -> None:
        print(("PASS " if ok else "FAIL ") + what)
        if not ok:
            self.failures += 1
            if detail:
                print("    " + str(detail))

    def exit(self, summary: bool = False) -> None:
        if summary:
            print(f"{self.failures} failure(s)")
        sys.exit(1 if self.failures else 0)


# The example flows: the checkout's examples/, else the installed copy.
EXAMPLES = os.path.join(source_root() or os.path.join(
    install_prefix(), "share", "vortex"), "examples")


@dataclass
class Problem:
    q: np.ndarray                    # float32 [rows, G, D]
    cache: Dict[str, np.ndarray]     # float32, the compiled flow's state
    indptr: np.ndarray               # int32 [rows + 1]
    indices: np.ndarray              # int32 [total]
    rng: np.random.Generator
    q_sign: int = 0
    spare_blocks: Optional[np.ndarray] = None


def _signed(x: np.ndarray, sign: int) -> np.ndarray:
    if sign > 0:
        return np.abs(x)
    if sign < 0:
        return -np.abs(x)
    return x


def make_problem(flow: CompiledFlow, lengths: Sequence[int], seed: int = 0,
                 spare: int = 5, q_sign: int = 0, k_sign: int = 0) -> Problem:
    """Rows of the given block counts over a pool of sum(lengths) + spare
    blocks in random order; k, v ~ N(0, 1) (k of the given sign), q ~ N(0, 1)
    (of the given sign). Fields start as garbage, as recycled pages do."""
    rng = np.random.default_rng(seed)
    total = int(sum(lengths))
    nb = total + spare
    cache = {}
    for name, shape in flow.cache_shapes(nb).items():
        cache[name] = rng.standard_normal(shape).astype(np.float32)
    cache["k"] = _signed(cache["k"], k_sign)
    perm = rng.permutation(nb).astype(np.int32)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    # q's shape from the manifest: [rows, T x G, D] (T query tokens).
    q_shape = flow.manifest.tensors["q"].extents({"rows": len(lengths)})
    q = _signed(rng.standard_normal(q_shape), q_sign).astype(np.float32)
    return Problem(q=q, cache=cache, indptr=indptr, indices=perm[:total],
                   rng=rng, q_sign=q_sign, spare_blocks=perm[total:])


def new_query(flow: CompiledFlow, p: Problem) -> np.ndarray:
    return _signed(p.rng.standard_normal(p.q.shape), p.q_sign).astype(np.float32)


@dataclass
class StepReport:
    step: str
    problems: List[str]
    got_indptr: Optional[np.ndarray] = None
    got_indices: Optional[np.ndarray] = None
    want: Optional[ref.IndexerResult] = None


def run_and_check(flow: CompiledFlow, p: Problem, indexer_steps: int = 2,
                  flow_ref: Optional[ref.FlowRef] = None) -> List[StepReport]:
    """Cache step on every row block (in random order), then
    `indexer_steps` indexer steps with fresh queries; each step compared with
    the reference (fields: rtol = atol = 1e-5; selection: sets up to ties,
    `reference.compare_selection`)."""
    flow_ref = flow_ref or ref.FLOWS[flow.name]
    cfg = ref.Config.from_dict(flow.config)
    want_cache = {n: a.astype(np.float64) for n, a in p.cache.items()}
    reports = []

    ids = p.rng.permutation(p.indices).astype(np.int32)
    flow.cache_step(p.cache, ids)
    flow_ref.cache_step(want_cache, ids, cfg)
    reports.append(StepReport("cache", ref.compare_fields(
        p.cache, want_cache, flow.cache_names)))

    for step in range(indexer_steps):
        q = p.q if step == 0 else new_query(flow, p)
        got_ptr, got_idx = flow.indexer(q, p.cache, p.indptr, p.indices)
        want = flow_ref.indexer(q.astype(np.float64), want_cache, p.indptr,
                                p.indices, cfg)
        problems = ref.compare_selection(got_ptr, got_idx, want, p.indptr,
                                         p.indices, cfg)
        problems += ref.compare_fields(p.cache, want_cache, flow.cache_names)
        reports.append(StepReport(f"indexer {step}", problems, got_ptr,
                                  got_idx, want))
    return reports


# ---------------------------------------------------------------------------
# Probe flows: expose intermediate values through vortex.save
# ---------------------------------------------------------------------------

def probe_flow_text(name: str, config: str, kv: Sequence[int], group: int,
                    cache_fields: Sequence[tuple], cache_body: str,
                    probes: Sequence[tuple], indexer_body: str,
                    score: str, selection: str = "vortex.topk",
                    selection_attrs: str = "",
                    selection_line: Optional[str] = None) -> str:
    """IR of a synthetic flow whose indexer saves each probe value into a
    field of its own, so that its rows [0, n - eos) of the rows that need
    selection can be compared with the reference.

    `kv` = (block_size, head_dim); `cache_fields` = [(name, r, c)] written
    by `cache_body`; `probes` = [(field, r, c, value)]: the indexer value
    `%value` (ragged [S, r, c]) is saved into `field`. Types are spelled
    `!P<r>x<c>` (paged), `!R<r>x<c>` (ragged), `!B<r>x<c>` (batched) and
    `!kv`, `!q`, `!o` (and `!Ti` / `!Li`: ragged / batched i32 [?,1,1] for
    trtllm block tables and seqlens). `score` names the ragged [S,1,1]
    selection input; `selection_line` replaces the whole terminal.
    """
    bs, d = kv
    shapes = {(1, 1), (bs, d), (group, d)}
    shapes |= {(r, c) for _, r, c in cache_fields}
    shapes |= {(r, c) for _, r, c, _ in probes}
    for body in (cache_body, indexer_body):
        for m in re.finditer(r"![PRB](\d+)x(\d+)", body):
            shapes.add((int(m.group(1)), int(m.group(2))))
    lines = []
    for r, c in sorted(shapes):
        for tag, fmt in (("P", "paged"), ("R", "ragged"), ("B", "batched")):
            lines.append(f"!{tag}{r}x{c} = !vortex.vtensor<?x{r}x{c}xf32, "
                         f"#vortex.format<{fmt}>>")
    lines.append(f"!kv = !vortex.vtensor<?x{bs}x{d}xf32, #vortex.format<paged>>")
    lines.append(f"!q = !vortex.vtensor<?x{group}x{d}xf32, "
                 "#vortex.format<batched>>")
    lines.append("!o = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>")
    lines.append("!Ti = !vortex.vtensor<?x1x1xi32, #vortex.format<ragged>>")
    lines.append("!Li = !vortex.vtensor<?x1x1xi32, #vortex.format<batched>>")
    fields = list(cache_fields) + [(f, r, c) for f, r, c, _ in probes]
    decl = ", ".join(f"{f} = [{r}, {c}]" for f, r, c in fields)
    args = ", ".join(f"%{f}: !P{r}x{c}" for f, r, c in fields)
    lines.append(f"vortex.flow @{name} config = #vortex.config<{config}>")
    lines.append(f"    fields({decl})")
    lines.append(f"cache(%k: !kv, %v: !kv, {args}) {{")
    lines.append(cache_body)
    lines.append("}")
    lines.append(f"indexer(%q: !q, %o: !o, %k: !kv, %v: !kv, {args}) {{")
    for f, r, c in fields:      # every field needs a reader
        lines.append(f"  %{f}__old = vortex.load %{f} : !P{r}x{c} -> !R{r}x{c}")
    lines.append(indexer_body)
    for f, r, c, value in probes:
        lines.append(f"  vortex.save %{value} into %{f} : !R{r}x{c} into "
                     f"!P{r}x{c}")
    if selection_line is not None:   # a whole custom terminal
        lines.append(selection_line)
    else:
        lines.append(f"  {selection} %{score} into %o {selection_attrs} : "
                     "!R1x1 into !o")
    lines.append("}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# Shipped flows end to end
# ---------------------------------------------------------------------------

# Row lengths (in blocks) against the shipped knobs (topk_val 29, ratio 1/16,
# bos 1, eos 2: budget 32 up to n = 527, then n // 16): empty rows, a row of
# one block, rows within budget (2, 5, 31, 32), just over it (33, 34), well
# over (47, 80, 200) and past the point where the ratio term wins (530).
SHIPPED_LENGTHS = (0, 1, 2, 5, 31, 32, 33, 34, 47, 80, 200, 530)
# All four sign combinations of (q, k): with q < 0 < k every envelope term
# q * M, q * m is negative, so max/min reductions and Maximum() see only
# negative values (a wrong neutral element or a clamp at 0 shows up).
SIGN_CASES = ((0, 0), (-1, 1), (1, -1), (-1, -1), (1, 1))


def print_reports(reports, label: str, limit: Optional[int] = None,
                  out=print) -> int:
    """One PASS/FAIL line per step report (then up to `limit` of its
    problems, indented); returns how many steps failed."""
    failed = 0
    for rep in reports:
        out(f"{'FAIL' if rep.problems else 'PASS'} {label} {rep.step}")
        for prob in rep.problems[:limit]:
            out("    " + prob)
        failed += bool(rep.problems)
    return failed


def check_shipped_flow(path: str, sign_cases=((0, 0),), seeds=(1,),
                       lengths=SHIPPED_LENGTHS, indexer_steps: int = 2,
                       out=print) -> int:
    """Compile the flow at `path`, run cache step + indexer steps on random
    problems and compare with `vortex.semantics.reference`. Prints one line per
    step; returns the number of failing steps."""
    from ..runtime.cpu import compile_flow
    flow = compile_flow(path)
    if flow.name not in ref.FLOWS:
        out(f"FAIL {flow.name}: no reference model")
        return 1
    steps = indexer_steps + (1 if flow.info.indexer_writes else 0)
    failures = 0
    for seed in seeds:
        for q_sign, k_sign in sign_cases:
            p = make_problem(flow, lengths, seed=seed, q_sign=q_sign,
                             k_sign=k_sign)
            for rep in run_and_check(flow, p, indexer_steps=steps):
                tag = (f"{flow.name} seed={seed} q_sign={q_sign:+d} "
                       f"k_sign={k_sign:+d} {rep.step}")
                if rep.problems:
                    failures += 1
                    out(f"FAIL {tag}:")
                    for prob in rep.problems[:10]:
                        out(f"    {prob}")
                else:
                    out(f"PASS {tag}")
    return failures
