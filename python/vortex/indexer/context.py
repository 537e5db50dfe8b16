"""vortex_torch's indexer `Context` / `get_ctx`: in vortex the context a
flow's ops see is the tracer's."""

from __future__ import annotations

from ..frontend.errors import FlowTraceError
from ..frontend.tracer import TraceContext, current_context

__all__ = ["Context", "get_ctx"]

Context = TraceContext


def get_ctx() -> TraceContext:
    """The context of the trace running on this thread."""
    ctx = current_context()
    if ctx is None:
        raise FlowTraceError("get_ctx(): no flow is being traced (contexts "
                             "exist only inside vortex.trace / "
                             "vortex.compile)")
    return ctx
