# RUN: %python %s
# REQUIRES: numpy
#
# The GPU runtime's pure logic, without torch or a GPU (docs/gpu.md):
# manifest parsing and its error messages, shape expressions, kernel
# subsets (score kernels vs the top-k), grid sizes for the three grid kinds,
# the cuLaunchKernel parameter array (a buffer is 5 parameters
# ptr, ptr, 0, numel, 1; scalars are i32 symbol values), read back through
# ctypes, and the check of the manifest's params against the PTX .entry
# signatures.

import copy
import ctypes
import json
import os
import tempfile

from vortex import runtime as rt
from vortex import testing

report = testing.Tally()


def raises(fn, exc, needle):
    try:
        fn()
    except exc as err:
        return needle in str(err), str(err)
    except Exception as err:  # noqa: BLE001
        return False, f"raised {type(err).__name__}: {err}"
    return False, "did not raise"


def buf(name):
    return {"name": name, "kind": "buffer"}


def scal(name):
    return {"name": name, "kind": "scalar"}


MANIFEST = {
    "version": 1,
    "flow": "gqa_quest_sparse_attention",
    "chip": "sm_90",
    "ptx": "gqa_quest_sparse_attention.ptx",
    "cubin": "gqa_quest_sparse_attention.cubin",
    "config": {"block_size": 16, "page_size": 16, "head_dim": 128,
               "group_size": 8, "topk_val": 29, "topk_ratio": 0.0625,
               "reserved_bos": 1, "reserved_eos": 2,
               "intermediate_dtype": "bf16", "kv_dtype": "bf16"},
    "tensors": {
        "q": {"role": "input", "dtype": "bf16", "shape": ["rows", 8, 128]},
        "k": {"role": "cache", "dtype": "bf16", "shape": ["num_blocks", 16, 128]},
        "v": {"role": "cache", "dtype": "bf16", "shape": ["num_blocks", 16, 128]},
        "max": {"role": "cache", "dtype": "bf16", "shape": ["num_blocks", 1, 128]},
        "min": {"role": "cache", "dtype": "bf16", "shape": ["num_blocks", 1, 128]},
        "dense_kv_indptr": {"role": "input", "dtype": "i32", "shape": ["rows+1"]},
        "dense_kv_indices": {"role": "input", "dtype": "i32", "shape": ["total"]},
        "sparse_kv_indptr": {"role": "output", "dtype": "i32", "shape": ["rows+1"]},
        "sparse_kv_indices": {"role": "output", "dtype": "i32", "shape": ["total"]},
        "block_ids": {"role": "input", "dtype": "i32", "shape": ["num_new"]},
        "scratch0": {"role": "scratch", "dtype": "f32", "shape": ["total", 1, 1]},
    },
    "steps": {
        "indexer": [
            {"kernel": "gqa_quest_sparse_attention_indexer_w0",
             "grid": {"kind": "persistent", "ctas_per_sm": 4},
             "block": [256, 1, 1], "shared_bytes": 0,
             "params": [buf("q"), buf("max"), buf("min"),
                        buf("dense_kv_indptr"), buf("dense_kv_indices"),
                        buf("scratch0"), scal("rows"), scal("total")],
             "reads": ["q", "max", "min", "dense_kv_indptr",
                       "dense_kv_indices"],
             "writes": ["scratch0"]},
            {"kernel": "gqa_quest_sparse_attention_indexer_topk",
             "grid": {"kind": "rows"}, "block": [1024, 1, 1],
             "shared_bytes": 65536,
             "params": [buf("scratch0"), buf("dense_kv_indptr"),
                        buf("dense_kv_indices"), buf("sparse_kv_indptr"),
                        buf("sparse_kv_indices"), scal("rows")],
             "reads": ["scratch0", "dense_kv_indptr", "dense_kv_indices"],
             "writes": ["sparse_kv_indptr", "sparse_kv_indices"]},
        ],
        "cache": [
            {"kernel": "gqa_quest_sparse_attention_cache_w0",
             "grid": {"kind": "items", "of": "num_new", "per_cta": 4},
             "block": [128, 1, 1], "shared_bytes": 0,
             "params": [buf("k"), buf("max"), buf("min"), buf("block_ids"),
                        scal("num_new"), scal("num_blocks")],
             "reads": ["k", "block_ids"], "writes": ["max", "min"]},
        ],
    },
}

