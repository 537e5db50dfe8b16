#!/usr/bin/env python3
"""Flow-to-cubin time of vortex-compile (docs/benchmarks.md, "Compile time").

    python3 bench/bench_compile.py [--compile build/bin/vortex-compile [OTHER ...]]
        [--options "" "to-gpu=topk-threads=256" ...]
        [--cache none prebuilt installed cold warm edit other]
        [--flows block_sparse_attention path/to/flow.mlir ...] [--runs 7]
        [--md OUT.md]

Each flow (a name of examples/, or a .mlir file) is compiled `--runs` times
for sm_90, to a cubin and with --no-cubin (PTX only), one process at a time
on an otherwise idle machine; the wall time of each process is reported
as min / median / max. Each compiler runs with each `--options` string
(vortex-compile options without their leading "--", space-separated;
default: none); with
several compilers or options their runs alternate, so that they see the same
machine: a shared machine's speed drifts by tens of percent within an hour.

`--cache` runs each variant in kernel-cache modes (vortex-compile
--kernel-cache; docs/gpu.md, "Kernel cache"): `none` without the cache and
without prebuilt kernels (every kernel compiled), `prebuilt` without the
cache, with the prebuilt kernels the build made (share/vortex/kernels beside
the compiler, read-only: a plain `vortex-compile` where vortex was built or
installed; docs/gpu.md, "Prebuilt kernels"), `installed` with an empty
cache and those prebuilt kernels (the first compile on such a machine, as
`vortex.compile` runs it), `cold` with an empty one and no prebuilt kernels,
`warm` with one that holds the flow already, and
`edit` with one that holds the flow and a compile of the flow edited on its
score side (its query heads per KV head changed by --vortex-set-config,
flow name kept: the score kernel changes, the top-k and cache kernels do
not), and `other` with one that holds another flow (`--other`, default
block_sparse_attention; for that flow itself gqa_quest_sparse_attention): a
first compile of a flow after another, whose top-k kernels it shares. Every
mode but `prebuilt` and `installed` runs with --prebuilt-kernels=none.
Preparing a cache is not timed.
"""

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_FLOWS = ["block_sparse_attention", "gqa_quest_sparse_attention",
                 "running_avg_block_sparse"]


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def flow_source(flow: str) -> str:
    """A flow of examples/ by name, or a .mlir file by path."""
    if flow.endswith(".mlir"):
        return os.path.abspath(flow)
    return os.path.join(ROOT, "examples", flow + ".mlir")


def time_once(cmd) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--compile", nargs="+",
                    default=[os.path.join(ROOT, "build", "bin",
                                          "vortex-compile")])
    ap.add_argument("--options", nargs="+", default=[""],
                    help="vortex-compile options without the leading --, "
                    "one string per variant")
    ap.add_argument("--flows", nargs="*", default=DEFAULT_FLOWS)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--chip", default="sm_90")
    ap.add_argument("--md", default=None, help="markdown output path")
    ap.add_argument("--cache", nargs="+", default=["none"],
                    choices=["none", "prebuilt", "installed", "cold", "warm",
                             "edit", "other"],
                    help="kernel-cache modes (default: none)")
    ap.add_argument("--other", default="block_sparse_attention",
                    help="the flow an `other` cache holds")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    for tool in args.compile:
        if not os.access(tool, os.X_OK):
            ap.error(f"--compile: {tool} is not an executable "
                     "(build it: scripts/build.sh vortex-compile)")
    for mode in set(args.cache) & {"prebuilt", "installed"}:
        for tool in args.compile:
            beside = os.path.join(os.path.dirname(os.path.dirname(
                os.path.realpath(tool))), "share", "vortex", "kernels")
            if not os.path.isdir(beside):
                ap.error(f"--cache {mode}: no prebuilt kernels at {beside} "
                         "(built with vortex-compile: scripts/build.sh)")
    for flow in args.flows + [args.other]:
        if not os.path.isfile(flow_source(flow)):
            ap.error(f"--flows: no {flow} (a name of examples/ or a .mlir "
                     "file)")

    lines = [f"machine: {cpu_model()}, {os.cpu_count()} cores; "
             f"{args.runs} runs per row, wall seconds min / median / max",
             "",
             "| compiler | options | kernel cache | flow | to cubin | "
             "PTX only (--no-cubin) |",
             "|---|---|---|---|---|---|"]
    variants = [(tool, opts, mode) for tool in args.compile
                for opts in args.options for mode in args.cache]
    with tempfile.TemporaryDirectory() as out:
        for flow in args.flows:
            src = flow_source(flow)
            edited = os.path.join(
                out, os.path.basename(src).replace(".mlir", ".edited.mlir"))
            if "edit" in args.cache:
                opt = os.path.join(os.path.dirname(args.compile[0]),
                                   "vortex-opt")
                with open(edited, "w") as f:
                    subprocess.run([opt, src, "--vortex-set-config="
                                    "group-size=5"], check=True, stdout=f)
            times = {}

            other = args.other if args.other != flow else next(
                f for f in DEFAULT_FLOWS if f != flow)
            other_src = flow_source(other)

            def command(tool, opts, extra, cache, source=None):
                source = source or (edited if cache == "edit" else src)
                return [tool, source, "-o", out,
                        f"--target={args.chip}",
                        *("--" + o for o in opts.split()),
                        *([extra] if extra else []),
                        *([f"--kernel-cache={cache_dir}"]
                          if cache not in ("none", "prebuilt") else []),
                        *(["--prebuilt-kernels=none"]
                          if cache not in ("prebuilt", "installed") else [])]

            def prepare(tool, opts, extra, mode):
                """An untimed cache for `mode` at cache_dir."""
                shutil.rmtree(cache_dir, ignore_errors=True)
                if mode in ("warm", "edit", "other"):
                    cmd = command(tool, opts, extra, "warm",
                                  other_src if mode == "other" else None)
                    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)

            cache_dir = os.path.join(out, "kernel-cache")
            for tool, opts, mode in variants:
                prepare(tool, opts, "", mode)
                time_once(command(tool, opts, "", mode))
            for _ in range(args.runs):
                for tool, opts, mode in variants:
                    for extra in ("", "--no-cubin"):
                        prepare(tool, opts, extra, mode)
                        times.setdefault((tool, opts, mode, extra),
                                         []).append(time_once(
                                             command(tool, opts, extra, mode)))
            for tool, opts, mode in variants:
                cells = []
                for extra in ("", "--no-cubin"):
                    t = sorted(times[(tool, opts, mode, extra)])
                    cells.append(f"{t[0]:.2f} / {statistics.median(t):.2f} "
                                 f"/ {t[-1]:.2f}")
                label = f"other ({other})" if mode == "other" else mode
                lines.append(f"| {tool} | {opts or '-'} | {label} | {flow} | "
                             f"{cells[0]} | {cells[1]} |")
                print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.md:
        with open(args.md, "w") as f:
            f.write(f"command: {' '.join(sys.argv)}\n\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
