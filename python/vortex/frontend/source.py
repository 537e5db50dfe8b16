"""Call sites in the user's Python source.

Every traced op carries the MLIR location `loc("<file>":<line>:<col>)` of
the Python expression that called it, so that a diagnostic of vortex-opt (or
of any later pass) names the line of the flow module to fix. The user's frame
is the innermost one outside the front end's own packages and outside torch
(whose dispatch sits between a torch call and `__torch_function__`).
"""

from __future__ import annotations

import linecache
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

__all__ = ["Site", "user_site", "definition_site", "mlir_string"]

# Modules whose frames are never the user's call site. `vortex.flows` (the
# shipped flows) is user code as far as locations go.
_INTERNAL = ("vortex.abs", "vortex.frontend", "vortex.indexer",
             "vortex.cache", "vortex.flow", "torch", "numpy")

_POSITIONS: Dict[object, List[Tuple]] = {}


def _internal(module: Optional[str]) -> bool:
    if not module:
        return False
    return any(module == p or module.startswith(p + ".") for p in _INTERNAL)


def mlir_string(s: str) -> str:
    """`s` as an MLIR string literal (quotes included)."""
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ord(ch) < 0x20:
            out.append(f"\\{ord(ch):02X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


@dataclass(frozen=True)
class Site:
    """A position in a Python file (1-based line and column)."""

    filename: str
    lineno: int
    col: int = 1
    function: str = ""

    def location(self) -> str:
        return f"{self.filename}:{self.lineno}:{self.col}"

    def mlir(self) -> str:
        return f"loc({mlir_string(self.filename)}:{self.lineno}:{self.col})"

    def source(self) -> str:
        return linecache.getline(self.filename, self.lineno).strip()

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno}"


def _column(frame) -> int:
    """1-based column of the instruction the frame is executing (the start
    of the call expression for a frame that is calling)."""
    code = frame.f_code
    positions = _POSITIONS.get(code)
    if positions is None:
        positions = list(code.co_positions()) if hasattr(
            code, "co_positions") else []
        _POSITIONS[code] = positions
    i = frame.f_lasti // 2
    if 0 <= i < len(positions):
        col = positions[i][2]
        if col is not None:
            return col + 1
    return 1


def user_site(depth: int = 1) -> Optional[Site]:
    """The innermost frame outside the front end (starting `depth` frames
    above the caller)."""
    frame = sys._getframe(depth)
    while frame is not None and _internal(frame.f_globals.get("__name__")):
        frame = frame.f_back
    if frame is None:
        return None
    return Site(frame.f_code.co_filename, frame.f_lineno, _column(frame),
                frame.f_code.co_name)


def user_frame_locals(depth: int = 1):
    """Local variables of every user frame from the innermost outwards
    (used to find the flow whose __init__ builds an op)."""
    frame = sys._getframe(depth)
    while frame is not None:
        if not _internal(frame.f_globals.get("__name__")):
            yield frame.f_locals
        frame = frame.f_back


def definition_site(cls: type) -> Optional[Site]:
    """Where `class <cls.__name__>` is written: found from the code of its
    methods and the file's text (inspect.getsource needs the class's module
    in sys.modules, which a flow file loaded by path may not be)."""
    prefix = cls.__qualname__ + "."
    codes = [f.__code__ for f in vars(cls).values()
             if hasattr(f, "__code__") and
             getattr(f, "__qualname__", "").startswith(prefix)]
    if not codes:
        return None
    filename = codes[0].co_filename
    first = min(c.co_firstlineno for c in codes if c.co_filename == filename)
    lines = linecache.getlines(filename)
    needle = f"class {cls.__name__}"
    for lineno in range(min(first, len(lines)), 0, -1):
        text = lines[lineno - 1]
        stripped = text.lstrip()
        if stripped.startswith(needle) and \
                stripped[len(needle):len(needle) + 1] in ("(", ":", " "):
            return Site(filename, lineno, len(text) - len(stripped) + 1)
    return Site(filename, first, 1)
