# RUN: %python %s
# REQUIRES: numpy, torch, transformers
#
# paged|vortex (vortex.integrations.transformers) under transformers'
# continuous batching on the CPU, f32, a tiny Llama with random weights
# (2 layers, D 16, 2 KV heads), transformers blocks of 16 tokens as the
# flow's pages, vortex blocks of 4; prompts of 37, 5, 70 and 16 tokens
# batched 48 tokens at a time (so prefill is chunked and decode and prefill
# requests share steps), 24 greedy tokens each:
#   - a budget that keeps every block gives exactly paged|sdpa's tokens, for
#     gqa_quest and block_sparse at G 2 and 5; every decode row kept every
#     block;
#   - decode steps take transformers' decode fast path (the block table),
#     which attach opens to the flow, and give the same tokens and blocks
#     kept as the per-slot path; the gate stays closed for paged|sdpa and on
#     another transformers version;
#   - the fast path's static form (graph-capturable: a CSR with a spare
#     row, no host read), with every call padded by 3 requests as the
#     engine pads for a graph, gives the exact form's tokens and blocks
#     kept, with budgets 64 and 2 and with a dense layer; padding rows
#     have no output;
#   - a flow that saves state per block (running_avg) in the static form,
#     padded the same way: tokens, blocks kept and every request's saved
#     state equal the exact form's; the spare row's page is one the engine
#     gave up, not a request's;
#   - the same with prompts that share a 40-token prefix (the engine's
#     prefix sharing maps their first blocks to the same pages);
#   - every decode call's selection equals eager mode's (eager.indexer on
#     the same q, cache and CSR), for gqa_quest and block_sparse, on the
#     exact fast path and in its static form (with its spare row);
#   - with NaN in every slot of the engine's cache before the run, the
#     tokens are the same;
#   - a budget of 2 blocks (+ BOS and EOS) attends fewer blocks than exist,
#     and a layer in layers_skip attends all of them (dense attend);
#   - the summaries the cache step wrote (Quest's max and min) equal a
#     recomputation from K for every block the run completed;
#   - a request forked by num_return_sequences = 2 with blocks not shared:
#     the pages the engine copies (copy_cache) get their summaries copied
#     too, equal to their K's;
#   - attach refuses, naming the setting: an engine block that is not the
#     flow's page_size, a model whose head_dim or query group is not the
#     flow's, a sliding-window layer, block sharing for a flow that saves
#     state per block (with allow_block_sharing=False it runs, and a full
#     budget gives paged|sdpa's tokens); a call
#     outside continuous batching is refused too; so are CUDA graphs of
#     decode steps where the static form cannot run (the fast path off)
#     and graphs of prefill steps; decode graphs of a saving flow attach.
import torch
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.generation import ContinuousBatchingConfig, GenerationConfig

import vortex
from vortex.flows.block_sparse_attention import BlockSparseAttention
from vortex.flows.gqa_quest_sparse_attention import GQAQuestSparseAttention
from vortex.integrations.transformers import PagedVortex

PS, BS, D, HKV = 16, 4, 16, 2
PROMPTS = (37, 5, 70, 16)


def model_config(G, head_dim=D):
    return LlamaConfig(vocab_size=256, hidden_size=16 * HKV * G,
                       intermediate_size=128,
                       num_hidden_layers=2, num_attention_heads=HKV * G,
                       num_key_value_heads=HKV, head_dim=head_dim,
                       max_position_embeddings=4096)


def make_model(G, head_dim=D):
    torch.manual_seed(0)
    return LlamaForCausalLM(model_config(G, head_dim)).eval()


def engine(block_size=PS):
    return ContinuousBatchingConfig(block_size=block_size, num_blocks=64,
                                    max_batch_tokens=48)


def run(impl, G, shared_prefix=0, cb=None):
    """Greedy tokens of the prompts (their first `shared_prefix` tokens the
    same); impl: an attention name, or a PagedVortex (attached)."""
    model, cb = make_model(G), cb or engine()
    if isinstance(impl, PagedVortex):
        impl.attach(model, cb)
    else:
        model.set_attn_implementation(impl)
    prompts = [[int(x) for x in torch.randint(0, 256, (n,))] for n in PROMPTS]
    if shared_prefix:
        head = prompts[2][:shared_prefix]
        prompts = [head + p for p in prompts]
    gen = GenerationConfig(max_new_tokens=24, do_sample=False,
                           eos_token_id=-1, pad_token_id=0)
    out = model.generate_batch(prompts, generation_config=gen,
                               continuous_batching_config=cb)
    return {k: v.generated_tokens for k, v in sorted(out.items())}


