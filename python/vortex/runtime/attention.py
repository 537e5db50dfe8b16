"""Decode attention over a CSR: the `attend` step of a compiled flow and
the `decode` composition (the indexer, then attend over the sparse CSR it
wrote), for both Python front ends (the numpy `CompiledFlow` and the torch
`Flow`). docs/contract.md, "Attention", is the contract.

The checks here run before anything is written and name the argument.
This module imports neither torch nor numpy at the top.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

__all__ = ["check_attend_values", "check_decode", "check_decode_manifest",
           "default_scale", "query_tokens"]


# `decode` is no manifest step: one op (and one launch plan) that runs the
# indexer, then attend over the sparse CSR it wrote. Its arguments are the
# indexer's, then these; attend's CSR arguments are the indexer's sparse
# CSR (DECODE_CSR).
DECODE_TAIL = ("kv_last_len", "o", "lse", "sm_scale")
DECODE_CSR = {"kv_indptr": "sparse_kv_indptr",
              "kv_indices": "sparse_kv_indices"}


def decode_args(manifest: Any) -> tuple:
    """The `decode` op's arguments, in call order."""
    return tuple(manifest.steps["indexer"].args) + DECODE_TAIL


def default_scale(head_dim: int) -> float:
    """The softmax scale when none is given: 1 / sqrt(head_dim)."""
    return 1.0 / math.sqrt(head_dim)


def query_tokens(config: Mapping[str, Any], heads: int) -> int:
    """T of q `[rows, T * G, D]`."""
    return max(1, heads // int(config["group_size"]))


def check_attend_values(indptr: Sequence[int], indices: Sequence[int],
                        last_len: Sequence[int], num_blocks: int,
                        block_size: int, rows: int,
                        indptr_name: str = "kv_indptr",
                        indices_name: str = "kv_indices") -> None:
    """The CSR and last lengths of an attend call (host lists): indptr of
    rows + 1 entries from 0, non-decreasing, ending at most at
    len(indices) (entries past it are ignored: the indexer's sparse buffer
    goes in as it is); the block ids it covers in [0, num_blocks);
    kv_last_len[r] in [1, block_size] for every row with entries. Raises
    ValueError naming the argument."""
    ip = [int(x) for x in indptr]
    if len(ip) != rows + 1:
        raise ValueError(f"{indptr_name}: expected {rows + 1} entries (rows "
                         f"+ 1, rows = q.shape[0] = {rows}), got {len(ip)}")
    if ip[0] != 0:
        raise ValueError(f"{indptr_name}: must start at 0, starts at {ip[0]}")
    for r in range(rows):
        if ip[r + 1] < ip[r]:
            raise ValueError(f"{indptr_name}: must be non-decreasing, but "
                             f"{indptr_name}[{r + 1}] = {ip[r + 1]} < "
                             f"{indptr_name}[{r}] = {ip[r]}")
    if ip[-1] > len(indices):
        raise ValueError(f"{indptr_name}: ends at {ip[-1]}, past "
                         f"len({indices_name}) = {len(indices)}")
    for i in range(ip[-1]):
        b = int(indices[i])
        if b < 0 or b >= num_blocks:
            raise ValueError(f"{indices_name}: block id {b} at position {i} "
                             f"is out of range [0, {num_blocks}) (num_blocks "
                             "= k.shape[0])")
    if len(last_len) != rows:
        raise ValueError(f"kv_last_len: expected {rows} entries (rows = "
                         f"q.shape[0]), got {len(last_len)}")
    for r in range(rows):
        n = int(last_len[r])
        if ip[r + 1] > ip[r] and not 1 <= n <= block_size:
            raise ValueError(f"kv_last_len: {n} tokens in the last block of "
                             f"row {r}, expected 1..{block_size} "
                             "(block_size)")


def check_decode_manifest(manifest: Any) -> None:
    """Refuse `decode` where the compiler said it would not be exact (the
    manifest's attend `decode_refusal`, FlowABI.cpp: the one home of the
    rule, which knows the flow's selection). Raises ValueError naming what
    to blame (reserved_eos, or q for its query tokens)."""
    refusal = getattr(manifest, "decode_refusal", "")
    if refusal:
        raise ValueError(refusal + " (attend over a CSR you build still "
                         "runs)")


def check_decode(config: Mapping[str, Any], tokens: int) -> None:
    """Whether `decode` (attention over the indexer's selection) is exact
    for this flow: the selection must keep the tokens the causal mask
    relies on. A selection ends with the row's last `reserved_eos` blocks
    in CSR order, so the row's partial last block is kept iff
    reserved_eos >= 1, and its last T - 1 tokens (which query token 0 does
    not see) are the selection's last T - 1 iff (reserved_eos - 1) *
    block_size + 1 >= T - 1 (the last block may hold a single token).
    Raises ValueError naming reserved_eos. This is the top-k selections'
    rule, for eager mode (which has no manifest); compiled flows use the
    manifest's `decode_refusal` (`check_decode_manifest`), which also knows
    a union selection."""
    eos = int(config["reserved_eos"])
    block = int(config["block_size"])
    if eos < 1:
        raise ValueError(
            "reserved_eos: decode needs reserved_eos >= 1 (the flow has 0): "
            "a selection could drop the row's partial last block, whose "
            "kv_last_len tokens attend assumes are the CSR's last entry; use "
            "attend over a CSR you build, or recompile with reserved_eos >= 1")
    if (eos - 1) * block + 1 < tokens - 1:
        raise ValueError(
            f"reserved_eos: decode with {tokens} query tokens needs "
            f"(reserved_eos - 1) * block_size + 1 >= {tokens - 1} (the last "
            f"T - 1 tokens must be in the kept EOS blocks); the flow has "
            f"reserved_eos = {eos}, block_size = {block}")
