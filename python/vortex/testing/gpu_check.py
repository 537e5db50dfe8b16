"""Correctness harness of the compiled GPU flows against eager mode.

    python3 -m vortex.testing.gpu_check --artifacts DIR [--flows NAME ...] [--seed S]

For every `<flow>.manifest.json` in DIR (each compiled for its own group
size G; head_dim from its config):

1. a problem of ragged rows (requests x KV heads): empty rows, 1 block,
   rows shorter than / at / just over the fixed budget, rows where the
   ratio term of the budget wins, long rows; a pool of random bf16 k / v
   with spare blocks that no row uses; fields poisoned with -7;
   rows around 4096 scored blocks and one of 9001 blocks;
2. the cache step on every used block (shuffled) through the flow's torch
   op and through eager mode of the flow's Python module
   (`vortex.semantics.eager`, the reference): fields compared (rtol = atol =
   1e-2, bf16 storage); unused blocks must still hold -7;
3. the indexer step, with the sparse outputs poisoned with -7, against the
   reference run on a copy of the GPU's cache state: sparse_kv_indptr
   exactly; every entry of [0, sparse_kv_indptr[-1]) written; rows within
   budget exactly (all blocks, CSR order); rows that need selection: BOS
   and EOS blocks exactly, the middle as a set exactly except swaps of
   blocks whose reference scores tie with the selection threshold (the
   reference score of the last kept block) within a relative 1e-3 (plus
   1e-5 of the row's largest |score|), and in descending reference-score
   order up to the same tolerance (`--ignore-order` to skip); fields after
   the step (saves) compared like the cache step; flows that save run a
   second step on the updated state.

Before the flows, `--selftest` (on by default) checks eager mode itself against
the float64 numpy model `vortex.semantics.reference` on a small problem of
every shipped flow (exact selections, scores to 1e-4).

Prints PASS/FAIL per flow with counts and a final `N passed, M failed`;
exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import glob
import math
import os
import subprocess
import sys
import traceback
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

from ..semantics import reference as npref
from ..runtime import ops as vortex_ops
from ..runtime.manifest import DTYPES, Manifest
from ..semantics import eager

POISON = -7
FIELD_RTOL = 1e-2
FIELD_ATOL = 1e-2
TIE_RTOL = 1e-3
TIE_ATOL_SCALE = 1e-5
MAX_PROBLEMS_SHOWN = 6

def torch_dtype(name: str) -> torch.dtype:
    return getattr(torch, DTYPES[name][0])


# ---------------------------------------------------------------------------
# Problems
# ---------------------------------------------------------------------------

def row_lengths(cfg: npref.Config, rows: int, rng: np.random.Generator
                ) -> List[int]:
    """Edge-case lengths first, random ones after (in blocks)."""
    b0 = cfg.topk_val + cfg.bos + cfg.eos
    if cfg.topk_ratio > 0:
        n_ratio = int(math.ceil((b0 + 1) / cfg.topk_ratio))
        while int(n_ratio * cfg.topk_ratio) <= b0:
            n_ratio += 1
    else:
        n_ratio = 4 * b0 + 8
    # 4096 + bos + eos +- 1: scored ranges around 4096 blocks (the top-k
    # kernel's shared-memory capacity), and one far beyond it.
    cap = 4096 + cfg.bos + cfg.eos
    special = [0, 1, 2, cfg.bos + cfg.eos, max(b0 - 1, 0), b0, b0 + 1, b0 + 2,
               2 * b0 + 1, 5 * b0 + 3, n_ratio - 1, n_ratio, n_ratio + 17,
               2 * n_ratio + 5, 0, cap, cap + 1, 9001]
    out = special[:rows]
    hi = max(3 * n_ratio, 8)
    while len(out) < rows:
        r = rng.random()
        if r < 0.15:
            out.append(int(rng.integers(0, b0 + 2)))
        else:
            out.append(int(rng.integers(b0 + 1, hi)))
    perm = rng.permutation(len(out))
    return [out[i] for i in perm]


def integer_values(x: torch.Tensor) -> torch.Tensor:
    """Small integers in [-3, 3] from standard normal values: with
    power-of-two means and D <= 128 every score is exact in float32, so the
    GPU and the reference agree bit for bit and ties are common."""
    return (x * 1.5).round().clamp(-3, 3)


class Problem:
    def __init__(self, m: Manifest,
                 cfg: npref.Config, rows: int, seed: int, device,
                 spare: int = 37, integer: bool = False):
        self.integer = integer
        rng = np.random.default_rng(seed)
        self.gen = torch.Generator(device=device)
        self.gen.manual_seed(seed)
        self.device = device
        self.lengths = row_lengths(cfg, rows, rng)
        total = int(sum(self.lengths))
        self.total = total
        nb = total + spare
        self.num_blocks = nb
        perm = rng.permutation(nb).astype(np.int32)
        self.used = perm[:total]
        self.unused = perm[total:]
        self.indptr = torch.tensor(np.concatenate([[0], np.cumsum(self.lengths)]),
                                   dtype=torch.int32, device=device)
        self.indices = torch.tensor(self.used, dtype=torch.int32, device=device)
        bids = self.used.copy()
        rng.shuffle(bids)
        self.block_ids = torch.tensor(bids, dtype=torch.int32, device=device)
        # Cache tensors: the manifest's, plus k / v for the reference.
        shapes = m.cache_shapes(nb)
        kv_dtype = m.tensors["k"].dtype if "k" in m.tensors else \
            str(m.config.get("kv_dtype", "bf16"))
        for kv in ("k", "v"):
            shapes.setdefault(kv, ((nb, cfg.block_size, cfg.head_dim), kv_dtype))
        self.cache: Dict[str, torch.Tensor] = {}
        for name, (shape, dt) in shapes.items():
            dtype = torch_dtype(dt)
            if name in ("k", "v"):
                x = torch.randn(shape, generator=self.gen, device=device)
                if integer:
                    x = integer_values(x)
                self.cache[name] = x.to(dtype)
            else:
                self.cache[name] = torch.full(shape, POISON, dtype=dtype,
                                              device=device)
        self.fields = [n for n in shapes if n not in ("k", "v")]
        q_dtype = torch_dtype(m.tensors["q"].dtype) if "q" in m.tensors \
            else torch.bfloat16
        self.q_dtype = q_dtype
        # q's rows per row: T x G (multi-token flows), from the manifest.
        self.G = m.tensors["q"].extents({"rows": 1})[1]
        self.D = cfg.head_dim

    def new_q(self) -> torch.Tensor:
        x = torch.randn((len(self.lengths), self.G, self.D), generator=self.gen,
                        device=self.device)
        if self.integer:
            x = integer_values(x)
        return x.to(self.q_dtype)


def clone_cache(cache: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    return {n: t.clone() for n, t in cache.items()}


# ---------------------------------------------------------------------------
# Comparisons
# ---------------------------------------------------------------------------

def compare_fields(got: Dict[str, torch.Tensor], want: Dict[str, torch.Tensor],
                   names: Sequence[str], untouched: Optional[np.ndarray] = None
                   ) -> Tuple[List[str], int]:
    """(problems, elements compared)."""
    problems = []
    count = 0
    for n in names:
        g, w = got[n].float(), want[n].float()
        if g.shape != w.shape:
            problems.append(f"{n}: shape {tuple(g.shape)} != {tuple(w.shape)}")
            continue
        count += g.numel()
        close = torch.isclose(g, w, rtol=FIELD_RTOL, atol=FIELD_ATOL) | \
            (torch.isnan(g) & torch.isnan(w))
        bad = ~close
        nbad = int(bad.sum())
        if nbad:
            i = int(torch.nonzero(bad.reshape(-1))[0])
            idx = np.unravel_index(i, tuple(g.shape))
            problems.append(f"{n}: {nbad} of {g.numel()} elements differ, first "
                            f"at {tuple(int(x) for x in idx)}: got "
                            f"{float(g.reshape(-1)[i])}, want "
                            f"{float(w.reshape(-1)[i])}")
        if untouched is not None and len(untouched):
            ids = torch.as_tensor(untouched, dtype=torch.int64,
                                  device=got[n].device)
            ut = got[n][ids].float()
            if not bool((ut == POISON).all()):
                problems.append(f"{n}: a block no step lists was written "
                                f"({int((ut != POISON).sum())} elements)")
    return problems, count


class SelectionStats:
    def __init__(self):
        self.rows = 0
        self.selecting = 0
        self.exact_rows = 0
        self.tie_swaps = 0
        self.order_ties = 0


def indptr_problem(got_sp: np.ndarray, ref_sp: np.ndarray) -> Optional[str]:
    """Where the sparse_kv_indptr differs from the reference's, if it does."""
    if got_sp.shape == ref_sp.shape and (got_sp == ref_sp).all():
        return None
    diff = np.nonzero(got_sp != ref_sp)[0] if got_sp.shape == ref_sp.shape \
        else []
    return (f"sparse_kv_indptr differs (first at {list(diff[:5])}): got "
            f"{got_sp[:12].tolist()}..., want {ref_sp[:12].tolist()}...")


