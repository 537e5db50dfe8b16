"""Learned constants of a flow (vortex_torch `Parameter`).

    class LearnedQuery(vFlow):
        def __init__(self):
            super().__init__()
            self.w = Parameter(torch.zeros(1, 128))      # [r, c], one layer
            self.u = Parameter(torch.zeros(32, 1, 128))  # [L, r, c], per layer
            self.mul, self.gemm = Multiply(), GeMM()
        def forward_indexer(self, q, o, cache, ctx):
            qw = self.mul(self.mean(q, ctx=ctx), self.w, ctx=ctx)
            ...

A parameter is a batch-shared `[1, r, c]` value in the PARAMETER format:
every row and position sees the same value. It is read-only in both steps.
Traced, it becomes a flow parameter (`params(w = [r, c])`), passed at run time
like a field (`vortex.load(path, params=flow.parameters())`); in eager mode it
is its torch tensor, so a flow's weights train with autograd
(`vortex.semantics.eager`). Its name is the flow attribute holding it unless
given.

Per-layer weights, as in vortex_torch: `Parameter(W[L, r, c], layer_lookup)`
holds every layer's value; a step reads the slice of the layer it runs for,
`W[layer_lookup[layer]]` (identity without a lookup), the layer being an
argument of each call (`layer=`, docs/python.md "Per-layer parameters"). The
compiled flow is the same for every layer: it sees one `[r, c]` value. A
value of rank 4 (`[L, H, d, r]`) is the weight of an op that takes weights
(`LearnedQuery`, `FactorScore`), not a flow operand.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from ..frontend.errors import FlowArgumentError, format_message
from ..frontend.source import user_site
from .op import _enclosing_flow

__all__ = ["Parameter", "Int4Packed", "check_layer", "lookup_rows"]


def _bad(message: str) -> FlowArgumentError:
    """A Parameter argument error at the user's line, naming the flow."""
    site = user_site()
    flow = _enclosing_flow()
    return FlowArgumentError(
        format_message(site, flow, "Parameter", message), flow=flow,
        op="Parameter", filename=site.filename if site else None,
        lineno=site.lineno if site else None)


def lookup_rows(lookup: Any, layers: int, what: str = "layer_lookup"
                ) -> Optional[List[int]]:
    """`lookup` (None, a 1-D int tensor or a sequence of ints: global layer
    id -> row of the `[L, ...]` value) as a host list, each row checked to
    be in [0, layers). Raises ValueError naming `what`."""
    if lookup is None:
        return None
    if hasattr(lookup, "tolist") and hasattr(lookup, "dim"):
        if lookup.dim() != 1 or lookup.dtype.is_floating_point or \
                lookup.dtype.is_complex:
            raise ValueError(f"{what}: expected a 1-D integer tensor, got "
                             f"{tuple(lookup.shape)} {lookup.dtype}")
        lookup = lookup.tolist()
    if isinstance(lookup, (str, bytes)) or not hasattr(lookup, "__iter__"):
        raise ValueError(f"{what}: expected a 1-D int tensor or a sequence "
                         f"of ints, got {type(lookup).__name__}")
    rows = list(lookup)
    if not rows:
        raise ValueError(f"{what}: empty")
    for i, row in enumerate(rows):
        if isinstance(row, bool) or not isinstance(row, int):
            raise ValueError(f"{what}[{i}]: expected an int, got "
                             f"{type(row).__name__}")
        if not 0 <= row < layers:
            raise ValueError(f"{what}[{i}] = {row} is outside [0, {layers}) "
                             f"(the value has {layers} layers)")
    return rows


def check_layer(layer: Any, rows: Optional[List[int]], layers: int) -> int:
    """The row of the `[L, ...]` value for global layer `layer`, through
    the lookup `rows` (identity when None). Raises ValueError naming
    `layer`."""
    count = layers if rows is None else len(rows)
    if isinstance(layer, bool) or not isinstance(layer, int):
        raise ValueError(f"layer: expected an int in [0, {count}), got "
                         f"{type(layer).__name__}")
    if not 0 <= layer < count:
        raise ValueError(f"layer: {layer} is outside [0, {count})")
    return layer if rows is None else rows[layer]


