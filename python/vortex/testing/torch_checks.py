"""Helpers of the torch-op tests (test/Python/torch_*.py): random problems
as torch CPU tensors, `torch.library.opcheck` of both ops of a flow,
`torch.compile(fullgraph=True)` against eager (no graph break, bit-identical
outputs and cache tensors), and the op's numerics against the float64 numpy
reference (`vortex.semantics.reference`, compared as `vortex.testing` does:
selection up to ties, fields to rtol = atol = 1e-5).

    >>> from vortex.testing import torch_checks as tt
    >>> tt.main(["block_sparse_attention", "running_avg_block_sparse"])

Every check prints one PASS/FAIL line (`vortex.testing.Tally`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from ..compiler import driver as compiler
from ..semantics import reference as ref
from ..runtime.ops import Flow, load
from . import EXAMPLES, SHIPPED_LENGTHS, Tally

__all__ = [
    "COMPILE_LENGTHS", "COMPILE_LENGTHS_2", "NUMERICS_LENGTHS",
    "SHIPPED_FLOWS", "TorchProblem", "cache_args", "check_compile",
    "check_flow", "check_numerics", "check_opcheck", "clone_cache",
    "expected_block_ids", "example_path", "indexer_args", "load_flow",
    "FLOW_SHARDS", "main", "main_shard", "make_problem", "new_query",
    "random_loc", "same_tensors",
    "with_negatives",
]

# The shipped flows: every examples/*.mlir.
SHIPPED_FLOWS: Tuple[str, ...] = tuple(sorted(
    n[:-len(".mlir")] for n in os.listdir(EXAMPLES) if n.endswith(".mlir")))

# The shipped flows split across test/Python/torch_ops_flows_<i>.py (lit
# runs the files in parallel); `main_shard` checks that the shards cover
# exactly SHIPPED_FLOWS, so a new example without a shard fails.
FLOW_SHARDS: Tuple[Tuple[str, ...], ...] = (
    ("block_sparse_attention", "centered_block_sparse_attention",
     "gqa_block_sparse_attention", "gqa_h2o_sparse_attention"),
    ("gqa_h2o_token_sparse_attention", "gqa_quest_sparse_attention",
     "gqa_quest_sparse_attention_g5", "h2o_sparse_attention"),
    ("h2o_token_sparse_attention", "lserve_centroid_sparse_attention",
     "lserve_sparse_attention"),
    ("masked_quest_sparse_attention", "running_avg_block_sparse",
     "venergy_gated_centroid"),
    ("lserve_centroid_mla", "rope_aware_block_sparse_mla",
     "rope_unaware_block_sparse_mla", "rope_unaware_lserve_centroid_mla"),
)

# Row lengths in blocks (shipped budget: 32 up to n = 527, then n // 16):
# empty rows, a one-block row, rows within budget, just and well over it,
# and past the point where the ratio term wins (testing.SHIPPED_LENGTHS).
NUMERICS_LENGTHS: Tuple[int, ...] = SHIPPED_LENGTHS
# Smaller problems for opcheck / torch.compile (tracing cost does not depend
# on the size); the second has other row / block counts, so a compiled
# function sees new shapes (automatic dynamic shapes, a recompile).
COMPILE_LENGTHS: Tuple[int, ...] = (0, 1, 2, 33, 47, 80)
COMPILE_LENGTHS_2: Tuple[int, ...] = (40, 0, 5, 1, 120)


def example_path(name: str) -> str:
    return os.path.join(EXAMPLES, name + ".mlir")


def load_flow(name_or_source: str) -> Flow:
    """Compile a shipped flow (by name), a .mlir path or IR text for the CPU
    and load it as torch ops."""
    src = (example_path(name_or_source)
           if name_or_source in SHIPPED_FLOWS else name_or_source)
    return load(compiler.compile(src, target="cpu"))


# ---------------------------------------------------------------------------
# Problems
# ---------------------------------------------------------------------------

@dataclass
class TorchProblem:
    q: torch.Tensor                  # float32 [rows, G, D]
    cache: Dict[str, torch.Tensor]   # k, v, fields (float32)
    indptr: torch.Tensor             # int32 [rows + 1]
    indices: torch.Tensor            # int32 [total], unique block ids
    spare: torch.Tensor              # int32, pool blocks in no row
    rng: np.random.Generator
    q_sign: int = 0

    @property
    def num_blocks(self) -> int:
        return int(self.cache["k"].shape[0])


def _signed(x: np.ndarray, sign: int) -> np.ndarray:
    if sign > 0:
        return np.abs(x)
    if sign < 0:
        return -np.abs(x)
    return x


def make_problem(flow: Flow, lengths: Sequence[int] = NUMERICS_LENGTHS,
                 seed: int = 0, spare: int = 5, q_sign: int = 0,
                 k_sign: int = 0) -> TorchProblem:
    """Rows of the given block counts over a pool of sum(lengths) + spare
    blocks in random order (unique block ids); k, v ~ N(0, 1) (k of the
    given sign), q ~ N(0, 1) (of the given sign). Fields start as garbage,
    as recycled pages do. All torch CPU tensors in the manifest's dtypes."""
    rng = np.random.default_rng(seed)
    total = int(sum(lengths))
    nb = total + spare
    cache = {}
    for name, (shape, _) in flow.manifest.cache_shapes(nb).items():
        a = rng.standard_normal(shape).astype(np.float32)
        if name == "k":
            a = _signed(a, k_sign)
        cache[name] = torch.from_numpy(a)
    perm = rng.permutation(nb).astype(np.int32)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    q = _signed(rng.standard_normal(
        (len(lengths), int(flow.config["group_size"]),
         int(flow.config["head_dim"]))), q_sign).astype(np.float32)
    return TorchProblem(q=torch.from_numpy(q), cache=cache,
                        indptr=torch.from_numpy(indptr),
                        indices=torch.from_numpy(perm[:total].copy()),
                        spare=torch.from_numpy(perm[total:].copy()),
                        rng=rng, q_sign=q_sign)