def compiled(flow_cls, G, topk):
    cfg = vortex.FlowConfig(block_size=BS, page_size=PS, head_dim=D,
                            group_size=G, topk_val=topk, topk_ratio=0.0,
                            reserved_bos=1, reserved_eos=1)
    return vortex.load(vortex.compile(flow_cls(), cfg, target="cpu"))


# -- every block kept: paged|sdpa's tokens ---------------------------------
for G in (2, 5):
    ref = run("paged|sdpa", G)
    for flow_cls in (GQAQuestSparseAttention, BlockSparseAttention):
        attn = PagedVortex(compiled(flow_cls, G, 64),
                           name=f"vortex_{flow_cls.__name__}_{G}")
        got = run(attn, G)
        assert got == ref, (flow_cls.__name__, G, got, ref)
        s = attn.stats
        assert s["decode_rows"] > 0 and s["kept_blocks"] == s["dense_blocks"], s
        print(f"{flow_cls.__name__} G {G}: tokens == paged|sdpa, {s}")

# -- transformers' decode fast path (the block table) -----------------------
# attach opens it to the flow (enable_decode_fast_path); a step whose
# requests all decode then passes the block table instead of per-slot lists.
import warnings

import transformers
from transformers.generation.continuous_batching import initialization
from vortex.integrations.transformers import enable_decode_fast_path

paths = {"table": 0, "lists": 0}
plain_call = PagedVortex.__call__


def by_path(self, *a, **kw):
    paths["table" if kw.get("block_table") is not None else "lists"] += 1
    return plain_call(self, *a, **kw)


PagedVortex.__call__ = by_path
fast = PagedVortex(compiled(GQAQuestSparseAttention, 2, 2), name="vortex_fast")
got_fast = run(fast, 2)
table_calls = paths["table"]
slow = PagedVortex(compiled(GQAQuestSparseAttention, 2, 2), name="vortex_slow",
                   decode_fast_path=False)
got_slow = run(slow, 2)
PagedVortex.__call__ = plain_call
assert table_calls > 30 and paths["table"] == table_calls, paths
assert got_fast == got_slow and fast.stats == slow.stats, \
    (got_fast, got_slow, fast.stats, slow.stats)
print(f"decode fast path: {table_calls} block-table calls; tokens and "
      f"blocks kept == the per-slot path's ({fast.stats})")
# The gate stays closed for other attentions, and on other versions.
probe = ContinuousBatchingConfig(block_size=PS, max_blocks_per_request=32)
other = make_model(2).config
other._attn_implementation = "paged|sdpa"
initialization.ensure_decode_fast_path_is_available(other, probe, True)
assert probe.max_blocks_per_request == 0, probe.max_blocks_per_request
version = transformers.__version__
transformers.__version__ = "5.18.0"
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    assert not enable_decode_fast_path("paged|vortex_next")
transformers.__version__ = version
assert any("5.17.x only" in str(w.message) for w in caught), caught
print("decode fast path: closed for paged|sdpa and on transformers 5.18")

# -- the fast path's static form (what a CUDA graph captures) ----------------
# On the CPU the engine neither captures nor pads; a wrapper pads every
# block-table call by 3 requests as the engine does for a graph (length 0,
# table rows -1, extra query tokens) and drops their output rows.
padded_calls = []


def padding(self, module, query, key, value, mask, *a, **kw):
    table = kw.get("block_table")
    if table is None or not self.static_decode:
        return plain_call(self, module, query, key, value, mask, *a, **kw)
    pad = 3
    kw = dict(kw)
    kw["block_table"] = torch.cat(
        [table, torch.full_like(table[:, :pad], -1)], 1)
    ck = kw["cu_seq_lens_k"]
    kw["cu_seq_lens_k"] = torch.cat([ck, ck[-1:].repeat(pad)])
    cq = kw["cu_seq_lens_q"]
    kw["cu_seq_lens_q"] = torch.cat([cq, cq[-1:].repeat(pad)])

    def grow(x):
        extra = torch.randn(*x.shape[:2], pad, x.shape[3], dtype=x.dtype)
        return torch.cat([x, extra], 2)
    out, _ = plain_call(self, module, grow(query), grow(key), grow(value),
                        mask, *a, **kw)
    assert not out[0, -pad:].any(), "a padding row has output"
    padded_calls.append(1)
    return out[:, :-pad], None


