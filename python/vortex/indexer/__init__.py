"""vortex_torch's `indexer` package: the ops of `forward_indexer`.

    from vortex.indexer import GeMM, Mean, topK   # was: vortex_torch.indexer

Each op is built once per call site in the flow's `__init__` and called as
`op(*values, ctx=ctx)`; under `vortex.trace` the call appends the matching
`vortex` dialect op (Parameter: a learned constant); LearnedQuery and
FactorScore trace to several (vortex.indexer.learned). MetaData exists by
name only (the dialect has no counterpart): building one raises. Custom
ops registered with `register_op` (vortex.indexer.custom) import by name.
"""

from .context import Context, get_ctx
from .elementwise import (Abs, Add, Add_Mul, Elementwise, Elementwise_Binary,
                          Exp, Log, Maximum, Minimum, Multiply, Relu, Sigmoid,
                          Silu, WhereEqual, WhereGreater, WhereGreaterEqual,
                          WhereLess, WhereLessEqual, WhereNotEqual)
from .layout import Kron, MaskSlice, Reshape, Transpose
from .learned import FactorScore, LearnedQuery
from .matmul import GeMM, GeMV
from .output_func import TopK, Union, approxTopK, topK
from .reduce import L2Norm, Max, Mean, Min, Reduce, Sum
from .save_load import Load, Save
from .scan import Conv1d, Normalize, Softmax
from .unsupported import MetaData, Parameter
from .custom_op import custom, custom_or_unknown, register_op

__all__ = [
    "GeMM", "GeMV", "FactorScore", "topK", "approxTopK", "TopK", "Union",
    "Max", "Mean", "Min", "L2Norm", "Sum", "Softmax", "Normalize", "Conv1d",
    "Transpose", "Maximum", "Minimum", "Multiply", "Add", "WhereEqual",
    "WhereNotEqual", "WhereGreater", "WhereGreaterEqual", "WhereLess",
    "WhereLessEqual", "Relu", "Sigmoid", "Silu", "Add_Mul", "Abs", "Log",
    "Exp", "Save", "Load", "MaskSlice", "Kron", "Reshape", "Parameter",
    "LearnedQuery", "MetaData", "Context", "get_ctx",
    "Reduce", "Elementwise", "Elementwise_Binary", "custom", "register_op",
]


# A registered custom op by name; any other op name this module lacks
# imports and raises, named, when built.
__getattr__ = custom_or_unknown(__name__)
