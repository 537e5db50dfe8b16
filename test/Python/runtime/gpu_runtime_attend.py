# RUN: rm -rf %t && mkdir -p %t
# RUN: vortex-compile --target=sm_90 --no-cubin \
# RUN:   %S/../../../examples/block_sparse_attention.mlir -o %t/bs
# RUN: vortex-compile --target=sm_90 --no-cubin \
# RUN:   %S/../../../examples/gqa_quest_sparse_attention_g5.mlir -o %t/g5
# RUN: %python %s %t
# REQUIRES: numpy
#
# The GPU runtime's attend and decode plans (issue 35) without torch or a
# GPU, on the manifests vortex-compile writes (PTX only): the manifest's
# attend step (grid kind `row_splits`, the `kv_splits` launch value) parses
# and agrees with the PTX; its validation refuses a malformed row_splits
# kernel or an unknown scalar; the split rule of docs/gpu.md "Attention"
# (manifest.kv_splits, the one home of it) at its boundaries; and, through a
# CompiledFlowGPU whose device state, torch and launch are recorders (as in
# gpu_runtime_validate.py), the launch parameter arrays of attend (split
# kernel on rows x kv_splits CTAs, then the combine; the combine skipped at
# one split; the partials sized rows x kv_splits) and of decode (the
# indexer's launches, then attend's reading the sparse CSR the indexer
# writes, kv_splits from the selection's size, every argument checked
# before anything is launched or allocated).

import contextlib
import copy
import ctypes
import glob
import json
import math
import os
import sys

from vortex.runtime import manifest as mf
from vortex.runtime import cuda as rt
from vortex.runtime import plan as lp

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "Inputs"))
from launch_recorder import LaunchRecorder  # noqa: E402
from vortex import testing

report = testing.Tally()
OUT = sys.argv[1]


def raises(fn, exc, needle):
    try:
        fn()
    except exc as err:
        return needle in str(err), str(err)
    except Exception as err:  # noqa: BLE001
        return False, f"raised {type(err).__name__}: {err}"
    return False, "did not raise"


def manifest_path(d):
    return glob.glob(os.path.join(OUT, d, "*.manifest.json"))[0]


# --- the manifest: row_splits and kv_splits ----------------------------------
paths = {d: manifest_path(d) for d in ("bs", "g5")}
mans = {d: mf.Manifest.from_file(p) for d, p in paths.items()}
for d, m in mans.items():
    att = m.steps.get("attend")
    report(att is not None and [k.grid["kind"] for k in att.kernels] ==
           ["row_splits", "rows"],
           f"{d}: the attend step's split (row_splits) and combine (rows)",
           att and [(k.kernel, k.grid) for k in att.kernels])
    report(all(any(p.kind == "scalar" and p.name == "kv_splits" and
                   p.value is None and p.dtype == "i32" for p in k.params)
               for k in att.kernels),
           f"{d}: both kernels take the i32 launch value kv_splits")
    with open(m.artifact("ptx")) as f:
        problems = rt.check_ptx(m, f.read())
    report(problems == [], f"{d}: the manifest's params match the PTX",
           problems)
    report(m.decode_refusal == "", f"{d}: decode is exact for the flow",
           m.decode_refusal)
    scratch = [n for n in m.used_tensors(att.kernels)
               if m.tensors[n].role == "scratch"]
    report(len(scratch) == 2 and all(
        m.tensors[n].shape[0].symbol is None and
        m.tensors[n].shape[0].const == mf.ATTEND_SPLIT_SLOTS
        for n in scratch),
        f"{d}: two partials of ATTEND_SPLIT_SLOTS (2048, kAttendSplitSlots) "
        "row-splits", [(n, m.tensors[n].format_shape()) for n in scratch])

with open(paths["bs"]) as f:
    RAW = json.load(f)
base_dir = os.path.dirname(paths["bs"])


def bad(mutate, needle, what):
    data = copy.deepcopy(RAW)
    mutate(data)
    ok, msg = raises(lambda: mf.Manifest(data, base_dir), ValueError, needle)
    report(ok, "manifest refuses " + what, msg)


