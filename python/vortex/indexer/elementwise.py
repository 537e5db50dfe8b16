"""Elementwise ops (vortex_torch `indexer/elementwise.py` and
`elementwise_binary.py`): unary `y = op(x, ctx=ctx)` with (alpha, beta),
binary `z = op(x, y, ctx=ctx)` broadcasting the inner axes; the result is
batched iff every input is."""

from __future__ import annotations

from ..abs.op import Schedule
from ..frontend.oplib import TracedOp
from ..frontend.types import broadcast, f32_attr, workload_format

__all__ = [
    "Elementwise", "Relu", "Sigmoid", "Silu", "Add_Mul", "Abs", "Log", "Exp",
    "Elementwise_Binary", "Maximum", "Minimum", "Multiply", "Add",
    "WhereEqual", "WhereNotEqual", "WhereGreater", "WhereGreaterEqual",
    "WhereLess", "WhereLessEqual",
]


class Elementwise(TracedOp):
    """Unary `y = f(x; alpha, beta)`, same shape (abstract)."""

    def __init__(self, alpha: float = 1.0, beta: float = 1.0) -> None:
        super().__init__()
        if self.mnemonic is None:
            raise self._bad_argument("Elementwise is abstract: use Relu, "
                                     "Sigmoid, Silu, Add_Mul, Abs, Log or Exp")
        self.alpha = self._float_arg("alpha", alpha)
        self.beta = self._float_arg("beta", beta)
        self.schedule = Schedule.W

    def compute(self, ctx, x):
        return self._emit_unary(ctx, x, x.shape[1], x.shape[2],
                                workload_format([x._format]),
                                [f"alpha = {f32_attr(self.alpha)}",
                                 f"beta = {f32_attr(self.beta)}"])

    def trace(self, x, *, ctx):
        return self.compute(ctx, ctx.value(x, "x"))


class Relu(Elementwise):
    """`x >= alpha ? x : beta`."""
    mnemonic = "relu"

    def __init__(self, alpha: float = 0.0, beta: float = 0.0) -> None:
        super().__init__(alpha, beta)


class Sigmoid(Elementwise):
    """`1 / (1 + exp(beta x + alpha))` (the standard one: beta = -1)."""
    mnemonic = "sigmoid"

    def __init__(self, alpha: float = 0.0, beta: float = 0.0) -> None:
        super().__init__(alpha, beta)


class Silu(Elementwise):
    """`x / (1 + exp(beta x + alpha))` (the standard one: beta = -1)."""
    mnemonic = "silu"

    def __init__(self, alpha: float = 0.0, beta: float = 0.0) -> None:
        super().__init__(alpha, beta)


class Add_Mul(Elementwise):
    """`beta x + alpha`."""
    mnemonic = "add_mul"

    def __init__(self, alpha: float = 0.0, beta: float = 1.0) -> None:
        super().__init__(alpha, beta)


class Abs(Elementwise):
    """`|beta x + alpha|`."""
    mnemonic = "abs"

    def __init__(self, alpha: float = 0.0, beta: float = 1.0) -> None:
        super().__init__(alpha, beta)


class Log(Elementwise):
    """`log(beta x + alpha)`."""
    mnemonic = "log"

    def __init__(self, alpha: float = 0.0, beta: float = 1.0) -> None:
        super().__init__(alpha, beta)


class Exp(Elementwise):
    """`exp(beta x + alpha)`."""
    mnemonic = "exp"

    def __init__(self, alpha: float = 0.0, beta: float = 1.0) -> None:
        super().__init__(alpha, beta)


class Elementwise_Binary(TracedOp):
    """Binary `z = g(x, y)` broadcasting the inner axes (abstract). Only
    Add uses alpha and beta (`alpha x + beta y`)."""

    _uses_alpha_beta = False

    def __init__(self, alpha: float = 1.0, beta: float = 1.0) -> None:
        super().__init__()
        if self.mnemonic is None:
            raise self._bad_argument(
                "Elementwise_Binary is abstract: use Maximum, Minimum, "
                "Multiply, Add or a Where* mask")
        self.alpha = self._float_arg("alpha", alpha)
        self.beta = self._float_arg("beta", beta)
        self.schedule = Schedule.W

    def compute(self, ctx, x, y):
        attrs = ([f"alpha = {f32_attr(self.alpha)}",
                  f"beta = {f32_attr(self.beta)}"]
                 if self._uses_alpha_beta else [])
        return self._emit_binary(ctx, x, y,
                                 broadcast(x.shape[1], y.shape[1]),
                                 broadcast(x.shape[2], y.shape[2]),
                                 workload_format([x._format, y._format]),
                                 attrs)

    def trace(self, x, y, *, ctx):
        return self.compute(ctx, ctx.value(x, "x"), ctx.value(y, "y"))


class Maximum(Elementwise_Binary):
    """`max(x, y)`."""
    mnemonic = "maximum"


class Minimum(Elementwise_Binary):
    """`min(x, y)`."""
    mnemonic = "minimum"


class Multiply(Elementwise_Binary):
    """`x * y`."""
    mnemonic = "multiply"


class Add(Elementwise_Binary):
    """`alpha x + beta y`."""
    mnemonic = "add"
    _uses_alpha_beta = True


class _Where(Elementwise_Binary):
    """Additive mask: 0 where the predicate holds, -1e30 elsewhere."""

    def __init__(self) -> None:
        super().__init__()


class WhereEqual(_Where):
    mnemonic = "where_eq"


class WhereNotEqual(_Where):
    mnemonic = "where_ne"


class WhereGreater(_Where):
    mnemonic = "where_gt"


class WhereGreaterEqual(_Where):
    mnemonic = "where_ge"


class WhereLess(_Where):
    mnemonic = "where_lt"


class WhereLessEqual(_Where):
    mnemonic = "where_le"