# --- parsing from a file ---------------------------------------------------
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "gqa_quest_sparse_attention.manifest.json")
    with open(path, "w") as f:
        json.dump(MANIFEST, f)
    m = rt.Manifest.from_file(path)
    report(m.base_dir == os.path.abspath(d) and m.flow == MANIFEST["flow"]
           and m.cubin.endswith(".cubin") and m.config["group_size"] == 8,
           "manifest: parsed from a file (flow, files, config)")

spec_q = m.tensors["q"]
report(spec_q.role == "input" and spec_q.torch_dtype == "torch.bfloat16"
       and spec_q.itemsize == 2 and [str(x) for x in spec_q.shape] ==
       ["rows", "8", "128"], "manifest: tensor spec of q",
       [str(x) for x in spec_q.shape])
report(str(m.tensors["dense_kv_indptr"].shape[0]) == "rows+1" and
       m.tensors["dense_kv_indptr"].extents({"rows": 7}) == (8,),
       "manifest: rows+1 evaluates")
report(m.cache_tensors() == ["k", "v", "max", "min"],
       "manifest: cache tensors in manifest order", m.cache_tensors())
report(m.cache_shapes(10) == {"k": ((10, 16, 128), "bf16"),
                              "v": ((10, 16, 128), "bf16"),
                              "max": ((10, 1, 128), "bf16"),
                              "min": ((10, 1, 128), "bf16")},
       "manifest: cache_shapes")
report(m.score_kernels() == ["gqa_quest_sparse_attention_indexer_w0"],
       "manifest: score kernels exclude the top-k", m.score_kernels())
sub = m.kernels("indexer", ["gqa_quest_sparse_attention_indexer_topk"])
report([k.kernel for k in sub] == ["gqa_quest_sparse_attention_indexer_topk"],
       "manifest: kernel subset by name")
sub = m.kernels("indexer", lambda k: not k.is_selection())
report([k.kernel for k in sub] == ["gqa_quest_sparse_attention_indexer_w0"],
       "manifest: kernel subset by predicate")
ok, msg = raises(lambda: m.kernels("indexer", ["nope"]), ValueError,
                 "has no kernel 'nope'")
report(ok, "manifest: unknown kernel in a subset", msg)
report(m.used_tensors(m.kernels("indexer")) ==
       ["q", "max", "min", "dense_kv_indptr", "dense_kv_indices", "scratch0",
        "sparse_kv_indptr", "sparse_kv_indices"],
       "manifest: tensors used by the indexer, in first-use order",
       m.used_tensors(m.kernels("indexer")))
report(m.steps["indexer"][0].block == (256, 1, 1) and
       m.steps["indexer"][1].shared_bytes == 65536,
       "manifest: block and shared bytes")

# --- shape expressions -----------------------------------------------------
D = rt.Dim.parse
cases = [(D("rows+1"), {"rows": 4}, 5, 4), (D("total"), {"total": 9}, 9, 9),
         (D("rows*8"), {"rows": 3}, 24, 3), (D("rows-1"), {"rows": 3}, 2, 3),
         (D(16), {}, 16, None), (D("16"), {}, 16, None)]
ok = all(d.value(s) == v and (sol is None or d.solve(v) == sol)
         for d, s, v, sol in cases)
report(ok, "Dim: value and solve for +, -, *, constants")
report(D("rows+1").solve(0) is None and D("rows*8").solve(12) is None,
       "Dim: no solution for rows+1 = 0 or rows*8 = 12")
for bad in ["rows+", "3x", "", -1, True, 1.5]:
    ok, msg = raises(lambda: D(bad), ValueError, "")
    report(ok, f"Dim: rejects {bad!r}", msg)

