# RUN: %python %s
# REQUIRES: numpy
#
# The GPU runtime's argument checking and step launching without torch or a
# GPU: duck-typed fake tensors (shape, dtype string, device, contiguity,
# data_ptr) go through CompiledFlowGPU.indexer / cache_step with the driver
# calls replaced by a recorder. Checks: symbols bound consistently
# (rows / total / num_blocks / num_new), a ValueError naming the argument
# for every kind of bad input (missing, not a tensor, CPU, dtype, layout,
# rank, shape, k/v/fields disagreeing on num_blocks, aliasing of a written
# tensor), nothing launched when a check fails, scratch allocated once per
# shape, kernels launched in manifest order with the right grids and
# parameters, kernel subsets, and skipped launches for empty grids.

import ctypes
import math

from vortex import runtime as rt
from vortex import testing

report = testing.Tally()


class Dev:
    def __init__(self, typ="cuda", index=0):
        self.type, self.index = typ, index


_SIZES = {"torch.bfloat16": 2, "torch.float32": 4, "torch.int32": 4,
          "torch.int64": 8, "torch.float16": 2}
_next_ptr = [0x10000]


class FakeTensor:
    """What the runtime reads of a torch tensor."""

    def __init__(self, shape, dtype, device=None, contiguous=True, ptr=None):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.device = device or Dev()
        self._contig = contiguous
        size = max(math.prod(self.shape), 1) * _SIZES[dtype]
        if ptr is None:
            ptr = _next_ptr[0]
            _next_ptr[0] += (size + 255) // 256 * 256
        self._ptr = ptr

    def is_contiguous(self):
        return self._contig

    def numel(self):
        return math.prod(self.shape)

    def data_ptr(self):
        return self._ptr

    def element_size(self):
        return _SIZES[self.dtype]


BF16, I32, F32 = "torch.bfloat16", "torch.int32", "torch.float32"


def buf(name):
    return {"name": name, "kind": "buffer"}


def scal(name):
    return {"name": name, "kind": "scalar"}


G = 5
MANIFEST = {
    "version": 1, "flow": "gqa_quest_sparse_attention_g5", "chip": "sm_90",
    "ptx": "f.ptx", "cubin": "f.cubin",
    "config": {"block_size": 16, "head_dim": 128, "group_size": G},
    "tensors": {
        "q": {"role": "input", "dtype": "bf16", "shape": ["rows", G, 128]},
        "k": {"role": "cache", "dtype": "bf16", "shape": ["num_blocks", 16, 128]},
        "v": {"role": "cache", "dtype": "bf16", "shape": ["num_blocks", 16, 128]},
        "max": {"role": "cache", "dtype": "bf16", "shape": ["num_blocks", 1, 128]},
        "min": {"role": "cache", "dtype": "bf16", "shape": ["num_blocks", 1, 128]},
        "dense_kv_indptr": {"role": "input", "dtype": "i32", "shape": ["rows+1"]},
        "dense_kv_indices": {"role": "input", "dtype": "i32", "shape": ["total"]},
        "sparse_kv_indptr": {"role": "output", "dtype": "i32", "shape": ["rows+1"]},
        "sparse_kv_indices": {"role": "output", "dtype": "i32", "shape": ["total"]},
        "block_ids": {"role": "input", "dtype": "i32", "shape": ["num_new"]},
        "scratch0": {"role": "scratch", "dtype": "f32", "shape": ["total", 1, 8]},
    },
    "steps": {
        "indexer": [
            {"kernel": "w0", "grid": {"kind": "persistent", "ctas_per_sm": 2},
             "block": [256, 1, 1], "shared_bytes": 0,
             "params": [buf("q"), buf("max"), buf("min"),
                        buf("dense_kv_indptr"), buf("dense_kv_indices"),
                        buf("scratch0"), scal("rows"), scal("total")],
             "reads": ["q", "max", "min", "dense_kv_indptr", "dense_kv_indices"],
             "writes": ["scratch0"]},
            {"kernel": "topk", "grid": {"kind": "rows"}, "block": [1024, 1, 1],
             "shared_bytes": 50000,
             "params": [buf("scratch0"), buf("dense_kv_indptr"),
                        buf("dense_kv_indices"), buf("sparse_kv_indptr"),
                        buf("sparse_kv_indices"), scal("rows")],
             "reads": ["scratch0", "dense_kv_indptr", "dense_kv_indices"],
             "writes": ["sparse_kv_indptr", "sparse_kv_indices"]},
        ],
        "cache": [
            {"kernel": "c0", "grid": {"kind": "items", "of": "num_new",
                                      "per_cta": 4},
             "block": [128, 1, 1], "shared_bytes": 0,
             "params": [buf("k"), buf("max"), buf("min"), buf("block_ids"),
                        scal("num_new")],
             "reads": ["k", "block_ids"], "writes": ["max", "min"]},
        ],
    },
}


