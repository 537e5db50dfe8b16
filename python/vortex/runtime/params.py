"""A compiled flow's bound parameters (docs/contract.md, "Parameters";
docs/python.md, "Per-layer parameters"): the one home of `bind`'s rules for
the torch ops (`Flow`) and flows compiled around custom ops
(`vortex.staged.StagedFlow`).
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Sequence

from ..abs.parameter import Parameter, check_layer, lookup_rows
from ..environment import import_torch
from .manifest import DTYPES, Manifest

torch = import_torch()

__all__ = ["BoundParams"]


class BoundParams:
    """The values of a manifest's parameters `names`, on `device`: one
    `[1, r, c]` tensor each, or a per-layer `[L, r, c]` one with its lookup,
    sliced per call."""

    def __init__(self, manifest: Manifest, names: Sequence[str],
                 device: Any) -> None:
        self.manifest, self.names, self.device = manifest, list(names), device
        self.values: Dict[str, Any] = {}
        # name -> ([L, r, c], lookup rows or None); the per-call dicts made
        # from them, by layer.
        self.layered: Dict[str, Any] = {}
        self._by_layer: Dict[Any, Dict[str, Any]] = {}

    def missing(self) -> list:
        """The parameters not bound yet, in ABI order."""
        return [n for n in self.names
                if n not in self.values and n not in self.layered]

    def bind(self, params: Mapping[str, Any]) -> None:
        """`{name: tensor [r, c] or [1, r, c], [L, r, c], or a
        vortex.abs.Parameter}`, copied (detached) to the device and the
        manifest's dtype. Raises ValueError naming the entry before any is
        bound."""
        if not isinstance(params, Mapping):
            raise ValueError(f"params: expected a dict name -> tensor, got "
                             f"{type(params).__name__}")
        bound, layered = dict(self.values), dict(self.layered)
        for name, value in params.items():
            if name not in self.names:
                raise ValueError(f"params[{name!r}]: the flow has no such "
                                 f"parameter (it has {self.names})")
            spec = self.manifest.tensors[name]
            want = tuple(spec.extents({}))
            rows = None
            if isinstance(value, Parameter):
                t, rows = value.data, value.lookup
                per_layer = value.per_layer
            else:
                t = value
                per_layer = isinstance(t, torch.Tensor) and t.dim() == 3 \
                    and t.shape[0] > 1
            if not isinstance(t, torch.Tensor):
                raise ValueError(f"params[{name!r}]: expected a tensor, got "
                                 f"{type(t).__name__}")
            t = t.detach()
            if t.dim() == 2:
                t = t.unsqueeze(0)
            if t.dim() != 3 or tuple(t.shape[1:]) != want[1:] or \
                    (not per_layer and t.shape[0] != 1):
                expected = (f"[L, {want[1]}, {want[2]}]" if per_layer
                            else str(list(want)))
                raise ValueError(f"params[{name!r}]: shape {list(t.shape)}, "
                                 f"expected {expected}")
            if per_layer:
                lookup_rows(rows, int(t.shape[0]), f"params[{name!r}] "
                            "layer_lookup")
            t = t.to(device=self.device, dtype=getattr(
                torch, DTYPES[spec.dtype][0]), copy=True).contiguous()
            bound.pop(name, None)
            layered.pop(name, None)
            if per_layer:
                layered[name] = (t, rows)
            else:
                bound[name] = t
        self.values, self.layered = bound, layered
        self._by_layer = {}

    def for_layer(self, layer: Optional[int] = None) -> Dict[str, Any]:
        """The parameters a call for `layer` passes: each per-layer one as
        the view of its layer's `[1, r, c]` slice (no copy: the pointer is
        stable, so a CUDA graph captured per layer replays it). Raises
        ValueError naming `layer` (required when a parameter is per layer,
        in range of every lookup) before anything runs."""
        if not self.layered:
            if layer is not None and (isinstance(layer, bool) or
                                      not isinstance(layer, int) or layer < 0):
                raise ValueError(f"layer: expected a non-negative int, got "
                                 f"{layer!r}")
            return self.values
        got = self._by_layer.get(layer)
        if got is not None:
            return got
        if layer is None:
            raise ValueError(f"layer: required: parameters "
                             f"{sorted(self.layered)} are bound per layer")
        out = dict(self.values)
        for name, (t, rows) in self.layered.items():
            row = check_layer(layer, rows, int(t.shape[0]))
            out[name] = t[row:row + 1]
        self._by_layer[layer] = out
        return out
