# RUN: %python %s
# REQUIRES: numpy
#
# The manifest (version 2, vortex.manifest) and the GPU runtime's pure
# logic, without torch or a GPU (docs/gpu.md): manifest parsing and its
# error messages (including the v2 rules: version 2, backend cpu/cuda, the
# host grid only on the CPU, step args/writes and symbols naming tensors,
# kernels writing only declared or scratch tensors), shape expressions,
# kernel subsets (score kernels vs the top-k), the torch op name and schema
# of a step, grid sizes for every grid kind, the cuLaunchKernel parameter
# array of a launch plan (a buffer is 5 parameters ptr, ptr, 0, numel, 1;
# scalars are i32 symbol values or constants, or i64), read back through
# ctypes, and the check of the manifest's params against the PTX .entry
# signatures.

import copy
import ctypes
import json
import os
import re
import sys
import tempfile

from vortex.runtime import manifest as mf
from vortex.runtime import validate as va
from vortex.runtime import cuda as rt
from vortex.runtime import driver as drv
from vortex.runtime import plan as lp
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


SOURCE_HASH = "1e0da4cb736865eea37d0f86e2d0ab07cbc9cc4556a8cdbfa25f21f6db678db8"
INDEXER_ARGS = ["q", "k", "v", "max", "min", "dense_kv_indptr",
                "dense_kv_indices", "sparse_kv_indptr", "sparse_kv_indices"]
CACHE_ARGS = ["k", "v", "max", "min", "block_ids"]

MANIFEST = {
    "version": 2,
    "flow": "gqa_quest_sparse_attention",
    "backend": "cuda",
    "target": "sm_90",
    "artifacts": {"ptx": "gqa_quest_sparse_attention.ptx",
                  "cubin": "gqa_quest_sparse_attention.cubin"},
    "source_hash": SOURCE_HASH,
    "config": {"block_size": 16, "page_size": 16, "head_dim": 128,
               "group_size": 8, "topk_val": 29, "topk_ratio": 0.0625,
               "reserved_bos": 1, "reserved_eos": 2,
               "intermediate_dtype": "bf16", "kv_dtype": "bf16"},
    "symbols": {"rows": "dense_kv_indptr", "total": "dense_kv_indices",
                "num_blocks": "k", "num_new": "block_ids"},
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
        "indexer": {
            "args": INDEXER_ARGS,
            "writes": ["sparse_kv_indptr", "sparse_kv_indices"],
            "kernels": [
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
        },
        "cache": {
            "args": CACHE_ARGS,
            "writes": ["max", "min"],
            "kernels": [
                {"kernel": "gqa_quest_sparse_attention_cache_w0",
                 "grid": {"kind": "items", "of": "num_new", "per_cta": 4},
                 "block": [128, 1, 1], "shared_bytes": 0,
                 "params": [buf("k"), buf("max"), buf("min"), buf("block_ids"),
                            scal("num_new"), scal("num_blocks")],
                 "reads": ["k", "block_ids"], "writes": ["max", "min"]},
            ],
        },
    },
}


def cpu_variant(d):
    """The same flow as a CPU manifest: one host function per step."""
    d.update(backend="cpu", target="cpu",
             artifacts={"library": "libgqa_quest_sparse_attention.so"})
    del d["tensors"]["scratch0"]
    for step in ("indexer", "cache"):
        s = d["steps"][step]
        s["kernels"] = [{
            "kernel": f"_mlir_ciface_gqa_quest_sparse_attention_{step}",
            "grid": {"kind": "host"}, "block": [1, 1, 1], "shared_bytes": 0,
            "params": [buf(a) for a in s["args"]],
            "reads": [a for a in s["args"] if a not in s["writes"]],
            "writes": list(s["writes"])}]


def mutated(fn, base=MANIFEST):
    d = copy.deepcopy(base)
    fn(d)
    return d


CPU_MANIFEST = mutated(cpu_variant)

