"""Verify traced text with vortex-opt and map its diagnostics back to the
user's Python lines.

The C++ verifiers are the authority on what a flow may be: the tracer only
computes types. vortex-opt reports `<file>:<line>:<col>: error: ...` at the
location of the offending op, which is the Python call site the tracer
recorded; each diagnostic is followed by the quoted source line and the op
(vortex_torch class and the flow attribute holding it).
"""

from __future__ import annotations

import re
import subprocess
from typing import List, Optional, Tuple

from ..compiler.driver import VortexCompileError, find_tool
from .errors import FlowVerifyError
from .source import Site

__all__ = ["verify_text", "explain_diagnostics", "canonical_ir"]

_DIAG = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): "
                   r"(?P<sev>error|warning|note|remark): (?P<msg>.*)$")


def _blocks(stderr: str):
    """(header match or None, [lines]) per diagnostic: MLIR follows a
    header with the quoted source line and a caret when it can read the
    file."""
    blocks = []
    for line in stderr.splitlines():
        m = _DIAG.match(line)
        if m or not blocks:
            blocks.append((m, [line]))
        else:
            blocks[-1][1].append(line)
    return blocks


def explain_diagnostics(stderr: str, traced) -> Tuple[str, Optional[object],
                                                     Optional[Site]]:
    """The diagnostics, each followed by the Python source line (when MLIR
    did not quote it) and the op it belongs to; also the record (or None)
    and site of the first error."""
    ctx = traced.ctx
    out: List[str] = []
    first, first_site = None, None
    text_lines = traced.text.splitlines()
    cls = type(ctx.flow).__name__
    for m, lines in _blocks(stderr):
        out.extend(lines)
        if m is None:
            continue
        key = (m["file"], int(m["line"]), int(m["col"]))
        rec = ctx.records.get(key)
        site, note = None, None
        if rec is not None:
            site = rec.site
            label = f" ({rec.label})" if rec.label else ""
            note = f"op {rec.op}{label} in {cls}.forward_{rec.side}"
        elif traced.site is not None and key[:2] == (traced.site.filename,
                                                     traced.site.lineno):
            site, note = traced.site, f"flow class {cls}"
        elif m["file"] == "<stdin>" and 0 < key[1] <= len(text_lines):
            note = f"traced IR: {text_lines[key[1] - 1].strip()}"
        if site is not None and len(lines) == 1 and site.source():
            out.append(f"    {site.source()}")
        if note:
            out.append(f"    ({note})")
        if m["sev"] == "error" and first_site is None and site is not None:
            first, first_site = rec, site
    return "\n".join(out), first, first_site


def verify_text(traced) -> None:
    """Run vortex-opt on the traced text; raise FlowVerifyError with the
    annotated diagnostics if it does not verify."""
    tool = find_tool("vortex-opt")
    try:
        proc = subprocess.run(
            [tool, "-", "-o", "-", "--mlir-print-op-on-diagnostic=false"],
            input=traced.text, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True)
    except OSError as err:
        raise VortexCompileError(f"cannot run {tool}: {err}") from err
    if proc.returncode == 0:
        return
    name = traced.ctx.flow_name
    body, rec, site = explain_diagnostics(proc.stderr.strip(), traced)
    raise FlowVerifyError(
        f"flow '{name}' does not verify (vortex-opt):\n{body}",
        flow=name, op=rec.op if rec is not None else None,
        filename=site.filename if site else None,
        lineno=site.lineno if site else None, diagnostics=proc.stderr)


def canonical_ir(text: str, *flags: str) -> str:
    """`text` printed by vortex-opt (default printer: no locations, generic
    value names): two flows are the same IR iff their canonical texts are
    equal."""
    proc = subprocess.run([find_tool("vortex-opt"), "-", *flags], input=text,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    if proc.returncode != 0:
        raise VortexCompileError(f"vortex-opt failed:\n{proc.stderr}")
    return proc.stdout