def compare_selection(got_sp: np.ndarray, got_si: np.ndarray,
                      ref_sp: np.ndarray, ref_si: np.ndarray,
                      score: np.ndarray, indptr: np.ndarray,
                      indices: np.ndarray, cfg: npref.Config,
                      check_order: bool, stats: SelectionStats) -> List[str]:
    problems: List[str] = []
    bad_indptr = indptr_problem(got_sp, ref_sp)
    if bad_indptr:
        return [bad_indptr]
    end = int(ref_sp[-1])
    unwritten = np.nonzero(got_si[:end] == POISON)[0]
    if len(unwritten):
        problems.append(f"sparse_kv_indices: {len(unwritten)} of {end} entries "
                        f"not written (first at {unwritten[:5].tolist()})")
    bos, eos = cfg.bos, cfg.eos
    for r in range(len(indptr) - 1):
        s, e = int(indptr[r]), int(indptr[r + 1])
        n = e - s
        stats.rows += 1
        got = got_si[got_sp[r]:got_sp[r + 1]]
        want = ref_si[ref_sp[r]:ref_sp[r + 1]]
        if not cfg.needs_selection(n):
            if (got != want).any():
                problems.append(f"row {r} (n={n}, within budget): got "
                                f"{got[:10].tolist()}..., want {want[:10].tolist()}...")
            else:
                stats.exact_rows += 1
            continue
        stats.selecting += 1
        if (got[:bos] != want[:bos]).any() or (
                eos and (got[len(got) - eos:] != want[len(want) - eos:]).any()):
            problems.append(f"row {r} (n={n}): BOS/EOS blocks differ: got "
                            f"{got[:bos].tolist()}+{got[len(got) - eos:].tolist()}, "
                            f"want {want[:bos].tolist()}+"
                            f"{want[len(want) - eos:].tolist()}")
            continue
        gmid = got[bos:len(got) - eos]
        wmid = want[bos:len(want) - eos]
        pos_of = {int(b): s + i for i, b in enumerate(indices[s:e])}
        bad_ids = [int(b) for b in gmid if int(b) not in pos_of or
                   not (s + bos <= pos_of[int(b)] < e - eos)]
        if bad_ids or len(set(gmid.tolist())) != len(gmid):
            problems.append(f"row {r} (n={n}): middle blocks outside the scored "
                            f"range or repeated: {bad_ids[:8]}")
            continue
        if (gmid == wmid).all():
            stats.exact_rows += 1
            continue
        mid_scores = score[s + bos:e - eos]
        finite = mid_scores[np.isfinite(mid_scores)]
        m = float(np.abs(finite).max()) if finite.size else 0.0
        atol = TIE_ATOL_SCALE * m

        def sc(b):
            return float(score[pos_of[int(b)]])

        def tie(a, b):
            return abs(a - b) <= TIE_RTOL * max(abs(a), abs(b)) + atol

        thr = sc(wmid[-1]) if len(wmid) else 0.0
        extra = sorted(set(gmid.tolist()) - set(wmid.tolist()))
        lost = sorted(set(wmid.tolist()) - set(gmid.tolist()))
        beyond = [b for b in extra + lost if not tie(sc(b), thr)]
        if beyond:
            problems.append(
                f"row {r} (n={n}): selected set differs beyond ties: "
                f"extra {[(b, sc(b)) for b in extra][:6]}, missing "
                f"{[(b, sc(b)) for b in lost][:6]}, threshold {thr}")
            continue
        stats.tie_swaps += len(extra)
        if check_order:
            for a, b in zip(gmid[:-1], gmid[1:]):
                if sc(a) < sc(b):
                    if not tie(sc(a), sc(b)):
                        problems.append(f"row {r} (n={n}): not in descending "
                                        f"score order: block {int(a)} "
                                        f"({sc(a)}) before {int(b)} ({sc(b)})")
                        break
                    stats.order_ties += 1
    return problems