# --- parsing from a file ---------------------------------------------------
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "gqa_quest_sparse_attention.manifest.json")
    with open(path, "w") as f:
        json.dump(MANIFEST, f)
    m = mf.Manifest.from_file(path)
    report(m.base_dir == os.path.abspath(d) and m.data["version"] == 2,
           "manifest: parsed from a file (base_dir, version 2)", m.base_dir)
    report(m.flow == MANIFEST["flow"] and m.backend == "cuda" and
           m.target == "sm_90" and m.source_hash == SOURCE_HASH and
           m.config["group_size"] == 8,
           "manifest: flow, backend, target, source hash, config")
    report(m.artifact("cubin") == os.path.join(
        os.path.abspath(d), "gqa_quest_sparse_attention.cubin") and
        m.artifact("ptx").endswith(".ptx") and m.artifact("library") is None,
        "manifest: artifacts resolve against the manifest's directory; an "
        "absent kind is None", (m.artifact("cubin"), m.artifact("library")))
    with open(path, "w") as f:
        f.write("{not json")
    ok, msg = raises(lambda: mf.Manifest.from_file(path), ValueError,
                     "manifest " + path)
    report(ok, "manifest: a file that is not JSON is a ValueError naming it",
           msg)
ok, msg = raises(lambda: mf.Manifest.from_file("/nonexistent/x.manifest.json"),
                 ValueError, "/nonexistent/x.manifest.json")
report(ok, "manifest: a missing file is a ValueError naming it", msg)
report(m.symbols == MANIFEST["symbols"],
       "manifest: symbols map to their defining tensors", m.symbols)

spec_q = m.tensors["q"]
report(spec_q.role == "input" and spec_q.torch_dtype == "torch.bfloat16"
       and spec_q.itemsize == 2 and [str(x) for x in spec_q.shape] ==
       ["rows", "8", "128"], "manifest: tensor spec of q",
       [str(x) for x in spec_q.shape])
report(str(m.tensors["dense_kv_indptr"].shape[0]) == "rows+1" and
       m.tensors["dense_kv_indptr"].extents({"rows": 7}) == (8,),
       "manifest: rows+1 evaluates")
report(m.cache_names() == ["k", "v", "max", "min"],
       "manifest: cache tensors in the cache step's argument order",
       m.cache_names())
report(m.fields == [("max", 1, 128), ("min", 1, 128)],
       "manifest: fields (name, r, c)", m.fields)
report(m.cache_shapes(10) == {"k": ((10, 16, 128), "bf16"),
                              "v": ((10, 16, 128), "bf16"),
                              "max": ((10, 1, 128), "bf16"),
                              "min": ((10, 1, 128), "bf16")},
       "manifest: cache_shapes")
st = m.steps["indexer"]
report(st.name == "indexer" and list(st.args) == INDEXER_ARGS and
       st.writes == ("sparse_kv_indptr", "sparse_kv_indices") and
       m.steps["cache"].writes == ("max", "min"),
       "manifest: step args (call order) and writes", st)
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
ok, msg = raises(lambda: m.kernels("decode"), ValueError,
                 "unknown step 'decode'")
report(ok, "manifest: unknown step", msg)
report(m.used_tensors(m.kernels("indexer")) ==
       ["q", "max", "min", "dense_kv_indptr", "dense_kv_indices", "scratch0",
        "sparse_kv_indptr", "sparse_kv_indices"],
       "manifest: tensors used by the indexer, in first-use order",
       m.used_tensors(m.kernels("indexer")))
report(m.steps["indexer"].kernels[0].block == (256, 1, 1) and
       m.steps["indexer"].kernels[1].shared_bytes == 65536,
       "manifest: block and shared bytes")
m_short = mf.Manifest(mutated(lambda d: d["steps"]["cache"]["kernels"][0]
                              .update(block=[64])))
report(m_short.steps["cache"].kernels[0].block == (64, 1, 1),
       "manifest: a short block is padded with 1s")