PagedVortex.__call__ = padding
for topk, skip_layers in ((64, ()), (2, ()), (2, (0,))):
    exact = PagedVortex(compiled(GQAQuestSparseAttention, 2, topk),
                        layers_skip=skip_layers, static_decode=False,
                        name=f"vortex_exact_{topk}_{len(skip_layers)}")
    static = PagedVortex(compiled(GQAQuestSparseAttention, 2, topk),
                         layers_skip=skip_layers, static_decode=True,
                         name=f"vortex_static_{topk}_{len(skip_layers)}")
    assert run(static, 2) == run(exact, 2) and static.stats == exact.stats, \
        (topk, skip_layers, static.stats, exact.stats)
n_padded = len(padded_calls)
print(f"static fast path, padded by 3 requests ({n_padded} calls): "
      "tokens and blocks kept == the exact form's at budgets 64 and 2, and "
      "with a dense layer")

# A flow that saves state per block (running_avg: its indexer writes
# running_score) in the static form: the spare row's entries go to a page
# the engine gives up (_spare_page), so every request's saved state equals
# the exact form's. (With the spare row on block 0, as before, block 0's
# state differs.)
from vortex.flows.running_avg_block_sparse import RunningAvgBlockSparse

spares, take_spare = [], PagedVortex._spare_page


def recording_spare(self, cache):
    page = take_spare(self, cache)
    spares.append((page, cache._block_manager.num_free_blocks))
    return page


PagedVortex._spare_page = recording_spare
no_share = ContinuousBatchingConfig(block_size=PS, num_blocks=64,
                                    max_batch_tokens=48,
                                    allow_block_sharing=False)
saving = {}
for static in (False, True):
    attn = PagedVortex(compiled(RunningAvgBlockSparse, 2, 2),
                       static_decode=static, name=f"vortex_ra_{static}")
    saving[static] = (run(attn, 2, cb=no_share), attn)
PagedVortex.__call__, PagedVortex._spare_page = plain_call, take_spare
(tok_e, exact), (tok_s, static) = saving[False], saving[True]
assert tok_s == tok_e and static.stats == exact.stats, (static.stats,
                                                        exact.stats)