# --- malformed manifests ---------------------------------------------------


def mutated(fn):
    d = copy.deepcopy(MANIFEST)
    fn(d)
    return d


bad_cases = [
    ("version", lambda d: d.update(version=2), "unsupported version"),
    ("no tensors", lambda d: d.pop("tensors"), "missing or malformed key"),
    ("no binary", lambda d: (d.pop("ptx"), d.pop("cubin")), "neither 'ptx'"),
    ("bad role", lambda d: d["tensors"]["q"].update(role="weird"),
     "unknown role"),
    ("bad dtype", lambda d: d["tensors"]["q"].update(dtype="bf17"),
     "unknown dtype"),
    ("bad symbol", lambda d: d["tensors"]["q"].update(shape=["batch", 8, 128]),
     "unknown symbol 'batch'"),
    ("unknown buffer", lambda d: d["steps"]["indexer"][0]["params"].append(
        buf("nope")), "buffer param 'nope' is not a manifest tensor"),
    ("unknown scalar", lambda d: d["steps"]["indexer"][0]["params"].append(
        scal("nope")), "scalar param 'nope' is neither"),
    ("bad grid", lambda d: d["steps"]["indexer"][0].update(grid={"kind": "x"}),
     "unknown grid kind"),
    ("items of", lambda d: d["steps"]["cache"][0]["grid"].update(of="blocks"),
     "grid 'items' of unknown symbol"),
    ("bad block", lambda d: d["steps"]["cache"][0].update(block=[0, 1, 1]),
     "bad block"),
    ("reads unknown", lambda d: d["steps"]["cache"][0]["reads"].append("w"),
     "reads/writes unknown tensor 'w'"),
    ("no cache step", lambda d: d["steps"].pop("cache"), "no 'cache' step"),
]
for what, fn, needle in bad_cases:
    ok, msg = raises(lambda: rt.Manifest(mutated(fn)), ValueError, needle)
    report(ok, f"manifest error: {what}", msg)

# Constant scalar params and i64 scalars are accepted.
m2 = rt.Manifest(mutated(lambda d: d["steps"]["cache"][0]["params"].extend(
    [{"name": "seven", "kind": "scalar", "value": 7},
     {"name": "total", "kind": "scalar", "dtype": "i64"}])))
report(m2.steps["cache"][0].params[-2].value == 7 and
       m2.steps["cache"][0].params[-1].dtype == "i64",
       "manifest: constant and i64 scalar params")

# --- grid sizes ------------------------------------------------------------
syms = {"rows": 24, "total": 5000, "num_blocks": 6000, "num_new": 10}
w0, topk = m.steps["indexer"]
cw = m.steps["cache"][0]
report(rt.grid_size(w0, syms, 132) == (528, 1, 1),
       "grid: persistent = num_SMs * ctas_per_sm",
       rt.grid_size(w0, syms, 132))
report(rt.grid_size(topk, syms, 132) == (24, 1, 1), "grid: rows")
report(rt.grid_size(cw, syms, 132) == (3, 1, 1) and
       rt.grid_size(cw, dict(syms, num_new=0), 132) == (0, 1, 1) and
       rt.grid_size(cw, dict(syms, num_new=12), 132) == (3, 1, 1),
       "grid: items = ceil(of / per_cta)")
report(rt.required_symbols(m.kernels("indexer")) == ["rows", "total"] and
       rt.required_symbols(m.kernels("cache")) == ["num_new", "num_blocks"],
       "required symbols of the steps")
ok, msg = raises(lambda: rt.check_bound(m.kernels("cache"), {"num_new": 3}),
                 ValueError, "a cache tensor: needed to define the symbol "
                 "'num_blocks'")
report(ok, "unbound symbol names its source", msg)

