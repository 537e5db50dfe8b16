"""`vFlow`: the base class of a sparse-attention flow (vortex_torch's
`flow/flow.py`).

A flow declares its per-block cache fields (`create_cache`), summarizes a
completed KV block into them (`forward_cache`) and scores the blocks of
every row at each decode step, ending in a top-k selection written to `o`
(`forward_indexer`). In vortex both forwards run once, on traced values
(`vortex.trace`), and become one `vortex.flow` op.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from typing import Any, Dict, Mapping, Tuple

from ..abs.parameter import Parameter
from ..frontend.config import ELEMENT_BYTES, resolve_dtype

__all__ = ["vFlow", "vFlowMLA", "declare_cache", "flow_name", "mla_dims"]


def flow_name(cls: type) -> str:
    """The name a flow class traces under: its registered name, else its
    class name in snake_case."""
    name = cls.__dict__.get("_vortex_flow_name")
    if name:
        return name
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", cls.__name__).lower()


class vFlow(ABC):
    """A flow (see the module docstring).

    `forward_indexer(q, o, cache, ctx)`: `q` is `[B, G, D]` (batched), `o`
    the selection output, `cache[name]` `[S, r, c]` (paged) for `k`, `v`
    and every declared field. `forward_cache(cache, loc, ctx)`: `cache[name]`
    is the completed block `[1, r, c]`. `create_cache(block_size, head_dim)`
    returns `{field: (r, c)}` without `k` and `v` (they are implicit).
    """

    #: How the op layer (abs.op) knows a flow without importing this one.
    _vortex_is_flow = True

    def __init__(self) -> None:
        super().__init__()
        self.block_size = None
        self.head_dim = None
        self.kv_cache_dtype = None
        self.q_data_type = None
        self.intermediate_dtype = None
        self.cache_meta_info = None
        self.token_ratio = None

    def parameters(self) -> Dict[str, Any]:
        """The flow's learned constants (`vortex.abs.Parameter`), by name, in
        the order they were assigned: a parameter's name is its own, else
        the attribute holding it. An op with weights (LearnedQuery,
        FactorScore, LearnedDescriptor) adds the parameters it traces to,
        computed from its current weights and named after its attribute
        (`<attr>_fold`); a rank-4 Parameter is such an op's weight, not a
        flow operand."""
        out: Dict[str, Any] = {}
        for attr, value in vars(self).items():
            if isinstance(value, Parameter):
                if value.operand:
                    out[value.name or attr] = value
                continue
            derived = getattr(value, "derived_parameters", None)
            if callable(derived):
                out.update(derived(attr))
        return out

    @abstractmethod
    def forward_indexer(self, q, o, cache: Dict[str, Any], ctx) -> None:
        """Score the blocks and select into `o` (ends in topK/approxTopK)."""

    @abstractmethod
    def forward_cache(self, cache: Dict[str, Any], loc, ctx) -> None:
        """Summarize the completed block into the declared fields."""

    @abstractmethod
    def create_cache(self, block_size: int,
                     head_dim: int) -> Dict[str, Tuple[int, int]]:
        """Declare the extra cache fields `{name: (r, c)}`."""

    def get_cache_meta_info(self):
        return self.cache_meta_info

    def get_token_ratio(self):
        return self.token_ratio

    def initialize(self, block_size: int, head_dim: int,
                   kv_cache_dtype: Any, q_data_type: Any,
                   intermediate_dtype: Any = "bf16") -> None:
        """Record the base shapes and dtypes and build `cache_meta_info =
        {name: ((r, c), dtype)}` (k and v in the KV dtype, fields in the
        intermediate dtype) and `token_ratio` (cache bytes per block relative
        to one K block), as vortex_torch does. The tracer calls it."""
        self.block_size = block_size
        self.head_dim = head_dim
        self.kv_cache_dtype = resolve_dtype(kv_cache_dtype)
        self.q_data_type = resolve_dtype(q_data_type)
        self.intermediate_dtype = resolve_dtype(intermediate_dtype)
        raw = dict(self.create_cache(block_size, head_dim))
        assert "k" not in raw, "create_cache must not declare 'k' key"
        assert "v" not in raw, "create_cache must not declare 'v' key"
        raw["k"] = (block_size, head_dim)
        raw["v"] = (block_size, head_dim)
        total = 0
        self.cache_meta_info = {}
        for key, (r, c) in raw.items():
            dtype = (self.kv_cache_dtype if key in ("k", "v")
                     else self.intermediate_dtype)
            total += r * c * ELEMENT_BYTES[dtype]
            self.cache_meta_info[key] = ((r, c), dtype)
        self.token_ratio = total / (block_size * head_dim *
                                    ELEMENT_BYTES[self.kv_cache_dtype])


def _knob(config: Any, name: str) -> Any:
    """A knob of a FlowConfig, a manifest's config dict or eager's config
    (None when absent)."""
    if isinstance(config, Mapping):
        return config.get(name)
    return getattr(config, name, None)


class vFlowMLA(vFlow):
    """vortex_torch's MLA flow base (`flow/flow_mla.py`): DeepSeek-V2/V3
    style latent attention.

    The one cache pool is `cache["latent"]` `[S, block_size, kv_lora_rank +
    qk_rope_head_dim]`, laid out `[kv_c | k_pe]`, auto-declared (in the IR
    it is the flow's `k`). `forward_indexer` gets the absorbed query
    `q = [q_nope_out | q_pe]` `[B, H, kv_lora_rank + qk_rope_head_dim]` of
    all H query heads, so `<q, latent_t>` is the full decode logit
    including RoPE. `create_cache(block_size, kv_lora_rank,
    qk_rope_head_dim)` declares the other fields; it must not declare
    `latent`, `k`, `v`, `kv_c` or `k_pe`. Trace it with a config that sets
    `kv_lora_rank` and `rope_dim` (`FlowConfig.mla`).
    """

    #: How the tracer, eager mode and the runtimes know an MLA flow.
    _vortex_is_mla = True

    def __init__(self) -> None:
        super().__init__()
        self.kv_lora_rank = None
        self.qk_rope_head_dim = None
        self.latent_dim = None

    @abstractmethod
    def create_cache(self, block_size: int, kv_lora_rank: int,
                     qk_rope_head_dim: int) -> Dict[str, Tuple[int, int]]:
        """Declare the extra cache fields `{name: (r, c)}` (not `latent`)."""

    def initialize(self, block_size: int, kv_lora_rank: int,
                   qk_rope_head_dim: int, kv_cache_dtype: Any,
                   q_data_type: Any, intermediate_dtype: Any = "bf16") -> None:
        """vortex_torch's `vFlowMLA.initialize`: `cache_meta_info` with the
        latent (KV dtype) and the fields (intermediate dtype), and
        `token_ratio` relative to one latent block."""
        self.block_size = block_size
        self.kv_lora_rank = kv_lora_rank
        self.qk_rope_head_dim = qk_rope_head_dim
        self.latent_dim = self.head_dim = kv_lora_rank + qk_rope_head_dim
        self.kv_cache_dtype = resolve_dtype(kv_cache_dtype)
        self.q_data_type = resolve_dtype(q_data_type)
        self.intermediate_dtype = resolve_dtype(intermediate_dtype)
        raw = dict(self.create_cache(block_size, kv_lora_rank,
                                     qk_rope_head_dim))
        assert "latent" not in raw, "create_cache must not declare 'latent' key"
        for key in ("k", "v", "kv_c", "k_pe"):
            assert key not in raw, ("MLA flows use the single fused 'latent' "
                                    f"field; create_cache declared {key!r}")
        raw["latent"] = (block_size, self.latent_dim)
        total = 0
        self.cache_meta_info = {}
        for key, (r, c) in raw.items():
            dtype = (self.kv_cache_dtype if key == "latent"
                     else self.intermediate_dtype)
            total += r * c * ELEMENT_BYTES[dtype]
            self.cache_meta_info[key] = ((r, c), dtype)
        self.token_ratio = total / (block_size * self.latent_dim *
                                    ELEMENT_BYTES[self.kv_cache_dtype])


def mla_dims(flow: Any, config: Any) -> Tuple[int, int]:
    """(kv_lora_rank, rope_dim) of `config` for the MLA flow `flow`; a
    ValueError naming `config` when it has none."""
    rank, rope = _knob(config, "kv_lora_rank"), _knob(config, "rope_dim")
    if not rank or not rope:
        raise ValueError(
            f"config: {type(flow).__name__} is an MLA flow (vFlowMLA); its "
            f"config must set kv_lora_rank and rope_dim (e.g. "
            f"vortex.FlowConfig.mla(512, 64, group_size=16)), got "
            f"kv_lora_rank = {rank}, rope_dim = {rope}")
    return int(rank), int(rope)


def declare_cache(flow: Any, config: Any) -> Dict[str, Tuple[int, int]]:
    """`flow.create_cache` called with the arguments of its kind: (block
    size, kv_lora_rank, rope_dim) for an MLA flow, (block size, head dim)
    otherwise; `config` is a FlowConfig or a config dict."""
    block = int(_knob(config, "block_size"))
    if getattr(flow, "_vortex_is_mla", False):
        return dict(flow.create_cache(block, *mla_dims(flow, config)))
    return dict(flow.create_cache(block, int(_knob(config, "head_dim"))))
