# RUN: %python %s
# REQUIRES: numpy
#
# The GPU runtime's argument checking, planning and launching without torch
# or a GPU: duck-typed fake tensors (shape, dtype string, device,
# contiguity, data_ptr) go through CompiledFlowGPU.plan / run_step (which
# validate with the shared vortex.runtime.validate.validate_step) with the device
# state, torch and the driver launch replaced by recorders. Checks: symbols
# bound consistently (rows / total / num_blocks / num_new), a ValueError
# naming the argument for every kind of bad input (missing, not a tensor,
# CPU, another GPU, dtype, layout, rank, shape, k/v/fields disagreeing on
# num_blocks, i32 overflow, aliasing of a written tensor), nothing launched
# or allocated when a check fails, scratch sized per call from the symbols
# and shared by the kernels of one launch, kernels launched in manifest order
# with the right grids, shared memory, streams and parameters, plans on the
# tensors' device, kernel subsets, and skipped launches for empty grids;
# the ctypes launch itself against a recording driver (chained launches
# through cuLaunchKernelEx with the programmatic-serialization attribute).
# Then validate_step on numpy arrays (the CPU side of the one validator)
# and check_csr on host values.

import contextlib
import copy
import ctypes
import math
import os
import sys

import numpy as np

from vortex.runtime import manifest as mf
from vortex.runtime import validate as va
from vortex.runtime import cuda as rt
from vortex.runtime import driver as drv_mod
from vortex.runtime import plan as lp

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "Inputs"))
from launch_recorder import LaunchRecorder  # noqa: E402
from vortex import testing

report = testing.Tally()


class Dev:
    def __init__(self, typ="cuda", index=0):
        self.type, self.index = typ, index


_SIZES = {"torch.bfloat16": 2, "torch.float32": 4, "torch.int32": 4,
          "torch.int64": 8, "torch.float16": 2, "torch.uint8": 1}
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


class _Stream:
    def __init__(self, dev):
        self.cuda_stream = 0xabc + dev


class FakeTorch:
    """The few torch calls run_step makes, recorded."""
    uint8 = "torch.uint8"

    def __init__(self):
        self.allocs = []
        self.devices = []
        outer = self

        class _Cuda:
            @staticmethod
            @contextlib.contextmanager
            def device(dev):
                outer.devices.append(dev)
                yield

            @staticmethod
            def current_stream(dev):
                return _Stream(dev)

            @staticmethod
            def current_device():
                return 0
        self.cuda = _Cuda

    def empty(self, n, dtype, device):
        self.allocs.append((n, dtype, device))
        return FakeTensor((n,), dtype, Dev("cuda", int(device.split(":")[1])))


BF16, I32, F32 = "torch.bfloat16", "torch.int32", "torch.float32"


def buf(name):
    return {"name": name, "kind": "buffer"}


def scal(name):
    return {"name": name, "kind": "scalar"}


G = 5
INDEXER_ARGS = ["q", "k", "v", "max", "min", "dense_kv_indptr",
                "dense_kv_indices", "sparse_kv_indptr", "sparse_kv_indices"]
