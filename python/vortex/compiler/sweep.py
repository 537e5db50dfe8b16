"""`python -m vortex verify`: vortex_torch's `verify_flow_compilable`. A
flow is traced under a grid of configs; each is verified by vortex-opt and
lowered by both back ends (`--vortex-to-cpu`, and `--vortex-nvvm-stage-lower`:
its GPU kernels to the NVVM dialect), launching nothing and writing nothing.

The grid: every group size of `groups` with every head dim of `head_dims`
(at the base config's block and page size), then every block size of
`block_sizes` at every page/block ratio of `page_ratios` (at the base
group size and head dim). Each config ends as
- `ok`: verified, and both back ends lower it;
- `refused`: the tracer or the verifier refuses it, with a located
  diagnostic (a config the flow does not support);
- `FAILS`: verified, but a back end fails on it (a compiler bug: verified IR
  must lower).
"""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, List, Mapping, Optional, Sequence, Tuple

from .. import api

from . import driver as compiler
from ..frontend.config import FlowConfig
from ..frontend.errors import FlowError

GROUPS = (1, 2, 4, 8, 16, 5)
HEAD_DIMS = (32, 64, 128, 80)
BLOCK_SIZES = (4, 8, 16, 32, 64, 128)
PAGE_RATIOS = (1, 2, 4)
BACK_ENDS = ("--vortex-to-cpu", "--vortex-nvvm-stage-lower")


@dataclass
class Outcome:
    label: str
    status: str                # ok, refused or FAILS
    detail: str = ""


def grid(base: FlowConfig, groups: Sequence[int] = GROUPS,
         head_dims: Sequence[int] = HEAD_DIMS,
         block_sizes: Sequence[int] = BLOCK_SIZES,
         page_ratios: Sequence[int] = PAGE_RATIOS
         ) -> List[Tuple[str, FlowConfig]]:
    """(label, config) of every point of the sweep."""
    out = []
    for g in groups:
        for d in head_dims:
            out.append((f"G {g}, D {d}, block {base.block_size}, page "
                        f"{base.page_size}",
                        base.replace(group_size=g, head_dim=d)))
    for bs in block_sizes:
        for r in page_ratios:
            out.append((f"G {base.group_size}, D {base.head_dim}, block {bs}, "
                        f"page {bs * r}",
                        base.replace(block_size=bs, page_size=bs * r)))
    return out


def lower(opt: str, text: str) -> List[str]:
    """Verified IR through both back ends (`opt` is vortex-opt): one
    "flag: diagnostics" entry for each that fails (none when both
    lower)."""
    out = []
    for flag in BACK_ENDS:
        proc = subprocess.run([opt, "-", "-o", "/dev/null", flag],
                              input=text, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        if proc.returncode != 0 or proc.stderr.strip():
            out.append(f"{flag}: " + (proc.stderr.strip() or
                                      f"exit {proc.returncode}"))
    return out


def sweep(flow: Any, points: Sequence[Tuple[str, FlowConfig]],
          name: Optional[str] = None,
          init_kwargs: Optional[Mapping] = None,
          jobs: int = 2) -> List[Outcome]:
    """The outcome of every point, in order."""
    opt = compiler.find_tool("vortex-opt")

    def one(point):
        label, cfg = point
        try:
            text = api.trace(flow, cfg, name=name, init_kwargs=init_kwargs)
        except FlowError as err:
            lines = [ln for ln in str(err).splitlines() if ln.strip()]
            located = next((ln for ln in lines if "error:" in ln), lines[0])
            return Outcome(label, "refused", located.strip())
        diags = lower(opt, text)
        return Outcome(label, "FAILS", diags[0].splitlines()[0]) if diags \
            else Outcome(label, "ok")

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, points))


def report(outcomes: Sequence[Outcome]) -> Tuple[str, int]:
    """The table, and the exit status: 1 if a verified config fails to
    lower or no config compiles, else 0."""
    lines = ["| config | outcome | diagnostic |", "|---|---|---|"]
    for o in outcomes:
        detail = o.detail.replace("|", "\\|")
        lines.append(f"| {o.label} | {o.status} | {detail} |")
    n = {s: sum(o.status == s for o in outcomes)
         for s in ("ok", "refused", "FAILS")}
    lines.append(f"{len(outcomes)} configs: {n['ok']} compile on both back "
                 f"ends, {n['refused']} refused, {n['FAILS']} fail to lower")
    return "\n".join(lines), int(bool(n["FAILS"]) or not n["ok"])