pages = {p for p, _ in spares}
assert len(pages) == 1 and pages != {-1}, spares
spare = pages.pop()
assert spare == 63, spare     # the last free page, before any request's
per_page = HKV * (PS // BS)
for layer in (0, 1):
    e = exact.caches[layer]["running_score"].clone()
    g = static.caches[layer]["running_score"].clone()
    assert e[spare * per_page:(spare + 1) * per_page].abs().sum() == 0
    g[spare * per_page:(spare + 1) * per_page] = 0
    assert torch.equal(g, e), (layer, (g - e).abs().max())
    assert e.abs().sum() > 0
assert len(padded_calls) > n_padded + 20, len(padded_calls)
print(f"running_avg (saves state) in the static form, padded: tokens, "
      f"blocks kept and every request's saved state == the exact form's; "
      f"the spare row's page is {spare}, taken from the engine")

# -- prompts sharing 40 tokens (prefix sharing reuses their blocks) --------
from transformers.generation.continuous_batching import cache as cb_cache

ref_p = run("paged|sdpa", 2, shared_prefix=40)
pre = PagedVortex(compiled(GQAQuestSparseAttention, 2, 64), name="vortex_pre")
match = cb_cache.PagedAttentionCache.search_prefix_match
matched = []


def counting(self, request_id, prompt_ids):
    n = match(self, request_id, prompt_ids)
    matched.append(n)
    return n


cb_cache.PagedAttentionCache.search_prefix_match = counting
got = run(pre, 2, shared_prefix=40)
cb_cache.PagedAttentionCache.search_prefix_match = match
assert got == ref_p
assert sum(matched) > 0, f"no prefix was shared: {matched}"
print(f"shared 40-token prefix ({sum(matched)} tokens' blocks reused): "
      "tokens == paged|sdpa")

# -- NaN in every cache slot before the run: the same tokens ---------------
# transformers allocates its cache uninitialized; unwritten slots (the tail
# of a partial block) must never reach a result.

init = cb_cache.PagedAttentionCache.__init__


def poisoned(self, *a, **kw):
    init(self, *a, **kw)
    for t in list(self.key_cache) + list(self.value_cache):
        t.fill_(float("nan"))


cb_cache.PagedAttentionCache.__init__ = poisoned
ref2 = run("paged|sdpa", 2)     # (SDPA reads only written slots too)
nan_attn = PagedVortex(compiled(GQAQuestSparseAttention, 2, 64),
                       name="vortex_nan")
got = run(nan_attn, 2)
cb_cache.PagedAttentionCache.__init__ = init
assert got == ref2 == run("paged|sdpa", 2), (got, ref2)
print("NaN-filled cache: tokens == paged|sdpa")

# -- a small budget; a dense layer -----------------------------------------
sparse = PagedVortex(compiled(GQAQuestSparseAttention, 2, 2), name="vortex_k2")
toks = run(sparse, 2)
s = sparse.stats
assert 0 < s["kept_blocks"] < s["dense_blocks"], s
assert all(len(v) == 24 for v in toks.values()), toks
skip = PagedVortex(compiled(GQAQuestSparseAttention, 2, 2), layers_skip=(0,),
                   name="vortex_k2_skip0")
run(skip, 2)
t = skip.stats
# Layer 0 attends every block, layer 1 selects: between the two.
assert s["kept_blocks"] < t["kept_blocks"] < t["dense_blocks"], (s, t)
print(f"budget 2: {s}; layer 0 dense: {t}")

# -- every decode step's selection equals eager mode's ---------------------
from vortex.semantics import eager

eager_cfg = vortex.FlowConfig(block_size=BS, page_size=PS, head_dim=D,
                              group_size=2, topk_val=2, topk_ratio=0.0,
                              reserved_bos=1, reserved_eos=1)
for flow_cls in (GQAQuestSparseAttention, BlockSparseAttention):
    for static in (False, True):   # the exact fast path and its static form
        same_sel = PagedVortex(compiled(flow_cls, 2, 2), static_decode=static,
                               name=f"vortex_eager_{flow_cls.__name__}_{static}")
        decode_op, steps = same_sel.flow.decode, []

        def decode_and_compare(q, cache, ip, ix, last, **kw):
            o, lse, sp, si = decode_op(q, cache, ip, ix, last, **kw)
            _, ep, ei = eager.indexer(flow_cls(), q, cache, ip, ix, eager_cfg)
            assert torch.equal(sp, ep.to(sp.dtype)), (sp, ep)
            assert torch.equal(si[:int(sp[-1])],
                               ei[:int(ep[-1])].to(si.dtype))
            steps.append(int(sp[-1]))
            return o, lse, sp, si

        same_sel.flow.decode = decode_and_compare
        run(same_sel, 2)
        assert len(steps) > 20, steps
        assert 0 < same_sel.stats["kept_blocks"] < \
            same_sel.stats["dense_blocks"], same_sel.stats
        print(f"{flow_cls.__name__} ({'static' if static else 'exact'}): "
              f"selections == eager mode's at {len(steps)} decode calls")

# -- the summaries equal a recomputation from K ----------------------------
# Quest's fields: the max and min of each completed block's K rows. Every
# block all of whose slots the run wrote (no block is reused: 64 pages hold
# every request) must hold them exactly.
written = {}
call = PagedVortex.__call__


def recording(self, module, query, key, value, mask, *a, **kw):
    g, _ = kw["cache"].layer_index_to_group_indices[module.layer_idx]
    written.setdefault(module.layer_idx, set()).update(
        kw["write_index"][g].tolist())
    return call(self, module, query, key, value, mask, *a, **kw)


PagedVortex.__call__ = recording
# (The per-slot path: its write_index lists every slot the run wrote.)
summ = PagedVortex(compiled(GQAQuestSparseAttention, 2, 2), name="vortex_sum",
                   decode_fast_path=False)
run(summ, 2)
PagedVortex.__call__ = call
checked = 0
for layer, slots in written.items():
    c = summ.caches[layer]
    for page in {s // PS for s in slots}:
        for j in range(PS // BS):
            first = page * PS + j * BS
            if not all(first + t in slots for t in range(BS)):
                continue
            for h in range(HKV):
                b = (page * HKV + h) * (PS // BS) + j
                kb = c["k"][b]                                  # [BS, D]
                assert torch.equal(c["max"][b, 0], kb.max(0).values), b
                assert torch.equal(c["min"][b, 0], kb.min(0).values), b
                checked += 1
assert checked > 50, checked
print(f"summaries: {checked} completed blocks equal max/min of their K")


# -- a forked request gets its copied blocks' fields -------------------------
# num_return_sequences = 2 forks the request after its prefill; with blocks
# not shared, the engine copies the parent's pages (copy_cache, K/V only),
# and the wrap copies the flow's fields of those pages with them.
copies = []
fork = PagedVortex(compiled(GQAQuestSparseAttention, 2, 2), name="vortex_fork")
fork_cb = ContinuousBatchingConfig(block_size=PS, num_blocks=64,
                                   max_batch_tokens=48,
                                   allow_block_sharing=False)
fork_model = make_model(2)
fork.attach(fork_model, fork_cb)
wrapped_copy = cb_cache.PagedAttentionCache.copy_cache


def copy_recording(self, src, dst):
    copies.extend(zip(src, dst))
    return wrapped_copy(self, src, dst)


cb_cache.PagedAttentionCache.copy_cache = copy_recording
fork_model.generate_batch(
    [[int(x) for x in torch.randint(0, 256, (39,))]],
    generation_config=GenerationConfig(
        max_new_tokens=8, do_sample=True, top_k=1, num_return_sequences=2,
        eos_token_id=-1, pad_token_id=0),
    continuous_batching_config=fork_cb)
cb_cache.PagedAttentionCache.copy_cache = wrapped_copy
full_pages = [d for _, d in copies[:-1]]    # the last copied page is partial
assert len(full_pages) >= 2, copies
for layer, c in fork.caches.items():
    for page in full_pages:
        for b in range(page * HKV * (PS // BS), (page + 1) * HKV * (PS // BS)):
            kb = c["k"][b]
            assert torch.equal(c["max"][b, 0], kb.max(0).values), (layer, b)
            assert torch.equal(c["min"][b, 0], kb.min(0).values), (layer, b)
print(f"fork: pages {copies} copied; the forked pages' summaries equal "
      "their K's")

# -- refusals ----------------------------------------------------------------
def refused(what, fn, *words):
    try:
        fn()
    except (ValueError, NotImplementedError) as err:
        msg = str(err)
        assert all(w in msg for w in words), (what, msg)
        print(f"refused ({what}): {msg}")
        return
    raise AssertionError(f"{what}: not refused")


bad = PagedVortex(compiled(GQAQuestSparseAttention, 2, 64), name="vortex_bad")
refused("engine block 32", lambda: bad.attach(make_model(2), engine(32)),
        "block_size is 32", "page_size 16")
refused("head_dim 32", lambda: bad.attach(make_model(2, head_dim=32)),
        "head_dim 32")
refused("G 5 on a G 2 flow", lambda: bad.attach(make_model(5)),
        "10 query heads", "group_size 2")
sw = make_model(2)
sw.config.layer_types = ["sliding_attention", "full_attention"]
refused("a sliding-window layer", lambda: bad.attach(sw), "layers [0]",
        "sliding_attention")
# A flow that saves state per block (running_avg: its indexer writes
# running_score) needs blocks no two requests share.
ra = PagedVortex(compiled(RunningAvgBlockSparse, 2, 64), name="vortex_ra")
assert ra.saved == ["running_score"], ra.saved
refused("block sharing with a saving flow",
        lambda: ra.attach(make_model(2), engine()),
        "running_score", "allow_block_sharing=False")
assert ra.attach(make_model(2), no_share) == "paged|vortex_ra"
assert run(ra, 2, cb=no_share) == run("paged|sdpa", 2, cb=no_share)
print("running_avg (saves state), blocks not shared: tokens == paged|sdpa")
refused("no paged cache",
        lambda: bad(None, torch.zeros(1, 4, 1, D), None, None, None),
        "continuous batching")
# CUDA graphs of decode steps need the static form.
graphs = ContinuousBatchingConfig(block_size=PS, num_blocks=64,
                                  allow_block_sharing=False,
                                  use_cuda_graph=(False, True))
assert ra.attach(make_model(2), graphs) == "paged|vortex_ra"
refused("decode graphs without the fast path",
        lambda: PagedVortex(bad.flow, name="vortex_nofast",
                            decode_fast_path=False).attach(make_model(2),
                                                           graphs),
        "decode_fast_path=False")
refused("graphs of prefill steps",
        lambda: bad.attach(make_model(2), ContinuousBatchingConfig(
            block_size=PS, use_cuda_graph=True)), "(False, True)")
print("integrations_transformers: ok")