class FakeFlow(rt.CompiledFlowGPU):
    """CompiledFlowGPU with the driver and torch replaced by recorders."""

    def __init__(self, manifest):
        self.manifest = manifest
        self.flow = manifest.flow
        self.config = manifest.config
        self.device_index = 0
        self.num_sms = 132
        self._kernels = {}
        for i, step in enumerate(manifest.steps.values()):
            for spec in step:
                self._kernels[spec.kernel] = rt._Kernel(spec, 0x100 + i)
        self._scratch = {}
        self._packed = {}
        self.launches = []
        self.allocs = []

    def _alloc(self, shape, dtype):
        self.allocs.append((tuple(shape), dtype))
        return FakeTensor(shape, rt.MANIFEST_DTYPES[dtype][0])

    def _stream_handle(self):
        return 0xabc

    def _ensure_context(self):
        pass

    def _launch(self, func, grid, block, shared, stream, params, name):
        spec = self._kernels[name].spec
        vals, i = [], 0
        for p in spec.params:
            if p.kind == "buffer":
                ptr = ctypes.cast(params[i], ctypes.POINTER(ctypes.c_void_p)
                                  ).contents.value
                ints = [ctypes.cast(params[i + j], ctypes.POINTER(
                    ctypes.c_int64)).contents.value for j in (2, 3, 4)]
                vals.append((p.name, ptr, tuple(ints)))
                i += 5
            else:
                vals.append((p.name, ctypes.cast(params[i], ctypes.POINTER(
                    ctypes.c_int32)).contents.value))
                i += 1
        self.launches.append((name, tuple(grid), tuple(block), shared,
                              stream, vals))


man = rt.Manifest(MANIFEST)
flow = FakeFlow(man)

ROWS, TOTAL, NB, NEW = 6, 300, 400, 9


def problem(rows=ROWS, total=TOTAL, nb=NB):
    cache = {n: FakeTensor((nb,) + shp[1:], BF16)
             for n, (shp, _) in man.cache_shapes(nb).items()}
    return dict(q=FakeTensor((rows, G, 128), BF16), cache=cache,
                dense_kv_indptr=FakeTensor((rows + 1,), I32),
                dense_kv_indices=FakeTensor((total,), I32),
                sparse_kv_indptr=FakeTensor((rows + 1,), I32),
                sparse_kv_indices=FakeTensor((total,), I32))


def run_indexer(p, **kw):
    return flow.indexer(p["q"], p["cache"], p["dense_kv_indptr"],
                        p["dense_kv_indices"], p["sparse_kv_indptr"],
                        p["sparse_kv_indices"], **kw)


# --- a good indexer step ---------------------------------------------------
p = problem()
out = run_indexer(p)
report(out[0] is p["sparse_kv_indptr"] and out[1] is p["sparse_kv_indices"],
       "indexer returns the output tensors")
names = [x[0] for x in flow.launches]
report(names == ["w0", "topk"], "indexer: kernels in manifest order", names)
w0, tk = flow.launches
report(w0[1] == (264, 1, 1) and w0[2] == (256, 1, 1) and w0[3] == 0 and
       w0[4] == 0xabc, "indexer: persistent grid, block, smem, stream", w0[:5])
report(tk[1] == (ROWS, 1, 1) and tk[3] == 50000, "indexer: rows grid", tk[:4])
report(flow.allocs == [((TOTAL, 1, 8), "f32")],
       "indexer: scratch0 allocated [total, 1, 8] f32", flow.allocs)
scratch = flow._scratch[("scratch0", (TOTAL, 1, 8))]
expect_w0 = [("q", p["q"].data_ptr(), (0, ROWS * G * 128, 1)),
             ("max", p["cache"]["max"].data_ptr(), (0, NB * 128, 1)),
             ("min", p["cache"]["min"].data_ptr(), (0, NB * 128, 1)),
             ("dense_kv_indptr", p["dense_kv_indptr"].data_ptr(), (0, ROWS + 1, 1)),
             ("dense_kv_indices", p["dense_kv_indices"].data_ptr(), (0, TOTAL, 1)),
             ("scratch0", scratch.data_ptr(), (0, TOTAL * 8, 1)),
             ("rows", ROWS), ("total", TOTAL)]