# --- the torch op name and schema ------------------------------------------
report(m.op_name("indexer") == "gqa_quest_sparse_attention_1e0da4cb7368_indexer"
       and m.op_name("cache") == "gqa_quest_sparse_attention_1e0da4cb7368_cache",
       "op_name: flow + source_hash[:12] + step",
       (m.op_name("indexer"), m.op_name("cache")))
m_cpu = mf.Manifest(CPU_MANIFEST)
report(m_cpu.op_name("indexer") == m.op_name("indexer"),
       "op_name: the CPU and the CUDA build of one source share the op")
m_other = mf.Manifest(mutated(lambda d: d.update(source_hash="ab" * 32)))
report(m_other.op_name("cache") == "gqa_quest_sparse_attention_abababababab_cache",
       "op_name: another source hash gives another op", m_other.op_name("cache"))
m_nohash = mf.Manifest(mutated(lambda d: d.pop("source_hash")))
report(m_nohash.op_name("cache") == "gqa_quest_sparse_attention_nohash_cache",
       "op_name: no source hash", m_nohash.op_name("cache"))

_SCHEMA_ARG = re.compile(r"Tensor(\((\w)!\))? (\w+)")


def schema_args(schema):
    """[(name, alias or None)] of a schema '(Tensor a, Tensor(b!) c) -> ()'."""
    if not (schema.startswith("(") and schema.endswith(") -> ()")):
        return None
    parts = schema[1:-len(") -> ()")].split(", ")
    out = []
    for p in parts:
        mm = _SCHEMA_ARG.fullmatch(p)
        if not mm:
            return None
        out.append((mm.group(3), mm.group(2)))
    return out


report(m.schema("indexer") ==
       "(Tensor q, Tensor k, Tensor v, Tensor max, Tensor min, "
       "Tensor dense_kv_indptr, Tensor dense_kv_indices, "
       "Tensor(a!) sparse_kv_indptr, Tensor(b!) sparse_kv_indices) -> ()",
       "schema: the indexer (only the sparse CSR mutable)", m.schema("indexer"))
report(m.schema("cache") ==
       "(Tensor k, Tensor v, Tensor(a!) max, Tensor(b!) min, "
       "Tensor block_ids) -> ()",
       "schema: the cache step (the written fields mutable, k and v not)",
       m.schema("cache"))
# A flow whose indexer also saves a field: exactly the written tensors are
# mutable, each with its own alias, in argument order.
m_saves = mf.Manifest(mutated(lambda d: (
    d["steps"]["indexer"]["writes"].insert(0, "max"),
    d["steps"]["indexer"]["kernels"][0]["writes"].append("max"))))
for mm, label in ((m, "quest"), (m_saves, "indexer saving max"),
                  (m_cpu, "CPU manifest")):
    for step in ("indexer", "cache"):
        got = schema_args(mm.schema(step))
        ok = (got is not None and [n for n, _ in got] ==
              list(mm.steps[step].args) and
              {n for n, a in got if a} == set(mm.steps[step].writes) and
              len({a for _, a in got if a}) == len(mm.steps[step].writes))
        report(ok, f"schema: {label} {step}: args in order, exactly the "
               "written ones Tensor(x!) with distinct aliases",
               mm.schema(step))
report("Tensor(a!) max" in m_saves.schema("indexer") and
       "Tensor(c!) sparse_kv_indices" in m_saves.schema("indexer"),
       "schema: a saved field is mutable in the indexer",
       m_saves.schema("indexer"))

# --- shape expressions -----------------------------------------------------
D = mf.Dim.parse
cases = [(D("rows+1"), {"rows": 4}, 5, 4), (D("total"), {"total": 9}, 9, 9),
         (D("rows*8"), {"rows": 3}, 24, 3), (D("rows-1"), {"rows": 3}, 2, 3),
         (D(16), {}, 16, None), (D("16"), {}, 16, None)]
ok = all(d.value(s) == v and (sol is None or d.solve(v) == sol)
         for d, s, v, sol in cases)
