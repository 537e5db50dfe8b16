# RUN: %python %s
# REQUIRES: numpy, torch
#
# vortex.integrations.sglang on the CPU, f32 (SGLang itself is not
# installed: its per-step calls are replayed, its plugin runtime mocked).
#
# Replay of vortex_torch's VortexFlashInferBackend decode loop with its real
# shapes: 3 requests (prompts of 37, 5 and 150 tokens) in req_to_token rows
# 2, 0, 3, pages handed out in shuffled order (page 0 reserved), H_kv 2, G 4,
# D 64, 2 layers (layer 1 in layers_skip), page/block 16/16 and 32/16, for
# gqa_quest and block_sparse at a budget of topk 2 (+ BOS + EOS) and one that
# keeps every block. Prefill: set_kv_buffer of every prompt token (one loc
# for the batch); then 8 decode steps of plan_decode, and per layer
# set_kv_buffer(out_cache_loc), forward(q, o=<preallocated buffer>), attend:
#   - the dense CSR and kv_last_page_len equal a per-request rebuild;
#   - every selection equals eager mode's (vortex.semantics.eager.indexer on the same
#     q, cache and CSR);
#   - attention over the selection (flow.attend on the sparse CSR and `o`)
#     equals a float64 softmax over the logical tokens of the selected
#     blocks (rtol = atol = 1e-5); with every block kept, that is dense
#     attention over all tokens; layers_skip attends the dense CSR;
#   - one step's out_cache_loc is padded with -1 (CUDA-graph padding) and
#     NaN K/V: only the real slots' rows and the spare row change;
#   - the summaries (Quest max/min exactly, block_sparse centroids to 1e-6)
#     equal a recompute from the logical K; layers_skip's stay zero;
#   - rebuild_aux on a pool holding only the K/V reproduces every field
#     bit-identically;
#   - bad arguments raise ValueError naming the argument, and change neither
#     `o`, the metadata nor the caches.
# Contract (fake `sglang` module tree with a HookRegistry that behaves as
# SGLang's: register, then apply_hooks patches and records `_patched`):
#   - without sglang, register raises ImportError and validate RuntimeError,
#     both naming sglang;
#   - register patches every declared target, validate passes, and each hook
#     does its job on mocked SGLang objects;
#   - a target missing from SGLang fails validate, naming the hook; a wrong
#     ABI fails it too.
import math
import sys
import types
from unittest.mock import patch

import torch

import vortex
from vortex.semantics import eager
from vortex.flows.block_sparse_attention import BlockSparseAttention
from vortex.flows.gqa_quest_sparse_attention import GQAQuestSparseAttention
from vortex.integrations import sglang as vs

# Tiny tensors: intra-op threads only contend (20x slower on a busy 2-core
# machine).
torch.set_num_threads(1)
H, G, D, LAYERS, SKIP = 2, 4, 64, 2, 1
PROMPTS, ROWS, STEPS, WIDTH = (37, 5, 150), (2, 0, 3), 8, 192
POOL_TOKENS = 512


def compiled(flow_cls, ps, bs, topk):
    cfg = vortex.FlowConfig(block_size=bs, page_size=ps, head_dim=D,
                            group_size=G, topk_val=topk, topk_ratio=0.0,
                            reserved_bos=1, reserved_eos=1)
    return vortex.load(vortex.compile(flow_cls(), cfg, target="cpu")), cfg


def refused(fn, word, state):
    before = [t.clone() for t in state]
    try:
        fn()
    except ValueError as err:
        assert word in str(err), (word, str(err))
        # bit patterns: NaN (the padded step's spare row) equals itself
        assert all(torch.equal(a.view(torch.int32), b.view(torch.int32))
                   for a, b in zip(before, state)), word
        return str(err)
    raise AssertionError(f"{word}: not refused")