report(w0[5] == expect_w0, "indexer: w0 parameters (ptr, 0, numel, 1, scalars)",
       w0[5])
report(tk[5][0] == ("scratch0", scratch.data_ptr(), (0, TOTAL * 8, 1)) and
       tk[5][-1] == ("rows", ROWS), "indexer: topk reads the same scratch")

flow.launches.clear()
run_indexer(p)
report(flow.allocs == [((TOTAL, 1, 8), "f32")] and len(flow.launches) == 2,
       "indexer: scratch cached across calls of one shape")
run_indexer(problem(total=500, nb=600))
report(flow.allocs == [((TOTAL, 1, 8), "f32"), ((500, 1, 8), "f32")],
       "indexer: a new shape allocates a new scratch", flow.allocs)

# k / v need not be passed when no indexer kernel uses them.
flow.launches.clear()
p2 = problem()
p2["cache"] = {n: p2["cache"][n] for n in ("max", "min")}
run_indexer(p2)
report(len(flow.launches) == 2, "indexer: cache dict without k/v is fine "
       "when the kernels do not read them")
# Unknown cache keys are ignored (a flow need not list every tensor).
p2["cache"]["extra"] = object()
flow.launches.clear()
run_indexer(p2)
report(len(flow.launches) == 2, "indexer: unknown cache keys ignored")

# Subsets.
flow.launches.clear()
run_indexer(p, kernels=flow.score_kernels())
report([x[0] for x in flow.launches] == ["w0"],
       "indexer: only the score kernel(s)", [x[0] for x in flow.launches])
flow.launches.clear()
run_indexer(p, kernels=["topk"])
report([x[0] for x in flow.launches] == ["topk"], "indexer: only the top-k")

# rows = 0: the rows-grid kernel is skipped, the persistent one launches.
flow.launches.clear()
run_indexer(problem(rows=0, total=0))
report([x[0] for x in flow.launches] == ["w0"],
       "indexer: rows = 0 skips the rows-grid kernel",
       [x[0] for x in flow.launches])

# The manifest's shared_bytes is the kernel's whole shared-memory need: what
# the cubin declares statically (workgroup attributions) is not requested
# again as dynamic shared memory.
flow.launches.clear()
flow._kernels["topk"].static_smem = 32768
run_indexer(p)
report(flow.launches[1][3] == 50000 - 32768,
       "indexer: dynamic smem = shared_bytes - static smem", flow.launches[1][3])
flow._kernels["topk"].static_smem = 50000
flow.launches.clear()
run_indexer(p)
report(flow.launches[1][3] == 0, "indexer: all-static smem launches with 0")
flow._kernels["topk"].static_smem = 0
report(rt.dynamic_smem(65536, 0) == 65536 and rt.dynamic_smem(0, 1024) == 0,
       "dynamic_smem helper")

# --- the cache step --------------------------------------------------------
flow.launches.clear()
cache = problem()["cache"]
bids = FakeTensor((NEW,), I32)
flow.cache_step(cache, bids)
report(len(flow.launches) == 1 and flow.launches[0][1] == (3, 1, 1) and
       flow.launches[0][5][-1] == ("num_new", NEW) and
       flow.launches[0][5][0] == ("k", cache["k"].data_ptr(),
                                  (0, NB * 16 * 128, 1)),
       "cache_step: items grid ceil(9/4) and parameters", flow.launches)
flow.launches.clear()
flow.cache_step(cache, FakeTensor((0,), I32))
report(flow.launches == [], "cache_step: no launch for zero new blocks")

# --- errors: each names the argument, and nothing is launched -------------


def expect_error(what, needle, mutate, step="indexer"):
    p = problem()
    mutate(p)
    flow.launches.clear()
    try:
        if step == "indexer":
            run_indexer(p)
        else:
            flow.cache_step(p["cache"], p.get("block_ids",
                                              FakeTensor((NEW,), I32)))
    except ValueError as err:
        ok = needle in str(err) and not flow.launches
        report(ok, f"error: {what}", f"{err} / launches {flow.launches}")
        return
    report(False, f"error: {what}", "no ValueError")


def setc(name, t):
    return lambda p: p["cache"].__setitem__(name, t)


expect_error("q missing", "q: missing", lambda p: p.update(q=None))
expect_error("q not a tensor", "q: expected a torch tensor",
             lambda p: p.update(q=[1, 2]))
expect_error("q on the CPU", "q: must be on a CUDA device",
             lambda p: p.update(q=FakeTensor((ROWS, G, 128), BF16, Dev("cpu"))))