report(ok, "Dim: value and solve for +, -, *, constants")
report(D("rows+1").solve(0) is None and D("rows*8").solve(12) is None,
       "Dim: no solution for rows+1 = 0 or rows*8 = 12")
report([str(D(x)) for x in ("rows+1", "rows*1", "total", 16)] ==
       ["rows+1", "rows", "total", "16"], "Dim: printed back")
for bad in ["rows+", "3x", "", -1, True, 1.5, "rows*0"]:
    ok, msg = raises(lambda: D(bad), ValueError, "")
    report(ok, f"Dim: rejects {bad!r}", msg)

# --- the budget rule -------------------------------------------------------
cfg = MANIFEST["config"]
report(mf.budget(cfg, 0) == 32 and mf.budget(cfg, 527) == 32 and
       mf.budget(cfg, 528) == 33 and mf.selected_count(cfg, 5) == 5 and
       mf.selected_count(cfg, 600) == 37,
       "budget: max(topk_val + bos + eos, int(n * ratio)), capped by n")

# --- malformed manifests ---------------------------------------------------


def ik(i=0):
    """Kernel i of the indexer step (inside a mutated copy)."""
    return lambda d: d["steps"]["indexer"]["kernels"][i]


def ck(d):
    return d["steps"]["cache"]["kernels"][0]


