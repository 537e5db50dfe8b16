# RUN: %python %s | FileCheck %s
# REQUIRES: torch
# The outcome counts are pinned: a change in what lowers or is refused must
# show up here, not pass unnoticed.
# CHECK-NOT: FAIL
# CHECK: 918 cases: 820 lowered on both back ends, 98 refused with a reason, 0 failed; 78 ops, 0 never lowered
#
# The catalog walk: every op of vortex.indexer and vortex.cache, applied to
# every combination of operand formats and shapes from a pool, either
# lowers on both back ends or is refused with a reason.
#
# Indexer pool (G = 3, D = 8): q batched [B, 3, 8]; b = mean(q) batched
# [B, 1, 8]; r = load(c) ragged [S, 1, 8]; c the paged field [N, 1, 8]
# itself; p a parameter [1, 1, 8]; s = gemv(b, c) ragged [S, 1, 1]. Unary
# ops and reductions (dims 0, 1, 2) take each source; binary ops every
# ordered pair; selections every score. Cache pool: k and v paged
# [N, 4, 8], m = mean(k) ragged [R, 1, 8], e = l2norm(v, dim 2) ragged
# [R, 4, 1].
#
# Each case is a flow in which the op's result reaches the selection (its
# extents summed to [., 1, 1] and added to the score s) or, on the cache
# side, a field (averaged to [., 1, 1] and written). Outcomes:
# - refused: the tracer raised an error naming the op's Python call, or
#   vortex-opt's verifier refused the op itself with a located diagnostic;
# - lowered: the flow verifies, and vortex-opt lowers it with
#   --vortex-to-cpu (to the LLVM dialect) and with --vortex-nvvm-stage-lower
#   (its kernels to the NVVM dialect), both without a diagnostic.
# A verified flow that either back end fails on is a failure, and so is a
# refusal without a location or one that blames another op (a verifier's
# diagnostic or a tracer error that names another op). The counts are
# pinned above; the test also demands that every op lowers in at least one
# case.

import itertools
import re
import sys
from concurrent.futures import ThreadPoolExecutor

import torch

import vortex
from vortex import cache as C
from vortex import indexer as I
from vortex.compiler import sweep
from vortex.abs import Parameter
from vortex.compiler.driver import find_tool
from vortex.flow import vFlow
from vortex.frontend import FlowConfig
from vortex.frontend.errors import FlowError, FlowVerifyError

CFG = FlowConfig(block_size=4, page_size=4, head_dim=8, group_size=3,
                 topk_val=3, topk_ratio=0.25, reserved_bos=1,
                 reserved_eos=1, intermediate_dtype="f32", kv_dtype="f32")
OPT = find_tool("vortex-opt")
# A located diagnostic and the op it names.
DIAG = re.compile(r":\d+:\d+: error: 'vortex\.([a-z_0-9]+)' op ")

W1x8 = [[[0.5] * 8], [[-1.0] * 8]]          # conv1d weights for [., 1, 8]