def compare_exact(got_sp: np.ndarray, got_si: np.ndarray,
                  ref_sp: np.ndarray, ref_si: np.ndarray, integer: bool,
                  stats: SelectionStats,
                  indptr: Optional[np.ndarray] = None,
                  cfg: Optional[npref.Config] = None) -> List[str]:
    """The whole sparse CSR bit for bit: integer data (exact scores, ties
    to the lower position), and trtllm unions, whose order the reference
    fixes. Given the dense indptr and the config, the rows that select are
    counted in `stats.selecting`."""
    if not integer:
        return ["a union's selection is compared exactly, on exact scores: "
                "run with --integer-data"]
    bad_indptr = indptr_problem(got_sp, ref_sp)
    if bad_indptr:
        return [bad_indptr]
    problems: List[str] = []
    for r in range(len(ref_sp) - 1):
        stats.rows += 1
        if indptr is not None and cfg is not None and cfg.needs_selection(
                int(indptr[r + 1]) - int(indptr[r])):
            stats.selecting += 1
        got = got_si[got_sp[r]:got_sp[r + 1]]
        want = ref_si[ref_sp[r]:ref_sp[r + 1]]
        if (got != want).any():
            problems.append(f"row {r} ({len(want)} blocks): got "
                            f"{got[:12].tolist()}..., want "
                            f"{want[:12].tolist()}...")
        else:
            stats.exact_rows += 1
    return problems