MANIFEST = {
    "version": 2, "flow": "gqa_quest_sparse_attention_g5", "backend": "cuda",
    "target": "sm_90", "artifacts": {"ptx": "f.ptx", "cubin": "f.cubin"},
    "source_hash": "0123456789abcdef" * 4,
    "config": {"block_size": 16, "head_dim": 128, "group_size": G,
               "topk_val": 29, "topk_ratio": 0.0625, "reserved_bos": 1,
               "reserved_eos": 2},
    "symbols": {"rows": "dense_kv_indptr", "total": "dense_kv_indices",
                "num_blocks": "k", "num_new": "block_ids"},
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
        "indexer": {
            "args": INDEXER_ARGS,
            "writes": ["sparse_kv_indptr", "sparse_kv_indices"],
            "kernels": [
                {"kernel": "w0",
                 "grid": {"kind": "persistent", "ctas_per_sm": 2},
                 "block": [256, 1, 1], "shared_bytes": 0,
                 "params": [buf("q"), buf("max"), buf("min"),
                            buf("dense_kv_indptr"), buf("dense_kv_indices"),
                            buf("scratch0"), scal("rows"), scal("total")],
                 "reads": ["q", "max", "min", "dense_kv_indptr",
                           "dense_kv_indices"],
                 "writes": ["scratch0"]},
                {"kernel": "topk", "grid": {"kind": "rows"},
                 "block": [1024, 1, 1], "shared_bytes": 50000, "pdl": True,
                 "params": [buf("scratch0"), buf("dense_kv_indptr"),
                            buf("dense_kv_indices"), buf("sparse_kv_indptr"),
                            buf("sparse_kv_indices"), scal("rows")],
                 "reads": ["scratch0", "dense_kv_indptr", "dense_kv_indices"],
                 "writes": ["sparse_kv_indptr", "sparse_kv_indices"]},
            ],
        },
        "cache": {
            "args": ["k", "v", "max", "min", "block_ids"],
            "writes": ["max", "min"],
            "kernels": [
                {"kernel": "c0", "grid": {"kind": "items", "of": "num_new",
                                          "per_cta": 4},
                 "block": [128, 1, 1], "shared_bytes": 0,
                 "params": [buf("k"), buf("max"), buf("min"),
                            buf("block_ids"), scal("num_new")],
                 "reads": ["k", "block_ids"], "writes": ["max", "min"]},
            ],
        },
    },
}

NUM_SMS = {0: 132, 1: 114}


class FakeFlow(rt.CompiledFlowGPU):
    """CompiledFlowGPU with the device states prepared by hand (no driver)
    and torch and the launch replaced by recorders."""

    def __init__(self, manifest):
        self.manifest = manifest
        self.flow = manifest.flow
        self.config = manifest.config
        self.device_index = 0
        self._prefer = "cubin"
        self._torch = FakeTorch()
        self._states = {}
        self._specs = {}
        for dev in (0, 1):
            st = rt._DeviceState(dev, 0, [], "fake.cubin", NUM_SMS[dev],
                                 f"fake{dev}")
            for i, spec in enumerate(k for s in manifest.steps.values()
                                     for k in s.kernels):
                func = 0x100 * (dev + 1) + i
                st.kernels[spec.kernel] = rt._Kernel(spec, func)
                self._specs[func] = (dev, spec)
            self._states[dev] = st
        self.launches = []
        self.chain_launches = True
        self._drv = LaunchRecorder(self)

    def _launch(self, func, grid, block, shared, stream, params, pdl=False):
        dev, spec = self._specs[func]
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
        self.launches.append((spec.kernel, tuple(grid), tuple(block), shared,
                              stream, vals, dev, pdl))


man = mf.Manifest(MANIFEST)
flow = FakeFlow(man)
torch_ = flow._torch

ROWS, TOTAL, NB, NEW = 6, 300, 400, 9


def problem(rows=ROWS, total=TOTAL, nb=NB, dev=None):
    d = (lambda: Dev("cuda", dev)) if dev is not None else (lambda: None)
    cache = {n: FakeTensor((nb,) + shp[1:], BF16, d())
             for n, (shp, _) in man.cache_shapes(nb).items()}
    return dict(cache, q=FakeTensor((rows, G, 128), BF16, d()),
                dense_kv_indptr=FakeTensor((rows + 1,), I32, d()),
                dense_kv_indices=FakeTensor((total,), I32, d()),
                sparse_kv_indptr=FakeTensor((rows + 1,), I32, d()),
                sparse_kv_indices=FakeTensor((total,), I32, d()),
                block_ids=FakeTensor((NEW,), I32, d()))


def reset():
    flow.launches.clear()
    torch_.allocs.clear()
    torch_.devices.clear()


# --- a good indexer step ---------------------------------------------------
p = problem()
reset()
scratch_bytes, plan = flow.plan("indexer", p)
report(scratch_bytes == [TOTAL * 8 * 4],
       "plan: scratch0 sized [total, 1, 8] f32 from the symbols",
       scratch_bytes)
report([x[0] for x in plan] == [0x100, 0x101] and
       [x[1] for x in plan] == [(264, 1, 1), (ROWS, 1, 1)] and
       [x[2] for x in plan] == [(256, 1, 1), (1024, 1, 1)] and
       [x[3] for x in plan] == [0, 50000],
       "plan: functions, grids, blocks, dynamic smem in manifest order",
       [x[:4] for x in plan])
