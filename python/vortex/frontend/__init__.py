"""The Python front end: vortex_torch flows traced to the vortex dialect.

    from vortex.flow import vFlow, register
    from vortex.indexer import GeMM, Mean, topK
    from vortex.cache import Mean as CMean
    ...
    text = vortex.trace(MyFlow(), vortex.FlowConfig(group_size=4))
    manifest = vortex.compile(MyFlow(), vortex.FlowConfig(), target="cpu")

A flow module written for vortex_torch runs on vortex with `vortex_torch`
replaced by `vortex` in its imports. Tracing runs `forward_cache` and
`forward_indexer` once on traced values; each op call appends one op of the
`vortex` dialect with the location of the Python call; vortex-opt verifies
the result and its diagnostics name the Python line (FlowError).

Modules: `config` (FlowConfig), `errors`, `source` (call sites), `types`
(result-type rules), `oplib` (op emission), `tracer`, `verify`. The entry
points that use them (`trace`, `compile`) are in `vortex.api`, above the
flow classes and the shipped flows.
"""

from .config import FlowConfig, resolve_dtype
from .errors import (FlowArgumentError, FlowError, FlowTraceError,
                     FlowVerifyError, MissingFieldError, OpReuseError,
                     TorchInFlowError, UnsupportedOpError)

__all__ = ["FlowArgumentError", "FlowConfig", "FlowError", "FlowTraceError",
           "FlowVerifyError", "MissingFieldError", "OpReuseError",
           "TorchInFlowError", "UnsupportedOpError", "resolve_dtype"]