def new_query(p: TorchProblem) -> torch.Tensor:
    return torch.from_numpy(_signed(p.rng.standard_normal(tuple(p.q.shape)),
                                    p.q_sign).astype(np.float32))


def clone_cache(cache: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    return {n: t.clone() for n, t in cache.items()}


def with_negatives(ids: torch.Tensor, rng: np.random.Generator,
                   count: int = 3) -> torch.Tensor:
    """`ids` in random order with `count` negative entries (-1 and others)
    at random positions: a cache step must skip them."""
    a = rng.permutation(ids.numpy()).astype(np.int32)
    for i in range(count):
        a = np.insert(a, int(rng.integers(0, a.size + 1)),
                      -1 if i % 2 == 0 else -7 - i)
    return torch.from_numpy(a.astype(np.int32))


def indexer_args(flow: Flow, q, cache, indptr, indices, sparse_indptr=None,
                 sparse_indices=None) -> List[torch.Tensor]:
    """The indexer op's arguments in schema order (outputs zeroed when not
    given)."""
    named = dict(cache)
    named.update(
        q=q, dense_kv_indptr=indptr, dense_kv_indices=indices,
        sparse_kv_indptr=(torch.zeros_like(indptr) if sparse_indptr is None
                          else sparse_indptr),
        sparse_kv_indices=(torch.zeros_like(indices) if sparse_indices is None
                           else sparse_indices))
    return [named[n] for n in flow.manifest.steps["indexer"].args]


def cache_args(flow: Flow, cache, block_ids) -> List[torch.Tensor]:
    """The cache op's arguments in schema order."""
    named = dict(cache, block_ids=block_ids)
    return [named[n] for n in flow.manifest.steps["cache"].args]


def _garbage_fields(p: TorchProblem) -> Dict[str, torch.Tensor]:
    """A copy of p's cache whose fields hold fresh random values."""
    return {n: (t.clone() if n in ("k", "v") else torch.from_numpy(
        p.rng.standard_normal(tuple(t.shape)).astype(np.float32)))
        for n, t in p.cache.items()}


def same_tensors(a: Dict[str, torch.Tensor], b: Dict[str, torch.Tensor]
                 ) -> List[str]:
    """Names whose tensors are not bit-identical (torch.equal)."""
    return [n for n in a if not torch.equal(a[n], b[n])]


# ---------------------------------------------------------------------------
# The loc form (vortex_torch's token slots)
# ---------------------------------------------------------------------------

def expected_block_ids(loc: Sequence[int], num_kv_heads: int, block_size: int,
                       page_size: int) -> List[int]:
    """An independent (plain Python) model of `Flow.block_ids_from_loc`:
    per token slot, token-major then KV head, the pool block the token
    completes or -1. Pool block of slot `pos`, head `h`:
    ((pos // page_size) * H + h) * (page_size // block_size)
    + (pos % page_size) // block_size."""
    out = []
    for pos in (int(x) for x in loc):
        for h in range(num_kv_heads):
            if pos < 0 or (pos + 1) % block_size:
                out.append(-1)
                continue
            page, off = divmod(pos, page_size)
            out.append((page * num_kv_heads + h) * (page_size // block_size)
                       + off // block_size)
    return out


def random_loc(flow: Flow, num_blocks: int, num_kv_heads: int, count: int,
               rng: np.random.Generator) -> torch.Tensor:
    """`count` distinct int64 token slots whose blocks lie in a pool of
    `num_blocks` (about half of them complete a block) and two -1 slots."""
    bs = int(flow.config["block_size"])
    ps = int(flow.config.get("page_size", bs))
    pages = num_blocks // (num_kv_heads * (ps // bs))
    limit = pages * ps
    assert limit > 0, "pool too small for one page of every head"
    slots = set()
    while len(slots) < min(count, limit):
        pos = int(rng.integers(0, limit))
        if rng.random() < 0.5:
            pos = pos - pos % bs + bs - 1     # the block's last token
        slots.add(pos)
    a = rng.permutation(np.array(sorted(slots) + [-1, -1], np.int64))
    return torch.from_numpy(a)


# ---------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------

def _run(tally: Tally, what: str, fn: Callable[[], Tuple[bool, object]]
         ) -> bool:
    """Run one check; an exception is a FAIL carrying its message."""
    try:
        ok, detail = fn()
    except Exception as err:  # noqa: BLE001
        ok, detail = False, f"{type(err).__name__}: {err}"
    tally(ok, what, detail)
    return ok


def check_opcheck(flow: Flow, tally: Tally,
                  p: Optional[TorchProblem] = None) -> None:
    """torch.library.opcheck (schema, autograd registration, fake tensor,
    AOT dispatch with dynamic shapes) of the indexer and the cache op."""
    p = p or make_problem(flow, COMPILE_LENGTHS, seed=11)
    # A cache step first, so that the indexer sees summarized blocks.
    flow.cache_step(p.cache, p.indices)

    def one(op, args):
        def fn():
            res = torch.library.opcheck(op, tuple(args))
            bad = {k: v for k, v in res.items() if v != "SUCCESS"}
            return not bad, bad or ""
        return fn

    _run(tally, f"{flow.name} opcheck indexer",
         one(flow.indexer_op, indexer_args(flow, p.q, clone_cache(p.cache),
                                           p.indptr, p.indices)))
    ids = with_negatives(p.indices, p.rng, count=2)
    _run(tally, f"{flow.name} opcheck cache",
         one(flow.cache_op, cache_args(flow, clone_cache(p.cache), ids)))


def _graph_breaks(fn, *args) -> Tuple[bool, object]:
    torch._dynamo.reset()
    ex = torch._dynamo.explain(fn)(*args)
    torch._dynamo.reset()
    ok = ex.graph_break_count == 0
    return ok, (f"graph_break_count={ex.graph_break_count}, graph_count="
                f"{ex.graph_count}, reasons={ex.break_reasons}")


def _compare(what: str, eager, compiled, ce, cc) -> List[str]:
    """Differences of outputs (tuples of tensors) and cache dicts."""
    probs = []
    if len(eager) != len(compiled):
        probs.append(f"{what}: {len(eager)} eager outputs, {len(compiled)} "
                     "compiled")
    for i, (a, b) in enumerate(zip(eager, compiled)):
        if a.shape != b.shape or a.dtype != b.dtype or not torch.equal(a, b):
            probs.append(f"{what}: output {i} differs (eager {tuple(a.shape)}"
                         f" {a.dtype}, compiled {tuple(b.shape)} {b.dtype})")
    diff = same_tensors(ce, cc)
    if diff:
        probs.append(f"{what}: cache tensors differ: {diff}")
    return probs


def check_compile(flow: Flow, tally: Tally, num_kv_heads: int = 2) -> None:
    """torch.compile(fullgraph=True) of functions calling the ops: no graph
    break (torch._dynamo.explain) and results bit-identical to eager
    (outputs and every cache tensor) on copies of the same inputs, over two
    problems of different shapes (the second recompiles with dynamic
    shapes) and repeated calls (saved state carried). Covers the indexer,
    the cache step (block ids with negative entries) and the loc form."""
    written = tuple(flow.manifest.steps["cache"].writes)
    p1 = make_problem(flow, COMPILE_LENGTHS, seed=21)
    p2 = make_problem(flow, COMPILE_LENGTHS_2, seed=22, spare=9)
    for p in (p1, p2):
        flow.cache_step(p.cache, p.indices)

    # -- indexer --------------------------------------------------------------
    def f(q, cache, indptr, indices):
        sp, si = flow.indexer(q * 1, cache, indptr, indices)
        return sp.clone(), si.clone()

    _run(tally, f"{flow.name} compile indexer: 0 graph breaks",
         lambda: _graph_breaks(f, p1.q, clone_cache(p1.cache), p1.indptr,
                               p1.indices))

    def indexer_matches():
        torch._dynamo.reset()
        cf = torch.compile(f, fullgraph=True)
        probs = []
        for pi, p in enumerate((p1, p2)):
            ce, cc = clone_cache(p.cache), clone_cache(p.cache)
            for step in range(2):
                q = p.q if step == 0 else new_query(p)
                e = f(q, ce, p.indptr, p.indices)
                c = cf(q, cc, p.indptr, p.indices)
                probs += _compare(f"problem {pi} call {step}", e, c, ce, cc)
        return not probs, "; ".join(probs)

    _run(tally, f"{flow.name} compile indexer: bit-identical to eager",
         indexer_matches)

    # -- cache step (block ids) -----------------------------------------------
    def g(cache, block_ids):
        flow.cache_step(cache, block_ids)
        return tuple(cache[n].clone() for n in written)

    ids1 = with_negatives(p1.indices, p1.rng)
    _run(tally, f"{flow.name} compile cache_step: 0 graph breaks",
         lambda: _graph_breaks(g, clone_cache(p1.cache), ids1))

    def cache_matches():
        torch._dynamo.reset()
        cg = torch.compile(g, fullgraph=True)
        probs = []
        for pi, p in enumerate((p1, p2)):
            # Fresh garbage in the fields, so that the step's writes show.
            base = _garbage_fields(p)
            ids = with_negatives(p.indices, p.rng)
            ce, cc = clone_cache(base), clone_cache(base)
            e = g(ce, ids)
            c = cg(cc, ids)
            probs += _compare(f"problem {pi}", e, c, ce, cc)
            if written and not same_tensors(base, ce):
                probs.append(f"problem {pi}: the eager step wrote nothing")
        return not probs, "; ".join(probs)

    _run(tally, f"{flow.name} compile cache_step: bit-identical to eager",
         cache_matches)

    # -- cache step (loc form) ------------------------------------------------
    H = num_kv_heads

    def h(cache, loc):
        flow.cache_step(cache, loc=loc, num_kv_heads=H)
        return tuple(cache[n].clone() for n in written)

    bs = int(flow.config["block_size"])
    ps = int(flow.config.get("page_size", bs))

    def loc_matches():
        torch._dynamo.reset()
        ch = torch.compile(h, fullgraph=True)
        probs = []
        for pi, p in enumerate((p1, p2)):
            loc = random_loc(flow, p.num_blocks, H, 24, p.rng)
            want = expected_block_ids(loc.tolist(), H, bs, ps)
            got = flow.block_ids_from_loc(loc, H).tolist()
            if got != want:
                probs.append(f"problem {pi}: block_ids_from_loc({loc.tolist()}"
                             f") = {got}, expected {want}")
            base = _garbage_fields(p)
            ce, cc, cb = clone_cache(base), clone_cache(base), clone_cache(base)
            e = h(ce, loc)
            c = ch(cc, loc)
            probs += _compare(f"problem {pi}", e, c, ce, cc)
            keep = torch.tensor([b for b in want if b >= 0], dtype=torch.int32)
            flow.cache_step(cb, block_ids=keep)
            diff = same_tensors(cb, ce)
            if diff:
                probs.append(f"problem {pi}: cache_step(loc=...) != "
                             f"cache_step(block_ids=<completed blocks>) in "
                             f"{diff}")
        return not probs, "; ".join(probs)

    _run(tally, f"{flow.name} compile cache_step(loc=, num_kv_heads={H}): "
         "0 graph breaks",
         lambda: _graph_breaks(h, clone_cache(p1.cache),
                               random_loc(flow, p1.num_blocks, H, 8, p1.rng)))
    _run(tally, f"{flow.name} compile cache_step(loc=): bit-identical to "
         "eager, equal to the block_ids form", loc_matches)
    torch._dynamo.reset()


def check_numerics(flow: Flow, tally: Tally, seeds: Sequence[int] = (1,),
                   sign_cases: Sequence[Tuple[int, int]] = ((0, 0), (-1, 1)),
                   lengths: Sequence[int] = NUMERICS_LENGTHS,
                   indexer_steps: Optional[int] = None) -> None:
    """The ops against the float64 numpy reference: a cache step on every
    row block (random order, negative ids mixed in, which are skipped), then
    indexer steps with fresh queries (one more when the indexer saves
    state); fields at rtol = atol = 1e-5, the selection up to ties
    (`reference.compare_selection`). Pool blocks in no row stay untouched."""
    flow_ref = ref.FLOWS.get(flow.name)
    if flow_ref is None:
        tally(False, f"{flow.name} numerics: no reference model")
        return
    cfg = ref.Config.from_dict(flow.config)
    names = flow.manifest.cache_names()
    saves = any(w in names for w in flow.manifest.steps["indexer"].writes)
    steps = indexer_steps if indexer_steps is not None else 2 + int(saves)
    for seed in seeds:
        for q_sign, k_sign in sign_cases:
            tag = f"{flow.name} numerics seed={seed} q_sign={q_sign:+d} " \
                  f"k_sign={k_sign:+d}"
            p = make_problem(flow, lengths, seed=seed, q_sign=q_sign,
                             k_sign=k_sign)
            want = {n: t.numpy().astype(np.float64)
                    for n, t in p.cache.items()}
            spare_before = {n: t[p.spare.long()].clone()
                            for n, t in p.cache.items()}

            def cache_step():
                ids = with_negatives(p.indices, p.rng)
                flow.cache_step(p.cache, ids)
                flow_ref.cache_step(want, p.indices.numpy(), cfg)
                probs = ref.compare_fields(
                    {n: t.numpy() for n, t in p.cache.items()}, want, names)
                moved = [n for n in names if not torch.equal(
                    spare_before[n], p.cache[n][p.spare.long()])]
                if moved:
                    probs.append(f"blocks in no row were written: {moved}")
                return not probs, "\n    ".join(probs[:10])

            if not _run(tally, f"{tag} cache", cache_step):
                continue
            for step in range(steps):
                def indexer():
                    q = p.q if step == 0 else new_query(p)
                    sp, si = flow.indexer(q, p.cache, p.indptr, p.indices)
                    w = flow_ref.indexer(q.numpy().astype(np.float64), want,
                                         p.indptr.numpy(), p.indices.numpy(),
                                         cfg)
                    probs = []
                    if sp.dtype != torch.int32 or si.dtype != torch.int32:
                        probs.append(f"dtypes {sp.dtype}, {si.dtype}")
                    if si.shape[0] != p.indices.shape[0]:
                        probs.append(f"sparse_kv_indices has {si.shape[0]} "
                                     f"entries, expected total = "
                                     f"{p.indices.shape[0]}")
                    probs += ref.compare_selection(
                        sp.numpy(), si.numpy(), w, p.indptr.numpy(),
                        p.indices.numpy(), cfg)
                    probs += ref.compare_fields(
                        {n: t.numpy() for n, t in p.cache.items()}, want,
                        names)
                    return not probs, "\n    ".join(probs[:10])

                _run(tally, f"{tag} indexer {step}", indexer)


def check_flow(name: str, tally: Tally) -> float:
    """Every torch-op check of one shipped flow; returns its seconds."""
    t0 = time.time()
    try:
        flow = load_flow(name)
    except Exception as err:  # noqa: BLE001
        tally(False, f"{name}: compile/load", f"{type(err).__name__}: {err}")
        return time.time() - t0
    tally(flow.name == name, f"{name}: loaded as {flow.indexer_op}, "
          f"{flow.cache_op}")
    check_opcheck(flow, tally)
    check_compile(flow, tally)
    check_numerics(flow, tally)
    torch._dynamo.reset()
    dt = time.time() - t0
    print(f"# {name}: {dt:.1f}s")
    return dt


def main(names: Sequence[str], tally: Optional[Tally] = None) -> None:
    """Run `check_flow` on each named shipped flow; exit 1 on a failure."""
    torch.manual_seed(0)
    tally = tally or Tally()
    unknown = [n for n in names if n not in SHIPPED_FLOWS]
    tally(not unknown, f"flows {list(names)} are shipped",
          f"not in examples/: {unknown}")
    for n in names:
        if n in SHIPPED_FLOWS:
            check_flow(n, tally)
    tally.exit(summary=True)


def main_shard(index: int) -> None:
    """`main` on FLOW_SHARDS[index], after checking that the shards cover
    every shipped flow exactly once."""
    tally = Tally()
    listed = [n for shard in FLOW_SHARDS for n in shard]
    missing = sorted(set(SHIPPED_FLOWS) - set(listed))
    extra = sorted(set(listed) - set(SHIPPED_FLOWS))
    twice = sorted({n for n in listed if listed.count(n) > 1})
    tally(not (missing or extra or twice),
          f"FLOW_SHARDS covers the {len(SHIPPED_FLOWS)} shipped flows once",
          f"missing {missing}, not shipped {extra}, repeated {twice}")
    main(FLOW_SHARDS[index], tally)
