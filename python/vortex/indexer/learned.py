"""Learned ops with per-layer weights: `LearnedQuery` and `FactorScore`
(vortex_torch's learned flows; semantics in
../shared/docs/vortex_torch_reference.md, the indexer op table).

    LearnedQuery(Wq, Wk, layer_lookup=None, scaling=1.0):  V = op(q)
        V[b] = scaling * sum_h Wk[l, h] (Wq[l, h]^T q[b, h])    [B, 1, d]
    FactorScore(Wq, H, m, r):  score = op(q, descriptors)
        score(s) = sum_h max_m < Wq[l, h]^T q[b, h], g[s, h, m] >   [S, 1, 1]

with weights `[L, H, d, r]`, `l = layer_lookup[layer]` the row of the
layer a call runs for. Neither is a dialect op of its own: the tracer
writes each as dialect ops with weights the op derives from its own
(docs/python.md, "Learned ops"), so both back ends compile them:

    LearnedQuery: Reshape q to [B, 1, H*d]; GeMM with the per-layer
        fold F[l] = scaling * [Wk[l,h] Wq[l,h]^T]_h, [d, H*d] -> [B, d, 1];
        Reshape to [B, 1, d]. Without weights: Sum over the heads, times
        scaling.
    FactorScore: the grouped GeMM (`groups = H`) of q with the per-layer
        P[l] [H*m*r, d] (P[(h*m+j)*r+i, e] = Wq[l, h, e, i]: Wq[l, h]^T
        once per landmark) -> u [B, H*m*r, 1], each head's rows against
        its own q_h; Reshape [B, H*m, r]; Multiply with the descriptors
        and Sum over r -> [S, H*m, 1], <u_h, g[s, h, j]>; Reshape
        [S, H, m]; Max over m; Sum over h. Only a head's own landmarks
        meet its u_h: no head-pair cross terms.

The derived weights are flow parameters (`vFlow.parameters()` computes
them from the op's current weights). Eager mode does not use them: it runs
each op's own formula on the weights (vortex.semantics.eager), so weights
train there and the compiled flow, bound with `flow.parameters()`, agrees.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from ..abs.parameter import Parameter, check_layer, lookup_rows
from ..environment import import_torch
from ..frontend.oplib import TracedOp
from ..frontend.types import BATCHED
from .elementwise import Add_Mul, Multiply
from .layout import Reshape
from .matmul import GeMM
from .reduce import Max, Sum

__all__ = ["FactorScore", "LearnedQuery"]


class _Learned(TracedOp):
    """Per-layer `[L, H, d, r]` weights and their lookup."""

    def _weights(self, name: str, w: Any, layout: str = "[L, H, d, r]"):
        """`w` (a tensor or a Parameter) as a rank-4 tensor; a Parameter's
        lookup is taken when the op has none."""
        if isinstance(w, Parameter):
            if self._rows is None:
                self._rows = w.lookup
            w = w.data
        shape = getattr(w, "shape", None)
        if shape is None or len(shape) != 4 or min(shape) < 1:
            raise self._bad_argument(
                f"{name} must be a {layout} tensor or Parameter, got "
                f"{list(shape) if shape is not None else type(w).__name__}")
        return w

    def _lookup(self, lookup: Any, layers: int) -> None:
        try:
            rows = lookup_rows(lookup, layers)
        except ValueError as err:
            raise self._bad_argument(str(err)) from None
        if rows is not None:
            self._rows = rows
        elif self._rows is not None:
            try:
                lookup_rows(self._rows, layers, "the Parameter's lookup")
            except ValueError as err:
                raise self._bad_argument(str(err)) from None

    def row(self, layer: Optional[int]) -> int:
        """The weights' row for a call for `layer` (ValueError naming
        `layer`); a single `[1, ...]` weight needs no layer."""
        layers = int(self.layers)
        if layer is None:
            if layers == 1 and self._rows is None:
                return 0
            raise ValueError(f"layer: required: {type(self).__name__} has "
                             f"per-layer weights ({layers} layers)")
        return check_layer(layer, self._rows, layers)

    def _derived(self, data, lookup=True) -> Parameter:
        return Parameter(data, self._rows if lookup else None)

    def _set_derived(self, attr: str) -> Dict[str, Parameter]:
        """{name: Parameter} of the derived weights, named after the flow
        attribute holding the op, recomputed from the current weights."""
        raise NotImplementedError

    def derived_parameters(self, attr: str) -> Dict[str, Parameter]:
        torch = import_torch()
        with torch.no_grad():
            return self._set_derived(attr)


class LearnedQuery(_Learned):
    """`V = op(q, ctx=ctx)`: the learned per-layer query projection (see
    the module docstring)."""

    mnemonic = "learned_query"

    def __init__(self, Wq: Any = None, Wk: Any = None,
                 layer_lookup: Any = None, scaling: float = 1.0) -> None:
        super().__init__()
        self._rows = None
        self.scaling = self._float_arg("scaling", scaling)
        if (Wq is None) != (Wk is None):
            raise self._bad_argument("Wq and Wk must both be weights or both "
                                     "None (V = sum_h q_h)")
        self.Wq = self.Wk = None
        self.layers = 1
        if Wq is not None:
            self.Wq = self._weights("Wq", Wq)
            self.Wk = self._weights("Wk", Wk)
            if tuple(self.Wk.shape) != tuple(self.Wq.shape):
                raise self._bad_argument(
                    f"Wk has shape {list(self.Wk.shape)}, Wq "
                    f"{list(self.Wq.shape)}: they must match")
            self.layers = int(self.Wq.shape[0])
        self._lookup(layer_lookup, self.layers)
        self._fold: Optional[Parameter] = None
        self._sum, self._scale = Sum(dim=1), Add_Mul(0.0, self.scaling)
        if self.Wq is not None:
            _, H, d, _ = (int(x) for x in self.Wq.shape)
            self._flat, self._gemm = Reshape(-1, 1, H * d), GeMM()
            self._unflat = Reshape(-1, 1, d)
            self.derived_parameters("")

    def _set_derived(self, attr: str) -> Dict[str, Parameter]:
        if self.Wq is None:
            return {}
        torch = import_torch()
        L, H, d, _ = (int(x) for x in self.Wq.shape)
        fold = torch.einsum("lhjr,lher->ljhe", self.Wk.detach().float(),
                            self.Wq.detach().float())
        data = fold.reshape(L, d, H * d) * self.scaling
        if self._fold is None:
            self._fold = self._derived(data)
        self._fold.data = data
        return {f"{attr}_fold": self._fold}

    def trace(self, q, *, ctx):
        q = ctx.value(q, "q")
        if self.Wq is None:
            v = self._sum.compute(ctx, q)
            return v if self.scaling == 1.0 else self._scale.compute(ctx, v)
        _, H, d, _ = (int(x) for x in self.Wq.shape)
        if (q.shape[1], q.shape[2]) != (H, d):
            ctx.error(f"q is [B, {q.shape[1]}, {q.shape[2]}], the weights "
                      f"[L, H, d, r] need [B, {H}, {d}]")
        if q._format != BATCHED:
            ctx.error("q must be batched (one query per row)")
        w = ctx.value(self._fold, "Wq")
        v = self._gemm.compute(ctx, self._flat.compute(ctx, q), w)
        return self._unflat.compute(ctx, v)


class FactorScore(_Learned):
    """`score = op(q, descriptors, ctx=ctx)`: the learned factorized block
    score (see the module docstring)."""

    mnemonic = "factor_score"

    def __init__(self, Wq: Any, H: int, m: int, r: int) -> None:
        super().__init__()
        self._rows = None
        self.H = self._int_arg("H", H, minimum=1)
        self.m = self._int_arg("m", m, minimum=1)
        self.r = self._int_arg("r", r, minimum=1)
        self.Wq = self._weights("Wq", Wq)
        L, h, _, r_ = (int(x) for x in self.Wq.shape)
        if (h, r_) != (self.H, self.r):
            raise self._bad_argument(
                f"Wq has shape {list(self.Wq.shape)}: expected [L, H={self.H},"
                f" d, r={self.r}]")
        self.layers = L
        self._lookup(None, L)
        self._params: Dict[str, Parameter] = {}
        d = int(self.Wq.shape[2])
        self._proj, self._dot = GeMM.grouped(self.H), Multiply()
        self._ssum = Sum(dim=2)
        self._u = Reshape(-1, self.H * self.m, self.r)
        self._hm = Reshape(-1, self.H, self.m)
        self._max, self._heads = Max(dim=2), Sum(dim=1)
        self._d = d
        self.derived_parameters("")

    def _set_derived(self, attr: str) -> Dict[str, Parameter]:
        L, H, d, r = (int(x) for x in self.Wq.shape)
        w = self.Wq.detach().float()
        # Wq[l, h]^T [r, d] once per landmark: row (h*m + j)*r + i.
        proj = w.permute(0, 1, 3, 2)[:, :, None].expand(L, H, self.m, r, d)
        data = proj.reshape(L, H * self.m * r, d).contiguous()
        p = self._params.get("proj")
        if p is None:
            p = self._params["proj"] = self._derived(data)
        p.data = data
        return {f"{attr}_proj": p}

    def trace(self, q, descriptors, *, ctx):
        q = ctx.value(q, "q")
        g = ctx.value(descriptors, "descriptors")
        H, m, r, d = self.H, self.m, self.r, self._d
        if (q.shape[1], q.shape[2]) != (H, d):
            ctx.error(f"q is [B, {q.shape[1]}, {q.shape[2]}], Wq [L, H, d, r]"
                      f" needs [B, {H}, {d}]")
        if q._format != BATCHED:
            ctx.error("q must be batched (one query per row)")
        if (g.shape[1], g.shape[2]) != (H * m, r):
            ctx.error(f"descriptors are [S, {g.shape[1]}, {g.shape[2]}], "
                      f"expected [S, H*m = {H * m}, r = {r}]")
        p = {k: ctx.value(v, k) for k, v in self._params.items()}
        u = self._proj.compute(ctx, q, p["proj"])              # [B, H*m*r, 1]
        u = self._u.compute(ctx, u)                             # [B, H*m, r]
        s = self._ssum.compute(ctx, self._dot.compute(ctx, u, g))  # [S, H*m, 1]
        s = self._max.compute(ctx, self._hm.compute(ctx, s))    # [S, H, 1]
        return self._heads.compute(ctx, s)                      # [S, 1, 1]
