# RUN: %python %s
# REQUIRES: numpy, torch
#
# The attend step of a compiled flow on the CPU against the float64
# reference (vortex.semantics.reference_attention), through the numpy API
# (CompiledFlow.attend) and the torch op (Flow.attend), to rtol = atol =
# 2e-5: D 64, 80, 96 and 128; block sizes 8, 16, 32 and 64; G 1, 3, 5 and
# 8; T 1 to 4 (causal over the last T tokens, with rows shorter than T);
# rows of 0, 1 and several blocks with partial last blocks (1 and
# block_size tokens among them); a pool holding NaN past every row's length
# and in every unused block; the default and an explicit sm_scale.


import numpy as np
import torch

from vortex.testing.attention import check, make_case

import vortex
from vortex.runtime.cpu import CompiledFlow

# (head_dim, block_size, group_size, query_tokens)
CONFIGS = [(64, 8, 5, 1), (80, 16, 5, 3), (96, 32, 3, 2), (128, 64, 8, 1),
           (128, 16, 1, 4)]
BLOCKS = [0, 1, 3, 1, 6, 0, 2]

rng = np.random.default_rng(35)
empty_heads = 0
for dim, block, group, tokens in CONFIGS:
    config = vortex.FlowConfig(block_size=block, page_size=block,
                               head_dim=dim, group_size=group,
                               query_tokens=tokens, topk_val=2,
                               intermediate_dtype="f32", kv_dtype="f32")
    path = vortex.compile("block_sparse_attention", config, target="cpu")
    numpy_flow, torch_flow = CompiledFlow(path), vortex.load(path)
    heads = tokens * group
    last = rng.integers(1, block + 1, len(BLOCKS))
    last[1], last[2] = 1, block       # a one-token and a full last block
    q, k, v, indptr, ids, last = make_case(rng, BLOCKS, block, dim, heads,
                                           last_lens=last)
    cache = numpy_flow.allocate_cache(k.shape[0])
    cache["k"][...], cache["v"][...] = k, v
    for scale in (None, 0.3):
        what = f"D={dim} B={block} G={group} T={tokens} scale={scale}"
        o, lse = numpy_flow.attend(q, cache, indptr, ids, last,
                                   sm_scale=scale)
        empty_heads += check(o, lse, q, k, v, indptr, ids, last, group,
                             scale, what + " (numpy)")
        tcache = {n: torch.from_numpy(a) for n, a in cache.items()}
        o_t, lse_t = torch_flow.attend(
            torch.from_numpy(q), tcache, torch.from_numpy(indptr),
            torch.from_numpy(ids), torch.from_numpy(last), sm_scale=scale)
        check(o_t, lse_t, q, k, v, indptr, ids, last, group, scale,
              what + " (torch)")
        assert o_t.dtype == torch.float32 and lse_t.shape == (len(BLOCKS),
                                                             heads)
    print(f"attend D={dim} B={block} G={group} T={tokens}: ok")

# Rows of 0 blocks, and the heads of T > 1 rows shorter than T, see nothing.
assert empty_heads > 0
print("attend numerics: ok")
