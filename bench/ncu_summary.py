#!/usr/bin/env python3
"""Summarize `ncu --csv --page details` output of bench/ncu_kernels.py: per
vortex kernel launch (the second, profiled step), the duration, achieved
DRAM bandwidth, memory and compute throughput, issue-slot use, occupancy,
registers and what bounds it (docs/benchmarks.md, "Profiles").

    python3 bench/ncu_summary.py ncu.csv > summary.md
"""

from __future__ import annotations

import csv
import sys
from collections import OrderedDict

WANT = [  # (metric|unit, column)
    ("Duration|us", "µs"),
    ("DRAM Throughput|%", "DRAM %"),
    ("Memory Throughput|byte/s", "DRAM GB/s"),
    ("Compute (SM) Throughput|%", "SM %"),
    ("Issue Slots Busy|%", "issue slots %"),
    ("Achieved Occupancy|%", "achieved occ. %"),
    ("Theoretical Occupancy|%", "theor. occ. %"),
    ("Registers Per Thread|register/thread", "regs"),
]


def num(v: str) -> float:
    return float(v.replace(",", ""))


def main() -> int:
    lines = open(sys.argv[1]).read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
    rows = list(csv.reader(lines[start:]))
    hdr = {h: i for i, h in enumerate(rows[0])}
    launches: "OrderedDict[tuple, dict]" = OrderedDict()
    for r in rows[1:]:
        if len(r) <= hdr["Metric Value"]:
            continue
        name = r[hdr["Kernel Name"]]
        if not any(f"_{step}_" in name for step in ("indexer", "cache",
                                                     "attend")):
            continue
        key = (int(r[hdr["ID"]]), name)
        m = launches.setdefault(key, {"grid": r[hdr["Grid Size"]],
                                      "block": r[hdr["Block Size"]]})
        metric, unit, value = (r[hdr["Metric Name"]], r[hdr["Metric Unit"]],
                               r[hdr["Metric Value"]])
        if metric == "Duration" and unit in ("ms", "us", "usecond",
                                             "msecond", "ns", "nsecond"):
            scale = {"ms": 1e3, "msecond": 1e3, "ns": 1e-3,
                     "nsecond": 1e-3}.get(unit, 1.0)
            m["Duration|us"] = num(value) * scale
        elif value:
            try:
                m[f"{metric}|{unit}"] = num(value)
            except ValueError:
                pass
    # The profiled round is the second half of the launches (the first is
    # the warm-up: bench/ncu_kernels.py runs the same launches twice).
    items = list(launches.items())
    out = [(name, m) for (_, name), m in items[len(items) // 2:]]
    print("| kernel | grid x block | " +
          " | ".join(label for _, label in WANT) + " | bound |")
    print("|---|---|" + "---|" * len(WANT) + "---|")
    for name, m in out:
        if m.get("Memory Throughput|byte/s"):
            m["Memory Throughput|byte/s"] /= 1e9
        vals = [m.get(k) for k, _ in WANT]
        dram, sm = m.get("DRAM Throughput|%", 0), m.get(
            "Compute (SM) Throughput|%", 0)
        issue = m.get("Issue Slots Busy|%", 0)

        if dram >= 60:
            bound = "DRAM bandwidth"
        elif max(sm, issue) >= 60:
            bound = "instruction issue"
        else:
            bound = "latency (neither DRAM nor issue above 60%)"
        cells = ["-" if v is None else f"{v:.1f}" for v in vals]
        print(f"| {name} | {m['grid']} x {m['block']} | " +
              " | ".join(cells) + f" | {bound} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
