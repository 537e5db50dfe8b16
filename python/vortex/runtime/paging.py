"""vortex_torch's head-split paged pool: where a token slot's K/V row and
block live (docs/engines.md). An engine page `p` of `page_size` tokens holds,
for KV head `h`, the pool page `p * H + h`; a pool page holds
`page_size // block_size` blocks. The one home of these formulas for the
torch ops (`Flow.block_ids_from_loc`) and the engine integrations.
"""

from __future__ import annotations

from ..environment import import_torch

torch = import_torch()

__all__ = ["check_pageable", "slot_rows", "slot_blocks"]


def check_pageable(flow, engine: str) -> None:
    """Refuse, naming the flow, what an engine's per-head float K/V pages
    cannot hold: an MLA flow (one latent pool, no per-head k and v) and a
    packed int4 pool (the engines write float K/V and quantize nothing).
    docs/engines.md lists both."""
    cfg = getattr(flow, "config", None) or {}
    why = None
    if cfg.get("kv_lora_rank"):
        why = ("is an MLA flow: its one latent pool [kv_c | k_pe] is not "
               "the engine's per-head k and v pages")
    elif str(cfg.get("kv_dtype", "")) == "i4":
        why = ("reads a packed int4 pool (kv_dtype int4): the engine pages "
               "float k and v and quantizes nothing")
    if why:
        raise NotImplementedError(
            f"flow: {getattr(flow, 'name', '?')} {why}; {engine} runs flows "
            "over float per-head k/v pools (docs/engines.md)")


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
