# RUN: %python %s %examples
# REQUIRES: numpy
#
# The compile-and-run API itself: `vortex.compile` runs vortex-compile and
# returns the manifest (version 2), the only thing Python reads about a
# flow; every shipped flow's manifest carries its name and config;
# `compile_flow` exposes .config/.fields/.cache_names/.budget/.cache_shapes
# and the fields each step writes; a kept workdir holds lib<flow>.so and the
# manifest; compiling the same text twice is a cache hit (no second
# vortex-compile run); a module of several flows needs name=; compile
# errors carry vortex-compile's diagnostic; a missing file is
# FileNotFoundError; tool discovery honours VORTEX_COMPILE and VORTEX_OPT;
# the torch op name and schema of a step come from the manifest, and the
# CPU and the GPU build of one source share the op name.

import glob
import os
import re
import shutil
import stat
import sys
import tempfile
import time

import numpy as np

import vortex
from vortex import testing
from vortex.compiler import driver as compiler
from vortex.runtime import cpu
from vortex.runtime.manifest import Manifest

failures = 0


def check(ok, what, detail=""):
    global failures
    print(("PASS " if ok else "FAIL ") + what + (f": {detail}" if detail and
                                                 not ok else ""))
    failures += not ok


examples = sys.argv[1]

# Every shipped flow: the manifest names the flow after its file and
# carries the flow's config.
for path in sorted(glob.glob(os.path.join(examples, "*.mlir"))):
    name = os.path.basename(path)[:-5]
    try:
        m = Manifest.from_file(vortex.compile(path, target="cpu"))
    except Exception as err:  # noqa: BLE001
        check(False, f"manifest of {name}", f"{type(err).__name__}: {err}")
        continue
    ok = (m.data["version"] == 2 and m.flow == name and
          m.backend == "cpu" and m.target == "cpu" and
          re.fullmatch(r"[0-9a-f]{64}", m.source_hash) is not None and
          os.path.isfile(m.artifact("library") or "") and
          (m.config["head_dim"] == 128 if not name.endswith("_mla") else
           (m.config["head_dim"], m.config["kv_lora_rank"],
            m.config["rope_dim"]) == (576, 512, 64)) and
          m.config["topk_ratio"] == 0.0625 and
          m.config["reserved_bos"] == 1 and
          m.config["reserved_eos"] == 2 and
          m.config["intermediate_dtype"] == "bf16")
    check(ok, f"manifest of {name}: version 2, flow, backend, hash, library, "
          "config", repr((m.data["version"], m.flow, m.backend, m.target,
                          m.source_hash, m.artifacts, m.config)))

running_avg = vortex.compile_flow(os.path.join(
    examples, "running_avg_block_sparse.mlir"))
info = running_avg.info
check(info.name == "running_avg_block_sparse" and
      info.fields == [("centroids", 1, 128), ("running_score", 1, 1)] and
      info.indexer_writes == ["running_score"] and
      info.cache_writes == ["centroids", "running_score"],
      "running_avg: fields and the fields each step writes", repr(info))
m = running_avg.manifest
check(m.schema("indexer") ==
      "(Tensor q, Tensor k, Tensor v, Tensor centroids, "
      "Tensor(a!) running_score, Tensor dense_kv_indptr, "
      "Tensor dense_kv_indices, Tensor(b!) sparse_kv_indptr, "
      "Tensor(c!) sparse_kv_indices) -> ()",
      "running_avg: the indexer schema marks exactly the saved field and the "
      "sparse CSR mutable", m.schema("indexer"))
check(m.schema("cache") ==
      "(Tensor k, Tensor v, Tensor(a!) centroids, Tensor(b!) running_score, "
      "Tensor block_ids) -> ()",
      "running_avg: the cache schema marks exactly the written fields "
      "mutable", m.schema("cache"))
for step in ("indexer", "cache"):
    marked = set(re.findall(r"Tensor\(\w!\) (\w+)", m.schema(step)))
    check(marked == set(m.steps[step].writes) and
          not {"k", "v"} & marked,
          f"running_avg: {step} schema's mutable args == the step's writes",
          (marked, m.steps[step].writes))
    check(m.op_name(step) == f"running_avg_block_sparse_"
          f"{m.source_hash[:12]}_{step}",
          f"running_avg: op_name of {step} is flow_hash12_step",
          m.op_name(step))

g5 = vortex.compile_flow(os.path.join(examples,
                                      "gqa_quest_sparse_attention_g5.mlir"))
check(g5.config["group_size"] == 5 and g5.fields == [("max", 1, 128),
                                                     ("min", 1, 128)],
      "G = 5 flow: group_size and fields", repr(g5.config))