class Engine:
    """SGLang's side: a paged token allocator, req_to_token, the model's
    K/V and queries, and the logical (per request) K/V it wrote."""

    def __init__(self, ps, seed):
        self.gen = torch.Generator().manual_seed(seed)
        self.ps = ps
        pages = torch.randperm(POOL_TOKENS // ps, generator=self.gen) + 1
        self.free = pages.tolist()
        self.req_to_token = torch.zeros(4, WIDTH, dtype=torch.int32)
        self.lens = [0] * len(PROMPTS)
        self.pages = [[] for _ in PROMPTS]
        shape = (LAYERS, len(PROMPTS), WIDTH, H, D)
        self.K, self.V = torch.zeros(shape), torch.zeros(shape)
        self.written = torch.zeros(LAYERS, len(PROMPTS), dtype=torch.long)

    def grow(self, b):
        """The slot of request b's next token."""
        t = self.lens[b]
        if t % self.ps == 0:
            self.pages[b].append(self.free.pop())
        slot = self.pages[b][-1] * self.ps + t % self.ps
        self.req_to_token[ROWS[b], t] = slot
        self.lens[b] += 1
        return slot

    def kv(self, layer, owners):
        k = torch.randn(len(owners), H, D, generator=self.gen)
        v = torch.randn(len(owners), H, D, generator=self.gen)
        for i, b in enumerate(owners):
            t = int(self.written[layer, b])
            self.K[layer, b, t], self.V[layer, b, t] = k[i], v[i]
            self.written[layer, b] += 1
        return k, v

    def logical(self, layer, b):
        n = self.lens[b]
        assert int(self.written[layer, b]) == n
        return self.K[layer, b, :n], self.V[layer, b, :n]


def reference(eng, layer, q, sel, dense, scale, bs):
    """float64 attention of each row over the logical tokens of its selected
    blocks (a selected id's place in the dense row is its block number)."""
    out = torch.empty(q.shape, dtype=torch.float64)
    for row in range(len(PROMPTS) * H):
        b, h = divmod(row, H)
        K, V = eng.logical(layer, b)
        L = eng.lens[b]
        blocks = [dense[row].index(i) for i in sel[row]]
        assert blocks[-1] == len(dense[row]) - 1, "last block not last"
        tok = (torch.tensor(blocks)[:, None] * bs +
               torch.arange(bs)).reshape(-1)
        tok = tok[tok < L]
        k, v = K[tok, h].double(), V[tok, h].double()
        p = torch.softmax(q[row].double() @ k.T * scale, -1)
        out[row] = p @ v
    return out


def csr_rows(ip, ix, rows):
    ip = ip[:rows + 1].tolist()
    return [ix[ip[r]:ip[r + 1]].tolist() for r in range(rows)]


def replay(flow_cls, ps, bs, topk, seed):
    flow, cfg = compiled(flow_cls, ps, bs, topk)
    eng = Engine(ps, seed)
    pool = vs.VortexSGLangPool(flow, size=POOL_TOKENS, head_num=H,
                               layer_num=LAYERS, layers_skip=(SKIP,))
    idx = vs.VortexSGLangIndexer(flow, num_kv_heads=H, max_batch_size=4,
                                 max_context_len=WIDTH)
    md = idx.metadata
    o_buf = torch.full_like(md.sparse_kv_indices, -7)   # FlashInfer's buffer
    layer_objs = [types.SimpleNamespace(layer_id=i) for i in range(LAYERS)]
    scale = D ** -0.5
    # -- prefill: one extend batch, K/V of every prompt token
    owners = [b for b, n in enumerate(PROMPTS) for _ in range(n)]
    loc = torch.tensor([eng.grow(b) for b in owners], dtype=torch.int64)
    for layer in range(LAYERS):
        pool.set_kv_buffer(layer_objs[layer], loc, *eng.kv(layer, owners))
    kept = dense_total = 0
    for step in range(STEPS):
        nb = len(PROMPTS)
        out_loc = torch.tensor([eng.grow(b) for b in range(nb)])
        seq_lens = torch.tensor(eng.lens, dtype=torch.int32)
        idx.plan_decode(seq_lens, eng.req_to_token,
                        torch.tensor(ROWS, dtype=torch.int64))
        rows = nb * H
        # the planner against a per-request rebuild
        dense = csr_rows(md.dense_kv_indptr, md.dense_kv_indices, rows)
        for row in range(rows):
            b, h = divmod(row, H)
            L = eng.lens[b]
            want = []
            for j in range((L + bs - 1) // bs):
                s = int(eng.req_to_token[ROWS[b], j * bs])
                want.append(((s // ps) * H + h) * (ps // bs) + (s % ps) // bs)
            assert dense[row] == want, (row, dense[row], want)
            assert int(md.kv_last_page_len[row]) == L - (len(want) - 1) * bs
        for layer in range(LAYERS):
            k, v = eng.kv(layer, list(range(nb)))
            cache = pool.get_cache(layer)
            if step == 3:   # CUDA-graph padding: 2 more slots of -1, NaN K/V
                pad = torch.full((2, H, D), float("nan"))
                before_k = cache["k"].clone()
                pool.set_kv_buffer(layer_objs[layer],
                                   torch.cat([out_loc, torch.tensor([-1, -1])]),
                                   torch.cat([k, pad]), torch.cat([v, pad]))
                flat = (cache["k"] != before_k).any(-1).reshape(-1)
                allowed = set(pool.rows(out_loc).reshape(-1).tolist()) | \
                    {pool.num_blocks * bs - 1}
                assert set(flat.nonzero().reshape(-1).tolist()) <= allowed
            else:
                pool.set_kv_buffer(layer_objs[layer], out_loc, k, v)
            q = torch.randn(nb, H * G, D, generator=eng.gen).view(rows, G, D)
            total = len(sum(dense, []))
            ip, ix = md.dense_kv_indptr[:rows + 1], md.dense_kv_indices[:total]
            last = md.kv_last_page_len[:rows]
            if layer == SKIP:     # the backend's dense wrapper
                o, _ = flow.attend(q, cache, ip, ix, last, sm_scale=scale)
                sel = dense
            else:
                idx.forward(q=q, o=o_buf, cache=cache)
                sp = md.sparse_kv_indptr[:rows + 1]
                _, ep, ei = eager.indexer(flow_cls(), q, cache, ip, ix, cfg)
                assert torch.equal(sp, ep.to(sp.dtype)), (sp, ep)
                n = int(sp[-1])
                assert torch.equal(o_buf[:n], ei[:n].to(torch.int32))
                o, _ = flow.attend(q, cache, sp, o_buf, last, sm_scale=scale)
                sel = csr_rows(sp, o_buf, rows)
                kept += n
                dense_total += total
            ref = reference(eng, layer, q, sel, dense, scale, bs)
            assert torch.allclose(o.double(), ref, rtol=1e-5, atol=1e-5), \
                (step, layer, (o.double() - ref).abs().max())
            if topk == 64:
                assert sel == dense
    if topk == 64:
        assert kept == dense_total
    else:
        assert kept < dense_total, (kept, dense_total)
    check_summaries(flow, pool, eng, ps, bs)
    check_rebuild(flow, pool, eng)
    check_refusals(flow, pool, idx, eng, o_buf, layer_objs)
    return kept, dense_total


def check_summaries(flow, pool, eng, ps, bs):
    checked = 0
    for layer in range(LAYERS):
        c = pool.get_cache(layer)
        fields = [n for n in c if n not in ("k", "v")]
        if layer == SKIP:
            assert all(not c[n].any() for n in fields)
            continue
        for b in range(len(PROMPTS)):
            K, _ = eng.logical(layer, b)
            for j in range(eng.lens[b] // bs):
                s = int(eng.req_to_token[ROWS[b], j * bs])
                for h in range(H):
                    blk = ((s // ps) * H + h) * (ps // bs) + (s % ps) // bs
                    kb = K[j * bs:(j + 1) * bs, h]
                    if "max" in c:
                        assert torch.equal(c["max"][blk, 0], kb.max(0).values)
                        assert torch.equal(c["min"][blk, 0], kb.min(0).values)
                    else:
                        assert torch.allclose(c["centroids"][blk, 0],
                                              kb.mean(0), atol=1e-6)
                    checked += 1
    assert checked >= 20, checked


def check_rebuild(flow, pool, eng):
    """PD disaggregation: only K/V arrive; rebuild_aux over every token."""
    other = vs.VortexSGLangPool(flow, size=POOL_TOKENS, head_num=H,
                                layer_num=LAYERS, layers_skip=(SKIP,))
    for a, b in zip(pool.cache, other.cache):
        b["k"].copy_(a["k"])
        b["v"].copy_(a["v"])
    loc = torch.cat([eng.req_to_token[ROWS[b], :eng.lens[b]]
                     for b in range(len(PROMPTS))]).to(torch.int64)
    other.rebuild_aux(loc)
    for a, b in zip(pool.cache, other.cache):
        for n in a:
            if n not in ("k", "v"):     # copies (the spare row holds NaN)
                assert torch.equal(a[n], b[n]), n


def check_refusals(flow, pool, idx, eng, o_buf, layer_objs):
    md = idx.metadata
    nb, rows = len(PROMPTS), len(PROMPTS) * H
    state = [o_buf, md.dense_kv_indptr, md.dense_kv_indices,
             md.sparse_kv_indptr, md.kv_last_page_len] + \
        [t for c in pool.cache for t in c.values()]
    cache = pool.get_cache(0)
    q = torch.randn(rows, G, D)

    def fwd(**kw):
        return idx.forward(**{"q": q, "o": o_buf, "cache": cache, **kw})
    msgs = [
        refused(lambda: fwd(q=torch.randn(rows, G + 1, D)), "q", state),
        refused(lambda: fwd(q=q.double()), "q", state),
        refused(lambda: fwd(q=q[:rows - 1]), "q", state),
        refused(lambda: fwd(o=o_buf[:3]), "o", state),
        refused(lambda: fwd(o=o_buf.long()), "o", state),
        refused(lambda: fwd(cache={"k": cache["k"]}), "cache", state),
    ]
    md.sparse_kv_indptr[1:rows + 1] += 1          # a custom schedule policy
    msgs.append(refused(fwd, "sparse_kv_indptr", state))
    md.sparse_kv_indptr[1:rows + 1] -= 1
    k = torch.randn(nb, H, D)
    loc = torch.tensor([eng.lens[0] - 1, 1, 2])

    def kv(layer=layer_objs[0], loc=loc, k=k, **kw):
        pool.set_kv_buffer(layer, loc, k, k, **kw)
    msgs += [
        refused(lambda: kv(layer=types.SimpleNamespace(layer_id=LAYERS)),
                "layer", state),
        refused(lambda: kv(layer=-1), "layer", state),
        refused(lambda: kv(k=k[:, :1]), "cache_k", state),
        refused(lambda: kv(k=k[:2]), "cache_k", state),
        refused(lambda: kv(loc=loc.float()), "loc", state),
        refused(lambda: kv(loc=torch.tensor([0, 1, pool.num_slots])), "loc",
                state),
        refused(lambda: kv(dcp_kv_mask=torch.ones(3, dtype=torch.bool)),
                "dcp_kv_mask", state),
    ]
    lens = torch.tensor(eng.lens, dtype=torch.int32)
    ri = torch.tensor(ROWS)

    def plan(lens=lens, ri=ri):
        idx.plan_decode(lens, eng.req_to_token, ri)
    msgs += [
        refused(lambda: plan(lens=lens.long()), "cached_seq_lens", state),
        refused(lambda: plan(lens=lens + WIDTH), "cached_seq_lens", state),
        refused(lambda: plan(lens=lens * 0), "cached_seq_lens", state),
        refused(lambda: plan(ri=ri + 2), "req_indices", state),
        refused(lambda: plan(ri=ri[:2]), "req_indices", state),
    ]
    stub = types.SimpleNamespace(config=dict(flow.config, page_size=24))
    msgs.append(refused(lambda: vs.VortexSGLangPool(stub, 64, H, 1),
                        "page_size", []))
    return msgs


# -- the replays ------------------------------------------------------------
results = {}
for i, (flow_cls, ps, bs, topk) in enumerate(
        (f, ps, bs, k) for f in (GQAQuestSparseAttention, BlockSparseAttention)
        for ps, bs in ((16, 16), (32, 16)) for k in (2, 64)):
    kept, dense_total = replay(flow_cls, ps, bs, topk, seed=i)
    print(f"{flow_cls.__name__} page {ps} block {bs} topk {topk}: {STEPS} "
          f"steps, {kept} of {dense_total} blocks kept, selections == eager, "
          "attention == float64 reference, summaries, rebuild_aux, refusals "
          "ok")

# -- kv_cell_size from the manifest ------------------------------------------
flow, _ = compiled(GQAQuestSparseAttention, 16, 16, 2)
# k, v: 2 * 64 f32 per token; max, min: 2 * 64 f32 per block of 16 tokens.
assert vs.kv_cell_size(flow, H, LAYERS) == \
    H * LAYERS * (2 * D * 4 + 2 * D * 4 // 16)
pool = vs.VortexSGLangPool(flow, POOL_TOKENS, H, LAYERS)
per_token = sum(t.numel() * t.element_size() for c in pool.cache
                for t in c.values()) / (pool.num_pages * 16)
assert math.isclose(per_token, pool.cell_size / H), (per_token, pool.cell_size)
print(f"kv_cell_size: {pool.cell_size} bytes per token (H {H}, {LAYERS} "
      "layers)")


# -- the plugin contract, SGLang mocked --------------------------------------
class FakeHookType:
    AFTER, AROUND = "after", "around"


def fake_registry():
    """A HookRegistry that behaves as SGLang's: register() records,
    apply_hooks() resolves each target, wraps it and records it in
    _patched; a target that does not resolve is skipped (SGLang logs)."""
    import pkgutil

    class HookRegistry:
        _hooks, _patched = {}, set()

        @classmethod
        def register(cls, target, hook, hook_type=FakeHookType.AFTER):
            cls._hooks.setdefault(target, []).append((hook_type, hook))

        @classmethod
        def apply_hooks(cls):
            for target, hooks in cls._hooks.items():
                if target in cls._patched:
                    continue
                try:
                    path, attr = target.rsplit(".", 1)
                    obj = pkgutil.resolve_name(path)
                    fn = getattr(obj, attr)
                except Exception:
                    continue
                for kind, hook in hooks:
                    fn = wrap(fn, hook, kind)
                setattr(obj, attr, fn)
                cls._patched.add(target)

    def wrap(fn, hook, kind):
        if kind == FakeHookType.AROUND:
            return lambda *a, **kw: hook(fn, *a, **kw)

        def after(*a, **kw):
            r = fn(*a, **kw)
            m = hook(r, *a, **kw)
            return r if m is None else m
        return after
    return HookRegistry


class DensePool:     # what SGLang would build without the hook
    def __init__(self, *a, **kw):
        self.args = (a, kw)


INIT_POOLS = '''
def _init_pools(self):
    self.token_to_kv_pool = MHATokenToKVPool(
        self.max_total_num_tokens, page_size=self.page_size,
        dtype=self.kv_cache_dtype, head_num=2, head_dim=64, layer_num=2,
        device="cpu", enable_memory_saver=False, start_layer=0, end_layer=1)
'''


def fake_sglang(missing=()):
    """The module tree holding every target of vs.SGLANG_HOOKS (less the
    modules in `missing`)."""
    mods = {}
    for name in ("sglang", "sglang.srt", "sglang.srt.plugins",
                 "sglang.srt.plugins.hook_registry",
                 "sglang.srt.model_executor",
                 "sglang.srt.model_executor.model_runner",
                 "sglang.srt.model_executor.pool_configurator",
                 "sglang.srt.model_executor.model_runner_kv_cache_mixin",
                 "sglang.srt.models", "sglang.srt.models.utils",
                 "sglang.srt.disaggregation", "sglang.srt.disaggregation.decode"):
        if name not in missing:
            mods[name] = types.ModuleType(name)
    hr = mods["sglang.srt.plugins.hook_registry"]
    hr.HookRegistry, hr.HookType = fake_registry(), FakeHookType
    mods["sglang.srt.plugins"].load_plugins = lambda: None
    mods["sglang.srt.model_executor.model_runner"].ModelRunner = type(
        "ModelRunner", (), {"configure_kv_cache_dtype": lambda self: None})
    mods["sglang.srt.model_executor.pool_configurator"].DefaultPoolConfigurator = type(
        "DefaultPoolConfigurator", (), {"_compute_cell_size": lambda self, runner, n:
                                        H * D * n * 2 * 4})
    mixin = mods["sglang.srt.model_executor.model_runner_kv_cache_mixin"]
    mixin.MHATokenToKVPool = DensePool
    exec(INIT_POOLS, mixin.__dict__)     # noqa: S102 - its globals are the module's
    mixin.ModelRunnerKVCacheMixin = type("ModelRunnerKVCacheMixin", (),
                                         {"_init_pools": mixin._init_pools})
    mods["sglang.srt.models.utils"].enable_fused_set_kv_buffer = lambda fb: True
    if "sglang.srt.disaggregation.decode" in mods:
        mods["sglang.srt.disaggregation.decode"].DecodeTransferQueue = type(
            "DecodeTransferQueue", (), {"pop_transferred": lambda self: self.ready})
    return patch.dict(sys.modules, mods), mods


def runner():
    mc = types.SimpleNamespace(head_dim=D)
    return types.SimpleNamespace(page_size=16, model_config=mc,
                                 kv_cache_dtype=torch.float32,
                                 max_total_num_tokens=POOL_TOKENS)


def expect(exc, fn, *words):
    try:
        fn()
    except exc as err:
        assert all(w in str(err) for w in words), (words, str(err))
        return str(err)
    raise AssertionError(f"{words}: not raised")


assert "sglang" not in sys.modules
print("no sglang:", expect(ImportError, lambda: vs.register(lambda r: flow), "sglang"))
expect(RuntimeError, vs.validate_sglang_runtime_contract, "sglang")

ctx, mods = fake_sglang()
with ctx:
    from sglang.srt.plugins.hook_registry import HookRegistry
    expect(RuntimeError, vs.validate_sglang_runtime_contract, "ABI None")
    expect(ValueError, lambda: vs.register("not callable"), "build_flow")
    vs.register(lambda r: flow, layers_skip=(1,))
    assert HookRegistry._patched == set(vs.SGLANG_HOOKS.values())
    vs.validate_sglang_runtime_contract()
    from sglang.srt.model_executor.model_runner import ModelRunner
    from sglang.srt.model_executor.pool_configurator import DefaultPoolConfigurator
    from sglang.srt.model_executor.model_runner_kv_cache_mixin import ModelRunnerKVCacheMixin
    from sglang.srt.models import utils as model_utils
    from sglang.srt.disaggregation.decode import DecodeTransferQueue
    r = runner()
    ModelRunner.configure_kv_cache_dtype(r)               # build_sparse_flow
    assert r.sparse_attention is flow and r.block_size == 16
    cell = DefaultPoolConfigurator()._compute_cell_size(r, LAYERS)
    assert cell == vs.kv_cell_size(flow, H, LAYERS), cell
    ModelRunnerKVCacheMixin._init_pools(r)                # make_kv_pool
    p = r.token_to_kv_pool
    assert isinstance(p, vs.VortexSGLangPool) and p.layers_skip == {1}
    assert p.head_num == H and p.layer_num == LAYERS and p.size == POOL_TOKENS
    assert mods["sglang.srt.model_executor.model_runner_kv_cache_mixin"] \
        .MHATokenToKVPool is DensePool                    # rebinding undone
    assert model_utils.enable_fused_set_kv_buffer(
        types.SimpleNamespace(token_to_kv_pool=p)) is False
    assert model_utils.enable_fused_set_kv_buffer(
        types.SimpleNamespace(token_to_kv_pool=DensePool())) is True
    # PD disaggregation: K/V of a transferred 40-token prompt, fields rebuilt.
    table = torch.zeros(2, 64, dtype=torch.int32)
    table[1, :40] = torch.arange(16, 56, dtype=torch.int32)
    k = torch.randn(40, H, D)
    p.set_kv_buffer(0, table[1, :40].long(), k, k)
    want = p.get_cache(0)["max"].clone()
    p.get_cache(0)["max"].zero_()
    sched = types.SimpleNamespace(
        token_to_kv_pool_allocator=types.SimpleNamespace(get_kvcache=lambda: p),
        req_to_token_pool=types.SimpleNamespace(req_to_token=table))
    queue = DecodeTransferQueue()
    queue.scheduler = sched
    queue.ready = [types.SimpleNamespace(req_pool_idx=1, kv_committed_len=40)]
    assert queue.pop_transferred() == queue.ready
    assert torch.equal(p.get_cache(0)["max"], want) and want.any()
    # the flow's geometry against SGLang's
    r2 = runner()
    r2.page_size = 32
    expect(ValueError, lambda: ModelRunner.configure_kv_cache_dtype(r2), "page_size")
    r.kv_cache_dtype = torch.bfloat16
    expect(ValueError, lambda: ModelRunnerKVCacheMixin._init_pools(r), "dtype")
    HookRegistry._vortex_integration_abi = 0
    expect(RuntimeError, vs.validate_sglang_runtime_contract, "ABI 0")
print("contract: register patched", len(vs.SGLANG_HOOKS), "targets; validate ok;"
      " hooks build the flow, size cells, make the pool, opt out of fused"
      " set-kv, rebuild fields")

ctx, _ = fake_sglang(missing=("sglang.srt.disaggregation.decode",))
with ctx:
    vs.register(lambda r: flow)
    from sglang.srt.plugins.hook_registry import HookRegistry
    assert vs.SGLANG_HOOKS["disaggregation.rebuild_aux"] not in HookRegistry._patched
    msg = expect(RuntimeError, vs.validate_sglang_runtime_contract,
                 "disaggregation.rebuild_aux", "not applied")
    from sglang.srt.model_executor.model_runner import ModelRunner
    expect(RuntimeError, lambda: ModelRunner.configure_kv_cache_dtype(runner()),
           "disaggregation.rebuild_aux")
    print("missing target:", msg)
print("integrations_sglang: ok")
