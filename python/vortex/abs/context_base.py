"""`ContextBase` and `Mode`: the mode a flow's ops dispatch on.

vortex_torch runs a flow's `forward_*` methods with a context: in profile
mode every op records itself (here: traces MLIR), in execute mode it runs.
`Mode.trace` is the same mode as vortex_torch's `Mode.profile`.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any, Mapping, Optional, Tuple

__all__ = ["ContextBase", "Mode"]


class Mode(IntEnum):
    profile = 0
    trace = 0          # alias: tracing is vortex_torch's profile mode
    execute = 1


class ContextBase:
    """A context with a `mode` (vortex_torch's `abs.ContextBase`)."""

    def __init__(self, name: Optional[str] = None,
                 mode: Optional[Mode] = None) -> None:
        self.name = name
        self.mode = mode
        self._created = True

    def profile(self) -> None:
        self.mode = Mode.profile

    def execute(self) -> None:
        self.mode = Mode.execute

    def run_op(self, op: Any, args: Tuple[Any, ...],
               kwargs: Mapping[str, Any]) -> Any:
        """Run one op call in `Mode.execute`. Only an executing context can
        (vortex.semantics.eager's, which overrides this): the op layer does not
        know how ops execute."""
        raise TypeError(f"{type(op).__name__}: eager execution needs the "
                        "context of vortex.semantics.eager.indexer / "
                        "cache_step")

    def __repr__(self) -> str:
        mode = self.mode.name if self.mode is not None else None
        return f"{type(self).__name__}(name={self.name!r}, mode={mode})"