# name -> (factory, arity); every factory builds a fresh op.
INDEXER_UNARY = {
    "relu": lambda: I.Relu(), "sigmoid": lambda: I.Sigmoid(),
    "silu": lambda: I.Silu(), "abs": lambda: I.Abs(),
    "add_mul": lambda: I.Add_Mul(1.0, 2.0), "exp": lambda: I.Exp(),
    "log": lambda: I.Log(alpha=1.0, beta=1.0),
    "transpose": lambda: I.Transpose(), "reshape": lambda: I.Reshape(-1, 2, 4),
    "mask_slice": lambda: I.MaskSlice(0, 1, 2, alpha=1.0, beta=0.0),
    "softmax": lambda: I.Softmax(), "normalize": lambda: I.Normalize(),
    "conv1d": lambda: I.Conv1d(W1x8),
    **{f"{k}_d{d}": (lambda R=R, d=d: R(dim=d))
       for k, R in {"mean": I.Mean, "max": I.Max, "min": I.Min,
                    "sum": I.Sum, "l2norm": I.L2Norm}.items()
       for d in (0, 1, 2)},
}
INDEXER_BINARY = {
    "add": lambda: I.Add(alpha=0.5, beta=2.0), "multiply": lambda: I.Multiply(),
    "maximum": lambda: I.Maximum(), "minimum": lambda: I.Minimum(),
    "where_eq": lambda: I.WhereEqual(), "where_ne": lambda: I.WhereNotEqual(),
    "where_gt": lambda: I.WhereGreater(),
    "where_ge": lambda: I.WhereGreaterEqual(),
    "where_lt": lambda: I.WhereLess(), "where_le": lambda: I.WhereLessEqual(),
    "gemm": lambda: I.GeMM(), "gemv": lambda: I.GeMV(),
    "kron_d2": lambda: I.Kron(dim=2), "kron_d12": lambda: I.Kron(dim=(1, 2)),
}
INDEXER_SOURCES = ["q", "b", "r", "c", "p", "s"]
CACHE_UNARY = {
    "relu": lambda: C.Relu(), "sigmoid": lambda: C.Sigmoid(),
    "silu": lambda: C.Silu(), "abs": lambda: C.Abs(),
    "add_mul": lambda: C.Add_Mul(1.0, 2.0), "exp": lambda: C.Exp(),
    "log": lambda: C.Log(alpha=1.0, beta=1.0),
    "reshape": lambda: C.Reshape(-1, 2, 16),
    "mask_slice": lambda: C.MaskSlice(0, 1, 2, alpha=1.0, beta=0.0),
    **{f"{k}_d{d}": (lambda R=R, d=d: R(dim=d))
       for k, R in {"mean": C.Mean, "max": C.Max, "min": C.Min,
                    "l2norm": C.L2Norm}.items() for d in (1, 2)},
    **{f"{k}_i{d}": (lambda R=R, d=d: R(dim=d, k=2))
       for k, R in {"mean": C.MeanInterleave, "max": C.MaxInterleave,
                    "min": C.MinInterleave,
                    "l2norm": C.L2NormInterleave}.items() for d in (1, 2)},
}
CACHE_BINARY = {
    "add": lambda: C.Add(alpha=0.5, beta=2.0), "multiply": lambda: C.Multiply(),
    "maximum": lambda: C.Maximum(), "minimum": lambda: C.Minimum(),
    "where_eq": lambda: C.WhereEqual(), "where_gt": lambda: C.WhereGreater(),
    "where_le": lambda: C.WhereLessEqual(), "gemm": lambda: C.GeMM(),
}
CACHE_SOURCES = ["k", "v", "m", "e"]


class IndexerCase(vFlow):
    """The op under test on `sources`, its result summed into the score."""

    def __init__(self, make, sources, selection=None):
        super().__init__()
        self.op, self.sources, self.selection = make(), sources, selection
        self.p = Parameter(torch.ones(1, 8))
        self.load, self.qmean, self.gemv = I.Load(), I.Mean(dim=1), I.GeMV()
        self.sum1, self.sum2 = I.Sum(dim=1), I.Sum(dim=2)
        self.add = I.Add()
        self.topk = I.topK()
        self.cmean = C.Mean(dim=1)

    def create_cache(self, block_size, head_dim):
        return {"c": (1, head_dim)}

    def forward_cache(self, cache, loc, ctx):
        self.cmean(cache["k"], cache["c"], loc=loc, ctx=ctx)

    def forward_indexer(self, q, o, cache, ctx):
        b = self.qmean(q, ctx=ctx)
        pool = {"q": q, "b": b, "c": cache["c"], "p": self.p,
                "r": self.load(cache["c"], ctx=ctx),
                "s": self.gemv(b, cache["c"], ctx=ctx)}
        if self.selection is not None:
            self.selection(self, pool, o, ctx)
            return
        x = self.op(*[pool[n] for n in self.sources], ctx=ctx)
        if x.shape[1] > 1:
            x = self.sum1(x, ctx=ctx)
        if x.shape[2] > 1:
            x = self.sum2(x, ctx=ctx)
        self.topk(self.add(pool["s"], x, ctx=ctx), o, ctx=ctx)


class CacheCase(vFlow):
    """The cache op under test on `sources`, its result averaged into a
    [1, 1] field."""

    def __init__(self, make, sources):
        super().__init__()
        self.op, self.sources = make(), sources
        self.m, self.e = C.Mean(dim=1), C.L2Norm(dim=2)
        self.mean1, self.mean2, self.copy = C.Mean(dim=1), C.Mean(dim=2), \
            C.Add_Mul()
        self.cmean = C.Mean(dim=1)
        self.load, self.qmean, self.gemv = I.Load(), I.Mean(dim=1), I.GeMV()
        self.topk = I.topK()

    def create_cache(self, block_size, head_dim):
        return {"c": (1, head_dim), "out": (1, 1)}

    def forward_cache(self, cache, loc, ctx):
        k, v = cache["k"], cache["v"]
        pool = {"k": k, "v": v, "m": self.m(k, None, loc=loc, ctx=ctx),
                "e": self.e(v, None, loc=loc, ctx=ctx)}
        self.cmean(k, cache["c"], loc=loc, ctx=ctx)
        x = self.op(*[pool[n] for n in self.sources], None, loc=loc, ctx=ctx)
        if x.shape[1] > 1:
            x = self.mean1(x, None, loc=loc, ctx=ctx)
        if x.shape[2] > 1:
            x = self.mean2(x, None, loc=loc, ctx=ctx)
        self.copy(x, cache["out"], loc=loc, ctx=ctx)

    def forward_indexer(self, q, o, cache, ctx):
        self.load(cache["out"], ctx=ctx)
        self.topk(self.gemv(self.qmean(q, ctx=ctx), cache["c"], ctx=ctx), o,
                  ctx=ctx)