# ---------------------------------------------------------------------------
# One flow
# ---------------------------------------------------------------------------

class FlowResult:
    def __init__(self, name: str):
        self.name = name
        self.problems: List[str] = []
        self.notes: List[str] = []

    @property
    def ok(self) -> bool:
        return not self.problems


def _sync(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def check_flow(path: str, args, device) -> FlowResult:
    """Check one manifest's flow through its torch ops (the public path:
    `vortex.load`, the native launcher when built)."""
    m = Manifest.from_file(path)
    res = FlowResult(m.flow)
    try:
        ref_flow, want_shapes = eager.flow_for(m.flow, m.config)
    except KeyError as err:
        res.problems.append(str(err))
        return res
    cfg = npref.Config.from_dict(m.config)
    # The reference's field shapes must be the manifest's.
    for f, (r, c) in want_shapes.items():
        spec = m.tensors.get(f)
        if spec is None or spec.role != "cache":
            res.problems.append(f"manifest has no cache tensor {f!r}")
        elif spec.extents({"num_blocks": 1})[1:] != (r, c):
            res.problems.append(f"{f}: manifest inner shape "
                                f"{spec.extents({'num_blocks': 1})[1:]} != "
                                f"reference {(r, c)}")
    if res.problems:
        return res
    os.environ["VORTEX_GPU_PREFER"] = args.prefer
    # Parameters: random values, the same in the reference and bound to the
    # compiled flow.
    gen = torch.Generator().manual_seed(args.seed + 99)
    params = {}
    for name, p in ref_flow.parameters().items():
        r, c = p.rows_cols
        stored = torch_dtype(m.tensors[name].dtype)
        # Values the flow's storage dtype holds exactly, as the kernels see.
        value = (torch.rand((1, r, c), generator=gen) * 2 - 0.5).to(stored)
        p.data = value.float().to(device)
        params[name] = p
    flow = vortex_ops.load(path, device.index, params=params or None)
    if params:
        res.notes.append(f"parameters bound: {sorted(params)}")
    res.notes.append(f"G={cfg.group_size} D={cfg.head_dim} "
                     f"bs={cfg.block_size} topk_val={cfg.topk_val} "
                     f"loaded {os.path.basename(flow.runtime.loaded_from)}, "
                     f"CUDA impl {flow._indexer.cuda_impl}")
    info = flow.runtime.kernel_info()
    res.notes.append("kernels: " + ", ".join(
        f"{k}(regs {v['num_regs']}, smem {v['static_smem']}+{v['shared_bytes']}"
        + (f", SPILL {v['local_bytes']}B" if v['local_bytes'] else "") + ")"
        for k, v in info.items()))

    rows = args.requests * args.heads
    for rep in range(args.repeat):
        seed = args.seed * 1000 + rep
        P = Problem(m, cfg, rows, seed, device, integer=args.integer_data)
        where = f"[seed {seed}] "
        # -- cache step -------------------------------------------------
        gpu_cache = P.cache
        ref_cache = clone_cache(gpu_cache)
        flow.cache_step(gpu_cache, P.block_ids)
        eager.cache_step(ref_flow, ref_cache, P.block_ids, m.config)
        _sync(device)
        probs, nel = compare_fields(gpu_cache, ref_cache, P.fields, P.unused)
        res.problems += [where + "cache step: " + p for p in probs]
        if rep == 0:
            res.notes.append(f"rows {rows}, blocks {P.total} (+{len(P.unused)} "
                             f"unused), lengths {sorted(P.lengths)[:4]}.."
                             f"{max(P.lengths)}")
        res.notes.append(f"{where}cache step: {len(P.fields)} field(s), "
                         f"{nel} elements compared")
        # -- indexer step(s) --------------------------------------------
        saves = any(m.tensors[w].role == "cache"
                    for w in m.steps["indexer"].writes)
        for step in range(2 if saves else 1):
            q = P.new_q()
            sp = torch.full((rows + 1,), POISON, dtype=torch.int32,
                            device=device)
            si = torch.full((P.total,), POISON, dtype=torch.int32,
                            device=device)
            ref_cache = clone_cache(gpu_cache)
            flow.indexer(q, gpu_cache, P.indptr, P.indices, sp, si)
            score, rsp, rsi = eager.indexer(ref_flow, q, ref_cache,
                                            P.indptr, P.indices, m.config)
            _sync(device)
            st = SelectionStats()
            if args.integer_data or score is None:
                probs = compare_exact(sp.cpu().numpy(), si.cpu().numpy(),
                                      rsp.cpu().numpy(), rsi.cpu().numpy(),
                                      args.integer_data, st,
                                      P.indptr.cpu().numpy(), cfg)
            else:
                probs = compare_selection(
                    sp.cpu().numpy(), si.cpu().numpy(), rsp.cpu().numpy(),
                    rsi.cpu().numpy(), score.double().cpu().numpy(),
                    P.indptr.cpu().numpy(), P.indices.cpu().numpy(), cfg,
                    not args.ignore_order, st)
            tag = f"{where}indexer step {step + 1}: "
            res.problems += [tag + p for p in probs]
            fprobs, fnel = compare_fields(gpu_cache, ref_cache, P.fields)
            res.problems += [tag + "fields: " + p for p in fprobs]
            res.notes.append(
                f"{tag}{st.rows} rows ({st.selecting} selecting), "
                f"{st.exact_rows} exact, {st.tie_swaps} tie swap(s), "
                f"{st.order_ties} order tie(s), "
                f"{int(rsp[-1])} selected blocks"
                + (f", fields {fnel} elements compared" if saves else ""))
    return res


# ---------------------------------------------------------------------------
# Reference self-test (torch reference vs the float64 numpy model)
# ---------------------------------------------------------------------------

def selftest(device) -> List[str]:
    """Eager mode of every shipped flow against the float64 numpy model on
    a small problem: scores to 1e-4, selections and fields exactly."""
    problems = []
    rng = np.random.default_rng(7)
    for name in npref.FLOWS:
        bs = 64 if "lserve" in name else (1 if "token" in name else 16)
        D = 128
        conf = dict(block_size=bs, head_dim=D, group_size=5, topk_val=5,
                    topk_ratio=0.0625, reserved_bos=1, reserved_eos=2)
        mla = name.endswith("_mla")
        if mla:     # the latent [kv_c | k_pe] of 512 + 64 channels
            D = 576
            conf.update(head_dim=D, kv_lora_rank=512, rope_dim=64)
        cfg = npref.Config.from_dict(conf)
        flow, fields = eager.flow_for(name, conf)
        lengths = [0, 1, 3, 8, 9, 10, 40, 200, 0, 130]
        total = sum(lengths)
        nb = total + 7
        perm = rng.permutation(nb)
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        indices = perm[:total]
        cache_np = {"k": rng.standard_normal((nb, bs, D)).astype(np.float32),
                    "v": rng.standard_normal((nb, bs, D)).astype(np.float32)}
        for f, (r, c) in fields.items():
            cache_np[f] = rng.standard_normal((nb, r, c)).astype(np.float32)
        cache_t = {n: torch.from_numpy(a.copy()).to(device)
                   for n, a in cache_np.items()}
        if mla:     # eager mode names the pool as the flow does
            cache_t["latent"] = cache_t.pop("k")
            del cache_t["v"]
        ref = npref.FLOWS[name]
        ref.cache_step(cache_np, perm[:total + 3], cfg)
        eager.cache_step(flow, cache_t, torch.tensor(
            perm[:total + 3], dtype=torch.int32, device=device), conf)
        for f in fields:
            if f in ("running_score", "hh_score"):   # make loads non-trivial
                cache_np[f][:] = rng.standard_normal(cache_np[f].shape)
                cache_t[f].copy_(torch.from_numpy(cache_np[f]))
        q = rng.standard_normal((len(lengths), 5, D)).astype(np.float32)
        want = ref.indexer(q, cache_np, indptr, indices, cfg)
        s, sp, si = eager.indexer(
            flow, torch.from_numpy(q).to(device), cache_t,
            torch.tensor(indptr, dtype=torch.int32, device=device),
            torch.tensor(indices, dtype=torch.int32, device=device), conf)
        s = s.double().cpu().numpy()
        scale = max(float(np.abs(want.score).max()), 1.0)
        if np.abs(want.score - s).max() > 1e-4 * scale:
            problems.append(f"{name}: score differs by "
                            f"{np.abs(want.score - s).max()}")
        sp, si = sp.cpu().numpy(), si.cpu().numpy()
        if sp.tolist() != want.indptr.tolist() or \
                si[:sp[-1]].tolist() != want.indices.tolist():
            problems.append(f"{name}: selection differs from "
                            "vortex.semantics.reference")
        for f in fields:
            d = np.abs(cache_np[f] - cache_t[f].cpu().numpy()).max()
            if d > 1e-4:
                problems.append(f"{name}: field {f} differs by {d}")
    return problems


# ---------------------------------------------------------------------------

def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m vortex.testing.gpu_check",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifacts", required=True,
                    help="directory of <flow>.manifest.json (+ .cubin/.ptx)")
    ap.add_argument("--flows", nargs="*", default=None,
                    help="only manifests whose flow name is one of these")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=1,
                    help="problems per flow (different seeds)")
    ap.add_argument("--requests", type=int, default=3)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--ignore-order", action="store_true",
                    help="do not check the descending order of the middle")
    ap.add_argument("--prefer", choices=["cubin", "ptx"], default="cubin",
                    help="module image to load first")
    ap.add_argument("--no-selftest", action="store_true",
                    help="skip the torch-vs-numpy reference self-test")
    ap.add_argument("--integer-data", action="store_true",
                    help="k, v and q of small integers (exact scores, many "
                         "ties); the selection must equal the reference's "
                         "exactly (for flows whose scores stay exact: "
                         "power-of-two means; required for trtllm unions)")
    ap.add_argument("--isolate", action="store_true",
                    help="check each manifest in its own process (a kernel "
                         "fault then only fails its flow)")
    ap.add_argument("--flow-file", action="append", default=[],
                    help="a vortex flow module to load (registers its flows "
                         "for the eager reference)")
    ap.add_argument("--manifest", default=None, help=argparse.SUPPRESS)
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    from ..flow.loader import load_module
    for f in args.flow_file:
        load_module(f)

    if not torch.cuda.is_available():
        print("FAIL: torch sees no CUDA device")
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device("cuda", torch.cuda.current_device())
    print(f"device: {torch.cuda.get_device_name(device)}, torch "
          f"{torch.__version__}")
    passed = failed = 0
    if not args.no_selftest:
        try:
            probs = selftest(device)
        except Exception:  # noqa: BLE001
            probs = ["exception:\n" + traceback.format_exc()]
        if probs:
            failed += 1
            print("FAIL reference self-test (eager mode vs "
                  "vortex.semantics.reference)")
            for p in probs[:MAX_PROBLEMS_SHOWN]:
                print("    " + p)
        else:
            passed += 1
            print("PASS reference self-test: eager mode vs "
                  f"vortex.semantics.reference ({len(npref.FLOWS)} flows)")

    paths = sorted(glob.glob(os.path.join(args.artifacts, "*.manifest.json")))
    if args.manifest:
        paths = [args.manifest]
    if not paths:
        print(f"FAIL: no *.manifest.json in {args.artifacts}")
        return 1
    not_run = 0
    matched = set()
    for k, path in enumerate(paths):
        name = os.path.basename(path)[:-len(".manifest.json")]
        if args.flows:
            try:
                fname = Manifest.from_file(path).flow
            except Exception:  # noqa: BLE001
                fname = name
            if fname not in args.flows and name not in args.flows:
                continue
            matched.update({fname, name})
        if args.isolate:
            cmd = [sys.executable, "-m", "vortex.testing.gpu_check", "--artifacts",
                   args.artifacts, "--manifest", path, "--no-selftest",
                   "--seed", str(args.seed), "--repeat", str(args.repeat),
                   "--requests", str(args.requests), "--heads",
                   str(args.heads), "--prefer", args.prefer]
            cmd += ["--ignore-order"] if args.ignore_order else []
            cmd += ["--integer-data"] if args.integer_data else []
            for f in args.flow_file:
                cmd += ["--flow-file", f]
            cmd += ["-v"] if args.verbose else []
            proc = subprocess.run(cmd, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
            lines = proc.stdout.splitlines()
            body = [ln for ln in lines[1:] if not ln.endswith(" failed")]
            print("\n".join(body))
            if proc.returncode == 0:
                passed += 1
            else:
                failed += 1
                if not any(ln.startswith("FAIL") for ln in body):
                    print(f"FAIL {name}: exit {proc.returncode}")
            continue
        try:
            res = check_flow(path, args, device)
        except Exception:  # noqa: BLE001
            res = FlowResult(name)
            res.problems.append("exception:\n" + traceback.format_exc())
            try:
                torch.cuda.synchronize()
            except Exception:  # noqa: BLE001
                res.problems.append("the CUDA context is broken; stopping "
                                    "(rerun with --isolate)")
                print(f"FAIL {res.name}")
                for p in res.problems:
                    print("    " + p)
                failed += 1
                not_run = len(paths) - k - 1
                break
        if res.ok:
            passed += 1
            print(f"PASS {res.name}")
        else:
            failed += 1
            print(f"FAIL {res.name}: {len(res.problems)} problem(s)")
            for p in res.problems[:MAX_PROBLEMS_SHOWN]:
                print("    " + p)
        for i, n in enumerate(res.notes):
            if args.verbose or not res.ok or i == 0 or "indexer" in n:
                print("    . " + n)
    print(f"{passed} passed, {failed} failed" +
          (f" ({not_run} manifest(s) not run)" if not_run else ""))
    # A --flows name that matches nothing (a renamed flow) must not pass.
    unmatched = [f for f in (args.flows or []) if f not in matched]
    if unmatched:
        print(f"FAIL: --flows {' '.join(unmatched)} matched no manifest in "
              f"{args.artifacts}")
        return 2
    if not_run:
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
