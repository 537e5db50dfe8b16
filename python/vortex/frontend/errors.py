"""Errors of the Python front end.

Every error a flow author can cause is a `FlowError`: its message starts
with the user's `file:line:col`, names the flow and the op (vortex_torch
name, and the attribute of the flow that holds it) and quotes the source
line, because the author fixes a Python file, not the traced IR. The
subclasses say which rule was broken, so callers (and tests) can catch a
kind of mistake without parsing messages; several also derive from the
builtin exception vortex_torch raises in the same situation (KeyError for a
missing cache field, TypeError for torch code on a proxy, ...), so code
written against vortex_torch keeps catching them.
"""

from __future__ import annotations

from typing import Optional, Sequence

__all__ = [
    "FlowError", "FlowTraceError", "FlowVerifyError", "FlowArgumentError",
    "MissingFieldError", "OpReuseError", "TorchInFlowError",
    "UnsupportedOpError",
]


class FlowError(Exception):
    """A flow that cannot be traced, or whose traced IR does not verify.

    Attributes: `flow` (the flow's name), `op` (the vortex_torch op class
    name, or None for flow-level errors), `filename` / `lineno` (the user's
    Python call site), `diagnostics` (vortex-opt's raw stderr, if any).
    """

    def __init__(self, message: str, *, flow: Optional[str] = None,
                 op: Optional[str] = None, filename: Optional[str] = None,
                 lineno: Optional[int] = None,
                 diagnostics: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.flow = flow
        self.op = op
        self.filename = filename
        self.lineno = lineno
        self.diagnostics = diagnostics

    def __str__(self) -> str:
        # KeyError (a base of MissingFieldError) would repr() the message.
        return self.message


class FlowTraceError(FlowError):
    """A rule the tracer checks while running forward_cache /
    forward_indexer (call forms, arguments that are not flow values, ...)."""


class FlowVerifyError(FlowError):
    """vortex-opt rejected the traced IR; the message holds its
    diagnostics, each mapped back to the Python call site."""


class FlowArgumentError(FlowError, ValueError):
    """An op constructed with invalid arguments (vortex_torch asserts these
    in the op's __init__)."""


class MissingFieldError(FlowError, KeyError):
    """`cache[name]` for a name that create_cache did not declare."""


class OpReuseError(FlowError):
    """One op object called at two call sites (vortex_torch ops are not
    reusable: build one per call site in __init__)."""


class TorchInFlowError(FlowError, TypeError):
    """torch (or numpy) code applied to a traced value: a flow computes
    only through vortex ops."""


class UnsupportedOpError(FlowError, NotImplementedError):
    """A vortex_torch op that the vortex dialect has no counterpart for."""


def format_message(site, flow: Optional[str], what: str, message: str,
                   notes: Sequence[str] = ()) -> str:
    """`file:line:col: error: flow 'F': <what>: <message>` and the quoted
    source line; `site` may be None when no user frame is known."""
    head = f"{site.location()}: error: " if site is not None else "error: "
    scope = f"flow '{flow}': " if flow else ""
    lines = [f"{head}{scope}{what}: {message}" if what else
             f"{head}{scope}{message}"]
    if site is not None and site.source():
        lines.append("    " + site.source())
    lines.extend("    " + n for n in notes)
    return "\n".join(lines)
