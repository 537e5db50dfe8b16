"""The shipped flows, written as vortex_torch flow modules (vortex_torch's
`flow/algorithms.py`, one module per flow). Importing this package
registers them.

`SHIPPED` maps each file of examples/ to the registered flow, the config
the example is written for and its symbol: the 13 flows, plus
gqa_quest_sparse_attention at group size 5 (a config, not another flow),
and vortex_torch's 4 MLA flows (`vFlowMLA`, `algorithms_mla.py`) at
GLM-4.7-Flash's shape: 20 query heads over one latent of 512 + 64,
blocks of 32 (`MLA`).
`LEARNED` does the same for examples/learned/: the flows of vortex_torch's
learned ops with per-layer weights (LearnedQuery, FactorScore,
LearnedDescriptor), its learned_block_sparse_mla (a GeMM with a
`[576, 11520]` Parameter) and learned_factorized_block_sparse_mla
(LearnedDescriptor and FactorScore on the latent), both at GLM's shape,
whose parameters are bound at load (the checks that need only a flow's IR, such
as the numerics against the float64 reference of every example, read
examples/*.mlir and SHIPPED).
`learned_query` is registered too (a flow with a PARAMETER weight), but it
is not a vortex_torch flow and has no example.

    >>> from vortex import api
    >>> text = api.trace_shipped("gqa_quest_sparse_attention_g5")
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict

from ..frontend.config import FlowConfig
# Importing a flow module registers its flow.
from . import (  # noqa: F401
    block_sparse_attention, centered_block_sparse_attention,
    factor_score_block_sparse_attention, gqa_block_sparse_attention, gqa_h2o_sparse_attention,
    gqa_h2o_token_sparse_attention, gqa_quest_sparse_attention,
    h2o_sparse_attention, h2o_token_sparse_attention,
    learned_factorized_block_sparse_attention, learned_query,
    learned_query_block_sparse_attention,
    lserve_centroid_sparse_attention, lserve_sparse_attention,
    masked_quest_sparse_attention, running_avg_block_sparse,
    venergy_gated_centroid)
from . import (  # noqa: F401
    learned_block_sparse_mla, learned_factorized_block_sparse_mla,
    lserve_centroid_mla, rope_aware_block_sparse_mla,
    rope_unaware_block_sparse_mla, rope_unaware_lserve_centroid_mla)

__all__ = ["LEARNED", "MLA", "SHIPPED", "ShippedFlow", "shipped"]


@dataclass(frozen=True)
class ShippedFlow:
    """An example: registered flow name, config and symbol."""
    flow: str
    config: FlowConfig
    symbol: str


_DEFAULT = FlowConfig()
_TOKEN = FlowConfig(block_size=1, page_size=1)
_LSERVE = FlowConfig(block_size=64, page_size=64)
_GLM = FlowConfig.mla(512, 64, group_size=20, block_size=32, page_size=32)

SHIPPED: Dict[str, ShippedFlow] = {
    name: ShippedFlow(flow, cfg, name) for name, flow, cfg in [
        ("block_sparse_attention", "block_sparse_attention", _DEFAULT),
        ("centered_block_sparse_attention",
         "centered_block_sparse_attention", _DEFAULT),
        ("gqa_block_sparse_attention", "gqa_block_sparse_attention",
         _DEFAULT),
        ("gqa_h2o_sparse_attention", "gqa_h2o_sparse_attention", _DEFAULT),
        ("gqa_h2o_token_sparse_attention", "gqa_h2o_token_sparse_attention",
         _TOKEN),
        ("gqa_quest_sparse_attention", "gqa_quest_sparse_attention",
         _DEFAULT),
        ("gqa_quest_sparse_attention_g5", "gqa_quest_sparse_attention",
         _DEFAULT.replace(group_size=5)),
        ("h2o_sparse_attention", "h2o_sparse_attention", _DEFAULT),
        ("h2o_token_sparse_attention", "h2o_token_sparse_attention", _TOKEN),
        ("lserve_centroid_sparse_attention",
         "lserve_centroid_sparse_attention", _LSERVE),
        ("lserve_sparse_attention", "lserve_sparse_attention", _LSERVE),
        ("masked_quest_sparse_attention", "masked_quest_sparse_attention",
         _DEFAULT),
        ("running_avg_block_sparse", "running_avg_block_sparse", _DEFAULT),
        ("venergy_gated_centroid", "venergy_gated_centroid", _DEFAULT),
        ("rope_aware_block_sparse_mla", "rope_aware_block_sparse_mla", _GLM),
        ("lserve_centroid_mla", "lserve_centroid_mla", _GLM),
        ("rope_unaware_block_sparse_mla", "rope_unaware_block_sparse_mla",
         _GLM),
        ("rope_unaware_lserve_centroid_mla",
         "rope_unaware_lserve_centroid_mla", _GLM),
    ]
}

#: The MLA examples (vFlowMLA: one latent pool, absorbed queries).
MLA = [n for n, s in SHIPPED.items() if s.config.is_mla]

LEARNED: Dict[str, ShippedFlow] = {
    name: ShippedFlow(name, cfg, name) for name, cfg in (
        ("factor_score_block_sparse_attention", _DEFAULT),
        ("learned_block_sparse_mla", _GLM),
        ("learned_factorized_block_sparse_attention", _DEFAULT),
        ("learned_factorized_block_sparse_mla", _GLM),
        ("learned_query_block_sparse_attention", _DEFAULT))
}


def shipped(example: str) -> ShippedFlow:
    """The ShippedFlow of an example of SHIPPED or LEARNED."""
    if example in SHIPPED:
        return SHIPPED[example]
    return LEARNED[example]
