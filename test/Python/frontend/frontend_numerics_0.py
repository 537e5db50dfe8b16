# RUN: %python %s
# REQUIRES: torch, numpy
#
# The shipped flows traced from Python (vortex.flows), half 0 of 2 (lit runs
# the halves in parallel; together they cover vortex.flows.SHIPPED, the 14
# files of examples/): each is compiled for the CPU from its traced IR,
# loaded as torch ops (vortex.load) and run on torch CPU tensors against
# the float64 numpy reference (vortex.semantics.reference.FLOWS): a cache step on
# every row block, then indexer steps with fresh queries (one more for
# flows that save state); fields to rtol = atol = 1e-5, the selection up to
# ties (vortex.testing.torch_checks.check_numerics). Rows: empty, one block,
# within budget, just and well over it, past the ratio term.

import vortex
from vortex import api, flows, testing
from vortex.testing import torch_checks as tt

tally = testing.Tally()
names = sorted(flows.SHIPPED)
for name in names[0::2]:
    try:
        flow = vortex.load(api.compile_shipped(name))
    except Exception as err:  # noqa: BLE001
        tally(False, f"{name}: trace, compile, load",
              f"{type(err).__name__}: {err}")
        continue
    tally(flow.name == name,
          f"{name}: traced from Python, compiled, loaded as {flow.indexer_op}")
    tt.check_numerics(flow, tally)
tally.exit(summary=True)
