# RUN: %python %s
# REQUIRES: torch
#
# A torch function called on a traced value (torch.mean(q) in a flow) is a
# TorchInFlowError, also a TypeError, whose message names the flow, the
# Python file:line and the torch call. frontend_errors.py covers the
# mistakes that need no torch.

import os

import torch

import vortex
from vortex import cache as C
from vortex import indexer as I
from vortex import testing
from vortex.flow import vFlow
from vortex.frontend import TorchInFlowError

tally = testing.Tally()
HERE = os.path.abspath(__file__)
LINE = 1 + next(i for i, l in enumerate(open(HERE).read().splitlines())
                if l.rstrip().endswith("# torch_fn"))


class TorchFunction(vFlow):
    def __init__(self):
        super().__init__()
        self.gemm = I.GeMM()
        self.topk = I.topK()
        self.reduction = C.Mean(dim=1)

    def create_cache(self, block_size, head_dim):
        return {"centroids": (1, head_dim)}

    def forward_cache(self, cache, loc, ctx):
        self.reduction(cache["k"], cache["centroids"], loc=loc, ctx=ctx)

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
