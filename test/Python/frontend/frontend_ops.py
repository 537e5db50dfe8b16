# RUN: %python %s
# REQUIRES: numpy
#
# The op catalog of vortex.indexer / vortex.cache, through the tracer.
# - test/Python/ops/ops_indexer.py's probe flow (every indexer op: gemm, gemv,
#   softmax, normalize, conv1d, the unary ops, the where masks, minimum,
#   maximum, add, multiply, mask_slice, transpose, reshape, kron, the
#   reductions over dims 0, 1, 2, load, save, topk), written as a vortex_torch
#   flow, traces to the same IR as its hand-written text (both printed by
#   vortex-opt).
# - test/Python/ops/ops_cache.py's probe flow (every cache op, output=None
#   intermediates, a field written then read, Fill), written as a
#   vortex_torch flow, computes the same fields as that test's reference on
#   the CPU (its IR differs only in how a value is copied into a second
#   field, which vortex_torch has no op for).
# - The trtllm pair TopK(k) + Union and approxTopK trace and verify.
# - Cache forms: a ragged `output` is rebound to the result; a field read
#   after Fill reads the filled constant.
# - Every exported op class has a call form; the names vortex_torch has and
#   the dialect lacks raise UnsupportedOpError naming the op when built.

import importlib.util
import os

import vortex
from vortex import cache as C
from vortex import indexer as I
from vortex import testing
from vortex.flow import vFlow
from vortex.frontend import FlowConfig, UnsupportedOpError
from vortex.frontend.verify import canonical_ir

HERE = os.path.dirname(os.path.abspath(__file__))
tally = testing.Tally()