def split_kernel(d):
    return d["steps"]["attend"]["kernels"][0]


bad(lambda d: split_kernel(d)["params"].pop(),
    "grid 'row_splits' of a kernel without the scalar param 'kv_splits'",
    "a row_splits kernel without kv_splits")
bad(lambda d: split_kernel(d)["grid"].update(y=4),
    "grid 'row_splits' with a fixed y", "a row_splits grid with a fixed y")
bad(lambda d: split_kernel(d)["params"][-1].update(name="kv_split"),
    "scalar param 'kv_split' is neither a symbol, a constant nor a launch "
    "value (kv_splits)", "an unknown scalar (kv_split)")
bad(lambda d: split_kernel(d)["params"][-1].update(dtype="i64"),
    "scalar 'kv_splits' must be i32", "an i64 kv_splits")
bad(lambda d: split_kernel(d)["grid"].update(kind="row_split"),
    "unknown grid kind 'row_split'", "an unknown grid kind")


def cpu_backend(d):
    d["backend"] = "cpu"
    d["artifacts"] = {"so": "x.so"}
    for s in d["steps"].values():
        for k in s["kernels"]:
            k.pop("pdl", None)
            k.pop("choice", None)
            k["grid"] = {"kind": "host"}
    split_kernel(d)["grid"] = {"kind": "row_splits"}


bad(cpu_backend, "grid kind 'row_splits' on backend 'cpu'",
    "a row_splits grid on the CPU backend")
# A kv_splits that is a manifest constant is an ordinary scalar.
data = copy.deepcopy(RAW)
data["steps"]["attend"]["kernels"][1]["params"][-1]["value"] = 3
ok, msg = raises(lambda: mf.Manifest(data, base_dir), ValueError, "")
report(not ok and msg == "did not raise",
       "manifest: a combine with a constant kv_splits parses", msg)

# --- the split rule (docs/gpu.md "Attention") --------------------------------
SMS = 132
cases = [
    # rows, mean blocks, expected
    (0, 128, 1),            # no rows
    (264, 2048, 1),         # 2 rows an SM: no split
    (263, 2048, 1),         # 264 // 263 = 1: about one wave already
    (512, 128, 1),          # B 64 x 8 heads
    (64, 128, 4),           # B 8: 264 // 64 = 4
    (8, 128, 16),           # B 1: 128 / 8 = 16 blocks a split of 8
    (8, 2048, 32),          # at most 32
    (1, 2048, 32),
    (8, 7, 1),              # a split at least 8 blocks
    (8, 16, 2),
    (100, 1000, 2),         # 264 // 100 = 2, 2048 // 100 = 20
    (200, 1000, 1),
    (33, 1000, 8),          # 264 // 33 = 8
]
got = [(r, n, mf.kv_splits(r, n, SMS)) for r, n, _ in cases]
report(got == cases, "kv_splits: the rule at its boundaries (132 SMs)", got)
report(all(r * mf.kv_splits(r, n, SMS) <= mf.ATTEND_SPLIT_SLOTS or
           mf.kv_splits(r, n, SMS) == 1
           for r in range(1, 300) for n in (1, 8, 100, 5000)),
       "kv_splits: rows x splits always fit the partials (or one split)")
report(mf.kv_splits(8, 1000, SMS, slots=24) == 3 and
       mf.kv_splits(1, 1 << 20, 114) == 32,
       "kv_splits: bounded by the slots and by 32")
spec = mans["bs"].steps["attend"].kernels[0]
report(mf.grid_size(spec, {"rows": 8, "kv_splits": 16}, SMS) == (8, 16, 1),
       "grid_size: row_splits is rows x kv_splits",
       mf.grid_size(spec, {"rows": 8, "kv_splits": 16}, SMS))


# --- plans through a recording runtime -------------------------------------
class Dev:
    def __init__(self, typ="cuda", index=0):
        self.type, self.index = typ, index


_SIZES = {"torch.bfloat16": 2, "torch.float32": 4, "torch.int32": 4,
          "torch.float16": 2, "torch.uint8": 1}
_next_ptr = [0x10000]