report(plan[0][4] == [lp.arg(0), lp.arg(3), lp.arg(4), lp.arg(5),
                      lp.arg(6), lp.scratch(0, TOTAL * 8),
                      lp.i32(ROWS), lp.i32(TOTAL)],
       "plan: w0 parameters (argument index, scratch numel, scalars)",
       plan[0][4])
report(plan[1][4] == [lp.scratch(0, TOTAL * 8), lp.arg(5), lp.arg(6),
                      lp.arg(7), lp.arg(8), lp.i32(ROWS)],
       "plan: topk reads the same scratch", plan[1][4])
report(flow.launches == [] and torch_.allocs == [],
       "plan: launches and allocates nothing")
report([x[5] for x in plan] == [False, True],
       "plan: the manifest's pdl launch (topk) is chained, the first is not",
       [x[5] for x in plan])
flow.chain_launches = False
report([x[5] for x in flow.plan("indexer", p)[1]] == [False, False],
       "plan: chain_launches = False launches every kernel the ordinary way")
flow.chain_launches = True

flow.run_step("indexer", p)
names = [x[0] for x in flow.launches]
report(names == ["w0", "topk"], "indexer: kernels in manifest order", names)
report([x[7] for x in flow.launches] == [False, True],
       "indexer: run_step launches topk chained",
       [x[7] for x in flow.launches])
w0, tk = flow.launches
report(w0[1] == (264, 1, 1) and w0[2] == (256, 1, 1) and w0[3] == 0 and
       w0[4] == 0xabc, "indexer: persistent grid, block, smem, stream", w0[:5])
report(tk[1] == (ROWS, 1, 1) and tk[3] == 50000, "indexer: rows grid", tk[:4])
report(torch_.allocs == [(TOTAL * 8 * 4, "torch.uint8", "cuda:0")] and
       torch_.devices == [0],
       "indexer: one scratch buffer of the plan's bytes, under a device guard",
       (torch_.allocs, torch_.devices))
scratch_ptr = w0[5][5][1]
expect_w0 = [("q", p["q"].data_ptr(), (0, ROWS * G * 128, 1)),
             ("max", p["max"].data_ptr(), (0, NB * 128, 1)),
             ("min", p["min"].data_ptr(), (0, NB * 128, 1)),
             ("dense_kv_indptr", p["dense_kv_indptr"].data_ptr(),
              (0, ROWS + 1, 1)),
             ("dense_kv_indices", p["dense_kv_indices"].data_ptr(),
              (0, TOTAL, 1)),
             ("scratch0", scratch_ptr, (0, TOTAL * 8, 1)),
             ("rows", ROWS), ("total", TOTAL)]
report(w0[5] == expect_w0 and scratch_ptr not in
       {t.data_ptr() for t in p.values()},
       "indexer: w0 parameters (ptr, ptr, 0, numel, 1, scalars)", w0[5])
report(tk[5][0] == ("scratch0", scratch_ptr, (0, TOTAL * 8, 1)) and
       tk[5][3] == ("sparse_kv_indptr", p["sparse_kv_indptr"].data_ptr(),
                    (0, ROWS + 1, 1)) and tk[5][-1] == ("rows", ROWS),
       "indexer: topk reads the same scratch, writes the caller's outputs",
       tk[5])

reset()
flow.run_step("indexer", p, stream=0x1234)
report([x[4] for x in flow.launches] == [0x1234, 0x1234],
       "indexer: an explicit stream is used for every launch")
reset()
flow.run_step("indexer", problem(total=500, nb=600))
report(torch_.allocs == [(500 * 8 * 4, "torch.uint8", "cuda:0")] and
       flow.launches[0][5][5][2] == (0, 500 * 8, 1),
       "indexer: another shape sizes the scratch from its symbols",
       torch_.allocs)

# k / v need not be passed when no launched kernel uses them.
reset()
p2 = {n: t for n, t in problem().items() if n not in ("k", "v")}
try:
    scratch_bytes, plan = flow.plan("indexer", p2)
    flow.run_step("indexer", p2)
    report(len(flow.launches) == 2 and len(plan) == 2,
           "indexer: no k/v is fine when the kernels do not read them")
except ValueError as err:
    report(False, "indexer: no k/v is fine when the kernels do not read them",
           err)