def load_test(name):
    """A test of ../ops (its module-level definitions: TEXT, the probes)."""
    spec = importlib.util.spec_from_file_location(
        f"vortex_test_{name}", os.path.join(HERE, "..", "ops", name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)       # defines TEXT etc.; main() not run
    return mod


# ---------------------------------------------------------------------------
# ops_indexer.py's probe flow, the vortex_torch way
# ---------------------------------------------------------------------------

OI = load_test("ops_indexer")
PROBE_CONFIG = FlowConfig(block_size=4, page_size=4, head_dim=8, group_size=3,
                          topk_val=3, topk_ratio=0.25, reserved_bos=1,
                          reserved_eos=1, intermediate_dtype="f32",
                          kv_dtype="f32")
UNARY_CLS = {"relu": I.Relu, "sigmoid": I.Sigmoid, "silu": I.Silu,
             "abs": I.Abs, "add_mul": I.Add_Mul, "exp": I.Exp}
WHERE_CLS = {"eq": I.WhereEqual, "ne": I.WhereNotEqual, "gt": I.WhereGreater,
             "ge": I.WhereGreaterEqual, "lt": I.WhereLess,
             "le": I.WhereLessEqual}
REDUCE_CLS = {"mean": I.Mean, "max": I.Max, "min": I.Min, "sum": I.Sum,
              "l2norm": I.L2Norm}


class ProbeIndexerOps(vFlow):
    def __init__(self):
        super().__init__()
        self.fields = [(f, r, c) for f, r, c in OI.CACHE_FIELDS] + \
            [(f, r, c) for f, r, c, _ in OI.probes]
        self.cmean = C.Mean(dim=1)
        self.cmaxi = C.MaxInterleave(dim=1, k=2)
        self.loads = {f: I.Load() for f, _, _ in self.fields}
        self.gemm = I.GeMM()
        self.softmax = I.Softmax(dim=0, scale=0.5)
        self.normalize = I.Normalize()
        self.conv = I.Conv1d(OI.CONV_W)
        self.unary = {op: UNARY_CLS[op](a, b) for op, a, b in OI.UNARY}
        self.log = I.Log(alpha=1.0, beta=1.0)
        self.ma = I.MaskSlice(0, 2, 2, alpha=1.0, beta=0.0)
        self.mb = I.MaskSlice(1, 3, 2, alpha=1.0, beta=0.0)
        self.where = {p: WHERE_CLS[p]() for p, _, _ in OI.WHERE}
        self.minimum = I.Minimum()
        self.add = I.Add(alpha=0.5, beta=-2.0)
        self.softmax2 = I.Softmax()
        self.normalize2 = I.Normalize()
        self.conv2 = I.Conv1d(OI.CONV_W38)
        self.maximum = I.Maximum()
        self.transpose = I.Transpose()
        self.reshape = I.Reshape(-1, 4, 6)
        self.kron2 = I.Kron(dim=2)
        self.kron12 = I.Kron(dim=(1, 2))
        self.gemm_fields = I.GeMM()
        self.m1 = I.MaskSlice(start=1, end=2, dim=1, alpha=2.0, beta=-1.0)
        self.apply_m1 = I.Multiply()
        self.reduce = {(k, d): REDUCE_CLS[k](dim=d)
                       for k in OI.REDUCE for d in (1, 2, 0)}
        self.bcast = {k: I.Add(alpha=0.0, beta=1.0) for k in OI.REDUCE}
        self.q_mean = I.Mean(dim=1)
        self.gemv = I.GeMV()
        self.saves = {f: I.Save() for f, _, _, _ in OI.probes}
        self.output_func = I.topK()

    def create_cache(self, block_size, head_dim):
        return {f: (r, c) for f, r, c in self.fields}

    def forward_cache(self, cache, loc, ctx):
        self.cmean(cache["k"], cache["c"], loc=loc, ctx=ctx)
        self.cmaxi(cache["k"], cache["mx"], loc=loc, ctx=ctx)

    def forward_indexer(self, q, o, cache, ctx):
        for f, _, _ in self.fields:
            self.loads[f](cache[f], ctx=ctx)
        c, mx = cache["c"], cache["mx"]
        v = {"g": self.gemm(q, c, ctx=ctx)}
        v["sm"] = self.softmax(v["g"], ctx=ctx)
        v["nm"] = self.normalize(v["g"], ctx=ctx)
        v["cv"] = self.conv(v["g"], ctx=ctx)
        for op, _, _ in OI.UNARY:
            v[f"u_{op}"] = self.unary[op](v["g"], ctx=ctx)
        v["u_log"] = self.log(v["u_abs"], ctx=ctx)
        v["ma"] = self.ma(v["g"], ctx=ctx)
        v["mb"] = self.mb(v["g"], ctx=ctx)
        for p, x, y in OI.WHERE:
            v[f"w_{p}"] = self.where[p](v[x], v[y], ctx=ctx)
        v["mn"] = self.minimum(q, c, ctx=ctx)
        ad = v["ad"] = self.add(q, c, ctx=ctx)
        v["sm2"] = self.softmax2(ad, ctx=ctx)
        v["nm2"] = self.normalize2(ad, ctx=ctx)
        v["cv2"] = self.conv2(ad, ctx=ctx)
        v["mxm"] = self.maximum(c, mx, ctx=ctx)
        v["tr"] = self.transpose(v["g"], ctx=ctx)
        v["rs"] = self.reshape(ad, ctx=ctx)
        v["kr2"] = self.kron2(q, c, ctx=ctx)
        v["kr12"] = self.kron12(v["g"], mx, ctx=ctx)
        v["gr"] = self.gemm_fields(c, mx, ctx=ctx)
        v["adm"] = self.apply_m1(ad, self.m1(ad, ctx=ctx), ctx=ctx)
        for k in OI.REDUCE:
            v[f"r1_{k}"] = self.reduce[k, 1](ad, ctx=ctx)
            v[f"r2_{k}"] = self.reduce[k, 2](ad, ctx=ctx)
            r0 = self.reduce[k, 0](v["g"], ctx=ctx)
            v[f"r0b_{k}"] = self.bcast[k](v["g"], r0, ctx=ctx)
        score = self.gemv(self.q_mean(q, ctx=ctx), c, ctx=ctx)
        for f, _, _, value in OI.probes:
            self.saves[f](v[value], cache[f], ctx=ctx)
        self.output_func(score, o, ctx=ctx)


traced = vortex.trace(ProbeIndexerOps(), PROBE_CONFIG,
                      name="probe_indexer_ops")
want, got = canonical_ir(OI.TEXT), canonical_ir(traced)
tally(want == got, "ops_indexer.py's probe flow traced from Python is the "
      "same IR as its text",
      "\n".join(l for l in got.splitlines() if l not in want.splitlines()))

# ---------------------------------------------------------------------------
# ops_cache.py's probe flow: same fields as its reference, on the CPU
# ---------------------------------------------------------------------------

OC = load_test("ops_cache")
CU = {"relu": C.Relu, "silu": C.Silu, "abs": C.Abs, "add_mul": C.Add_Mul}
CR = {"max": (C.Max, C.MaxInterleave), "min": (C.Min, C.MinInterleave),
      "mean": (C.Mean, C.MeanInterleave),
      "l2norm": (C.L2Norm, C.L2NormInterleave)}


class ProbeCacheOps(vFlow):
    def __init__(self):
        super().__init__()
        self.red = {}
        for kind, (R, RI) in CR.items():
            self.red[kind] = (RI(dim=1, k=2), RI(dim=2, k=4), R(dim=2),
                              R(dim=1))
        self.gemm = C.GeMM()
        self.reshape = C.Reshape(-1, 2, 16)
        self.wgt = C.WhereGreater()
        self.add = C.Add(alpha=0.5, beta=-1.5)
        self.exp = C.Exp(alpha=0.25, beta=0.5)
        self.sig = C.Sigmoid(alpha=0.0, beta=-1.0)
        self.msk = C.MaskSlice(2, 6, 2, alpha=3.0, beta=-2.0)
        self.unary = {op: CU[op](a, b) for op, a, b in
                      [("relu", 0.2, -3.0), ("silu", 0.0, -1.0),
                       ("abs", -0.5, 1.5), ("add_mul", 2.0, 0.25)]}
        self.log = C.Log(alpha=1.0, beta=1.0)
        self.maxi, self.mini = C.Maximum(), C.Minimum()
        self.l2, self.cm, self.cm_c = C.L2Norm(dim=2), C.Mean(dim=1), \
            C.Mean(dim=1)
        self.mul, self.ven = C.Multiply(), C.Mean(dim=1)
        self.fill = C.Fill(alpha=2.5)
        self.q_mean, self.gemv, self.output_func = I.Mean(dim=1), I.GeMV(), \
            I.topK()
        self.loads = {f: I.Load() for f, _, _ in OC.FIELDS}

    def create_cache(self, block_size, head_dim):
        return {f: (r, c) for f, r, c in OC.FIELDS}

    def forward_cache(self, cache, loc, ctx):
        k, v = cache["k"], cache["v"]
        for kind, (i1, i2, d2, d1) in self.red.items():
            i1(k, cache[f"i1_{kind}"], loc=loc, ctx=ctx)
            i2(v, cache[f"i2_{kind}"], loc=loc, ctx=ctx)
            d2(v, cache[f"d2_{kind}"], loc=loc, ctx=ctx)
            d1(k, cache[f"d1_{kind}"], loc=loc, ctx=ctx)
        self.gemm(k, v, cache["gemm"], loc=loc, ctx=ctx)
        self.reshape(k, cache["rs"], loc=loc, ctx=ctx)
        self.wgt(k, v, cache["wgt"], loc=loc, ctx=ctx)
        self.add(k, v, cache["add"], loc=loc, ctx=ctx)
        self.exp(k, cache["exp"], loc=loc, ctx=ctx)
        self.sig(k, cache["sig"], loc=loc, ctx=ctx)
        self.msk(k, cache["msk"], loc=loc, ctx=ctx)
        for op, fn in self.unary.items():
            fn(v, cache[op], loc=loc, ctx=ctx)
        # A field written above reads as the value written (vortex_torch:
        # the op claims the field as its output).
        self.log(cache["abs"], cache["log"], loc=loc, ctx=ctx)
        self.maxi(k, v, cache["maxi"], loc=loc, ctx=ctx)
        self.mini(k, v, cache["mini"], loc=loc, ctx=ctx)
        l2 = self.l2(v, None, loc=loc, ctx=ctx)
        cm = self.cm(k, None, loc=loc, ctx=ctx)
        self.mul(v, cm, cache["mul"], loc=loc, ctx=ctx)
        self.ven(l2, cache["ven"], loc=loc, ctx=ctx)
        self.fill(cache["filled"], loc=loc, ctx=ctx)
        self.cm_c(k, cache["c"], loc=loc, ctx=ctx)

    def forward_indexer(self, q, o, cache, ctx):
        for f, _, _ in OC.FIELDS:
            self.loads[f](cache[f], ctx=ctx)
        score = self.gemv(self.q_mean(q, ctx=ctx), cache["c"], ctx=ctx)
        self.output_func(score, o, ctx=ctx)


cache_cfg = PROBE_CONFIG.replace(group_size=2)
text = vortex.trace(ProbeCacheOps(), cache_cfg, name="probe_cache")
flow = vortex.compile_flow(text)
failed = 0
for seed in (5, 6):
    p = testing.make_problem(flow, [0, 1, 6, 12, 40], seed=seed, spare=9)
    failed += testing.print_reports(
        testing.run_and_check(flow, p, indexer_steps=1, flow_ref=OC.FLOW_REF),
        f"ops_cache.py's probe flow traced from Python, seed={seed}")
tally(failed == 0, "ops_cache.py's probe flow traced from Python matches "
      "its reference")

# ---------------------------------------------------------------------------
# trtllm selection, approxTopK, cache forms
# ---------------------------------------------------------------------------


class Trtllm(vFlow):
    def __init__(self, approx=False):
        super().__init__()
        self.approx = approx
        self.mean, self.gemm = I.Mean(dim=1), I.GeMM()
        self.gemm_k, self.max_k = I.GeMM(), I.Max(dim=2)
        self.top_a, self.top_b = I.TopK(4), I.TopK(2)
        self.union = I.Union()
        self.approx_topk = I.approxTopK(tolerate_ratio=0.1)
        self.reduction = C.Mean(dim=1)

    def create_cache(self, block_size, head_dim):
        return {"centroids": (1, head_dim)}

    def forward_cache(self, cache, loc, ctx):
        self.reduction(cache["k"], cache["centroids"], loc=loc, ctx=ctx)

    def forward_indexer(self, q, o, cache, ctx):
        s = self.gemm(self.mean(q, ctx=ctx), cache["centroids"], ctx=ctx)
        if self.approx:
            self.approx_topk(s, o, ctx=ctx)
            return
        t = self.max_k(self.gemm_k(q, cache["centroids"], ctx=ctx), ctx=ctx)
        self.union(self.top_a(s, ctx=ctx), self.top_b(t, ctx=ctx), o, ctx=ctx)


for approx in (False, True):
    what = "approxTopK" if approx else "TopK(k) + Union"
    try:
        text = vortex.trace(Trtllm(approx), name="sel")
        ok = ("vortex.approx_topk" in text if approx else
              text.count("vortex.trtllm_topk") == 2 and "vortex.union" in text)
        tally(ok, f"{what} traces and verifies", text)
    except Exception as err:  # noqa: BLE001
        tally(False, f"{what} traces and verifies", err)


class CacheForms(vFlow):
    def __init__(self):
        super().__init__()
        self.mean, self.maxr = C.Mean(dim=1), C.Max(dim=1)
        self.fill, self.add = C.Fill(alpha=3.0), C.Add()
        self.scale = C.Add_Mul(alpha=0.0, beta=2.0)
        self.q_mean, self.gemv, self.out = I.Mean(dim=1), I.GeMV(), I.topK()
        self.gemv_f, self.sum = I.GeMV(), I.Add()

    def create_cache(self, block_size, head_dim):
        return {"c": (1, head_dim), "f": (1, head_dim)}

    def forward_cache(self, cache, loc, ctx):
        m = self.mean(cache["k"], None, loc=loc, ctx=ctx)
        mx = self.maxr(cache["k"], None, loc=loc, ctx=ctx)
        self.scale(mx, m, loc=loc, ctx=ctx)     # rebinds m to 2 * max
        self.fill(cache["f"], loc=loc, ctx=ctx)
        self.add(m, cache["f"], cache["c"], loc=loc, ctx=ctx)

    def forward_indexer(self, q, o, cache, ctx):
        qm = self.q_mean(q, ctx=ctx)
        s = self.sum(self.gemv(qm, cache["c"], ctx=ctx),
                     self.gemv_f(qm, cache["f"], ctx=ctx), ctx=ctx)
        self.out(s, o, ctx=ctx)


text = vortex.trace(CacheForms(), name="forms")
got = canonical_ir(text)
tally("vortex.add_mul %1" in got and "vortex.add %2, %3" in got and
      "start = 0 : i64" in got and "alpha = 3.0" in got.replace(
          "3.000000e+00", "3.0"),
      "cache forms: a ragged output is rebound, a field after Fill reads "
      "the constant", got)

# ---------------------------------------------------------------------------
# Catalog
# ---------------------------------------------------------------------------

for mod in (I, C):
    for name in mod.__all__:
        cls = getattr(mod, name)
        if isinstance(cls, type) and issubclass(cls, vortex.abs.vOp) and \
                cls.mnemonic:
            form = cls.call_form()
            tally(form.startswith("op(") and form.endswith("ctx=ctx)"),
                  f"{mod.__name__}.{name}: {form}")

for mod, name in [(I, "MetaData")]:
    try:
        getattr(mod, name)()
        tally(False, f"{mod.__name__}.{name}() raises")
    except UnsupportedOpError as err:
        tally(name in str(err) and err.op == name and
              os.path.basename(__file__) in str(err),
              f"{mod.__name__}.{name}() raises UnsupportedOpError naming "
              "the op and this line", err)

# Int4Packed is a mark (docs/python.md "INT4 KV"): only bias 7 exists.
mark = vortex.abs.Int4Packed("k_int4_scale", per_channel=True)
tally(mark.bias == 7 and mark.per_channel, "Int4Packed marks a tensor", mark)
try:
    vortex.abs.Int4Packed("v_int4_scale", per_channel=False, bias=8)
    tally(False, "Int4Packed(bias=8) is refused")
except ValueError as err:
    tally("bias" in str(err), "Int4Packed(bias=8) is refused naming bias", err)

# Parameter is supported (test/Python/eager/params_train.py): vortex.indexer
# exports vortex.abs's, and a malformed one is refused at construction.
tally(I.Parameter is vortex.abs.Parameter,
      "vortex.indexer.Parameter is vortex.abs.Parameter")
try:
    vortex.abs.Parameter([[1.0, 2.0]])
    tally(False, "Parameter of a list is refused")
except ValueError as err:
    tally("Parameter" in str(err), "Parameter of a non-tensor is refused", err)

tally.exit(summary=True)