class FakeTensor:
    def __init__(self, shape, dtype, device=None):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.device = device or Dev()
        size = max(math.prod(self.shape), 1) * _SIZES[dtype]
        self._ptr = _next_ptr[0]
        _next_ptr[0] += (size + 255) // 256 * 256

    def is_contiguous(self):
        return True

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
    uint8 = "torch.uint8"

    def __init__(self):
        self.allocs = []

        class _Cuda:
            @staticmethod
            @contextlib.contextmanager
            def device(dev):
                yield

            @staticmethod
            def current_stream(dev):
                return _Stream(dev)

            @staticmethod
            def current_device():
                return 0
        self.cuda = _Cuda

    def empty(self, n, dtype, device):
        t = FakeTensor((n,), dtype, Dev("cuda", int(device.split(":")[1])))
        self.allocs.append((n, t.data_ptr()))
        return t


class FakeFlow(rt.CompiledFlowGPU):
    """CompiledFlowGPU with a hand-made device state (no driver), torch and
    the launch replaced by recorders."""

    def __init__(self, manifest):
        self.manifest = manifest
        self.flow = manifest.flow
        self.config = manifest.config
        self.device_index = 0
        self._prefer = "cubin"
        self._torch = FakeTorch()
        self._states = {}
        self._specs = {}
        st = rt._DeviceState(0, 0, [], "fake.cubin", SMS, "fake")
        for i, spec in enumerate(k for s in manifest.steps.values()
                                 for k in s.kernels):
            st.kernels[spec.kernel] = rt._Kernel(spec, 0x100 + i,
                                                 max_active=2)
            self._specs[0x100 + i] = spec
        st.status = FakeTensor((4,), "torch.int32")
        self._states[0] = st
        self.launches = []
        self.chain_launches = True
        self._drv = LaunchRecorder(self)

    def _launch(self, func, grid, block, shared, stream, params, pdl=False):
        spec = self._specs[func]
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
        self.launches.append((spec.kernel, tuple(grid), tuple(block), vals))


TORCH = {"bf16": "torch.bfloat16", "f32": "torch.float32",
         "i32": "torch.int32", "f16": "torch.float16"}


def tensors(m, rows, blocks_per_row, num_blocks=4096):
    """Every tensor of the indexer, attend and decode by manifest name."""
    total = rows * blocks_per_row
    sym = {"rows": rows, "total": total, "num_blocks": num_blocks}
    out = {}
    for n in set(m.steps["indexer"].args) | set(m.steps["attend"].args):
        t = m.tensors[n]
        out[n] = FakeTensor(t.extents(sym), TORCH[t.dtype])
    return out


def kv_splits_of(launch):
    return dict((v[0], v[1]) for v in launch[3] if len(v) == 2)["kv_splits"]