# Extra names in the tensors mapping are ignored.
p2.update(extra=object(), scratch0=None)
reset()
flow.run_step("indexer", p2)
report(len(flow.launches) == 2, "indexer: unknown names are ignored")

# Subsets.
reset()
flow.run_step("indexer", p, kernels=flow.score_kernels())
report([x[0] for x in flow.launches] == ["w0"] and len(torch_.allocs) == 1,
       "indexer: only the score kernel(s)", [x[0] for x in flow.launches])
reset()
flow.run_step("indexer", p, kernels=["topk"])
report([x[0] for x in flow.launches] == ["topk"], "indexer: only the top-k")
reset()
flow.run_step("indexer", p, kernels=lambda k: k.kernel == "topk")
report([x[0] for x in flow.launches] == ["topk"],
       "indexer: a subset by predicate")

# rows = 0: the rows-grid kernel is skipped, the persistent one launches.
reset()
flow.run_step("indexer", problem(rows=0, total=0))
report([x[0] for x in flow.launches] == ["w0"] and
       torch_.allocs == [(1, "torch.uint8", "cuda:0")],
       "indexer: rows = 0 skips the rows-grid kernel (scratch of 0 bytes "
       "allocated as 1)", ([x[0] for x in flow.launches], torch_.allocs))

# A persistent grid is capped by the CTAs of the kernel that fit on an SM.
flow._states[0].kernels["w0"].max_active = 1
_, plan = flow.plan("indexer", p)
report(plan[0][1] == (132, 1, 1), "plan: persistent grid capped by "
       "max_active", plan[0][1])
flow._states[0].kernels["w0"].max_active = 0

# The manifest's shared_bytes is the kernel's whole shared-memory need: what
# the cubin declares statically (workgroup attributions) is not requested
# again as dynamic shared memory.
reset()
flow._states[0].kernels["topk"].static_smem = 32768
flow.run_step("indexer", p)
report(flow.launches[1][3] == 50000 - 32768,
       "indexer: dynamic smem = shared_bytes - static smem", flow.launches[1][3])
flow._states[0].kernels["topk"].static_smem = 50000
reset()
flow.run_step("indexer", p)
report(flow.launches[1][3] == 0, "indexer: all-static smem launches with 0")
flow._states[0].kernels["topk"].static_smem = 0

# Tensors on cuda:1: the plan uses that device's functions and SM count, and
# the launch runs under a cuda:1 guard on its stream.
reset()
p1 = problem(dev=1)
flow.run_step("indexer", p1)
report([x[6] for x in flow.launches] == [1, 1] and
       flow.launches[0][1] == (2 * NUM_SMS[1], 1, 1) and
       flow.launches[0][4] == 0xabc + 1 and torch_.devices == [1] and
       torch_.allocs == [(TOTAL * 8 * 4, "torch.uint8", "cuda:1")],
       "indexer on cuda:1: its functions, SMs, stream and scratch",
       (flow.launches[0][:5], torch_.allocs))
# A device without an index is the current device.
reset()
p_none = problem()
for t in p_none.values():
    t.device = Dev("cuda", None)
flow.run_step("indexer", p_none)
report([x[6] for x in flow.launches] == [0, 0],
       "indexer: device index None means the current device")

# --- the cache step --------------------------------------------------------
reset()
cp = problem()
flow.run_step("cache", cp)
report(len(flow.launches) == 1 and flow.launches[0][1] == (3, 1, 1) and
       flow.launches[0][5][-1] == ("num_new", NEW) and
       flow.launches[0][5][0] == ("k", cp["k"].data_ptr(),
                                  (0, NB * 16 * 128, 1)) and
       flow.launches[0][5][3] == ("block_ids", cp["block_ids"].data_ptr(),
                                  (0, NEW, 1)) and torch_.allocs == [],
       "cache step: items grid ceil(9/4), parameters, no scratch",
       flow.launches)
reset()
flow.run_step("cache", dict(cp, block_ids=FakeTensor((0,), I32)))
report(flow.launches == [], "cache step: no launch for zero new blocks")

# --- errors: each names the argument, and nothing is launched -------------