bad_cases = [
    ("version 1", lambda d: d.update(version=1), "unsupported version 1"),
    ("version 3", lambda d: d.update(version=3), "unsupported version 3"),
    ("no version", lambda d: d.pop("version"), "missing or malformed key"),
    ("no tensors", lambda d: d.pop("tensors"), "missing or malformed key"),
    ("no symbols", lambda d: d.pop("symbols"), "missing or malformed key"),
    ("no config", lambda d: d.pop("config"), "missing or malformed key"),
    ("config without topk_val", lambda d: d["config"].pop("topk_val"),
     "config has no 'topk_val'"),
    ("unknown backend", lambda d: d.update(backend="rocm"),
     "unknown backend 'rocm'"),
    ("no backend", lambda d: d.pop("backend"), "missing or malformed key"),
    ("flow name", lambda d: d.update(flow="two words"), "not an identifier"),
    ("bad role", lambda d: d["tensors"]["q"].update(role="weird"),
     "unknown role"),
    ("bad dtype", lambda d: d["tensors"]["q"].update(dtype="bf17"),
     "unknown dtype"),
    ("bad symbol", lambda d: d["tensors"]["q"].update(shape=["batch", 8, 128]),
     "unknown symbol 'batch'"),
    ("bad shape entry", lambda d: d["tensors"]["q"].update(shape=["rows+", 8]),
     "bad shape entry"),
    ("symbol of an unknown tensor",
     lambda d: d["symbols"].update(rows="indptr"),
     "symbol 'rows' defined by unknown tensor 'indptr'"),
    ("unknown symbol name", lambda d: d["symbols"].update(batch="q"),
     "symbol 'batch' defined by"),
    ("unknown buffer", lambda d: ik()(d)["params"].append(buf("nope")),
     "buffer param 'nope' is not a manifest tensor"),
    ("unknown scalar", lambda d: ik()(d)["params"].append(scal("nope")),
     "scalar param 'nope' is neither"),
    ("scalar dtype", lambda d: ik()(d)["params"].append(
        {"name": "rows", "kind": "scalar", "dtype": "f32"}),
     "scalar 'rows' of dtype 'f32'"),
    ("param kind", lambda d: ik()(d)["params"].append(
        {"name": "q", "kind": "texture"}), "of unknown kind 'texture'"),
    ("bad grid", lambda d: ik()(d).update(grid={"kind": "x"}),
     "unknown grid kind"),
    ("items of", lambda d: ck(d)["grid"].update(of="blocks"),
     "grid 'items' of unknown symbol"),
    ("items per_cta", lambda d: ck(d)["grid"].update(per_cta=0),
     "grid per_cta = 0 is not an integer in [1, 1024]"),
    ("persistent ctas_per_sm", lambda d: ik()(d)["grid"].update(ctas_per_sm=0),
     "grid ctas_per_sm = 0 is not an integer in [1, 32]"),
    ("absurd ctas_per_sm", lambda d: ik()(d)["grid"].update(ctas_per_sm=10**9),
     "grid ctas_per_sm = 1000000000 is not an integer"),
    ("float ctas_per_sm", lambda d: ik()(d)["grid"].update(ctas_per_sm=2.5),
     "grid ctas_per_sm = 2.5 is not an integer"),
    ("fixed without x", lambda d: ik()(d).update(grid={"kind": "fixed"}),
     "grid x = 0 is not an integer in [1, 2147483647]"),
    ("grid y of 0", lambda d: ck(d)["grid"].update(y=0),
     "grid y = 0 is not an integer in [1, 65535]"),
    ("block of 2048 threads", lambda d: ck(d).update(block=[2048, 1, 1]),
     "has more than 1024 threads"),
    ("absurd shared_bytes", lambda d: ck(d).update(shared_bytes=1 << 40),
     "shared_bytes 1099511627776 is not in [0, 232448]"),
    ("zero inner extent", lambda d: d["tensors"]["max"].update(
        shape=["num_blocks", 0, 128]), "extent 0 is not in [1, 2147483647]"),
    ("negative group_size", lambda d: d["config"].update(group_size=-1),
     "config group_size = -1 is not an integer"),
    ("topk_ratio nan", lambda d: d["config"].update(topk_ratio=float("nan")),
     "config topk_ratio = nan is not in [0, 1]"),
    ("topk_val overflow", lambda d: d["config"].update(topk_val=2 ** 31 - 1),
     "overflows i32"),
    ("host grid on cuda", lambda d: ik(1)(d).update(grid={"kind": "host"}),
     "grid kind 'host' on backend 'cuda'"),
    ("bad block", lambda d: ck(d).update(block=[0, 1, 1]), "bad block"),
    ("negative shared_bytes", lambda d: ck(d).update(shared_bytes=-1),
     "shared_bytes -1 is not in [0, 232448]"),
    ("reads unknown", lambda d: ck(d)["reads"].append("w"),
     "reads/writes unknown tensor 'w'"),
    ("kernel writes an undeclared tensor",
     lambda d: ik()(d)["writes"].append("max"),
     "kernel gqa_quest_sparse_attention_indexer_w0 writes 'max', which the "
     "step does not declare"),
    ("kernel writes an input", lambda d: ck(d)["writes"].append("k"),
     "writes 'k', which the step does not declare"),
    ("step arg not a tensor",
     lambda d: d["steps"]["cache"]["args"].append("pool"),
     "step 'cache': unknown tensor 'pool'"),
    ("step write not a tensor",
     lambda d: d["steps"]["cache"]["writes"].append("pool"),
     "step 'cache': unknown tensor 'pool'"),
    ("step writes a non-argument",
     lambda d: d["steps"]["cache"]["writes"].append("q"),
     "writes 'q', which is not an argument"),
    ("scratch as an argument",
     lambda d: d["steps"]["indexer"]["args"].append("scratch0"),
     "scratch tensor 'scratch0' is an argument"),
    ("repeated argument", lambda d: d["steps"]["cache"]["args"].append("k"),
     "an argument repeats"),
    ("step without args", lambda d: d["steps"]["cache"].pop("args"),
     "step 'cache': missing or malformed key"),
    ("no cache step", lambda d: d["steps"].pop("cache"), "no 'cache' step"),
    ("pdl not a bool", lambda d: ik(1)(d).update(pdl=1),
     "pdl must be true or false, got 1"),
]
for what, fn, needle in bad_cases:
    ok, msg = raises(lambda: mf.Manifest(mutated(fn)), ValueError, needle)
    report(ok, f"manifest error: {what}", msg)

