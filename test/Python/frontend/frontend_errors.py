# RUN: %python %s
#
# Every mistake a flow author can make is a vortex.FlowError whose message
# names the flow, the op and the Python file:line at fault (and whose .flow,
# .op, .lineno say the same):
# - wrong formats: Save into a non-paged value, topK of a batched score
#   (found by vortex-opt's verifiers, mapped back to the Python call);
# - wrong shapes: GeMM with different contraction extents, MaskSlice out
#   of range (vortex-opt), and an op that is not last after topK;
# - a flow-level rule (a field nothing writes) at the class line;
# - an op object called at two call sites (OpReuseError);
# - torch code on a traced value: Gen-1's q.mean(dim=1, keepdim=True), an
#   operator (TorchInFlowError, also a TypeError; a torch function:
#   frontend_errors_torch.py, which needs torch);
# - cache["nope"] (MissingFieldError, also a KeyError);
# - an op the dialect lacks (UnsupportedOpError), also one of vortex_torch's
#   custom ops imported by name (GTGroupScore) and a misspelt op (Gemm,
#   which says GeMM); a non-op name is an ImportError naming the module;
#   bad constructor arguments (FlowArgumentError; a per-layer Parameter's
#   lookup row outside its layers), a wrong call form, the context passed positionally,
#   a non-value argument, a value of forward_cache used by forward_indexer,
#   a bad create_cache.

import os
import sys

import vortex
import vortex.abs
from vortex import cache as C
from vortex import indexer as I
from vortex import testing
# An op of vortex_torch's custom-op registry: the import works, building it
# raises the named error (never a bare ImportError).
from vortex.indexer import GTGroupScore
from vortex.frontend import (FlowArgumentError, FlowTraceError,
                             FlowVerifyError, MissingFieldError, OpReuseError,
                             TorchInFlowError, UnsupportedOpError)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "Inputs"))
from centroid_base import Base  # noqa: E402

tally = testing.Tally()
HERE = os.path.abspath(__file__)
SOURCE = open(HERE).read().splitlines()


def line_of(marker):
    """The line of this file that carries `# <marker>`."""
    return 1 + next(i for i, l in enumerate(SOURCE)
                    if l.rstrip().endswith("# " + marker))


class SaveIntoRagged(Base):
    def __init__(self):
        super().__init__()
        self.save = I.Save()

    def forward_indexer(self, q, o, cache, ctx):
        score = self.gemm(self.mean(q, ctx=ctx), cache["centroids"], ctx=ctx)
        self.save(score, score, ctx=ctx)  # save_ragged
        self.topk(score, o, ctx=ctx)


class TopKBatched(Base):
    def __init__(self):
        super().__init__()
        self.heads = I.Mean(dim=2)

    def forward_indexer(self, q, o, cache, ctx):
        self.gemm(q, cache["centroids"], ctx=ctx)          # reads the field
        s = self.mean(self.heads(q, ctx=ctx), ctx=ctx)     # [B, 1, 1] batched
        self.topk(s, o, ctx=ctx)  # topk_batched