# Compile from a path into a kept workdir.
with tempfile.TemporaryDirectory() as tmp:
    flow = vortex.compile_flow(
        os.path.join(examples, "lserve_sparse_attention.mlir"), workdir=tmp)
    check(flow.name == "lserve_sparse_attention" and
          flow.config["block_size"] == 64 and
          flow.fields == [("max", 4, 128), ("min", 4, 128)] and
          flow.cache_names == ["k", "v", "max", "min"],
          "compile_flow(path): config, fields and cache names", repr(flow))
    kept = sorted(os.listdir(tmp))
    check("liblserve_sparse_attention.so" in kept and
          "lserve_sparse_attention.manifest.json" in kept and
          "flow.ll" not in kept,
          "workdir keeps lib<flow>.so and <flow>.manifest.json", repr(kept))
    check(flow.manifest_path == os.path.join(
        tmp, "lserve_sparse_attention.manifest.json") and
        os.path.realpath(flow.so_path) == os.path.realpath(
            os.path.join(tmp, "liblserve_sparse_attention.so")) and
        flow.manifest.artifacts == {"library": "liblserve_sparse_attention.so"},
        "the flow runs from the workdir's manifest and library",
        (flow.manifest_path, flow.so_path, flow.manifest.artifacts))
    check(flow.budget(0) == 32 and flow.budget(527) == 32 and
          flow.budget(528) == 33, "budget()")
    shapes = flow.cache_shapes(7)
    check(shapes == {"k": (7, 64, 128), "v": (7, 64, 128),
                     "max": (7, 4, 128), "min": (7, 4, 128)},
          "cache_shapes()", repr(shapes))
    alloc = flow.allocate_cache(3)
    check(sorted(alloc) == ["k", "max", "min", "v"] and
          all(a.dtype == np.float32 and not a.any() for a in alloc.values())
          and alloc["max"].shape == (3, 4, 128),
          "allocate_cache(): zeroed float32 tensors of cache_shapes")
    # The library loads and runs from the workdir.
    p = testing.make_problem(flow, [2, 40], seed=0)
    flow.cache_step(p.cache, p.indices)
    sp_ptr, sp_idx = flow.indexer(p.q, p.cache, p.indptr, p.indices)
    check(sp_ptr.tolist() == [0, 2, 34] and
          set(sp_idx[:2].tolist()) == set(p.indices[:2].tolist()),
          "the workdir's library runs (row of 2 kept, row of 40 cut to 32)",
          sp_ptr.tolist())
    del flow

# The compile cache: the same text twice is one vortex-compile run.
real_tool = compiler.find_tool("vortex-compile")
with tempfile.TemporaryDirectory() as tmp:
    log = os.path.join(tmp, "runs.log")
    wrapper = os.path.join(tmp, "vortex-compile-wrapper")
    with open(wrapper, "w") as f:
        f.write(f"#!/bin/sh\necho run >> '{log}'\nexec '{real_tool}' \"$@\"\n")
    os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IXUSR)

    def runs():
        if not os.path.exists(log):
            return 0
        with open(log) as f:
            return len(f.read().split())

    saved = {k: os.environ.get(k) for k in ("VORTEX_COMPILE",
                                            "VORTEX_CACHE_DIR")}
    os.environ["VORTEX_COMPILE"] = wrapper
    os.environ["VORTEX_CACHE_DIR"] = os.path.join(tmp, "cache")
    try:
        check(compiler.find_tool("vortex-compile") == wrapper,
              "find_tool honours VORTEX_COMPILE")
        src = os.path.join(examples, "block_sparse_attention.mlir")
        first = vortex.compile(src, target="cpu")
        mtime = os.stat(first).st_mtime_ns
        check(runs() == 1 and first.startswith(os.path.join(tmp, "cache")),
              "a first compile runs vortex-compile (through VORTEX_COMPILE) "
              "into VORTEX_CACHE_DIR", (runs(), first))
        t0 = time.perf_counter()
        second = vortex.compile(src, target="cpu")
        elapsed = time.perf_counter() - t0
        check(second == first and runs() == 1 and elapsed < 0.2 and
              os.stat(second).st_mtime_ns == mtime,
              "compiling the same text again is a cache hit (same path, no "
              "vortex-compile run, < 0.2 s)", (second, runs(), elapsed))
        with open(src) as f:
            text = f.read()
        third = vortex.compile(text, target="cpu")
        check(third == first and runs() == 1,
              "IR text with the same content hits the same entry",
              (third, runs()))
        fl = vortex.compile_flow(text)
        check(fl.manifest_path == first and runs() == 1,
              "compile_flow hits the cache too", (fl.manifest_path, runs()))
        other = vortex.compile(text.replace("topk_val = 29", "topk_val = 30"),
                               target="cpu")
        check(other != first and runs() == 2 and
              Manifest.from_file(other).config["topk_val"] == 30,
              "another text compiles again", (other, runs()))
        os.environ["VORTEX_COMPILE"] = "/nonexistent/vortex-compile"
        try:
            vortex.compile(text + "\n// changed\n", target="cpu")
            check(False, "a bad VORTEX_COMPILE raises")
        except vortex.VortexCompileError as err:
            check("VORTEX_COMPILE" in str(err), "a bad VORTEX_COMPILE raises "
                  "VortexCompileError naming it", str(err))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# A module with two flows: name= picks one.