def expect_error(what, needle, mutate, step="indexer", planning=False,
                 kernels=None):
    p = problem()
    mutate(p)
    reset()
    try:
        if planning:
            flow.plan(step, p, kernels)
        else:
            flow.run_step(step, p, kernels)
    except ValueError as err:
        ok = needle in str(err) and not flow.launches and not torch_.allocs
        report(ok, f"error: {what}",
               f"{err} / launches {flow.launches} / allocs {torch_.allocs}")
        return
    except Exception as err:  # noqa: BLE001
        report(False, f"error: {what}", f"{type(err).__name__}: {err}")
        return
    report(False, f"error: {what}", "no ValueError")


def put(name, t):
    return lambda p: p.__setitem__(name, t)


expect_error("q missing", "q: missing (the flow's input tensor [rows, 5, 128] "
             "bf16)", lambda p: p.pop("q"))
expect_error("q None", "q: missing", put("q", None))
expect_error("q not a tensor", "q: expected a tensor, got list",
             put("q", [1, 2]))
expect_error("q on the CPU", "q: on cpu, the flow runs on cuda",
             put("q", FakeTensor((ROWS, G, 128), BF16, Dev("cpu"))))
expect_error("an output on another GPU",
             "sparse_kv_indices: on cuda:1, the other arguments are on cuda:0",
             put("sparse_kv_indices", FakeTensor((TOTAL,), I32,
                                                 Dev("cuda", 1))))
expect_error("q on another GPU than the rest",
             "k: on cuda:0, the other arguments are on cuda:1",
             put("q", FakeTensor((ROWS, G, 128), BF16, Dev("cuda", 1))))
expect_error("q dtype", "q: dtype torch.float32, expected bfloat16 (bf16)",
             put("q", FakeTensor((ROWS, G, 128), F32)))
expect_error("q not contiguous", "q: must be contiguous",
             put("q", FakeTensor((ROWS, G, 128), BF16, contiguous=False)))
expect_error("q rank", "q: rank 2, expected 3",
             put("q", FakeTensor((ROWS, G * 128), BF16)))
expect_error("q group size",
             "q: shape [6, 8, 128] does not match [rows, 5, 128]",
             put("q", FakeTensor((ROWS, 8, 128), BF16)))
expect_error("q rows vs indptr", "q: shape [7, 5, 128]",
             put("q", FakeTensor((ROWS + 1, G, 128), BF16)))
expect_error("indptr empty",
             "dense_kv_indptr: extent 0 of axis 0 cannot be rows+1",
             put("dense_kv_indptr", FakeTensor((0,), I32)))
expect_error("indptr dtype", "dense_kv_indptr: dtype torch.int64",
             put("dense_kv_indptr", FakeTensor((ROWS + 1,), "torch.int64")))
expect_error("sparse indptr rows", "sparse_kv_indptr: shape [6]",
             put("sparse_kv_indptr", FakeTensor((ROWS,), I32)))
expect_error("sparse indices total", "sparse_kv_indices: shape [299]",
             put("sparse_kv_indices", FakeTensor((TOTAL - 1,), I32)))
expect_error("field num_blocks", "min: shape [399, 1, 128]",
             put("min", FakeTensor((NB - 1, 1, 128), BF16)))
expect_error("k vs fields num_blocks", "v: shape [400, 16, 128] does not "
             "match [num_blocks, 16, 128] with rows=6 (from dense_kv_indptr), "
             "total=300 (from dense_kv_indices), num_blocks=405 (from k)",
             put("k", FakeTensor((NB + 5, 16, 128), BF16)))
expect_error("field inner shape", "max: shape [400, 2, 128]",
             put("max", FakeTensor((NB, 2, 128), BF16)))
expect_error("field dtype", "min: dtype torch.float16",
             put("min", FakeTensor((NB, 1, 128), "torch.float16")))
expect_error("field missing", "max: missing (the flow's cache tensor",
             lambda p: p.pop("max"))
expect_error("q missing from the top-k-less subset", "q: missing",
             lambda p: p.pop("q"), kernels=flow.score_kernels())
expect_error("rows beyond i32", "rows = 2147483648 does not fit the kernels' "
             "i32 scalars", lambda p: p.update(
                 q=FakeTensor((2 ** 31, G, 128), BF16),
                 dense_kv_indptr=FakeTensor((2 ** 31 + 1,), I32),
                 sparse_kv_indptr=FakeTensor((2 ** 31 + 1,), I32)),
             planning=True)


