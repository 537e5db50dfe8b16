"""Peers of our indexer step for bench_indexer.py (docs/benchmarks.md).

A Triton score kernel per benchmarked flow, written the way vortex_torch's
Triton back end schedules a flow: one program per (row, chunk of BLOCKS
blocks), the row's batched operand (q) loaded once per program, the chunk's
block ids gathered, the score written at [row, position in row]. The step
adds vortex_torch's selection in torch: `torch.topk` over the scored middle
[bos, n - eos) of each row, the kept ids gathered, BOS and EOS blocks
prepended and appended, and the sparse CSR written.

The peers assume what the benchmark feeds them: every row has the same
number of blocks n and row r's blocks are positions [r n, (r + 1) n) of
dense_kv_indices. That makes the torch selection a plain [rows, n] topk, no
padding: it favours the peer.
"""

from __future__ import annotations

from typing import Callable, Dict, Optional

import torch

FLOWS = ("gqa_quest_sparse_attention", "block_sparse_attention",
         "running_avg_block_sparse")


def _kernels():
    import triton
    import triton.language as tl

    @triton.jit
    def quest(q_ptr, max_ptr, min_ptr, indptr_ptr, idx_ptr, out_ptr, n,
              G: tl.constexpr, D: tl.constexpr, BLOCKS: tl.constexpr):
        # score = max over heads of sum_d max(q M, q m).
        row = tl.program_id(0)
        chunk = tl.program_id(1)
        start = tl.load(indptr_ptr + row)
        end = tl.load(indptr_ptr + row + 1)
        d = tl.arange(0, D)
        j = chunk * BLOCKS + tl.arange(0, BLOCKS)
        valid = start + j < end
        ids = tl.load(idx_ptr + start + j, mask=valid, other=0).to(tl.int64)
        hi = tl.load(max_ptr + ids[:, None] * D + d[None, :],
                     mask=valid[:, None], other=0.0).to(tl.float32)
        lo = tl.load(min_ptr + ids[:, None] * D + d[None, :],
                     mask=valid[:, None], other=0.0).to(tl.float32)
        best = tl.full((BLOCKS,), float("-inf"), tl.float32)
        for g in tl.static_range(G):
            qg = tl.load(q_ptr + (row * G + g) * D + d).to(tl.float32)
            s = tl.sum(tl.maximum(qg[None, :] * hi, qg[None, :] * lo), axis=1)
            best = tl.maximum(best, s)
        tl.store(out_ptr + row * n + j, best, mask=valid)

    @triton.jit
    def centroid(q_ptr, c_ptr, last_ptr, indptr_ptr, idx_ptr, out_ptr, n,
                 alpha, save_end, G: tl.constexpr, D: tl.constexpr,
                 GP: tl.constexpr, BLOCKS: tl.constexpr,
                 RUNNING: tl.constexpr):
        # score = < mean_h q_h , c >; RUNNING: alpha * last + score, saved
        # back for positions < n - eos.
        row = tl.program_id(0)
        chunk = tl.program_id(1)
        start = tl.load(indptr_ptr + row)
        end = tl.load(indptr_ptr + row + 1)
        g = tl.arange(0, GP)
        d = tl.arange(0, D)
        q = tl.load(q_ptr + (row * G + g[:, None]) * D + d[None, :],
                    mask=g[:, None] < G, other=0.0).to(tl.float32)
        qm = tl.sum(q, axis=0) / G
        j = chunk * BLOCKS + tl.arange(0, BLOCKS)
        valid = start + j < end
        ids = tl.load(idx_ptr + start + j, mask=valid, other=0).to(tl.int64)
        c = tl.load(c_ptr + ids[:, None] * D + d[None, :],
                    mask=valid[:, None], other=0.0).to(tl.float32)
        s = tl.sum(c * qm[None, :], axis=1)
        if RUNNING:
            last = tl.load(last_ptr + ids, mask=valid, other=0.0)
            s = alpha * last.to(tl.float32) + s
            tl.store(last_ptr + ids, s.to(last_ptr.dtype.element_ty),
                     mask=valid & (j < save_end))
        tl.store(out_ptr + row * n + j, s, mask=valid)

    return triton, quest, centroid


def triton_step(flow_name: str, cfg, cache: Dict[str, torch.Tensor], R: int,
                n: int, blocks: int = 64
                ) -> Optional[Callable[[Dict[str, torch.Tensor], bool], None]]:
    """fn(set, score_only) running the Triton peer of `flow_name` on one
    input set (q, indptr, indices, sp, si), or None for another flow."""
    if flow_name not in FLOWS:
        return None
    triton, quest, centroid = _kernels()
    G, D = cfg.group_size, cfg.head_dim
    bos, eos = cfg.bos, cfg.eos
    kept = cfg.budget(n)  # cfg: vortex.semantics.reference.Config
    k_mid = min(kept, n) - bos - eos
    dev = torch.device("cuda")
    scores = torch.empty((R, n), dtype=torch.float32, device=dev)
    sp_const = (torch.arange(R + 1, device=dev) * min(kept, n)).to(torch.int32)
    grid = (R, triton.cdiv(n, blocks))
    gp = 1 << max(0, (G - 1).bit_length())

    def score(s: Dict[str, torch.Tensor]) -> None:
        if flow_name == "gqa_quest_sparse_attention":
            quest[grid](s["q"], cache["max"], cache["min"], s["indptr"],
                        s["indices"], scores, n, G=G, D=D, BLOCKS=blocks)
            return
        running = flow_name == "running_avg_block_sparse"
        last = cache["running_score"] if running else scores
        centroid[grid](s["q"], cache["centroids"], last, s["indptr"],
                       s["indices"], scores, n, 0.5, n - eos, G=G, D=D,
                       GP=gp, BLOCKS=blocks, RUNNING=running)

    def step(s: Dict[str, torch.Tensor], score_only: bool) -> None:
        score(s)
        if score_only:
            return
        ids = s["indices"].view(R, n)
        if n <= kept:
            s["si"].copy_(s["indices"])
        else:
            top = torch.topk(scores[:, bos:n - eos], k_mid, dim=1).indices
            sel = torch.gather(ids[:, bos:n - eos], 1, top)
            out = torch.cat([ids[:, :bos], sel, ids[:, n - eos:]], dim=1)
            s["si"][:R * kept].view(R, kept).copy_(out)
        s["sp"].copy_(sp_const)

    return step
