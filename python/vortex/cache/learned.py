"""`LearnedDescriptor`: vortex_torch's learned factorized block descriptor
(cache side; semantics in ../shared/docs/vortex_torch_reference.md).

    LearnedDescriptor(Wt, Wk, H, m, r):  op(latent, descriptors, loc=loc,
                                            ctx=ctx)
        g[h*m + j, i] = sum_s Wt[l, h, s, j] (x[s] Wk[l, h])[i]  [H*m, r]

for each completed block x `[bs, d]`, with `Wt` `[L, H, bs, m]` (token
mixing), `Wk` `[L, H, d, r]` (channel compression) and `l` the row of the
layer the call runs for (the Parameters' lookup).

It traces to the dialect's `vortex.learned_descriptor` (docs/python.md,
"Learned ops"), which writes the `descriptors` field from the block and
two weights the op derives from its own, per layer:

    mix[l]  [H*m, bs]   mix[h*m + j, s] = Wt[l, h, s, j]
    proj[l] [H*r, d]    proj[h*r + i, e] = Wk[l, h, e, i]

    F[h*m + j, i] = sum_e (sum_s mix[h*m + j, s] x[s, e]) proj[h*r + i, e]

The op is standalone (its own kernel per block, as in vortex_torch), and
reads `proj` from memory: at GLM's shape with r = d = 576 it is a streamed
parameter over the tile bound. It writes a field, so a call needs the
field (`descriptors`). Eager mode runs the formula on Wt and Wk themselves
(`learned_descriptor` below), differentiable in them.
"""

from __future__ import annotations

from typing import Any, Dict

from ..abs.parameter import Parameter
from ..abs.tensor import FORMAT
from ..environment import import_torch
from ..frontend.oplib import CacheUnary
from ..indexer.learned import _Learned

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
        self.derived_parameters("")

    def _set_derived(self, attr: str) -> Dict[str, Parameter]:
        L, H, m, r, d, bs = (self.layers, self.H, self.m, self.r, self.d,
                             self.bs)
        wt = self.Wt.detach().float()                    # [L, H, bs, m]
        wk = self.Wk.detach().float()                    # [L, H, d, r]
        values = {"mix": wt.permute(0, 1, 3, 2).reshape(L, H * m, bs),
                  "proj": wk.permute(0, 1, 3, 2).reshape(L, H * r, d)}
        for key, data in values.items():
            p = self._params.get(key)
            if p is None:
                p = self._params[key] = self._derived(data.contiguous())
            p.data = data.contiguous()
        return {f"{attr}_{k}": p for k, p in self._params.items()}

    def trace(self, latent, descriptors=None, loc=None, *, ctx):
        x = ctx.value(latent, "latent")
        if x._format != FORMAT.PAGED:
            ctx.error("argument 'latent' must be a PAGED pool (cache[\"k\"], "
                      "cache[\"v\"] or an MLA flow's cache[\"latent\"]), "
                      f"got {x._format.name}")
        if (x.shape[1], x.shape[2]) != (self.bs, self.d):
            ctx.error(f"latent is [S, {x.shape[1]}, {x.shape[2]}], Wt "
                      f"[L, H, bs, m] and Wk [L, H, d, r] need [S, "
                      f"bs = {self.bs}, d = {self.d}]")
        if descriptors is None:
            ctx.error("argument 'descriptors' is required: the op writes "
                      "the descriptors into a cache field (op(latent, "
                      "cache[\"descriptors\"], loc=loc, ctx=ctx))")
        out = ctx.target(descriptors, "descriptors")
        if out._format != FORMAT.PAGED:
            ctx.error(f"argument 'descriptors' ({out._label}) must be a "
                      f"PAGED cache field, got {out._format.name}")
        if (out.shape[1], out.shape[2]) != (self.H * self.m, self.r):
            ctx.error(f"descriptors are [S, {out.shape[1]}, {out.shape[2]}]"
                      f", expected [S, H*m = {self.H * self.m}, r = "
                      f"{self.r}]")
        mix = ctx.value(self._params["mix"], "mix")
        proj = ctx.value(self._params["proj"], "proj")
        ctx.emit(f"vortex.{self.mnemonic} {x._ssa}, {mix._ssa}, {proj._ssa} "
                 f"into {out._ssa} {{heads = {self.H} : i64}} : "
                 f"{ctx.type_of(x)}, {ctx.type_of(mix)}, {ctx.type_of(proj)}"
                 f" into {ctx.type_of(out)}")
        return out


def learned_descriptor(op: LearnedDescriptor, x, layer):
    """The op's formula on its own weights (eager mode; differentiable in
    them): x `[n, bs, d]` -> `[n, H*m, r]`."""
    torch = import_torch()
    row = op.row(layer)
    wt = op.Wt[row].to(x.device, x.dtype)                 # [H, bs, m]
    wk = op.Wk[row].to(x.device, x.dtype)                 # [H, d, r]
    g = torch.einsum("nsd,hsj,hdr->nhjr", x, wt, wk)
    return g.reshape(x.shape[0], op.H * op.m, op.r)
