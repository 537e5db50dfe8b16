"""Random problems and end-to-end checks of compiled flows against
`vortex.reference` (used by test/Python and `python -m vortex.demo`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import numpy as np

from . import reference as ref
from .cpu import CompiledFlow

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
EXAMPLES = os.path.join(REPO_ROOT, "examples")


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
    q = _signed(rng.standard_normal(
        (len(lengths), int(flow.config["group_size"]),
         int(flow.config["head_dim"]))), q_sign).astype(np.float32)
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