# --- parameter packing -----------------------------------------------------
bufs = {"q": (0x1000, 24 * 8 * 128), "max": (0x2000, 6000 * 128),
        "min": (0x3000, 6000 * 128), "dense_kv_indptr": (0x4000, 25),
        "dense_kv_indices": (0x5000, 5000), "scratch0": (0x6000, 5000)}
vals = rt.param_values(w0, bufs, syms)
report(len(vals) == 6 * 5 + 2, "params: 6 buffers x 5 + 2 scalars", len(vals))
arr, keep = rt.pack_params(vals)


def read(i, ctype):
    return ctypes.cast(arr[i], ctypes.POINTER(ctype)).contents.value


expect = []
for n in ["q", "max", "min", "dense_kv_indptr", "dense_kv_indices",
          "scratch0"]:
    p, numel = bufs[n]
    expect += [(ctypes.c_void_p, p), (ctypes.c_void_p, p),
               (ctypes.c_int64, 0), (ctypes.c_int64, numel),
               (ctypes.c_int64, 1)]
expect += [(ctypes.c_int32, 24), (ctypes.c_int32, 5000)]
got = [read(i, t) for i, (t, _) in enumerate(expect)]
report(got == [v for _, v in expect] and
       all(type(v) is t for v, (t, _) in zip(vals, expect)),
       "params: descriptor ABI values and ctypes types read back", got)
report(ctypes.sizeof(vals[0]) == 8 and ctypes.sizeof(vals[2]) == 8 and
       ctypes.sizeof(vals[-1]) == 4, "params: pointer / i64 / i32 sizes")
vals2 = rt.param_values(m2.steps["cache"][0], {"k": (1, 2), "max": (3, 4),
                                                "min": (5, 6),
                                                "block_ids": (7, 8)}, syms)
report(type(vals2[-2]) is ctypes.c_int32 and vals2[-2].value == 7 and
       type(vals2[-1]) is ctypes.c_int64 and vals2[-1].value == 5000,
       "params: constant scalar and i64 scalar")
ok, msg = raises(lambda: rt.param_values(w0, bufs, dict(syms, rows=2 ** 31)),
                 ValueError, "overflows i32")
report(ok, "params: i32 overflow is an error", msg)

# --- PTX signatures vs the manifest ---------------------------------------


def entry(name, widths):
    params = ",\n".join(f"\t.param .u{w} {'.ptr .align 1 ' if w == 64 else ''}"
                        f"{name}_param_{i}" for i, w in enumerate(widths))
    return f".visible .entry {name}(\n{params}\n)\n{{\n\tret;\n}}\n"


good = "".join(entry(k.kernel, rt.expected_widths(k))
               for ks in m.steps.values() for k in ks)
report(rt.expected_widths(w0) == [64] * 30 + [32, 32],
       "ptx: expected widths of w0 (6 buffers x 5 x 64 bit, 2 x i32)")
sigs = rt.ptx_signatures(".version 8.0\n.target sm_90\n" + good)
report(sorted(sigs) == sorted(k.kernel for ks in m.steps.values() for k in ks)
       and rt.check_ptx(m, good) == [], "ptx: matching signatures",
       rt.check_ptx(m, good))
bad = good.replace(entry(topk.kernel, rt.expected_widths(topk)),
                   entry(topk.kernel, rt.expected_widths(topk)[:-1]))
probs = rt.check_ptx(m, bad)
report(len(probs) == 1 and "gqa_quest_sparse_attention_indexer_topk takes 25"
       in probs[0], "ptx: a missing parameter is reported", probs)
probs = rt.check_ptx(m, good.replace(cw.kernel, "other_kernel"))
report(len(probs) == 1 and "is not an .entry" in probs[0],
       "ptx: a missing kernel is reported", probs)
widths = rt.expected_widths(cw)
widths[-1] = 64
probs = rt.check_ptx(m, good.replace(entry(cw.kernel, rt.expected_widths(cw)),
                                     entry(cw.kernel, widths)))
report(len(probs) == 1 and "widths" in probs[0],
       "ptx: an i64 where the manifest has an i32 is reported", probs)

report.exit(summary=True)