def topk_on(name):
    def select(flow, pool, o, ctx):
        flow.op(pool[name], o, ctx=ctx)
    return select


def trtllm_on(name):
    def select(flow, pool, o, ctx):
        a, b = I.TopK(2), I.TopK(1)
        flow.op(a(pool[name], ctx=ctx), b(pool["s"], ctx=ctx), o, ctx=ctx)
    return select


def lower(text):
    """The diagnostics of both back ends ('' when both lower)."""
    return "\n".join(sweep.lower(OPT, text, sweep.NVVM_BACK_ENDS))


def cases():
    for name, make in INDEXER_UNARY.items():
        for src in INDEXER_SOURCES:
            yield f"indexer {name}({src})", name, \
                lambda m=make, s=src: IndexerCase(m, [s])
    for name, make in INDEXER_BINARY.items():
        for a, b in itertools.product(INDEXER_SOURCES, repeat=2):
            yield f"indexer {name}({a}, {b})", name, \
                lambda m=make, a=a, b=b: IndexerCase(m, [a, b])
    for src in INDEXER_SOURCES:
        yield f"indexer topk({src})", "topk", \
            lambda s=src: IndexerCase(I.topK, [], topk_on(s))
        yield f"indexer approx_topk({src})", "approx_topk", \
            lambda s=src: IndexerCase(
                lambda: I.approxTopK(tolerate_ratio=0.1), [], topk_on(s))
        yield f"indexer trtllm_topk+union({src})", "union", \
            lambda s=src: IndexerCase(I.Union, [], trtllm_on(s))
    for name, make in CACHE_UNARY.items():
        for src in CACHE_SOURCES:
            yield f"cache {name}({src})", "cache " + name, \
                lambda m=make, s=src: CacheCase(m, [s])
    for name, make in CACHE_BINARY.items():
        for a, b in itertools.product(CACHE_SOURCES, repeat=2):
            yield f"cache {name}({a}, {b})", "cache " + name, \
                lambda m=make, a=a, b=b: CacheCase(m, [a, b])


def mnemonics(op):
    """The dialect ops a case's op name stands for."""
    base = op.split(" ")[-1]
    if base == "union":
        return {"trtllm_topk", "union"}
    for suffix, tail in (("_i1", "_interleave"), ("_i2", "_interleave")):
        if base.endswith(suffix):
            return {base[:-len(suffix)] + tail}
    return {re.sub(r"_d[0-9]+$", "", base)}


def run_case(case):
    label, op, build = case
    flow = build()
    try:
        text = vortex.trace(flow, CFG, name="walk")
    except FlowVerifyError as err:
        m = DIAG.search(str(err))
        if m and m.group(1) in mnemonics(op):
            return "refused", str(err).splitlines()[1:2]
        return "FAIL", [f"refusal not located at the op under test: {err}"]
    except FlowError as err:
        # The tracer's refusal must name the op under test and its line.
        if err.op == type(flow.op).__name__ and err.lineno is not None:
            return "refused", [f"tracer: {str(err).splitlines()[0]}"]
        return "FAIL", [f"tracer refusal not located at the op under test "
                        f"({type(flow.op).__name__}): {err}"]
    diag = lower(text)
    if diag:
        return "FAIL", [f"verified, but a back end fails:\n{diag}"]
    return "lowered", []


def main():
    all_cases = list(cases())
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(run_case, all_cases))
    counts = {"lowered": 0, "refused": 0, "FAIL": 0}
    lowered_ops, ops = set(), set()
    for (label, op, _), (outcome, detail) in zip(all_cases, results):
        counts[outcome] += 1
        ops.add(op)
        if outcome == "lowered":
            lowered_ops.add(op)
        if outcome == "FAIL":
            print(f"FAIL {label}: " + "\n    ".join(detail))
    never = sorted(ops - lowered_ops)
    for op in never:
        print(f"FAIL {op}: lowered in no case")
    print(f"{len(all_cases)} cases: {counts['lowered']} lowered on both back "
          f"ends, {counts['refused']} refused with a reason, {counts['FAIL']} "
          f"failed; {len(ops)} ops, {len(never)} never lowered")
    return 1 if counts["FAIL"] or never else 0


if __name__ == "__main__":
    sys.exit(main())