# The host grid is the CPU's: a CPU manifest has host grids only.
report(m_cpu.backend == "cpu" and
       [k.grid["kind"] for s in m_cpu.steps.values() for k in s.kernels] ==
       ["host", "host"] and m_cpu.artifact("library").endswith(
           "libgqa_quest_sparse_attention.so"),
       "manifest: a CPU manifest with host grids parses")
ok, msg = raises(lambda: mf.Manifest(mutated(
    lambda d: d["steps"]["cache"]["kernels"][0].update(
        grid={"kind": "rows"}), CPU_MANIFEST)), ValueError,
    "grid kind 'rows' on backend 'cpu'")
report(ok, "manifest error: a GPU grid on the cpu backend", msg)
ok, msg = raises(lambda: mf.Manifest(mutated(
    lambda d: d["steps"]["cache"]["kernels"][0].update(pdl=True),
    CPU_MANIFEST)), ValueError, "pdl on backend 'cpu'")
report(ok, "manifest error: pdl on the cpu backend", msg)
m_pdl = mf.Manifest(mutated(lambda d: ik(1)(d).update(pdl=True)))
report([k.pdl for k in m_pdl.kernels("indexer")] == [False, True],
       "manifest: pdl parses (absent is false)",
       [k.pdl for k in m_pdl.kernels("indexer")])
# A kernel may write scratch tensors the step does not declare.
report(m.steps["indexer"].kernels[0].writes == ("scratch0",) and
       "scratch0" not in m.steps["indexer"].writes,
       "manifest: a kernel writes an undeclared scratch tensor")

# Constant scalar params and i64 scalars are accepted.
m2 = mf.Manifest(mutated(lambda d: ck(d)["params"].extend(
    [{"name": "seven", "kind": "scalar", "value": 7},
     {"name": "total", "kind": "scalar", "dtype": "i64"}])))
report(m2.steps["cache"].kernels[0].params[-2].value == 7 and
       m2.steps["cache"].kernels[0].params[-1].dtype == "i64",
       "manifest: constant and i64 scalar params")

# --- grid sizes ------------------------------------------------------------
syms = {"rows": 24, "total": 5000, "num_blocks": 6000, "num_new": 10}
w0, topk = m.steps["indexer"].kernels
cw = m.steps["cache"].kernels[0]
report(mf.grid_size(w0, syms, 132) == (528, 1, 1),
       "grid: persistent = num_SMs * ctas_per_sm",
       mf.grid_size(w0, syms, 132))
report(mf.grid_size(w0, syms, 132, max_active=3) == (396, 1, 1) and
       mf.grid_size(w0, syms, 132, max_active=8) == (528, 1, 1) and
       mf.grid_size(w0, syms, 132, max_active=0) == (528, 1, 1),
       "grid: persistent capped by the resident CTAs per SM")
report(mf.grid_size(topk, syms, 132) == (24, 1, 1), "grid: rows")
report(mf.grid_size(cw, syms, 132) == (3, 1, 1) and
       mf.grid_size(cw, dict(syms, num_new=0), 132) == (0, 1, 1) and
       mf.grid_size(cw, dict(syms, num_new=12), 132) == (3, 1, 1) and
       mf.grid_size(cw, dict(syms, num_new=13), 132) == (4, 1, 1),
       "grid: items = ceil(of / per_cta)")
fixed = mf.Manifest(mutated(lambda d: ik(1)(d).update(
    grid={"kind": "fixed", "x": 7, "y": 2}))).steps["indexer"].kernels[1]
report(mf.grid_size(fixed, syms, 132) == (7, 2, 1), "grid: fixed x, y")
host = m_cpu.steps["cache"].kernels[0]
report(mf.grid_size(host, syms, 132) == (1, 1, 1), "grid: host")
report(mf.buffer_bytes(m, "scratch0", syms) == 5000 * 4 and
       mf.buffer_bytes(m, "q", syms) == 24 * 8 * 128 * 2,
       "buffer_bytes: extents x itemsize")

# Symbols: each is bound by its defining tensor (the manifest's "symbols").


class Shaped:
    def __init__(self, *shape):
        self.shape = shape


