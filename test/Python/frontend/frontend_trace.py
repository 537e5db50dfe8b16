# RUN: %python %s %examples
#
# The shipped flows in Python (vortex.flows, written as vortex_torch flow
# modules) and the tracing API.
# - Each of the 18 examples/*.mlir (13 flows + gqa_quest at G = 5, a config,
#   + the 4 MLA flows) and of examples/learned/*.mlir (the learned flows,
#   vortex.flows.LEARNED)
#   traced from its Python flow is the same IR as the file: both printed by
#   vortex-opt's default printer (no locations) and compared as text.
# - Every traced op carries the location of its Python call: the op lines of
#   block_sparse_attention point at the lines of flows/block_sparse_attention.py
#   that call the ops, the flow at its `class` line.
# - FlowConfig's defaults are the config of block_sparse_attention.mlir;
#   FlowConfig.from_initialize takes vFlow.initialize's arguments; dtype
#   spellings of vortex_torch resolve; trace(..., group_size=5) overrides.
# - trace accepts an instance, a class and a registered name; the registry
#   (register/get/has/list_keys, RegistryError) and build_vflow (kwargs
#   bound against __init__, FlowInitError / FlowLoadError) behave as
#   vortex_torch's; vFlow.initialize fills cache_meta_info and token_ratio.

import os
import re
import sys

import vortex
from vortex import api, flows, testing
from vortex.flow import (FlowInitError, FlowLoadError, RegistryError,
                         build_vflow, get, has, list_keys, register, vFlow)
from vortex.frontend import FlowConfig
from vortex.frontend.verify import canonical_ir

tally = testing.Tally()
examples = sys.argv[1]

# Every example, from Python.
files = sorted(n[:-5] for n in os.listdir(examples) if n.endswith(".mlir"))
tally(sorted(flows.SHIPPED) == files,
      f"vortex.flows.SHIPPED covers the {len(files)} examples",
      (sorted(flows.SHIPPED), files))
for name in files:
    if name not in flows.SHIPPED:
        continue
    with open(os.path.join(examples, name + ".mlir")) as f:
        want = canonical_ir(f.read())
    try:
        got = canonical_ir(api.trace_shipped(name))
    except Exception as err:  # noqa: BLE001
        tally(False, f"{name}: traces", f"{type(err).__name__}: {err}")
        continue
    tally(got == want, f"{name}: the Python flow traces to examples/"
          f"{name}.mlir", "\n".join(
              l for l in got.splitlines() if l not in want.splitlines()))

# The learned flows (examples/learned/, vortex.flows.LEARNED): the same.
learned_dir = os.path.join(examples, "learned")
learned = sorted(n[:-5] for n in os.listdir(learned_dir)
                 if n.endswith(".mlir"))
tally(sorted(flows.LEARNED) == learned,
      f"vortex.flows.LEARNED covers the {len(learned)} examples/learned/",
      (sorted(flows.LEARNED), learned))
for name in learned:
    with open(os.path.join(learned_dir, name + ".mlir")) as f:
        want = canonical_ir(f.read())
    got = canonical_ir(api.trace_shipped(name))
    tally(got == want, f"{name}: the Python flow traces to examples/learned/"
          f"{name}.mlir", "\n".join(
              l for l in got.splitlines() if l not in want.splitlines()))

# Locations: each op at its Python call.
text = api.trace_shipped("block_sparse_attention")
src = flows.block_sparse_attention.__file__
lines = open(src).read().splitlines()


def line_of(needle):
    return 1 + next(i for i, l in enumerate(lines) if needle in l)


debug = canonical_ir(text, "--mlir-print-debuginfo",
                     "--mlir-print-local-scope")
for op, needle in [("vortex.mean %k", "self.reduction("),
                   ("vortex.mean %q", "self.mean(q"),
                   ("vortex.gemm", "self.gemm("),
                   ("vortex.topk", "self.output_func(")]:
    m = re.search(re.escape(op) + r'.*loc\("([^"]+)":(\d+):(\d+)\)', debug)
    ok = m is not None and m.group(1) == src and \
        int(m.group(2)) == line_of(needle)
    tally(ok, f"{op} is located at its Python call {os.path.basename(src)}:"
          f"{line_of(needle)}", m.group(0) if m else debug)
m = re.search(r'\n  \} loc\("([^"]+)":(\d+):1\)\n', debug)
tally(m is not None and int(m.group(2)) == line_of("class BlockSparseAttention"),
      "the vortex.flow op is located at the flow's class line",
      debug.strip().splitlines()[-2:])

# FlowConfig.
cfg_text = canonical_ir(vortex.trace("block_sparse_attention", FlowConfig()))
with open(os.path.join(examples, "block_sparse_attention.mlir")) as f:
    want_cfg = re.search(r"config = #vortex.config<[^>]*>",
                         canonical_ir(f.read())).group(0)
tally(want_cfg in cfg_text, "FlowConfig() is block_sparse_attention.mlir's "
      "config", want_cfg)
