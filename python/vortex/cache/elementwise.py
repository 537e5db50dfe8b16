"""Cache-side elementwise ops (vortex_torch `cache/elementwise.py` and
`elementwise_binary.py`): unary `op(x, output, loc=loc, ctx=ctx)`, binary
`op(x, y, output, loc=loc, ctx=ctx)`."""

from __future__ import annotations

from ..frontend.oplib import CacheBinary, CacheUnary
from ..indexer import elementwise as _e

__all__ = ["Relu", "Silu", "Sigmoid", "Abs", "Add_Mul", "Log", "Exp",
           "Maximum", "Minimum", "Multiply", "Add", "WhereEqual",
           "WhereNotEqual", "WhereGreater", "WhereGreaterEqual", "WhereLess",
           "WhereLessEqual"]


class Relu(CacheUnary, _e.Relu):
    __doc__ = _e.Relu.__doc__


class Silu(CacheUnary, _e.Silu):
    __doc__ = _e.Silu.__doc__


class Sigmoid(CacheUnary, _e.Sigmoid):
    __doc__ = _e.Sigmoid.__doc__


class Abs(CacheUnary, _e.Abs):
    __doc__ = _e.Abs.__doc__


class Add_Mul(CacheUnary, _e.Add_Mul):
    __doc__ = _e.Add_Mul.__doc__


class Log(CacheUnary, _e.Log):
    __doc__ = _e.Log.__doc__


class Exp(CacheUnary, _e.Exp):
    __doc__ = _e.Exp.__doc__


class Maximum(CacheBinary, _e.Maximum):
    __doc__ = _e.Maximum.__doc__


class Minimum(CacheBinary, _e.Minimum):
    __doc__ = _e.Minimum.__doc__


class Multiply(CacheBinary, _e.Multiply):
    __doc__ = _e.Multiply.__doc__


class Add(CacheBinary, _e.Add):
    __doc__ = _e.Add.__doc__


class WhereEqual(CacheBinary, _e.WhereEqual):
    pass


class WhereNotEqual(CacheBinary, _e.WhereNotEqual):
    pass


class WhereGreater(CacheBinary, _e.WhereGreater):
    pass


class WhereGreaterEqual(CacheBinary, _e.WhereGreaterEqual):
    pass


class WhereLess(CacheBinary, _e.WhereLess):
    pass


class WhereLessEqual(CacheBinary, _e.WhereLessEqual):
    pass
