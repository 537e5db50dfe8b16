# RUN: %python %s %examples
# REQUIRES: numpy
#
# The compile-and-run API itself: flow headers parsed into .config/.fields,
# compile errors carry the failing tool's stderr, IR text and paths both
# work, a module of several flows needs name=, workdir keeps the
# intermediate files, tool discovery honours VORTEX_OPT.

import glob
import os
import sys
import tempfile

import vortex
from vortex import cpu, testing

failures = 0


def check(ok, what, detail=""):
    global failures
    print(("PASS " if ok else "FAIL ") + what + (f": {detail}" if detail and
                                                 not ok else ""))
    failures += not ok


examples = sys.argv[1]

# Headers of every shipped flow (parsed from the raw file: comments,
# including the CHECK lines that repeat the header, are ignored).
for path in sorted(glob.glob(os.path.join(examples, "*.mlir"))):
    with open(path) as f:
        flows = vortex.parse_flow(f.read())
    name = os.path.basename(path)[:-5]
    ok = (len(flows) == 1 and flows[0].name == name and
          flows[0].config["head_dim"] == 128 and
          flows[0].config["topk_ratio"] == 0.0625 and
          flows[0].config["reserved_bos"] == 1 and
          flows[0].config["reserved_eos"] == 2 and
          flows[0].config["intermediate_dtype"] == "bf16")
    check(ok, f"parse_flow {name}", repr(flows))

with open(os.path.join(examples, "running_avg_block_sparse.mlir")) as f:
    (info,) = vortex.parse_flow(f.read())
check(info.fields == [("centroids", 1, 128), ("running_score", 1, 1)] and
      info.indexer_writes == ["running_score"] and
      info.cache_writes == ["centroids", "running_score"],
      "parse_flow running_avg fields and writers", repr(info))
with open(os.path.join(examples, "gqa_quest_sparse_attention_g5.mlir")) as f:
    (info,) = vortex.parse_flow(f.read())
check(info.config["group_size"] == 5, "parse_flow G = 5", repr(info.config))

# Compile from a path into a kept workdir.
with tempfile.TemporaryDirectory() as tmp:
    flow = vortex.compile_flow(
        os.path.join(examples, "lserve_sparse_attention.mlir"), workdir=tmp)
    check(flow.config["block_size"] == 64 and
          flow.fields == [("max", 4, 128), ("min", 4, 128)] and
          flow.cache_names == ["k", "v", "max", "min"],
          "compile_flow(path): config and fields", repr(flow))
    kept = sorted(os.listdir(tmp))
    check(any(n.endswith(".so") for n in kept) and "flow.ll" in kept,
          "workdir keeps the intermediate files", repr(kept))
    check(flow.budget(0) == 32 and flow.budget(527) == 32 and
          flow.budget(528) == 33, "budget()")
    shapes = flow.cache_shapes(7)
    check(shapes["k"] == (7, 64, 128) and shapes["max"] == (7, 4, 128),
          "cache_shapes()", repr(shapes))
    del flow

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
except ValueError as err:
    check("second" in str(err), "several flows without name= raise", str(err))
try:
    picked = vortex.compile_flow(two, name="second")
    ok = picked.name == "second" and picked.fields == [("c", 1, 8)]
    picked.cache_step(picked.allocate_cache(3), [0, 2])
    check(ok, "name= picks the flow", repr(picked))
except Exception as err:  # noqa: BLE001
    check(False, "name= picks the flow", f"{type(err).__name__}: {err}")

# Errors carry the tool's stderr.
with open(os.path.join(examples, "block_sparse_attention.mlir")) as f:
    bad = f.read().replace("vortex.mean %q {dim = 1 : i64}",
                           "vortex.mean %q {dim = 7 : i64}")
try:
    vortex.compile_flow(bad)
    check(False, "invalid IR raises VortexCompileError")
except vortex.VortexCompileError as err:
    msg = str(err)
    check("vortex-opt" in msg and "error" in msg,
          "invalid IR raises VortexCompileError with vortex-opt's stderr", msg)
try:
    vortex.compile_flow("/nonexistent/flow.mlir")
    check(False, "missing file raises")
except FileNotFoundError:
    check(True, "missing file raises FileNotFoundError")

# Tool discovery.
check(os.path.basename(cpu.find_tool("vortex-opt")) == "vortex-opt",
      "find_tool(vortex-opt)")
old = os.environ.get("VORTEX_OPT")
os.environ["VORTEX_OPT"] = "/nonexistent/vortex-opt"
try:
    cpu.find_tool("vortex-opt")
    check(False, "VORTEX_OPT is honoured")
except vortex.VortexCompileError as err:
    check("VORTEX_OPT" in str(err), "VORTEX_OPT is honoured", str(err))
finally:
    if old is None:
        del os.environ["VORTEX_OPT"]
    else:
        os.environ["VORTEX_OPT"] = old

sys.exit(1 if failures else 0)