ini = FlowConfig.from_initialize(64, 96, "fp8_e4m3", "torch.bfloat16",
                                 "float32", group_size=4)
tally((ini.block_size, ini.page_size, ini.head_dim, ini.kv_dtype,
       ini.q_dtype, ini.intermediate_dtype, ini.group_size) ==
      (64, 64, 96, "f8E4M3FN", "bf16", "f32", 4),
      "FlowConfig.from_initialize(block_size, head_dim, kv_cache_dtype, "
      "q_data_type, intermediate_dtype, **knobs)", ini)
g5 = vortex.trace("gqa_quest_sparse_attention", group_size=5,
                  name="gqa_quest_sparse_attention_g5")
with open(os.path.join(examples, "gqa_quest_sparse_attention_g5.mlir")) as f:
    tally(canonical_ir(g5) == canonical_ir(f.read()),
          "trace(name, group_size=5, name=...) is the G = 5 example")
for bad in [dict(block_size=2.5), dict(topk_ratio=float("nan")),
            dict(kv_dtype="int8")]:
    try:
        FlowConfig(**bad)
        tally(False, f"FlowConfig({bad}) is rejected")
    except ValueError as err:
        tally(True, f"FlowConfig({bad}) is rejected: {err}")

# Flow arguments: instance, class, registered name.
a = canonical_ir(vortex.trace(flows.block_sparse_attention
                              .BlockSparseAttention()))
b = canonical_ir(vortex.trace(flows.block_sparse_attention
                              .BlockSparseAttention))
c = canonical_ir(vortex.trace("block_sparse_attention"))
tally(a == b == c, "trace takes a vFlow instance, class or registered name")

# Registry and build_vflow.
tally(has("running_avg_block_sparse") and
      get("running_avg_block_sparse") is
      flows.running_avg_block_sparse.RunningAvgBlockSparse and
      "venergy_gated_centroid" in list_keys(), "registry get / has / list_keys")
for what, fn in [
        ("a non-vFlow class", lambda: register("x_not_flow")(int)),
        ("a name twice", lambda: register("block_sparse_attention")(
            flows.block_sparse_attention.BlockSparseAttention)),
        ("an unknown name", lambda: get("no_such_flow"))]:
    try:
        fn()
        tally(False, f"registry rejects {what}")
    except RegistryError as err:
        tally(True, f"registry rejects {what}: {err}")

flow = build_vflow("running_avg_block_sparse", {"alpha": 0.25})
tally(flow.update.alpha == 0.25, "build_vflow binds init_kwargs")
for what, args, exc in [
        ("an unknown constructor argument",
         ("running_avg_block_sparse", {"beta": 1}), FlowInitError),
        ("an unknown flow name", ("no_such_flow", None), FlowLoadError),
        ("a missing user file", ("x", None, "/nonexistent/flow.py"),
         FlowLoadError)]:
    try:
        build_vflow(*args)
        tally(False, f"build_vflow rejects {what}")
    except exc as err:
        tally(True, f"build_vflow rejects {what}: {err}")
t = canonical_ir(vortex.trace("running_avg_block_sparse",
                              init_kwargs={"alpha": 0.25}))
tally("alpha = 2.500000e-01" in t, "trace(name, init_kwargs=...) builds the "
      "flow with them")

flow = flows.venergy_gated_centroid.VEnergyGatedCentroid()
flow.initialize(16, 128, "bf16", "bf16", "bf16")
tally(flow.cache_meta_info == {"centroids": ((1, 128), "bf16"),
                               "v_energy": ((1, 1), "bf16"),
                               "k": ((16, 128), "bf16"),
                               "v": ((16, 128), "bf16")} and
      abs(flow.token_ratio - (2 * 16 * 128 + 128 + 1) / (16 * 128)) < 1e-12,
      "vFlow.initialize: cache_meta_info and token_ratio",
      (flow.cache_meta_info, flow.token_ratio))


@register("frontend_trace_untyped")
class Untyped(vFlow):
    """A flow with no fields: an empty cache body."""

    def __init__(self):
        super().__init__()
        self.mean, self.gemv = vortex.indexer.Mean(dim=1), \
            vortex.indexer.GeMV()
        self.out = vortex.indexer.topK()

    def create_cache(self, block_size, head_dim):
        return {}

    def forward_cache(self, cache, loc, ctx):
        pass

    def forward_indexer(self, q, o, cache, ctx):
        self.out(self.gemv(self.mean(q, ctx=ctx), self.mean_k(cache, ctx),
                           ctx=ctx), o, ctx=ctx)

    def mean_k(self, cache, ctx):
        return cache["k"]


try:
    vortex.trace("frontend_trace_untyped")
    tally(False, "a GeMV against k [S, 16, 128] is rejected by vortex-opt")
except vortex.FlowError as err:
    tally("gemv" in str(err) and "frontend_trace_untyped" in str(err),
          "a flow with no fields traces (empty cache body) and vortex-opt "
          "rejects its GeMV against k", err)

tally.exit(summary=True)
