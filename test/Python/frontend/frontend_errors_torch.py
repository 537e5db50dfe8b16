# RUN: %python %s
# REQUIRES: torch
#
# A torch function called on a traced value (torch.mean(q) in a flow) is a
# TorchInFlowError, also a TypeError, whose message names the flow, the
# Python file:line and the torch call. frontend_errors.py covers the
# mistakes that need no torch.

import os
import sys

import torch

import vortex
from vortex import testing
from vortex.frontend import TorchInFlowError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "Inputs"))
from centroid_base import Base  # noqa: E402

tally = testing.Tally()
HERE = os.path.abspath(__file__)
LINE = 1 + next(i for i, l in enumerate(open(HERE).read().splitlines())
                if l.rstrip().endswith("# torch_fn"))


class TorchFunction(Base):
    def forward_indexer(self, q, o, cache, ctx):
        q_mean = torch.mean(q, dim=1, keepdim=True)  # torch_fn
        self.topk(self.gemm(q_mean, cache["centroids"], ctx=ctx), o, ctx=ctx)


try:
    vortex.trace(TorchFunction, name="torch_fn")
    tally(False, "torch.mean(q): raises TorchInFlowError")
except TorchInFlowError as err:
    msg = str(err)
    missing = [what for what, ok in [
        ("flow name", "'torch_fn'" in msg),
        ("file:line", f"{HERE}:{LINE}:" in msg),
        ("torch.mean", "torch.mean" in msg),
        (".lineno", err.lineno == LINE),
        ("TypeError", isinstance(err, TypeError))] if not ok]
    tally(not missing, f"torch.mean(q): TorchInFlowError names the flow, "
          f"line {LINE} and the call", f"missing {missing} in:\n{msg}")
    print("    | " + msg.replace("\n", "\n    | "))
tally.exit(summary=True)
