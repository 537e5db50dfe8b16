"""`python -m vortex verify`: vortex_torch's `verify_flow_compilable`. A
flow is traced under a grid of configs; each is verified by vortex-opt and
lowered by both back ends (`--vortex-to-cpu`: the CPU lowering to the LLVM
dialect; `--vortex-to-nvvm`: the GPU kernels to PTX, no ptxas), launching
nothing and writing nothing.

The grid: every group size of `groups` with every head dim of `head_dims`
(at the base config's block and page size), then every block size of
`block_sizes` at every page/block ratio of `page_ratios` whose page holds
at most `MAX_PAGE_SIZE` tokens (at the base group size and head dim), as
vortex_torch's sweep; an MLA flow keeps its latent's width as the only
head dim (vortex_torch's `mla_dims`). `QUICK` is a smaller grid that keeps each axis's
edges (odd G and D, the smallest and largest blocks). Each config ends as
- `ok`: verified, and both back ends lower it;
- `refused`: the flow's constructor, the tracer or the verifier refuses it,
  with a located diagnostic (a config the flow does not support), or, for
  a flow with custom ops, `--vortex-split-custom-calls` refuses to split
  it at them (the stage flows it writes are what both back ends lower);
- `FAILS`: verified, but a back end fails on it (a compiler bug: verified IR
  must lower).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, List, Mapping, Optional, Sequence, Tuple

from .. import api

from . import driver as compiler
from ..environment import SetupError
from ..frontend.config import FlowConfig
from ..frontend.errors import FlowError

GROUPS = (1, 2, 4, 8, 16, 5)
HEAD_DIMS = (32, 64, 128, 80)
BLOCK_SIZES = (4, 8, 16, 32, 64, 128)
PAGE_RATIOS = (1, 2, 4, 8, 16)
MAX_PAGE_SIZE = 256            # vortex_torch's max_page_size
QUICK = dict(groups=(1, 5, 16), head_dims=(64, 80),
             block_sizes=(4, 16, 128), page_ratios=(1, 4))
BACK_ENDS = ("--vortex-to-cpu", "--vortex-to-nvvm")
# The GPU side stopped at the NVVM dialect, before LLVM's PTX code
# generation (most of the time): for walks over hundreds of flows.
NVVM_BACK_ENDS = ("--vortex-to-cpu", "--vortex-nvvm-stage-lower")
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


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
    # An MLA flow's D is its latent's (kv_lora_rank + rope_dim), not swept.
    head_dims = (base.head_dim,) if base.is_mla else head_dims
    for g in groups:
        for d in head_dims:
            out.append((f"G {g}, D {d}, block {base.block_size}, page "
                        f"{base.page_size}",
                        base.replace(group_size=g, head_dim=d)))
    for bs in block_sizes:
        for r in page_ratios:
            if r > 1 and bs * r > MAX_PAGE_SIZE:
                continue
            out.append((f"G {base.group_size}, D {base.head_dim}, block {bs}, "
                        f"page {bs * r}",
                        base.replace(block_size=bs, page_size=bs * r)))
    return out


def lower(opt: str, text: str,
          back_ends: Sequence[str] = BACK_ENDS) -> List[str]:
    """Verified IR through both back ends (`opt` is vortex-opt): one
    "flag: diagnostics" entry for each that fails (none when both
    lower)."""
    out = []
    for flag in back_ends:
        proc = subprocess.run([opt, "-", "-o", "/dev/null", flag],
                              input=text, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        if proc.returncode != 0 or proc.stderr.strip():
            out.append(f"{flag}: " + (proc.stderr.strip() or
                                      f"exit {proc.returncode}"))
    return out


def _lower_stages(opt: str, text: str) -> List[str]:
    """A split flow's stages (`text`: the module of `<flow>_stage<k>`)
    through both back ends: the CPU lowering takes the module, the GPU
    lowering one flow at a time (vortex-compile --flow, PTX only, into a
    directory removed after)."""
    out = lower(opt, text, ("--vortex-to-cpu",))
    stages = re.findall(r"vortex\.flow @(\w+_stage\d+)\b", text)
    with tempfile.TemporaryDirectory(prefix="vortex-verify-") as where:
        for stage in stages:
            try:
                compiler.compile(text, target="sm_90", out_dir=where,
                                 flow=stage, options=["--no-cubin"],
                                 use_cache=False)
            except compiler.VortexCompileError as err:
                # The tool's command line, then its located diagnostics.
                lines = [ln for ln in str(err).splitlines()
                         if "error:" in ln] or str(err).splitlines()
                out.append(f"--vortex-to-nvvm ({stage}): " +
                           "\n".join(lines or ["failed"]))
    return out


#: The back ends' refusals around custom ops: an unsplit vortex.custom_call
#: (lib/Transforms/Fusion.cpp) and, on the GPU, a stage export no kernel
#: computes (lib/Conversion/VortexToGPU).
_STAGE_REFUSALS = ("is a custom op (a registered torch function)",
                   "'vortex.stage_out' op exports a value no kernel")


def _refusal(err: Exception) -> str:
    """One line for a config the flow refuses: a FlowError's located
    diagnostic; for another exception (an assert in the flow's own code),
    its type, message and the last line of the flow's file it came from."""
    if isinstance(err, FlowError):
        lines = [ln for ln in str(err).splitlines() if ln.strip()]
        located = next((ln for ln in lines if "error:" in ln), lines[0])
        return located.strip()
    where = ""
    for frame in reversed(traceback.extract_tb(err.__traceback__)):
        if not os.path.abspath(frame.filename).startswith(_PACKAGE):
            where = f"{frame.filename}:{frame.lineno}: "
            break
    message = str(err).splitlines()[0] if str(err) else ""
    return f"{where}{type(err).__name__}: {message}".rstrip(": ")


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
        except SetupError:
            raise
        except Exception as err:       # the flow's own code may raise too
            return Outcome(label, "refused", _refusal(err))
        if "vortex.custom_call" in text:
            # Lowered as `vortex.compile` lowers it: split at its custom
            # ops into stage flows (docs/python.md, "Custom ops"); what the
            # split refuses, at the op, is a refusal of the config.
            proc = subprocess.run([opt, "-", "--vortex-split-custom-calls"],
                                  input=text, capture_output=True, text=True)
            if proc.returncode != 0:
                # A located refusal exits 1; a crash (a signal) is a bug.
                return Outcome(label, "refused" if proc.returncode > 0
                               else "FAILS",
                               (proc.stderr.strip() or "split failed")
                               .splitlines()[0])
            diags = _lower_stages(opt, proc.stdout)
        else:
            diags = lower(opt, text)
        if not diags:
            return Outcome(label, "ok")
        first = diags[0].splitlines()[0]
        # What a back end refuses by design around custom ops (an unsplit
        # custom call; a stage export no kernel computes on the GPU,
        # docs/python.md "Custom ops") is a refusal, not a back end's bug.
        return Outcome(label, "refused" if any(
            r in diags[0] for r in _STAGE_REFUSALS) else "FAILS", first)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, points))


def report(outcomes: Sequence[Outcome],
           seconds: Optional[float] = None) -> Tuple[str, int]:
    """The table, and the exit status: 0 when every config compiles on
    both back ends, else 1."""
    lines = ["| config | outcome | diagnostic |", "|---|---|---|"]
    for o in outcomes:
        detail = o.detail.replace("|", "\\|")
        lines.append(f"| {o.label} | {o.status} | {detail} |")
    n = {s: sum(o.status == s for o in outcomes)
         for s in ("ok", "refused", "FAILS")}
    took = f" ({seconds:.1f} s)" if seconds is not None else ""
    lines.append(f"{len(outcomes)} configs: {n['ok']} compile on both back "
                 f"ends, {n['refused']} refused, {n['FAILS']} fail to "
                 f"lower{took}")
    return "\n".join(lines), int(n["ok"] != len(outcomes))


def verify(flow: Any, points: Sequence[Tuple[str, FlowConfig]],
           **kwargs: Any) -> Tuple[str, int]:
    """`sweep`, then `report` with the time it took: the verify command."""
    t0 = time.perf_counter()
    outcomes = sweep(flow, points, **kwargs)
    return report(outcomes, time.perf_counter() - t0)