def alias(p):
    t = p["sparse_kv_indices"]
    p["sparse_kv_indptr"] = FakeTensor((ROWS + 1,), I32, ptr=t.data_ptr() + 8)


expect_error("written output aliases another", "sparse_kv_indptr: shares "
             "memory with sparse_kv_indices", alias)
expect_error("written output aliases an input", "sparse_kv_indices: shares "
             "memory with dense_kv_indices", lambda p: p.__setitem__(
                 "sparse_kv_indices", FakeTensor(
                     (TOTAL,), I32, ptr=p["dense_kv_indices"].data_ptr())))
expect_error("cache step: block_ids dtype", "block_ids: dtype torch.int64",
             put("block_ids", FakeTensor((NEW,), "torch.int64")),
             step="cache")
expect_error("cache step: block_ids rank", "block_ids: rank 2",
             put("block_ids", FakeTensor((NEW, 1), I32)), step="cache")
expect_error("cache step: v vs k", "v: shape [401, 16, 128]",
             put("v", FakeTensor((NB + 1, 16, 128), BF16)), step="cache")
expect_error("cache step: k missing (its kernel reads k)",
             "k: missing (the flow's cache tensor [num_blocks, 16, 128] bf16)",
             lambda p: p.pop("k"), step="cache")
expect_error("cache step: written field aliases k",
             "max: shares memory with k",
             lambda p: p.__setitem__("max", FakeTensor(
                 (NB, 1, 128), BF16, ptr=p["k"].data_ptr())), step="cache")

# A subset needs only the arguments its kernels use.
reset()
p3 = {n: t for n, t in problem().items() if n not in ("q", "max", "min")}
flow.run_step("indexer", p3, kernels=["topk"])
report([x[0] for x in flow.launches] == ["topk"],
       "indexer: the top-k alone needs neither q nor the fields")
reset()
flow.run_step("cache", {n: t for n, t in problem().items() if n != "v"})
report(len(flow.launches) == 1, "cache step: no v is fine (c0 does not "
       "read it)")

# Reading k is fine for a step that does not write it: aliasing is only an
# error for written tensors.
reset()
pv = problem()
pv["v"] = FakeTensor((NB, 16, 128), BF16, ptr=pv["k"].data_ptr())
flow.run_step("cache", pv)
report(len(flow.launches) == 1, "cache step: k and v may share memory "
       "(neither is written)")

# A constant i32 scalar that overflows is refused when planning.
over = copy.deepcopy(MANIFEST)
over["steps"]["cache"]["kernels"][0]["params"].append(
    {"name": "big", "kind": "scalar", "value": 2 ** 31})
flow_over = FakeFlow(mf.Manifest(over))
try:
    flow_over.plan("cache", problem())
    report(False, "plan: i32 overflow of a constant", "no error")
except ValueError as err:
    report("big = 2147483648 overflows the i32 parameter of c0" in str(err),
           "plan: i32 overflow of a constant", err)

# validate_step directly: symbols of each step.
ts = problem()
syms = va.validate_step(man, "indexer", ts, ("cuda", 0))
report(syms == {"rows": ROWS, "total": TOTAL, "num_blocks": NB},
       "validate_step: indexer binds rows / total / num_blocks", syms)
syms = va.validate_step(man, "cache", ts, ("cuda", 0))
report(syms == {"num_blocks": NB, "num_new": NEW},
       "validate_step: cache binds num_blocks / num_new", syms)
no_kv = {n: t for n, t in ts.items() if n not in ("k", "v")}
try:
    va.validate_step(man, "indexer", no_kv, ("cuda", 0))
    report(False, "validate_step: every argument is required by default",
           "no error")
except ValueError as err:
    report("k: missing" in str(err),
           "validate_step: every argument is required by default", err)
syms = va.validate_step(man, "indexer", no_kv, ("cuda", 0), may_omit=["k", "v"])
report(syms == {"rows": ROWS, "total": TOTAL, "num_blocks": NB},
       "validate_step: may_omit arguments may be absent (num_blocks then "
       "from the fields)", syms)
try:
    va.validate_step(man, "indexer",
                     dict(no_kv, min=FakeTensor((NB + 1, 1, 128), BF16)),
                     ("cuda", 0), may_omit=["k", "v"])
    report(False, "validate_step: without k, the fields must agree",
           "no error")