for d, m in mans.items():
    flow = FakeFlow(m)
    heads = m.tensors["q"].shape[1].const
    D = int(m.config["head_dim"])
    att = m.steps["attend"]
    split, combine = [k.kernel for k in att.kernels]
    # B 1 x 8 KV heads, 128 blocks a row: 16 splits.
    ROWS, BPR = 8, 128
    t = tensors(m, ROWS, BPR)
    sb, plan = flow.plan("attend", t)
    S = mf.kv_splits(ROWS, BPR, SMS)
    report(S == 16 and [x[1] for x in plan] == [(ROWS, S, 1), (ROWS, 1, 1)],
           f"{d} attend plan: split on rows x kv_splits, then the combine "
           "on rows", [x[1] for x in plan])
    report(sb == [ROWS * S * heads * D * 4, ROWS * S * heads * 4],
           f"{d} attend plan: partials of rows x kv_splits row-splits",
           (sb, ROWS * S * heads * D * 4))
    args = flow.step_args("attend")
    ai = {n: lp.arg(i) for i, n in enumerate(args)}
    want_split = [ai["q"], ai["k"], ai["v"], ai["kv_indptr"],
                  ai["kv_indices"], ai["kv_last_len"], ai["sm_scale"],
                  ai["o"], ai["lse"], lp.scratch(0, ROWS * S * heads * D),
                  lp.scratch(1, ROWS * S * heads), lp.i32(S)]
    report(plan[0][4] == want_split,
           f"{d} attend plan: the split kernel's parameters", plan[0][4])
    report(plan[1][4] == [lp.scratch(0, ROWS * S * heads * D),
                          lp.scratch(1, ROWS * S * heads), ai["o"],
                          ai["lse"], lp.i32(S)],
           f"{d} attend plan: the combine reads the partials, writes o, lse",
           plan[1][4])

    # The launch itself: the parameter arrays read back through ctypes.
    flow.launches.clear()
    flow._torch.allocs.clear()
    flow.run_step("attend", t)
    allocs = flow._torch.allocs
    report([x[0] for x in flow.launches] == [split, combine] and
           [n for n, _ in allocs] == sb,
           f"{d} attend run: split then combine, the partials allocated "
           "per call", ([x[0] for x in flow.launches], allocs))
    po, pl = allocs[0][1], allocs[1][1]
    sl = flow.launches[0][3]
    want = [(n, t[n].data_ptr(), (0, t[n].numel(), 1)) for n in
            ("q", "k", "v", "kv_indptr", "kv_indices", "kv_last_len",
             "sm_scale", "o", "lse")]
    report(sl[:9] == want and sl[9][1:] == (po, (0, ROWS * S * heads * D, 1))
           and sl[10][1:] == (pl, (0, ROWS * S * heads, 1)) and
           sl[11] == ("kv_splits", S),
           f"{d} attend run: split parameter array (ptr, ptr, 0, numel, 1; "
           "kv_splits)", sl)
    cl = flow.launches[1][3]
    report(cl[0][1] == po and cl[1][1] == pl and
           cl[2][1] == t["o"].data_ptr() and cl[3][1] == t["lse"].data_ptr()
           and cl[4] == ("kv_splits", S) and flow.launches[1][1] == (ROWS, 1, 1),
           f"{d} attend run: combine parameter array", cl)

    # B 64: 512 rows, one split, no combine, a one-slot partial.
    sb1, plan1 = flow.plan("attend", tensors(m, 512, 128))
    report(len(plan1) == 1 and plan1[0][1] == (512, 1, 1) and
           plan1[0][4][-1] == lp.i32(1) and
           sb1 == [heads * D * 4, heads * 4],
           f"{d} attend plan at 512 rows: one split, the combine skipped",
           (sb1, [(x[1], x[4][-1]) for x in plan1]))
    # Zero rows: nothing launched.
    report(flow.plan("attend", tensors(m, 0, 4))[1] == [],
           f"{d} attend plan at 0 rows: no launch")
    # Bad input: named, nothing launched or allocated.
    for name, shape, dtype, needle in (
            ("lse", (ROWS, heads), "torch.bfloat16", "lse: dtype"),
            ("kv_last_len", (ROWS + 1,), "torch.int32", "kv_last_len"),
            ("sm_scale", (2,), "torch.float32", "sm_scale")):
        bad_t = dict(t, **{name: FakeTensor(shape, dtype)})
        flow.launches.clear()
        flow._torch.allocs.clear()
        ok, msg = raises(lambda: flow.run_step("attend", bad_t), ValueError,
                         needle)
        report(ok and not flow.launches and not flow._torch.allocs,
               f"{d} attend: a bad {name} is refused by name, nothing "
               "launched", msg)
    alias = dict(t, o=t["q"])
    ok, msg = raises(lambda: flow.plan("attend", alias), ValueError,
                     "o: shares memory with q")
    report(ok, f"{d} attend: o aliasing q is refused", msg)

    # --- decode: the indexer, then attend over its sparse CSR ------------
    BPR = 2048
    t = tensors(m, ROWS, BPR, num_blocks=ROWS * BPR)
    dargs = flow.step_args("decode")
    report(dargs == tuple(m.steps["indexer"].args) +
           ("kv_last_len", "o", "lse", "sm_scale"),
           f"{d} decode: the indexer's arguments, then attend's tail", dargs)
    isb, iplan = flow.plan("indexer", t)
    dsb, dplan = flow.plan("decode", t)
    n_idx = len(iplan)
    report(dsb[:len(isb)] == isb and dplan[:n_idx] == iplan,
           f"{d} decode plan: begins with the indexer's plan",
           (isb, dsb))
    sel = mf.selected_count(m.config, BPR)
    S = mf.kv_splits(ROWS, sel, SMS)
    di = {n: lp.arg(i) for i, n in enumerate(dargs)}
    j0 = len(isb)
    want_split = [di["q"], di["k"], di["v"], di["sparse_kv_indptr"],
                  di["sparse_kv_indices"], di["kv_last_len"], di["sm_scale"],
                  di["o"], di["lse"], lp.scratch(j0, ROWS * S * heads * D),
                  lp.scratch(j0 + 1, ROWS * S * heads), lp.i32(S)]
    report(len(dplan) == n_idx + 2 and dplan[n_idx][4] == want_split and
           dplan[n_idx][1] == (ROWS, S, 1),
           f"{d} decode plan: attend reads the sparse CSR, kv_splits "
           f"{S} from the selection ({sel} of {BPR} blocks)",
           dplan[n_idx:] and (dplan[n_idx][1], dplan[n_idx][4]))
    report(dplan[n_idx + 1][4][:2] == want_split[9:11] and
           dplan[n_idx + 1][1] == (ROWS, 1, 1),
           f"{d} decode plan: the combine reads attend's partials",
           dplan[n_idx + 1][4])
    report(dsb[j0:] == [ROWS * S * heads * D * 4, ROWS * S * heads * 4],
           f"{d} decode plan: attend's partials after the indexer's "
           "scratch", dsb)
    flow.launches.clear()
    flow._torch.allocs.clear()
    flow.run_step("decode", t)
    names = [x[0] for x in flow.launches]
    want_names = [flow._specs[x[0]].kernel for x in iplan] + [split, combine]
    report(names == want_names,
           f"{d} decode run: the indexer's kernels, then split and combine "
           "in one call", names)
    sl = flow.launches[n_idx][3]
    report(sl[3][1] == t["sparse_kv_indptr"].data_ptr() and
           sl[4][1] == t["sparse_kv_indices"].data_ptr() and
           sl[4][2] == (0, ROWS * BPR, 1),
           f"{d} decode run: the split kernel's CSR is the indexer's output",
           sl[3:5])
    # Bad input anywhere: refused before the indexer launches.
    for name, bad_t, needle in (
            ("lse", dict(t, lse=FakeTensor((ROWS, heads), "torch.bfloat16")),
             "lse: dtype"),
            ("o aliasing dense_kv_indices",
             dict(t, o=FakeTensor(t["o"].shape, t["o"].dtype)), None),
            ("kv_last_len", dict(t, kv_last_len=FakeTensor((3,),
                                                          "torch.int32")),
             "kv_last_len"),
            ("dense_kv_indptr", dict(t, dense_kv_indptr=FakeTensor(
                (ROWS + 2,), "torch.int32")), "dense_kv_indptr")):
        if needle is None:
            o = bad_t["o"]
            o._ptr = t["dense_kv_indices"].data_ptr()
            needle = "o: shares memory with dense_kv_indices"
        flow.launches.clear()
        flow._torch.allocs.clear()
        ok, msg = raises(lambda: flow.run_step("decode", bad_t), ValueError,
                         needle)
        report(ok and not flow.launches and not flow._torch.allocs,
               f"{d} decode: a bad {name} is refused by name before any "
               "launch", msg)

# A flow whose selection may drop the partial block: decode refused.
data = copy.deepcopy(RAW)
data["steps"]["attend"]["decode_refusal"] = \
    "reserved_eos = 0: the selection may drop the partial last block"
flow = FakeFlow(mf.Manifest(data, base_dir))
t = tensors(flow.manifest, 8, 64)
ok, msg = raises(lambda: flow.plan("decode", t), ValueError, "reserved_eos")
report(ok, "decode: refused by the manifest's decode_refusal", msg)
report(flow.plan("attend", tensors(flow.manifest, 8, 64))[1] != [],
       "decode_refusal: attend alone still plans")

report.exit()
