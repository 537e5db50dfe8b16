"""vortex_torch's `abs` package: the abstract pieces every flow module
imports (`ContextBase`, `FORMAT`, `vTensor`, `vOp`).

    from vortex.abs import ContextBase        # was: from vortex_torch.abs ...
"""

from .context_base import ContextBase, Mode
from .op import Schedule, UnsupportedOp, vOp
from .parameter import Int4Packed, Parameter
from .tensor import FORMAT, as_vtensor, vTensor

__all__ = ["ContextBase", "FORMAT", "Int4Packed", "Mode", "Parameter",
           "Schedule", "UnsupportedOp", "as_vtensor", "vOp", "vTensor"]
