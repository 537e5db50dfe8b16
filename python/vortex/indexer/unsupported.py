"""vortex_torch indexer names without a vortex counterpart: importing them
works, building one raises UnsupportedOpError naming the op and the line."""

from __future__ import annotations

from ..abs.op import UnsupportedOp
from ..abs.parameter import Parameter

__all__ = ["FactorScore", "LearnedQuery", "MetaData", "Parameter"]


class FactorScore(UnsupportedOp):
    reason = ("it scores against learned per-layer weights (Parameter), "
              "which a vortex flow cannot bind")


class LearnedQuery(UnsupportedOp):
    reason = ("it projects q with learned per-layer weights (Parameter), "
              "which a vortex flow cannot bind")


class MetaData(UnsupportedOp):
    reason = ("the per-step CSR metadata belongs to vortex's runtime: pass "
              "dense_kv_indptr / dense_kv_indices to the compiled flow")
