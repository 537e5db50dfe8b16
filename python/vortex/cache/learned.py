"""`LearnedDescriptor`: vortex_torch's learned factorized block descriptor
(cache side; semantics in ../shared/docs/vortex_torch_reference.md).

    LearnedDescriptor(Wt, Wk, H, m, r):  op(latent, descriptors, loc=loc,
                                            ctx=ctx)
        g[h*m + j, i] = sum_s Wt[l, h, s, j] (x[s] Wk[l, h])[i]  [H*m, r]

for each completed block x `[bs, d]`, with `Wt` `[L, H, bs, m]` (token
mixing), `Wk` `[L, H, d, r]` (channel compression) and `l` the row of the
layer the call runs for (the Parameters' lookup).

Like LearnedQuery and FactorScore it is no dialect op: the tracer writes it
as existing cache ops with weights derived from its own (docs/python.md,
"Learned ops"), the channel compression first so that every contraction
stays as short as the ones the shipped flows have:

    GeMM(P[l], x)             -> U [bs, H*m*r], U[s, (h, j, i)] = (x[s] Wk[l, h])[i]
                                 (P[l] [H*m*r, d]: Wk[l, h]^T once per landmark j;
                                 a parameter is GeMM's x, broadcast)
    Multiply by T[l]          -> U[s, (h, j, i)] * bs Wt[l, h, s, j]
                                 (T[l] [bs, H*m*r])
    Mean over the tokens      -> [1, H*m*r] (the bs of T cancels: a power of
                                 two, exact)
    Reshape                   -> [H*m, r], written to `descriptors`

The contractions are over d (GeMM) and bs (Mean), and the derived weights
hold H*m*r*(d + bs) values; folding both weights into one [H*m*r, bs*d]
matrix would contract bs*d at once and hold bs times more. The cost: the
channel compression runs m times (once per landmark).
"""

from __future__ import annotations

from typing import Any, Dict

from ..abs.parameter import Parameter
from ..environment import import_torch
from ..frontend.oplib import CacheUnary
from ..indexer.learned import _Learned
from ..indexer.elementwise import Multiply
from ..indexer.layout import Reshape
from ..indexer.matmul import GeMM
from .reduce import Mean

__all__ = ["LearnedDescriptor"]


class LearnedDescriptor(CacheUnary, _Learned):
    """`op(latent, descriptors, loc=loc, ctx=ctx)`: each completed block's
    learned `[H*m, r]` descriptor (see the module docstring)."""

    mnemonic = "learned_descriptor"

    def __init__(self, Wt: Any, Wk: Any, H: int, m: int, r: int) -> None:
        super().__init__()
        self._rows = None
        self.H = self._int_arg("H", H, minimum=1)
        self.m = self._int_arg("m", m, minimum=1)
        self.r = self._int_arg("r", r, minimum=1)
        self.Wt = self._weights("Wt", Wt, "[L, H, bs, m]")
        rows_t = self._rows
        self.Wk = self._weights("Wk", Wk, "[L, H, d, r]")
        L, h, self.bs, m_ = (int(x) for x in self.Wt.shape)
        if (h, m_) != (self.H, self.m):
            raise self._bad_argument(
                f"Wt has shape {list(self.Wt.shape)}: expected [L, H={self.H}"
                f", bs, m={self.m}]")
        Lk, hk, self.d, r_ = (int(x) for x in self.Wk.shape)
        if (Lk, hk, r_) != (L, self.H, self.r):
            raise self._bad_argument(
                f"Wk has shape {list(self.Wk.shape)}: expected [L={L}, "
                f"H={self.H}, d, r={self.r}]")
        if isinstance(Wk, Parameter) and rows_t is not None and \
                Wk.lookup is not None and list(Wk.lookup) != list(rows_t):
            raise self._bad_argument(
                f"Wk's layer lookup {list(Wk.lookup)} differs from Wt's "
                f"{list(rows_t)}")
        self.layers = L
        self._lookup(None, L)
        self._params: Dict[str, Parameter] = {}
        self._gemm, self._mix = GeMM(), Multiply()
        self._mean = Mean(dim=1)
        self._out = Reshape(-1, self.H * self.m, self.r)
        self.derived_parameters("")

    def _set_derived(self, attr: str) -> Dict[str, Parameter]:
        L, H, m, r, d, bs = (self.layers, self.H, self.m, self.r, self.d,
                             self.bs)
        wk = self.Wk.detach().float()                    # [L, H, d, r]
        wt = self.Wt.detach().float()                    # [L, H, bs, m]
        proj = wk.permute(0, 1, 3, 2)[:, :, None].expand(L, H, m, r, d)
        mix = (bs * wt).permute(0, 2, 1, 3)[..., None].expand(
            L, bs, H, m, r)
        values = {"proj": proj.reshape(L, H * m * r, d),
                  "mix": mix.reshape(L, bs, H * m * r)}
        for key, data in values.items():
            p = self._params.get(key)
            if p is None:
                p = self._params[key] = self._derived(data.contiguous())
            p.data = data.contiguous()
        return {f"{attr}_{k}": p for k, p in self._params.items()}

    def trace(self, latent, descriptors=None, loc=None, *, ctx):
        x = ctx.value(latent, "latent")
        if (x.shape[1], x.shape[2]) != (self.bs, self.d):
            ctx.error(f"latent is [S, {x.shape[1]}, {x.shape[2]}], Wt "
                      f"[L, H, bs, m] and Wk [L, H, d, r] need [S, "
                      f"bs = {self.bs}, d = {self.d}]")
        p = {k: ctx.value(v, k) for k, v in self._params.items()}
        u = self._gemm.compute(ctx, p["proj"], x)          # [S, bs, H*m*r]
        u = self._mean.compute(ctx, self._mix.compute(ctx, u, p["mix"]))
        g = self._out.compute(ctx, u)                      # [S, H*m, r]
        if descriptors is None:
            return g
        out = ctx.target(descriptors, "descriptors")
        if (out.shape[1], out.shape[2]) != (self.H * self.m, self.r):
            ctx.error(f"descriptors are [S, {out.shape[1]}, {out.shape[2]}]"
                      f", expected [S, H*m = {self.H * self.m}, r = "
                      f"{self.r}]")
        return self._write_back(ctx, g, out)


def learned_descriptor(op: LearnedDescriptor, x, layer):
    """The op's formula on its own weights (eager mode; differentiable in
    them): x `[n, bs, d]` -> `[n, H*m, r]`."""
    torch = import_torch()
    row = op.row(layer)
    wt = op.Wt[row].to(x.device, x.dtype)                 # [H, bs, m]
    wk = op.Wk[row].to(x.device, x.dtype)                 # [H, d, r]
    g = torch.einsum("nsd,hsj,hdr->nhjr", x, wt, wk)
    return g.reshape(x.shape[0], op.H * op.m, op.r)