shapes = {"k": Shaped(6000, 16, 128), "v": Shaped(6000, 16, 128),
          "max": Shaped(6000, 1, 128), "min": Shaped(6000, 1, 128),
          "block_ids": Shaped(10)}
report(va.resolve_symbols(m, shapes, CACHE_ARGS) ==
       {"num_blocks": 6000, "num_new": 10},
       "resolve_symbols: the cache step binds num_blocks and num_new")
bad_v = dict(shapes, v=Shaped(5999, 16, 128))
ok, msg = raises(lambda: va.resolve_symbols(m, bad_v, CACHE_ARGS), ValueError,
                 "v: shape [5999, 16, 128] does not match [num_blocks, 16, "
                 "128] with num_blocks=6000 (from k)")
report(ok, "resolve_symbols: num_blocks comes from k, the disagreeing "
       "tensor is blamed", msg)
m_by_max = mf.Manifest(mutated(lambda d: d["symbols"].update(num_blocks="max")))
ok, msg = raises(lambda: va.resolve_symbols(m_by_max, bad_v, CACHE_ARGS),
                 ValueError, "num_blocks=6000 (from max)")
report(ok, "resolve_symbols: the manifest's symbols decide the source", msg)

# --- launch-plan parameters -------------------------------------------------


class Buf:
    """What plan_param_values reads of a tensor."""

    def __init__(self, ptr, numel):
        self.ptr, self.n = ptr, numel

    def data_ptr(self):
        return self.ptr

    def numel(self):
        return self.n


args = {"q": Buf(0x1000, 24 * 8 * 128), "max": Buf(0x2000, 6000 * 128),
        "min": Buf(0x3000, 6000 * 128), "dense_kv_indptr": Buf(0x4000, 25),
        "dense_kv_indices": Buf(0x5000, 5000)}
arg_list = [args.get(n) for n in INDEXER_ARGS]
scratch_list = [Buf(0x6000, 20000)]           # bytes: numel comes from the plan
plan_params = []
for p in w0.params:
    if p.kind == "buffer" and p.name in INDEXER_ARGS:
        plan_params.append(lp.arg(INDEXER_ARGS.index(p.name)))
    elif p.kind == "buffer":
        plan_params.append(lp.scratch(0, 5000))
    else:
        plan_params.append(lp.i32(syms[p.name]))
vals = drv.plan_param_values(plan_params, arg_list, scratch_list)
report(len(vals) == 6 * 5 + 2, "params: 6 buffers x 5 + 2 scalars", len(vals))
report(rt.expected_widths(w0) == [ctypes.sizeof(v) * 8 for v in vals],
       "params: the values have the widths the PTX entry expects")
arr, keep = drv.pack_params(vals)


def read(i, ctype):
    return ctypes.cast(arr[i], ctypes.POINTER(ctype)).contents.value


expect = []
for n in ["q", "max", "min", "dense_kv_indptr", "dense_kv_indices",
          "scratch0"]:
    b = args.get(n)
    ptr, numel = (b.ptr, b.n) if b else (0x6000, 5000)
    expect += [(ctypes.c_void_p, ptr), (ctypes.c_void_p, ptr),
               (ctypes.c_int64, 0), (ctypes.c_int64, numel),
               (ctypes.c_int64, 1)]
expect += [(ctypes.c_int32, 24), (ctypes.c_int32, 5000)]
got = [read(i, t) for i, (t, _) in enumerate(expect)]
report(got == [v for _, v in expect] and
       all(type(v) is t for v, (t, _) in zip(vals, expect)),
       "params: descriptor ABI values and ctypes types read back", got)
report(ctypes.sizeof(vals[0]) == 8 and ctypes.sizeof(vals[2]) == 8 and
       ctypes.sizeof(vals[-1]) == 4, "params: pointer / i64 / i32 sizes")
vals2 = drv.plan_param_values([lp.i32(7), lp.i64(5000), lp.i64(2 ** 40)],
                              [], [])
