"""Learned constants of a flow (vortex_torch `Parameter`).

    class LearnedQuery(vFlow):
        def __init__(self):
            super().__init__()
            self.w = Parameter(torch.zeros(1, 128))      # [r, c], one layer
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
given. vortex_torch keeps `[L, ...]` weights for all layers and gathers the
current one (`Parameter(W[L, r, c], lookup)`); a vortex flow holds one
layer's `[r, c]`, and the per-layer form raises UnsupportedOpError.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

from .op import UnsupportedOp, unsupported

__all__ = ["Parameter", "Int4Packed"]


class Parameter:
    """A learned `[r, c]` (or `[1, r, c]`) weight of a flow."""

    def __init__(self, data: Any, name: Optional[str] = None) -> None:
        shape = tuple(int(d) for d in getattr(data, "shape", ()))
        if (len(shape) == 3 and shape[0] > 1) or \
                not (name is None or isinstance(name, str)):
            raise unsupported("Parameter", (
                "per-layer weights (vortex_torch's Parameter(W[L, r, c], "
                "lookup), one layer selected per call) are not supported: "
                "give the flow one layer's [r, c] and bind that layer's "
                "values when loading it (vortex.load(path, params=...))"))
        if len(shape) == 3 and shape[0] == 1:
            shape = shape[1:]
        if len(shape) != 2 or min(shape) < 1:
            raise ValueError(f"Parameter: expected a tensor of shape [r, c] "
                             f"or [1, r, c], got {list(getattr(data, 'shape', []))}")
        self.data = data
        self.name = name

    @property
    def rows_cols(self) -> Tuple[int, int]:
        shape = tuple(int(d) for d in self.data.shape)
        return shape[-2], shape[-1]

    def value(self):
        """The data as `[1, r, c]`."""
        r, c = self.rows_cols
        return self.data.reshape(1, r, c)

    def __repr__(self) -> str:
        r, c = self.rows_cols
        return f"Parameter({self.name or '?'}, [{r}, {c}])"


class Int4Packed(UnsupportedOp):
    reason = "INT4 KV caches are not supported"