def small_flow(name):
    return testing.probe_flow_text(
        name, "block_size = 4, page_size = 4, head_dim = 8, group_size = 2, "
        "topk_val = 3, topk_ratio = 2.500000e-01 : f64, reserved_bos = 1, "
        "reserved_eos = 1, intermediate_dtype = f32, kv_dtype = f32",
        (4, 8), 2, [("c", 1, 8)],
        "  %cm = vortex.mean %k {dim = 1 : i64} : !kv -> !R1x8\n"
        "  vortex.write %cm into %c : !R1x8 into !P1x8", [],
        "  %qm = vortex.mean %q {dim = 1 : i64} : !q -> !B1x8\n"
        "  %sc = vortex.gemv %qm, %c : (!B1x8, !P1x8) -> !R1x1", "sc")


second = small_flow("second")
two = small_flow("first") + second[second.index("vortex.flow"):]
try:
    vortex.compile_flow(two)
    check(False, "several flows without name= raise")
except vortex.VortexCompileError as err:
    msg = str(err)
    check("@first" in msg and "@second" in msg and "--flow=" in msg,
          "several flows without name= raise VortexCompileError naming both",
          msg)
try:
    picked = vortex.compile_flow(two, name="second")
    ok = picked.name == "second" and picked.fields == [("c", 1, 8)]
    cache = picked.allocate_cache(3)
    cache["k"][...] = np.arange(cache["k"].size).reshape(cache["k"].shape)
    picked.cache_step(cache, [0, 2])
    ok = ok and np.allclose(cache["c"][0, 0], cache["k"][0].mean(axis=0)) \
        and not cache["c"][1].any()
    check(ok, "name= picks the flow (and it runs)", repr(picked))
except Exception as err:  # noqa: BLE001
    check(False, "name= picks the flow", f"{type(err).__name__}: {err}")
try:
    first_flow = vortex.compile_flow(two, name="first")
    check(first_flow.name == "first", "name= picks the other flow")
except Exception as err:  # noqa: BLE001
    check(False, "name= picks the other flow", f"{type(err).__name__}: {err}")
try:
    vortex.compile_flow(two, name="third")
    check(False, "name= of a missing flow raises")
except vortex.VortexCompileError as err:
    check("no vortex.flow @third" in str(err), "name= of a missing flow "
          "raises VortexCompileError naming it", str(err))

# Errors carry vortex-compile's diagnostic.
with open(os.path.join(examples, "block_sparse_attention.mlir")) as f:
    bad = f.read().replace("vortex.mean %q {dim = 1 : i64}",
                           "vortex.mean %q {dim = 7 : i64}")
try:
    vortex.compile_flow(bad)
    check(False, "invalid IR raises VortexCompileError")
except vortex.VortexCompileError as err:
    msg = str(err)
    check("vortex-compile" in msg and "error:" in msg and
          "'vortex.mean' op dim must be 0, 1 or 2, got 7" in msg,
          "invalid IR raises VortexCompileError with vortex-compile's "
          "diagnostic", msg)
for fn, what in ((vortex.compile_flow, "compile_flow"),
                 (vortex.compile, "compile")):
    try:
        fn("/nonexistent/flow.mlir")
        check(False, f"{what}: missing file raises")
    except FileNotFoundError as err:
        check("/nonexistent/flow.mlir" in str(err),
              f"{what}: missing file raises FileNotFoundError", str(err))

# Tool discovery.
check(os.path.basename(cpu.find_tool("vortex-opt")) == "vortex-opt" and
      os.path.basename(vortex.find_tool("vortex-compile")) == "vortex-compile",
      "find_tool(vortex-opt / vortex-compile)")
for env, tool in (("VORTEX_OPT", "vortex-opt"),
                  ("VORTEX_COMPILE", "vortex-compile")):
    old = os.environ.get(env)
    os.environ[env] = f"/nonexistent/{tool}"
    try:
        compiler.find_tool(tool)
        check(False, f"{env} is honoured")
    except vortex.VortexCompileError as err:
        check(env in str(err), f"{env} is honoured (a bad value raises)",
              str(err))
    real = shutil.which(tool) or os.path.join(
        os.path.dirname(real_tool), tool)
    with tempfile.TemporaryDirectory() as tmp:
        link = os.path.join(tmp, f"my-{tool}")
        os.symlink(real, link)
        os.environ[env] = link
        check(compiler.find_tool(tool) == link, f"{env} is honoured (a good "
              "value is used)", compiler.find_tool(tool))
    if old is None:
        del os.environ[env]
    else:
        os.environ[env] = old
try:
    compiler.find_tool("mlir-opt")
    check(False, "find_tool: unknown tool raises")
except ValueError:
    check(True, "find_tool: unknown tool raises ValueError")

sys.exit(1 if failures else 0)
