"""Learned constants of vortex_torch (`Parameter`, `Int4Packed`): the vortex
dialect has a `parameter` format but no way to bind a weight to a flow, so
these names raise a clear error when built."""

from __future__ import annotations

from .op import UnsupportedOp

__all__ = ["Parameter", "Int4Packed"]


class Parameter(UnsupportedOp):
    reason = ("a flow cannot bind a learned per-layer weight; the "
              "'parameter' format exists in the dialect, its binding does not")


class Int4Packed(UnsupportedOp):
    reason = "INT4 KV caches are not supported"
