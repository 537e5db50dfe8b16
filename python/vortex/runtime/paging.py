"""vortex_torch's head-split paged pool: where a token slot's K/V row and
block live (docs/engines.md). An engine page `p` of `page_size` tokens holds,
for KV head `h`, the pool page `p * H + h`; a pool page holds
`page_size // block_size` blocks. The one home of these formulas for the
torch ops (`Flow.block_ids_from_loc`) and the engine integrations.
"""

from __future__ import annotations

from ..environment import import_torch

torch = import_torch()

__all__ = ["slot_rows", "slot_blocks"]


def slot_rows(slots, num_kv_heads: int, page_size: int):
    """Flat K/V rows (of the `[tokens, D]` pool) of int token `slots`, for
    every KV head: int64 `[len(slots), H]`. Meaningless for negative slots."""
    pos = slots.to(torch.int64)[:, None]
    heads = torch.arange(num_kv_heads, device=slots.device)[None]
    return (pos // page_size) * (page_size * num_kv_heads) + \
        heads * page_size + pos % page_size


def slot_blocks(slots, num_kv_heads: int, page_size: int, block_size: int):
    """Pool block ids of the blocks holding int token `slots`, for every KV
    head: int64 `[len(slots), H]`. Meaningless for negative slots."""
    pos = slots.to(torch.int64)[:, None]
    heads = torch.arange(num_kv_heads, device=slots.device)[None]
    return ((pos // page_size) * num_kv_heads + heads) * \
        (page_size // block_size) + (pos % page_size) // block_size
