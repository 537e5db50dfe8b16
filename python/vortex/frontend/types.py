"""Result types of traced ops: vortex_torch's `profile()` rules in Python.

The dialect's ops print their result types, so the tracer must compute
them. These are the rules vortex_torch's ops apply when they profile (the
output format is batched iff every input is batched, else ragged; inner
axes broadcast when equal or 1; reductions keep the reduced axis with extent
1; every intermediate has the flow's intermediate dtype). Padding is not
applied here: `vortex-pad` makes it explicit. Where an input breaks a rule
the computed type is still well formed, and the op's C++ verifier, which
runs on the traced text, reports the error (it is the authority).
"""

from __future__ import annotations

import math
import struct
from typing import Iterable

from .config import float_literal

__all__ = ["BATCHED", "RAGGED", "PAGED", "FORMAT_NAMES", "vtensor_type",
           "workload_format", "broadcast", "f32_attr", "i64_attr"]

BATCHED, RAGGED, PAGED, PARAMETER, SLOTTED = 0, 1, 2, 3, 4
FORMAT_NAMES = {BATCHED: "batched", RAGGED: "ragged", PAGED: "paged",
                PARAMETER: "parameter", SLOTTED: "slotted"}


def vtensor_type(d0: int, d1: int, dtype: str, fmt: int) -> str:
    # A parameter is one batch-shared value: its leading extent is 1.
    lead = "1" if int(fmt) == PARAMETER else "?"
    return (f"!vortex.vtensor<{lead}x{d0}x{d1}x{dtype}, "
            f"#vortex.format<{FORMAT_NAMES[int(fmt)]}>>")


def workload_format(formats: Iterable[int]) -> int:
    """Output format of a workload-fused op (the dialect's rule): batched
    iff every input is batched or a parameter and at least one is batched,
    else ragged."""
    fs = [int(f) for f in formats]
    if all(f in (BATCHED, PARAMETER) for f in fs) and \
            BATCHED in fs:
        return BATCHED
    return RAGGED


def broadcast(a: int, b: int) -> int:
    """Broadcast of two inner extents (equal, or one of them 1); for
    extents that do not broadcast the larger one (the verifier rejects the
    op)."""
    if a == b or b == 1:
        return a
    if a == 1:
        return b
    return max(a, b)


def f32_attr(x: float) -> str:
    """An f32 attribute value (non-finite values as the f32 bit pattern)."""
    x = float(x)
    if math.isfinite(x):
        return f"{float_literal(x)} : f32"
    bits = struct.unpack(">I", struct.pack(">f", x))[0]
    return f"0x{bits:08X} : f32"


def i64_attr(x: int) -> str:
    return f"{int(x)} : i64"
