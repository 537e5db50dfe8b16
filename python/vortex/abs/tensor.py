"""`vTensor` and `FORMAT`: vortex_torch's metadata tensors.

A vTensor is rank 3, `[L, D0, D1]`; the format says how the leading axis is
addressed (BATCHED: one row per (request, KV head); RAGGED: one row per
block of every row, CSR order; PAGED: the block pool, i.e. a cache field).
As in vortex_torch's compiler generations it holds metadata only (the
leading extent is the placeholder 0) and is not a torch tensor.

While a flow is traced every value the flow sees is a vTensor bound to the
trace (its SSA name and region). Anything that would compute on it outside
the vortex ops, a torch method (`q.mean(dim=1)`), an operator (`q * 2`), a
torch function (`torch.mean(q)`) or numpy, raises `TorchInFlowError` at the
user's line: a traced flow computes only through vortex ops.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any, Optional, Tuple

from ..frontend.config import resolve_dtype

__all__ = ["FORMAT", "vTensor", "as_vtensor"]


class FORMAT(IntEnum):
    """How the leading axis is addressed (vortex_torch's values)."""
    BATCHED = 0
    RAGGED = 1
    PAGED = 2
    PARAMETER = 3
    SLOTTED = 4


def _next_pow2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def _torch_code(tensor: "vTensor", what: str):
    """Raise TorchInFlowError for `what` applied to a traced value, or
    return False when the tensor is not bound to a trace."""
    trace = tensor._trace
    if trace is None:
        return False
    trace.torch_code_error(tensor, what)
    return True


class vTensor:
    """Rank-3 metadata tensor `[L, D0, D1]` with a FORMAT (see the module
    docstring). `shape` keeps vortex_torch's placeholder leading extent."""

    __slots__ = ("shape", "padded_shape", "dtype", "device", "_format",
                 "tensor_id", "_ssa", "_trace", "_region", "_label")

    def __init__(self, shape: Tuple[int, ...] = (), dtype: Any = "bf16",
                 device: Any = None, _format: FORMAT = FORMAT.BATCHED,
                 tensor_id: int = -1,
                 padded_shape: Optional[Tuple[int, ...]] = None) -> None:
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype if dtype == "i32" else resolve_dtype(dtype)
        self.device = device
        self._format = FORMAT(_format)
        self.tensor_id = tensor_id
        if padded_shape is None and len(self.shape) == 3:
            padded_shape = (self.shape[0], _next_pow2(self.shape[1]),
                            _next_pow2(self.shape[2]))
        self.padded_shape = tuple(padded_shape) if padded_shape else \
            self.shape
        self._ssa: Optional[str] = None
        self._trace = None
        self._region: Optional[str] = None
        self._label: str = ""

    # -- metadata (allowed on traced values) --------------------------------
    def dim(self) -> int:
        return len(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def format(self) -> FORMAT:
        return self._format

    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def size(self, dim: Optional[int] = None):
        return self.shape if dim is None else self.shape[dim]

    def needs_padding(self) -> bool:
        return tuple(self.padded_shape) != tuple(self.shape)

    def __repr__(self) -> str:
        name = f" {self._label}" if self._label else ""
        return (f"vTensor{name}(shape={self.shape}, dtype={self.dtype}, "
                f"format={self._format.name})")

    # -- everything that would compute outside the vortex ops ---------------
    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if not _torch_code(self, f"{self._label or 'vTensor'}.{name}"):
            raise AttributeError(f"'vTensor' object has no attribute "
                                 f"{name!r}")

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", None) or repr(func)
        module = getattr(func, "__module__", None) or "torch"
        if module.startswith("torch._"):
            module = "torch"
        everything = list(args) + list((kwargs or {}).values())
        for a in everything:
            for t in (a if isinstance(a, (list, tuple)) else (a,)):
                if isinstance(t, vTensor) and _torch_code(
                        t, f"{module}.{name}"):
                    return NotImplemented
        raise TypeError(f"{module}.{name} cannot take a vTensor")

    def __bool__(self) -> bool:
        # Defined so that truth tests never reach the raising __len__.
        return True

    def __array__(self, *args, **kwargs):
        _torch_code(self, "numpy conversion")
        raise TypeError("a vTensor holds no data")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        _torch_code(self, f"numpy.{ufunc.__name__}")
        return NotImplemented

    def __array_function__(self, func, types, args, kwargs):
        _torch_code(self, f"numpy.{func.__name__}")
        return NotImplemented


def _operator(symbol: str):
    def op(self, *args):
        _torch_code(self, f"the '{symbol}' operator")
        raise TypeError(f"a vTensor holds no data: {symbol} is not "
                        "supported")
    op.__name__ = symbol
    return op


for _name, _symbol in [
        ("add", "+"), ("radd", "+"), ("sub", "-"), ("rsub", "-"),
        ("mul", "*"), ("rmul", "*"), ("matmul", "@"), ("rmatmul", "@"),
        ("truediv", "/"), ("rtruediv", "/"), ("floordiv", "//"),
        ("rfloordiv", "//"), ("mod", "%"), ("pow", "**"), ("rpow", "**"),
        ("neg", "unary -"), ("pos", "unary +"), ("abs", "abs()"),
        ("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">="),
        ("getitem", "[] indexing"), ("setitem", "[] assignment"),
        ("iter", "iteration"), ("len", "len()"), ("float", "float()"),
        ("int", "int()"), ("iadd", "+="), ("imul", "*="), ("isub", "-="),
        ("itruediv", "/=")]:
    setattr(vTensor, f"__{_name}__", _operator(_symbol))
del _name, _symbol


def as_vtensor(x: Any = None, _format: Optional[FORMAT] = None,
               tensor_id: Optional[int] = None, *, shape=None, dtype=None,
               device=None) -> vTensor:
    """vortex_torch's helper: re-tag a vTensor in place, or build one from a
    tensor's metadata (shape, dtype, device) or from keywords."""
    if isinstance(x, vTensor):
        if _format is not None:
            x._format = FORMAT(_format)
        if tensor_id is not None:
            x.tensor_id = tensor_id
        return x
    if x is not None:
        shape = tuple(x.shape) if shape is None else shape
        dtype = getattr(x, "dtype", None) if dtype is None else dtype
        device = getattr(x, "device", None) if device is None else device
    return vTensor(shape=shape or (), dtype=dtype or "bf16", device=device,
                   _format=FORMAT.BATCHED if _format is None else _format,
                   tensor_id=-1 if tensor_id is None else tensor_id)