expect_error("q on another GPU", "q: on cuda:1",
             lambda p: p.update(q=FakeTensor((ROWS, G, 128), BF16,
                                             Dev("cuda", 1))))
expect_error("q dtype", "q: dtype torch.float32, expected torch.bfloat16",
             lambda p: p.update(q=FakeTensor((ROWS, G, 128), F32)))
expect_error("q not contiguous", "q: must be contiguous",
             lambda p: p.update(q=FakeTensor((ROWS, G, 128), BF16,
                                             contiguous=False)))
expect_error("q rank", "q: rank 2, expected 3",
             lambda p: p.update(q=FakeTensor((ROWS, G * 128), BF16)))
expect_error("q group size", "q: shape [6, 8, 128] does not match [rows, 5, 128]",
             lambda p: p.update(q=FakeTensor((ROWS, 8, 128), BF16)))
expect_error("q rows vs indptr", "q: shape [7, 5, 128]",
             lambda p: p.update(q=FakeTensor((ROWS + 1, G, 128), BF16)))
expect_error("indptr empty", "dense_kv_indptr: extent 0 of axis 0 cannot be rows+1",
             lambda p: p.update(dense_kv_indptr=FakeTensor((0,), I32)))
expect_error("indptr dtype", "dense_kv_indptr: dtype torch.int64",
             lambda p: p.update(dense_kv_indptr=FakeTensor((ROWS + 1,),
                                                           "torch.int64")))
expect_error("sparse indptr rows", "sparse_kv_indptr: shape [6]",
             lambda p: p.update(sparse_kv_indptr=FakeTensor((ROWS,), I32)))
expect_error("sparse indices total", "sparse_kv_indices: shape [299]",
             lambda p: p.update(sparse_kv_indices=FakeTensor((TOTAL - 1,), I32)))
expect_error("field num_blocks", "min: shape [399, 1, 128]",
             setc("min", FakeTensor((NB - 1, 1, 128), BF16)))
expect_error("k vs fields num_blocks", "v: shape [400, 16, 128] does not "
             "match [num_blocks, 16, 128] with rows=6 (from dense_kv_indptr), "
             "total=300 (from dense_kv_indices), num_blocks=405 (from k)",
             setc("k", FakeTensor((NB + 5, 16, 128), BF16)))
expect_error("field inner shape", "max: shape [400, 2, 128]",
             setc("max", FakeTensor((NB, 2, 128), BF16)))
expect_error("field dtype", "min: dtype torch.float16",
             setc("min", FakeTensor((NB, 1, 128), "torch.float16")))
expect_error("field missing", "max: missing (the flow's cache tensor",
             lambda p: p["cache"].pop("max"))
expect_error("cache not a dict", "cache: expected a dict",
             lambda p: p.update(cache=[1]))
expect_error("input passed as cache", "cache: 'q' is not a cache tensor",
             setc("q", FakeTensor((ROWS, G, 128), BF16)))


def alias(p):
    t = p["sparse_kv_indices"]
    p["sparse_kv_indptr"] = FakeTensor((ROWS + 1,), I32, ptr=t.data_ptr() + 8)


expect_error("written output aliases another", "sparse_kv_indptr: shares "
             "memory with sparse_kv_indices", alias)
expect_error("cache step: block_ids dtype", "block_ids: dtype torch.int64",
             lambda p: p.update(block_ids=FakeTensor((NEW,), "torch.int64")),
             step="cache")
expect_error("cache step: block_ids rank", "block_ids: rank 2",
             lambda p: p.update(block_ids=FakeTensor((NEW, 1), I32)),
             step="cache")
expect_error("cache step: v vs k", "v: shape [401, 16, 128]",
             setc("v", FakeTensor((NB + 1, 16, 128), BF16)), step="cache")
expect_error("cache step: written field aliases k", "max: shares memory with k",
             lambda p: p["cache"].__setitem__("max", FakeTensor(
                 (NB, 1, 128), BF16, ptr=p["cache"]["k"].data_ptr())),
             step="cache")

# resolve_symbols directly: binding order puts blame on the right tensor.
m = man
ts = problem()
tensors = dict(ts["cache"], q=ts["q"], dense_kv_indptr=ts["dense_kv_indptr"],
               dense_kv_indices=ts["dense_kv_indices"])
syms = rt.resolve_symbols(m, tensors)
report(syms == {"rows": ROWS, "total": TOTAL, "num_blocks": NB},
       "resolve_symbols: rows / total / num_blocks", syms)
report.exit(summary=True)
