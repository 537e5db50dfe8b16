"""`FlowConfig`: the knobs a flow is traced and compiled for.

It is the `#vortex.config<...>` attribute of the traced `vortex.flow` plus
the query's element type. The defaults are those of
examples/block_sparse_attention.mlir (vortex_torch's reference RULER knobs
at head_dim 128, group_size 8). The config is only rendered here; the
dialect's attribute verifier (powers of two, block_size <= page_size, ...)
checks it when the traced text goes through vortex-opt.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Union

__all__ = ["FlowConfig", "resolve_dtype", "ELEMENT_BYTES", "float_literal"]

# vortex_torch's dtype spellings (utils.DTYPE_STR_TO_TORCH and its aliases,
# torch dtypes by their str()) -> MLIR element types.
_DTYPES = {
    "bf16": "bf16", "bfloat16": "bf16",
    "f16": "f16", "fp16": "f16", "float16": "f16", "half": "f16",
    "f32": "f32", "fp32": "f32", "float32": "f32", "float": "f32",
    "f8e4m3fn": "f8E4M3FN", "fp8_e4m3": "f8E4M3FN", "fp8_e4m3fn": "f8E4M3FN",
    "float8_e4m3fn": "f8E4M3FN",
    "f8e5m2": "f8E5M2", "fp8_e5m2": "f8E5M2", "float8_e5m2": "f8E5M2",
    "auto": "bf16",
    # vortex_torch Gen-3's packed INT4 pool (kv_dtype only): bytes of two
    # channels, dequantized with their scales where k and v are read.
    "int4": "i4", "i4": "i4",
}

ELEMENT_BYTES = {"bf16": 2, "f16": 2, "f32": 4, "f8E4M3FN": 1, "f8E5M2": 1,
                 "i32": 4, "i4": 0.5}


def resolve_dtype(value: Any, default: str = "bf16") -> str:
    """The MLIR element type of a dtype given as vortex_torch accepts it: a
    torch dtype, a string ("bfloat16", "bf16", "fp8_e4m3", "auto", ...), or
    an MLIR spelling ("bf16", "f8E5M2")."""
    if value is None:
        return default
    key = str(value)
    if key.startswith("torch."):
        key = key[len("torch."):]
    found = _DTYPES.get(key.lower())
    if found is None:
        raise ValueError(f"unsupported dtype {value!r}: expected one of "
                         f"{sorted(set(_DTYPES))} or a torch dtype")
    return found


def float_literal(x: float) -> str:
    """A decimal MLIR float literal of `x` that parses back to the same
    double (MLIR requires a '.' in a decimal float)."""
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"{x} has no decimal MLIR literal")
    s = repr(x)
    if "e" in s and "." not in s:
        mant, exp = s.split("e")
        s = f"{mant}.0e{exp}"
    elif "." not in s:
        s += ".0"
    return s


def _int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            int(value) != value:
        raise ValueError(f"FlowConfig.{name} must be an integer, got "
                         f"{value!r}")
    return int(value)


@dataclass(frozen=True)
class FlowConfig:
    """Knobs of one traced flow (see the module docstring).

    `q_dtype` is the query's element type (None: the KV dtype), the only
    knob that is not part of `#vortex.config` (the flow's `q` argument
    carries it)."""

    block_size: int = 16
    page_size: int = 16
    head_dim: int = 128
    group_size: int = 8
    topk_val: int = 29
    topk_ratio: float = 0.0625
    reserved_bos: int = 1
    reserved_eos: int = 2
    intermediate_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    q_dtype: Optional[str] = None
    # Query tokens per row (multi-token steps: q = [rows, T x G, D],
    # token-major; docs/contract.md "Multi-token queries"). Like q_dtype,
    # not part of #vortex.config: q's type carries it.
    query_tokens: int = 1
    # An MLA flow (vFlowMLA): the latent's widths, head_dim = kv_lora_rank +
    # rope_dim; 0 and 0 for any other flow. `FlowConfig.mla` sets all three.
    kv_lora_rank: int = 0
    rope_dim: int = 0

    def __post_init__(self) -> None:
        for f in ("block_size", "page_size", "head_dim", "group_size",
                  "topk_val", "reserved_bos", "reserved_eos",
                  "kv_lora_rank", "rope_dim"):
            object.__setattr__(self, f, _int(f, getattr(self, f)))
        if self.kv_lora_rank or self.rope_dim:
            if self.kv_lora_rank <= 0 or self.rope_dim <= 0:
                raise ValueError(
                    f"FlowConfig.kv_lora_rank and rope_dim (an MLA flow) must "
                    f"both be positive, got {self.kv_lora_rank} and "
                    f"{self.rope_dim}")
            if self.kv_lora_rank + self.rope_dim != self.head_dim:
                raise ValueError(
                    f"FlowConfig.head_dim must be kv_lora_rank + rope_dim "
                    f"({self.kv_lora_rank} + {self.rope_dim}) for an MLA "
                    f"flow, got {self.head_dim}")
        tokens = self.query_tokens
        if isinstance(tokens, bool) or not isinstance(tokens, int) or \
                not 1 <= tokens <= 64:
            raise ValueError(f"FlowConfig.query_tokens must be an integer in "
                             f"[1, 64], got {tokens!r}")
        ratio = self.topk_ratio
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) \
                or not math.isfinite(ratio):
            raise ValueError(f"FlowConfig.topk_ratio must be a finite "
                             f"number, got {ratio!r}")
        object.__setattr__(self, "topk_ratio", float(ratio))
        object.__setattr__(self, "intermediate_dtype",
                           resolve_dtype(self.intermediate_dtype))
        object.__setattr__(self, "kv_dtype", resolve_dtype(self.kv_dtype))
        if self.q_dtype is not None:
            object.__setattr__(self, "q_dtype", resolve_dtype(self.q_dtype))
        if "i4" in (self.intermediate_dtype, self.q_dtype):
            raise ValueError("int4 is a kv_dtype only (the packed k/v pool); "
                             "intermediate_dtype and q_dtype are floats")
        if self.is_int4:
            if self.head_dim % 2:
                raise ValueError(f"FlowConfig.head_dim must be even for "
                                 f"kv_dtype int4 (two channels a byte), got "
                                 f"{self.head_dim}")
            if self.is_mla:
                raise ValueError("FlowConfig.kv_dtype int4 is not supported "
                                 "for MLA flows")

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank != 0

    @classmethod
    def mla(cls, kv_lora_rank: int = 512, qk_rope_head_dim: int = 64,
            **knobs: Any) -> "FlowConfig":
        """A config for an MLA flow (vFlowMLA): head_dim is the latent's
        width kv_lora_rank + qk_rope_head_dim (DeepSeek-V2/V3 and
        GLM-4.7-Flash: 512 + 64) and group_size the number of query heads
        (one latent KV head); the other knobs by keyword."""
        return cls(head_dim=_int("kv_lora_rank", kv_lora_rank) +
                   _int("rope_dim", qk_rope_head_dim),
                   kv_lora_rank=kv_lora_rank, rope_dim=qk_rope_head_dim,
                   **knobs)

    @property
    def is_int4(self) -> bool:
        """A packed INT4 pool (vortex_torch Gen-3; docs/contract.md "INT4
        KV")."""
        return self.kv_dtype == "i4"

    @property
    def kv_value_dtype(self) -> str:
        """The element type k and v are read as: f32 (dequantized) for an
        int4 pool, else kv_dtype."""
        return "f32" if self.is_int4 else self.kv_dtype

    @property
    def query_dtype(self) -> str:
        return self.q_dtype or ("bf16" if self.is_int4 else self.kv_dtype)

    def replace(self, **changes: Any) -> "FlowConfig":
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_initialize(cls, block_size: int, head_dim: int,
                        kv_cache_dtype: Any = "bf16", q_data_type: Any = None,
                        intermediate_dtype: Any = "bf16",
                        **knobs: Any) -> "FlowConfig":
        """A config from vortex_torch's `vFlow.initialize(block_size,
        head_dim, kv_cache_dtype, q_data_type, intermediate_dtype)`
        arguments; the other knobs (group_size, topk_val, ...) by keyword.
        `page_size` defaults to `block_size`."""
        knobs.setdefault("page_size", block_size)
        return cls(block_size=block_size, head_dim=head_dim,
                   kv_dtype=kv_cache_dtype, q_dtype=q_data_type,
                   intermediate_dtype=intermediate_dtype, **knobs)

    @classmethod
    def coerce(cls, config: Union["FlowConfig", Mapping[str, Any], None],
               **overrides: Any) -> "FlowConfig":
        """A FlowConfig from a FlowConfig, a dict of its fields or None
        (the defaults), with `overrides` applied."""
        if config is None:
            base = cls()
        elif isinstance(config, cls):
            base = config
        elif isinstance(config, Mapping):
            unknown = set(config) - {f.name for f in dataclasses.fields(cls)}
            if unknown:
                raise ValueError(f"unknown FlowConfig field(s) "
                                 f"{sorted(unknown)}")
            base = cls(**config)
        else:
            raise TypeError(f"config: expected a vortex.FlowConfig, a dict "
                            f"or None, got {type(config).__name__}")
        return base.replace(**overrides) if overrides else base

    def to_mlir(self) -> str:
        """The `#vortex.config<...>` attribute."""
        return ("#vortex.config<"
                f"block_size = {self.block_size}, "
                f"page_size = {self.page_size}, "
                f"head_dim = {self.head_dim}, "
                f"group_size = {self.group_size}, "
                f"topk_val = {self.topk_val}, "
                f"topk_ratio = {float_literal(self.topk_ratio)} : f64, "
                f"reserved_bos = {self.reserved_bos}, "
                f"reserved_eos = {self.reserved_eos}, "
                f"intermediate_dtype = {self.intermediate_dtype}, "
                f"kv_dtype = {self.kv_dtype}"
                + (f", kv_lora_rank = {self.kv_lora_rank}, "
                   f"rope_dim = {self.rope_dim}" if self.is_mla else "")
                + ">")