class GeMMMismatch(Base):
    def __init__(self):
        super().__init__()
        self.fold = C.MeanInterleave(dim=2, k=2)
        self.half = C.Mean(dim=1)
        self.gemm2 = I.GeMM()

    def create_cache(self, block_size, head_dim):
        return {"centroids": (1, head_dim), "half": (1, head_dim // 2)}

    def forward_cache(self, cache, loc, ctx):
        super().forward_cache(cache, loc, ctx)
        folded = self.fold(cache["k"], None, loc=loc, ctx=ctx)
        self.half(folded, cache["half"], loc=loc, ctx=ctx)

    def forward_indexer(self, q, o, cache, ctx):
        self.gemm(self.mean(q, ctx=ctx), cache["half"], ctx=ctx)  # gemm_k
        self.topk(self.gemm2(q, cache["centroids"], ctx=ctx), o, ctx=ctx)


class MaskOutOfRange(Base):
    def __init__(self):
        super().__init__()
        self.mul = I.Multiply()
        self.mask = I.MaskSlice(start=0, end=200, dim=2)
        self.apply = I.Multiply()
        self.sum, self.mx = I.Sum(dim=2), I.Max(dim=1)

    def forward_indexer(self, q, o, cache, ctx):
        s = self.mul(q, cache["centroids"], ctx=ctx)
        m = self.mask(s, ctx=ctx)  # mask_range
        s = self.mx(self.sum(self.apply(s, m, ctx=ctx), ctx=ctx), ctx=ctx)
        self.topk(s, o, ctx=ctx)


class NotLast(Base):
    def __init__(self):
        super().__init__()
        self.after = I.Relu()

    def forward_indexer(self, q, o, cache, ctx):
        score = self.gemm(self.mean(q, ctx=ctx), cache["centroids"], ctx=ctx)
        self.topk(score, o, ctx=ctx)  # not_last
        self.after(score, ctx=ctx)


class FieldNeverWritten(Base):  # never_written
    # A field the indexer reads but nothing writes. (One written and never
    # read is fine, as in vortex_torch: test/Python/cpu/write_only_field.py.)
    def __init__(self):
        super().__init__()
        self.gemm2, self.add = I.GeMM(), I.Add()

    def create_cache(self, block_size, head_dim):
        return {"centroids": (1, head_dim), "unset": (1, head_dim)}

    def forward_indexer(self, q, o, cache, ctx):
        m = self.mean(q, ctx=ctx)
        score = self.add(self.gemm(m, cache["centroids"], ctx=ctx),
                         self.gemm2(m, cache["unset"], ctx=ctx), ctx=ctx)
        self.topk(score, o, ctx=ctx)


class Reused(Base):
    def forward_indexer(self, q, o, cache, ctx):
        m = self.mean(q, ctx=ctx)
        m2 = self.mean(m, ctx=ctx)  # reused
        self.topk(self.gemm(m2, cache["centroids"], ctx=ctx), o, ctx=ctx)


class Gen1(Base):
    def forward_indexer(self, q, o, cache, ctx):
        q_mean = q.mean(dim=1, keepdim=True)  # gen1
        self.topk(self.gemm(q_mean, cache["centroids"], ctx=ctx), o, ctx=ctx)


class Operator(Base):
    def forward_indexer(self, q, o, cache, ctx):
        score = self.gemm(self.mean(q, ctx=ctx), cache["centroids"], ctx=ctx)
        self.topk(score * 2, o, ctx=ctx)  # operator


class MissingField(Base):
    def forward_indexer(self, q, o, cache, ctx):
        score = self.gemm(self.mean(q, ctx=ctx), cache["nope"], ctx=ctx)  # nope
        self.topk(score, o, ctx=ctx)


class Unsupported(Base):
    def __init__(self):
        super().__init__()
        self.score = I.MetaData()  # unsupported


class CustomOp(Base):
    def __init__(self):
        super().__init__()
        self.score = GTGroupScore(8)  # custom_op


class Misspelt(Base):
    def __init__(self):
        super().__init__()
        self.gemm = I.Gemm()  # misspelt


class PerLayerWeights:
    shape = (4, 1, 8)      # [L, r, c]: vortex_torch's per-layer weights

    def reshape(self, *shape):
        return self


class PerLayer(Base):
    def __init__(self):
        super().__init__()
        self.w = vortex.abs.Parameter(PerLayerWeights(), [0, 4])  # per_layer


class BadDim(Base):
    def __init__(self):
        super().__init__()
        self.bad = I.Max(dim=3)  # bad_dim


class CallForm(Base):
    def forward_indexer(self, q, o, cache, ctx):
        score = self.gemm(self.mean(q, ctx=ctx), ctx=ctx)  # call_form
        self.topk(score, o, ctx=ctx)


class NotAValue(Base):
    def forward_indexer(self, q, o, cache, ctx):
        score = self.gemm(self.mean(q, ctx=ctx), 0.5, ctx=ctx)  # not_value
        self.topk(score, o, ctx=ctx)


class CrossSide(Base):
    def forward_cache(self, cache, loc, ctx):
        self.stash = cache["k"]
        super().forward_cache(cache, loc, ctx)

    def forward_indexer(self, q, o, cache, ctx):
        score = self.gemm(self.mean(q, ctx=ctx), self.stash, ctx=ctx)  # cross
        self.topk(score, o, ctx=ctx)


class PositionalCtx(Base):
    def forward_indexer(self, q, o, cache, ctx):
        q_mean = self.mean(q, ctx)  # positional_ctx
        self.topk(self.gemm(q_mean, cache["centroids"], ctx=ctx), o, ctx=ctx)


class DeclaresK(Base):
    def create_cache(self, block_size, head_dim):  # declares_k
        return {"k": (1, head_dim)}


CASES = [
    # (flow class, error class, op, marker, text the message must hold)
    (SaveIntoRagged, FlowVerifyError, "Save", "save_ragged", "paged"),
    (TopKBatched, FlowVerifyError, "topK", "topk_batched", "ragged"),
    (GeMMMismatch, FlowVerifyError, "GeMM", "gemm_k", "contraction"),
    (MaskOutOfRange, FlowVerifyError, "MaskSlice", "mask_range", "200"),
    (NotLast, FlowVerifyError, "topK", "not_last", "last op"),
    (FieldNeverWritten, FlowVerifyError, None, "never_written",
     "never written"),
    (Reused, OpReuseError, "Mean", "reused", "already called"),
    (Gen1, TorchInFlowError, None, "gen1", "Mean(dim=...)"),
    (Operator, TorchInFlowError, None, "operator", "'*'"),
    (MissingField, MissingFieldError, None, "nope", "'nope'"),
    (Unsupported, UnsupportedOpError, "MetaData", "unsupported",
     "does not support"),
    (CustomOp, UnsupportedOpError, "GTGroupScore", "custom_op",
     "custom ops"),
    (Misspelt, UnsupportedOpError, "Gemm", "misspelt",
     "did you mean GeMM?"),
    (PerLayer, FlowArgumentError, "Parameter", "per_layer",
     "layer_lookup[1] = 4 is outside [0, 4)"),
    (BadDim, FlowArgumentError, "Max", "bad_dim", "dim must be"),
    (CallForm, FlowTraceError, "GeMM", "call_form", "op(x, y, ctx=ctx)"),
    (NotAValue, FlowTraceError, "GeMM", "not_value", "got float"),
    (CrossSide, FlowTraceError, "GeMM", "cross", "forward_cache"),
    (DeclaresK, FlowTraceError, "create_cache", "declares_k", "'k'"),
    (PositionalCtx, FlowTraceError, "Mean", "positional_ctx", "ctx=ctx"),
]

# Errors of an op's constructor name the flow by its class (the flow's
# symbol is not known yet).
AT_CONSTRUCTION = (Unsupported, CustomOp, Misspelt, PerLayer, BadDim)

for cls, exc, op, marker, detail in CASES:
    name = f"frontend_errors_{cls.__name__.lower()}"
    line = line_of(marker)
    where = f"{HERE}:{line}:"
    try:
        vortex.trace(cls, name=name)
        tally(False, f"{cls.__name__}: raises {exc.__name__}")
        continue
    except exc as err:
        msg = str(err)
        if cls in AT_CONSTRUCTION:
            name = cls.__name__
        problems = [p for p, bad in [
            ("flow name", f"'{name}'" not in msg),
            ("file:line", where not in msg),
            ("op name", op is not None and op not in msg),
            (repr(detail), detail not in msg),
            (".lineno", err.lineno != line),
            (".op", op is not None and err.op != op),
            (".flow", err.flow != name)] if bad]
        tally(not problems, f"{cls.__name__}: {exc.__name__} names the flow, "
              f"the op and line {line}", f"missing {problems} in:\n{msg}")
        print("    | " + msg.replace("\n", "\n    | "))
    except Exception as err:  # noqa: BLE001
        tally(False, f"{cls.__name__}: raises {exc.__name__}",
              f"{type(err).__name__}: {err}")

# The builtin bases vortex_torch code may catch.
for cls, base in [(MissingField, KeyError), (Gen1, TypeError),
                  (BadDim, ValueError), (Unsupported, NotImplementedError)]:
    try:
        vortex.trace(cls)
    except base as err:
        tally(isinstance(err, vortex.FlowError),
              f"{cls.__name__}: the error is also a {base.__name__}")

# A name that is not an op (not capitalized) is the usual ImportError naming
# the module: only op names import as unsupported ops.
for module in ("vortex.indexer", "vortex.cache"):
    try:
        exec(f"from {module} import not_an_op")
        tally(False, f"{module}: a non-op name raises ImportError")
    except ImportError as err:
        tally(module in str(err) and "not_an_op" in str(err),
              f"{module}: a non-op name raises ImportError naming the "
              "module", str(err))

tally.exit(summary=True)
