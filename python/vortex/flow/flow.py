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
from typing import Any, Dict, Tuple

from ..abs.parameter import Parameter
from ..frontend.config import ELEMENT_BYTES, resolve_dtype
from ..frontend.errors import UnsupportedOpError, format_message
from ..frontend.source import definition_site

__all__ = ["vFlow", "vFlowMLA", "flow_name"]


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
        FactorScore) adds the parameters it traces to, computed from its
        current weights and named after its attribute (`<attr>_fold`); a
        rank-4 Parameter is such an op's weight, not a flow operand."""
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


class vFlowMLA(vFlow):
    """vortex_torch's MLA flow base (one latent field). Flows may subclass
    it, but vortex cannot trace them: building one raises."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        site = definition_site(type(self))
        name = flow_name(type(self))
        raise UnsupportedOpError(
            format_message(site, name, "vFlowMLA",
                           "MLA flows (latent KV, absorbed queries) are not "
                           "supported by the vortex dialect"),
            flow=name, op="vFlowMLA",
            filename=site.filename if site else None,
            lineno=site.lineno if site else None)