except ValueError as err:
    report("min: shape [401, 1, 128] does not match [num_blocks, 1, 128] "
           "with rows=6 (from dense_kv_indptr), total=300 (from "
           "dense_kv_indices), num_blocks=400 (from max)" in str(err),
           "validate_step: without k, the fields must agree", err)
syms = va.validate_step(man, "indexer", ts, ("cuda", 0), may_omit=["k", "v"])
report(syms == {"rows": ROWS, "total": TOTAL, "num_blocks": NB},
       "validate_step: may_omit arguments are checked when given", syms)
try:
    va.validate_step(man, "indexer", dict(ts, v=FakeTensor((NB, 16, 128), F32)),
                     ("cuda", 0), may_omit=["k", "v"])
    report(False, "validate_step: a given may_omit argument is validated",
           "no error")
except ValueError as err:
    report("v: dtype torch.float32" in str(err),
           "validate_step: a given may_omit argument is validated", err)
try:
    va.validate_step(man, "indexer", ts, ("cpu", None))
    report(False, "validate_step: device type of the step", "no error")
except ValueError as err:
    report("q: on cuda, the flow runs on cpu" in str(err),
           "validate_step: device type of the step", err)

# --- the same validator on numpy arrays (a CPU manifest) -------------------
cpu = copy.deepcopy(MANIFEST)
cpu.update(backend="cpu", target="cpu", artifacts={"library": "libf.so"})
del cpu["tensors"]["scratch0"]
for name, t in cpu["tensors"].items():
    if t["dtype"] == "bf16":
        t["dtype"] = "f32"
for step in ("indexer", "cache"):
    s = cpu["steps"][step]
    s["kernels"] = [{"kernel": f"_mlir_ciface_f_{step}",
                     "grid": {"kind": "host"},
                     "params": [buf(a) for a in s["args"]],
                     "reads": list(s["args"]), "writes": list(s["writes"])}]
mcpu = mf.Manifest(cpu)
cache = {n: np.zeros(s, np.float32) for n, (s, _) in
         mcpu.cache_shapes(NB).items()}
nd = dict(cache, block_ids=np.arange(NEW, dtype=np.int32))
report(va.validate_step(mcpu, "cache", nd, ("cpu", None)) ==
       {"num_blocks": NB, "num_new": NEW}, "numpy: a good cache step")


def np_error(what, needle, tensors, device=("cpu", None), m=mcpu):
    try:
        va.validate_step(m, "cache", tensors, device)
    except ValueError as err:
        report(needle in str(err), f"numpy error: {what}", err)
        return
    report(False, f"numpy error: {what}", "no ValueError")


ro = cache["max"].copy()
ro.setflags(write=False)
np_error("read-only written field", "max: must be writeable", dict(nd, max=ro))
np_error("float64 field", "min: dtype float64, expected float32 (f32)",
         dict(nd, min=cache["min"].astype(np.float64)))
np_error("non-contiguous field", "max: must be contiguous",
         dict(nd, max=np.zeros((NB, 1, 256), np.float32)[:, :, ::2]))
np_error("int64 block ids", "block_ids: dtype int64",
         dict(nd, block_ids=nd["block_ids"].astype(np.int64)))
np_error("a view of k as a written field", "min: shares memory with k",
         dict(nd, min=cache["k"].reshape(-1)[:NB * 128].reshape(NB, 1, 128)))
np_error("numpy arrays for a CUDA manifest", "k: on cpu, the flow runs on "
         "cuda", dict(nd, k=nd["k"]), device=("cuda", 0), m=man)

# --- check_csr on host values ----------------------------------------------


def csr_error(what, needle, *args, **kw):
    try:
        va.check_csr(*args, **kw)
    except ValueError as err:
        report(needle in str(err), f"check_csr: {what}", err)
        return
    report(False, f"check_csr: {what}", "no ValueError")


try:
    va.check_csr([0, 2, 2, 5], [4, 0, 1, 2, 3], num_blocks=5, rows=3,
                 unique=True)
    va.check_csr(np.array([0, 2, 4], np.int32), np.array([1, 1, 1, 1]),
                 num_blocks=2)
    va.check_csr([0], [], num_blocks=0, rows=0)
    va.check_csr([0, 3, 4], [1, 1, 1, 0], num_blocks=2, unique=True)
    report(True, "check_csr: good CSRs pass (lists and arrays, repeats "
           "without unique and within a row with it, no rows)")
