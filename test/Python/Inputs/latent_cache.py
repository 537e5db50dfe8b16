"""Shared pieces of the MLA flow tests (test/Python/cpu/learned_mla.py,
learned_factorized_mla.py): a compiled MLA flow's cache with its one pool
as `latent`, and the comparison of a selection with the reference's."""

import torch


def latent_cache(compiled, num_blocks, latent):
    """The compiled flow's fields for `num_blocks` blocks, and `latent`
    (numpy [num_blocks, bs, d]) as the pool (an MLA flow reads no k or v)."""
    cache = {n: t for n, t in compiled.allocate_cache(num_blocks).items()
             if n not in ("k", "v")}
    cache["latent"] = torch.from_numpy(latent)
    return cache


def same_selection(sparse_indptr, sparse_indices, want):
    """Whether a step's (sparse_kv_indptr, sparse_kv_indices) equal the
    reference's `want` = (indptr, indices)."""
    return (sparse_indptr.tolist() == list(want[0]) and
            sparse_indices[:int(sparse_indptr[-1])].tolist() ==
            list(want[1]))
