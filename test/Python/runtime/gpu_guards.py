# RUN: %python %s
# REQUIRES: numpy
#
# The GPU guards' host side, without a GPU (docs/gpu.md "Guards"): a CUDA
# manifest from vortex-compile has one status tensor (role "status", 4 i32
# words) that every kernel writes and no step takes; kernels that address
# paged tensors by block id also take num_blocks; the PTX signatures match
# (a buffer is five 64-bit parameters); a plan's ("ptr", address, numel)
# parameter becomes the memref descriptor of that address; the status words
# decode to a message naming the tensor; a manifest listing the status
# tensor as a step argument is refused. The H100 behaviour is in
# docs/measurements/ (vortex.testing.gpu_torch_check, "guards").

import ctypes
import json
import os
import subprocess
import tempfile

from vortex.runtime import manifest as mf
from vortex.runtime import cuda as rt
from vortex.runtime import driver as drv
from vortex.runtime import plan as lp
from vortex import testing
from vortex.compiler.driver import find_tool

report = testing.Tally()
EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples")

with tempfile.TemporaryDirectory() as tmp:
    src = os.path.join(EXAMPLES, "running_avg_block_sparse.mlir")
    subprocess.run([find_tool("vortex-compile"), src, "-o", tmp,
                    "--chip=sm_90", "--no-cubin"], check=True)
    path = os.path.join(tmp, "running_avg_block_sparse.manifest.json")
    m = mf.Manifest.from_file(path)
    with open(os.path.join(tmp, "running_avg_block_sparse.ptx")) as f:
        ptx = f.read()
    raw = json.load(open(path))

status = m.status_tensor()
report(status == "status" and m.tensors[status].role == "status" and
       m.tensors[status].dtype == "i32" and
       m.tensors[status].extents({}) == (4,),
       "manifest: one status tensor of 4 i32 words", status)
report(all(status not in st.args for st in m.steps.values()),
       "manifest: the status tensor is no step's argument")
# The attend step's kernels have no guard: they clamp a malformed CSR, a
# kv_last_len and a block id into bounds (docs/gpu.md "Attention").
kernels = [k for name, st in m.steps.items() if name != "attend"
           for k in st.kernels]
report(all(status in k.writes and status in k.buffers() for k in kernels),
       "manifest: every indexer and cache kernel takes and writes the "
       "status buffer", [k.kernel for k in kernels])
report("attend" in m.steps and
       all(status not in k.buffers() for k in m.steps["attend"].kernels),
       "manifest: the attend kernels take no status buffer")
# Constants (saves_min_rows, the score kernel's: docs/gpu.md, "Saves in
# the top-k") come after them.
by_block = {k.kernel: [p.name for p in k.params if p.value is None][-2:]
            for k in kernels if not k.is_selection()}
report(all(v == ["status", "num_blocks"] for v in by_block.values()),
       "manifest: kernels that gather by block id end with status, "
       "num_blocks (then constants)", by_block)
report(rt.check_ptx(m, ptx) == [], "ptx: signatures match the manifest",
       rt.check_ptx(m, ptx))

# The plan parameter of a runtime-owned buffer.
vals = drv.plan_param_values([lp.ptr(0x7f0000001000, 4), lp.i32(9)], [], [])
report([v.value for v in vals[:5]] == [0x7f0000001000, 0x7f0000001000, 0, 4,
                                       1] and
       isinstance(vals[0], ctypes.c_void_p) and vals[5].value == 9,
       "plan: a ptr parameter is the descriptor of its address",
       [v.value for v in vals])

# The flag bits come from the manifest (FlowABI.h getStatusFlags).
report(m.tensors[status].flags == (("dense_kv_indices", 1), ("block_ids", 2),
                                   ("dense_kv_indptr", 4), ("slot_of_ptr", 8)),
       "manifest: the status tensor carries the guard flags",
       m.tensors[status].flags)
for bad_flags, what in (({}, "needs its 'flags'"),
                        ({"block_ids": 3}, "not a distinct single bit"),
                        ({"a": 2, "b": 2}, "not a distinct single bit"),
                        ({"a": True}, "not a distinct single bit")):
    bad = json.loads(json.dumps(raw))
    bad["tensors"]["status"]["flags"] = bad_flags
    try:
        mf.Manifest(bad)
        ok, err = False, "accepted"
    except ValueError as e:
        ok, err = what in str(e) and "status" in str(e), str(e)
    report(ok, f"manifest: status flags {bad_flags} refused", err)

# Decoding the status words, with the manifest's flags.
report(m.describe_status([0, 0, 0, 0]) is None,
       "status: all zero means no guard failed")
msg = m.describe_status([1, 1000003, 17, 2])
report(msg is not None and "dense_kv_indices" in msg and "1000003" in msg
       and "position 17" in msg and msg.startswith("2 bad entries"),
       "status: flag 1 names dense_kv_indices, the value and position", msg)
msg = m.describe_status([2 | 4, -1, 3, 1])
report(msg is not None and "block_ids" in msg and "dense_kv_indptr" in msg
       and msg.startswith("1 bad entry"),
       "status: flags 2 and 4 name block_ids and dense_kv_indptr", msg)
msg = m.describe_status([64, 0, 0, 1])
report(msg is not None and "unknown status flags 0x40" in msg,
       "status: an unknown flag is reported, not dropped", msg)
# A reader follows the manifest's bits, not constants of its own.
msg = mf.describe_status([8, 5, 0, 1], (("block_ids", 8),))
report(msg is not None and "block_ids" in msg and "unknown" not in msg,
       "status: the bits are the manifest's", msg)

# The status tensor as a step argument is refused, naming it.
bad = json.loads(json.dumps(raw))
bad["steps"]["indexer"]["args"].append("status")
try:
    mf.Manifest(bad)
    ok, err = False, "accepted"
except ValueError as e:
    ok, err = "status tensor 'status' is an argument" in str(e), str(e)
report(ok, "manifest: a status tensor as a step argument is refused", err)

report.exit()
