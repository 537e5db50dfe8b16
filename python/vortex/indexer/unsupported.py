"""vortex_torch indexer names without a vortex counterpart: importing them
works, building one raises UnsupportedOpError naming the op and the line."""

from __future__ import annotations

from ..abs.op import UnsupportedOp
# Parameter is supported: vortex.indexer re-exports it as vortex_torch does.
from ..abs.parameter import Parameter

__all__ = ["MetaData", "Parameter"]


class MetaData(UnsupportedOp):
    reason = ("the per-step CSR metadata belongs to vortex's runtime: pass "
              "dense_kv_indptr / dense_kv_indices to the compiled flow")