report(type(vals2[0]) is ctypes.c_int32 and vals2[0].value == 7 and
       type(vals2[1]) is ctypes.c_int64 and vals2[1].value == 5000 and
       vals2[2].value == 2 ** 40,
       "params: constant i32 scalar and i64 scalars")
arr0, _ = drv.pack_params([])
report(len(arr0) == 1, "params: an empty parameter list still packs an array")
report(rt.dynamic_smem(65536, 0) == 65536 and
       rt.dynamic_smem(65536, 16384) == 49152 and
       rt.dynamic_smem(0, 1024) == 0, "dynamic_smem: shared_bytes - static")

# --- PTX signatures vs the manifest ---------------------------------------


def entry(name, widths):
    params = ",\n".join(f"\t.param .u{w} {'.ptr .align 1 ' if w == 64 else ''}"
                        f"{name}_param_{i}" for i, w in enumerate(widths))
    return f".visible .entry {name}(\n{params}\n)\n{{\n\tret;\n}}\n"


all_kernels = [k for s in m.steps.values() for k in s.kernels]
good = "".join(entry(k.kernel, rt.expected_widths(k)) for k in all_kernels)
report(rt.expected_widths(w0) == [64] * 30 + [32, 32],
       "ptx: expected widths of w0 (6 buffers x 5 x 64 bit, 2 x i32)")
report(rt.expected_widths(m2.steps["cache"].kernels[0])[-2:] == [32, 64],
       "ptx: a constant i32 is 32 bit, an i64 scalar 64 bit")
sigs = rt.ptx_signatures(".version 8.0\n.target sm_90\n" + good)
report(sorted(sigs) == sorted(k.kernel for k in all_kernels)
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

# Alternatives (a `choice`): adjacent launches; the runtime launches the
# first whose grid fits on the device in one wave, else the last.
def with_choice(d, n=3):
    ks = d["steps"]["indexer"]["kernels"]
    topk = ks.pop()
    for t in [1024, 512, 256][:n]:
        alt = copy.deepcopy(topk)
        alt.update(kernel=f"topk_t{t}", block=[t, 1, 1], choice="topk")
        ks.append(alt)


m_choice = mf.Manifest(mutated(with_choice))
specs = m_choice.kernels("indexer")
report([k.choice for k in specs] == ["", "topk", "topk", "topk"],
       "manifest: choice parses (absent is none)",
       [k.choice for k in specs])


def chosen(capacity):
    """The launches when a kernel of t threads fits capacity[t] CTAs."""
    return [k.kernel for k in mf.choose_launches(
        specs, lambda k: 8 <= capacity[k.block[0]])]


report(chosen({1024: 8, 512: 8, 256: 8}) ==
       ["gqa_quest_sparse_attention_indexer_w0", "topk_t1024"],
       "choice: the first alternative that fits", chosen({1024: 8}))
report(chosen({1024: 4, 512: 8, 256: 8})[1:] == ["topk_t512"],
       "choice: the next when the first does not fit")
report(chosen({1024: 1, 512: 1, 256: 1})[1:] == ["topk_t256"],
       "choice: the last when none fits")
choice_cases = [
    ("choice not a string",
     lambda d: (with_choice(d), d["steps"]["indexer"]["kernels"][1].update(
         choice=3)), "choice must be a string, got 3"),
    ("choice on a persistent grid",
     lambda d: d["steps"]["indexer"]["kernels"][0].update(choice="w"),
     "choice 'w' on a 'persistent' grid"),
    ("choice not adjacent",
     lambda d: (with_choice(d), d["steps"]["indexer"]["kernels"][2].update(
         choice="other")), "the launches of choice 'topk' are not adjacent"),
]
for what, fn, needle in choice_cases:
    ok, msg = raises(lambda: mf.Manifest(mutated(fn)), ValueError, needle)
    report(ok, f"manifest error: {what}", msg)

# The pure logic needs neither torch nor a GPU.
report("torch" not in sys.modules, "no torch import")

report.exit(summary=True)
