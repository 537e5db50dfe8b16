"""The float64 numpy model of a compiled flow's `attend` step
(docs/contract.md, "Attention"), written from that page alone: it shares
no code with the kernels, the torch ops or eager mode.

A row's token sequence is the concatenation, in CSR order, of its blocks'
tokens: `block_size` per entry but the last, which gives `kv_last_len[r]`.
The tokens past that are never read (they are sliced away, not masked), so
whatever the pool holds there cannot matter. Query head `h = t * G + g`
(token-major) sees every token but the last `T - 1 - t`.
"""

from __future__ import annotations

import math
from typing import Optional, Tuple

import numpy as np

__all__ = ["attend"]


def _row_tokens(pool: np.ndarray, ids, last: int) -> np.ndarray:
    """[tokens, D] of one row, in CSR order, as float64."""
    parts = []
    for n, b in enumerate(ids):
        count = pool.shape[1] if n + 1 < len(ids) else int(last)
        parts.append(np.asarray(pool[int(b), :count], np.float64))
    if not parts:
        return np.zeros((0, pool.shape[2]), np.float64)
    return np.concatenate(parts, axis=0)


def attend(q, k, v, kv_indptr, kv_indices, kv_last_len, group_size: int,
           sm_scale: Optional[float] = None) -> Tuple[np.ndarray, np.ndarray]:
    """Decode attention over a CSR, in float64.

    q `[rows, T * G, D]`, k and v `[num_blocks, block_size, D]`, the CSR
    (`kv_indices` may be longer than `kv_indptr[-1]`), `kv_last_len[r]` in
    [1, block_size] for rows with entries. Returns `(o, lse)`: o
    `[rows, T * G, D]` and the natural-log log-sum-exp `[rows, T * G]`; a
    head that sees no token gets o = 0, lse = -inf."""
    q = np.asarray(q, np.float64)
    k, v = np.asarray(k), np.asarray(v)
    indptr = [int(x) for x in np.asarray(kv_indptr).reshape(-1)]
    indices = np.asarray(kv_indices).reshape(-1)
    last_len = np.asarray(kv_last_len).reshape(-1)
    rows, heads, dim = q.shape
    if heads % group_size:
        raise ValueError(f"q has {heads} heads, not a multiple of "
                         f"group_size {group_size}")
    tokens_per_row = heads // group_size
    scale = 1.0 / math.sqrt(dim) if sm_scale is None else float(sm_scale)
    o = np.zeros((rows, heads, dim), np.float64)
    lse = np.full((rows, heads), -np.inf, np.float64)
    for r in range(rows):
        ids = indices[indptr[r]:indptr[r + 1]]
        if len(ids) == 0:
            continue
        keys = _row_tokens(k, ids, last_len[r])
        values = _row_tokens(v, ids, last_len[r])
        for h in range(heads):
            t = h // group_size
            seen = keys.shape[0] - (tokens_per_row - 1 - t)
            if seen <= 0:
                continue
            logits = scale * (keys[:seen] @ q[r, h])
            top = logits.max()
            weights = np.exp(logits - top)
            total = weights.sum()
            o[r, h] = (weights @ values[:seen]) / total
            lse[r, h] = top + math.log(total)
    return o, lse