class Parameter:
    """A learned weight of a flow: `[r, c]` or `[1, r, c]` (one value),
    `[L, r, c]` with an optional lookup (one per layer), or `[L, ...]`
    for an op's weights (rank 4)."""

    def __init__(self, data: Any, layer_lookup: Any = None,
                 name: Optional[str] = None) -> None:
        # vortex's earlier form Parameter(data, name).
        if isinstance(layer_lookup, str) and name is None:
            layer_lookup, name = None, layer_lookup
        if not (name is None or isinstance(name, str)):
            raise _bad(f"name: expected a str, got {type(name).__name__}")
        shape = getattr(data, "shape", None)
        if shape is None or not hasattr(data, "reshape"):
            raise _bad(f"data: expected a tensor, got {type(data).__name__}")
        shape = tuple(int(d) for d in shape)
        if not 2 <= len(shape) <= 4 or min(shape) < 1:
            raise _bad(f"data: expected a tensor of shape [r, c], [1, r, c], "
                       f"[L, r, c] or [L, H, d, r], got {list(shape)}")
        layers = shape[0] if len(shape) >= 3 else 1
        try:
            rows = lookup_rows(layer_lookup, layers)
        except ValueError as err:
            raise _bad(str(err)) from None
        self.data = data
        self.name = name
        self._rows = rows
        #: The number of layers selected per call; None for one value.
        self.layers: Optional[int] = None
        if len(shape) == 4 or (len(shape) == 3 and
                               (layers > 1 or rows is not None)):
            self.layers = layers

    @property
    def per_layer(self) -> bool:
        return self.layers is not None

    @property
    def operand(self) -> bool:
        """Whether a flow op may take it (rank 4 values are op weights)."""
        return len(self.data.shape) <= 3

    @property
    def lookup(self) -> Optional[List[int]]:
        """Global layer id -> row (None: the identity)."""
        return None if self._rows is None else list(self._rows)

    @property
    def rows_cols(self) -> Tuple[int, int]:
        shape = tuple(int(d) for d in self.data.shape)
        return shape[-2], shape[-1]

    def row(self, layer: Optional[int]) -> int:
        """The row of the value that `layer` reads (0 for one value)."""
        if self.layers is None:
            return 0
        if layer is None:
            raise ValueError(f"layer: required: parameter "
                             f"{self.name or '?'} holds {self.layers} "
                             "layers (pass layer=)")
        return check_layer(layer, self._rows, self.layers)

    def select(self, layer: Optional[int] = None):
        """The value `layer` reads, without the layer axis (a view: the
        gather is differentiable)."""
        if self.layers is None:
            return self.data.reshape(self.rows_cols)
        return self.data[self.row(layer)]

    def value(self, layer: Optional[int] = None):
        """The operand value `layer` reads, as `[1, r, c]`."""
        r, c = self.rows_cols
        return self.select(layer).reshape(1, r, c)

    def __repr__(self) -> str:
        shape = list(self.data.shape)
        return f"Parameter({self.name or '?'}, {shape})"


class Int4Packed:
    """vortex_torch's mark of a packed int4 tensor (Gen-3 KV): the bytes'
    scale tensor, whether the scale is per channel (K) or per token (V),
    and the nibble bias. A flow needs no mark: `kv_dtype="int4"` in its
    config makes k and v such tensors, with the scales `k_int4_scale`
    (per channel) and `v_int4_scale` (per token) (docs/contract.md "INT4
    KV", `vortex.int4`). Only the bias vortex_torch uses, 7, exists."""

    def __init__(self, scale_tensor_id: Any = None, per_channel: bool = True,
                 bias: int = 7) -> None:
        if isinstance(bias, bool) or bias != 7:
            raise ValueError(f"Int4Packed: bias must be 7 (15 symmetric "
                             f"levels stored as nibble - 7), got {bias!r}")
        if not isinstance(per_channel, bool):
            raise ValueError(f"Int4Packed: per_channel must be a bool, got "
                             f"{per_channel!r}")
        self.scale_tensor_id = scale_tensor_id
        self.per_channel = per_channel
        self.bias = 7

    def __repr__(self) -> str:
        return (f"Int4Packed({self.scale_tensor_id!r}, "
                f"per_channel={self.per_channel}, bias={self.bias})")