except ValueError as err:
    report(False, "check_csr: good CSRs pass", err)
csr_error("rows", "dense_kv_indptr: expected 4 entries (rows + 1, rows = "
          "q.shape[0] = 3), got 3", [0, 1, 2], [0, 1], 4, rows=3)
csr_error("start", "dense_kv_indptr: must start at 0, starts at 1",
          [1, 2], [0, 1], 4)
csr_error("empty indptr", "must start at 0, starts at nothing", [], [], 4)
csr_error("decreasing", "dense_kv_indptr[2] = 1 < dense_kv_indptr[1] = 2",
          [0, 2, 1, 3], [0, 1, 2], 4)
csr_error("end", "must end at len(dense_kv_indices) = 3, ends at 2",
          [0, 2], [0, 1, 2], 4)
csr_error("block id too large", "dense_kv_indices: block id 4 at position 1 "
          "is out of range [0, 4)", [0, 2], [0, 4], 4)
csr_error("negative block id", "block id -1 at position 0", [0, 1], [-1], 4)
csr_error("repeated block id", "dense_kv_indices: block id 2 appears in "
          "rows 0 and 1 (more than once)", [0, 2, 3], [2, 0, 2], 4,
          unique=True)
csr_error("argument names", "block_ids: block id 9", [0, 1], [9], 4,
          indptr_name="block_ids", indices_name="block_ids")

# --- the ctypes launch itself, against a recording driver -----------------
class RecordingDriver(drv_mod.CtypesDriver):
    """The ctypes driver with cuLaunchKernel / cuLaunchKernelEx recorders;
    `fail` makes them fail."""

    def __init__(self):
        self.calls, self.fail = [], 0

    def cuLaunchKernelEx(self, cfg_ref, func, argv, extra):
        cfg = cfg_ref._obj
        attrs = [(cfg.attrs[i].id, cfg.attrs[i].value)
                 for i in range(cfg.numAttrs)]
        self.calls.append(("ex", func.value, (cfg.gridDimX, cfg.gridDimY,
                                              cfg.gridDimZ),
                           (cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ),
                           cfg.sharedMemBytes, cfg.hStream, attrs))
        return self.fail

    def cuLaunchKernel(self, func, gx, gy, gz, bx, by, bz, shared, stream,
                       argv, extra):
        self.calls.append(("plain", func.value, (gx, gy, gz), (bx, by, bz),
                           shared, stream.value, []))
        return self.fail

    def error_name(self, res):
        return f"CUDA_ERROR_{res}"


def one_launch(pdl, shared=1024):
    return lp.Launch(0x42, (3, 1, 1), (256, 1, 1), shared, [], pdl)


drv = RecordingDriver()
args = (ctypes.c_void_p * 1)()
for pdl in (True, False, True):
    drv._launch(one_launch(pdl), 0xabc, args, "fake_flow")
report(drv.calls == [("ex", 0x42, (3, 1, 1), (256, 1, 1), 1024, 0xabc,
                      [(6, 1)]),
                     ("plain", 0x42, (3, 1, 1), (256, 1, 1), 1024, 0xabc, []),
                     ("ex", 0x42, (3, 1, 1), (256, 1, 1), 1024, 0xabc,
                      [(6, 1)])],
       "launch: a chained launch is cuLaunchKernelEx with one programmatic "
       "stream serialization attribute (id 6, value 1), every time; an "
       "unchained one cuLaunchKernel", drv.calls)
drv.fail = 701
try:
    drv._launch(one_launch(True, 0), 0xabc, args, "fake_flow")
    report(False, "launch: a failed launch raises")
except rt.CudaDriverError as e:
    report("cuLaunchKernelEx(fake_flow, grid=(3, 1, 1)" in str(e) and
           "chained) failed: CUDA_ERROR_701" in str(e),
           "launch: a failed chained launch names the call, the flow, the "
           "grid and the error", str(e))

# The pure logic needs neither torch nor a GPU.
report("torch" not in sys.modules, "no torch import")
report.exit(summary=True)
