# RUN: %python %s
# REQUIRES: numpy, torch, transformers
#
# paged|vortex with every shipped flow (issue 36), on the CPU in f32, a
# 2-layer Llama with random weights (D 16, 2 KV heads), engine blocks of 16
# as the flows' pages, prompts that share a 40-token prefix, prefill chunked
# 48 tokens at a time, 12 greedy tokens each:
#   - with a budget that keeps every block, every shipped flow gives
#     paged|sdpa's tokens, and logits within 1e-5 (absolute) of paged|sdpa's
#     at every step: at G 2 with prefix sharing on (off for the flows that
#     save state per block, which refuse it) and at G 5 with it off;
#   - with 12 engine blocks for requests that need 26 (prefix sharing off),
#     the engine frees
#     blocks and hands them to waiting requests: every block whose last
#     slot was written after its other slots (complete for its latest
#     owner) holds summaries equal to a recomputation from its K (Quest's
#     max and min; block_sparse's mean to 1e-6), and with every block kept
#     the tokens equal paged|sdpa's with 12 blocks (the same schedule).
import torch
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.generation import ContinuousBatchingConfig, GenerationConfig

import vortex
from vortex.flows import MLA, SHIPPED
from vortex.integrations.transformers import PagedVortex

PS, D, HKV = 16, 16, 2
torch.set_num_threads(2)


def make_model(G):
    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(
        vocab_size=256, hidden_size=16 * HKV * G, intermediate_size=128,
        num_hidden_layers=2, num_attention_heads=HKV * G,
        num_key_value_heads=HKV, head_dim=D,
        max_position_embeddings=4096)).eval()


def run(impl, G, share, num_blocks=64):
    """(tokens by request, the logits of every engine step)."""
    model = make_model(G)
    cb = ContinuousBatchingConfig(block_size=PS, num_blocks=num_blocks,
                                  max_batch_tokens=48,
                                  allow_block_sharing=share)
    if isinstance(impl, PagedVortex):
        impl.attach(model, cb)
    else:
        model.set_attn_implementation(impl)
    logits = []
    hook = model.register_forward_hook(
        lambda mod, args, out: logits.append(out.logits[0].clone()))
    g = torch.Generator().manual_seed(1)
    prompts = [[int(x) for x in torch.randint(0, 256, (n,), generator=g)]
               for n in (37, 5, 70, 16)]
    prompts = [prompts[2][:40] + p for p in prompts]
    out = model.generate_batch(
        prompts, generation_config=GenerationConfig(
            max_new_tokens=12, do_sample=False, eos_token_id=-1,
            pad_token_id=0),
        continuous_batching_config=cb, progress_bar=False)
    hook.remove()
    tokens = {k: list(v.generated_tokens) for k, v in sorted(out.items())}
    assert all(len(t) == 12 for t in tokens.values()), (impl, tokens)
    return tokens, logits


def compiled(name, G, topk=4096, block=None):
    s = SHIPPED[name]
    cfg = s.config.replace(head_dim=D, group_size=G, page_size=PS,
                           topk_val=topk,
                           block_size=block or min(s.config.block_size, PS))
    return vortex.load(vortex.compile(s.flow, cfg, target="cpu"))


# -- every shipped flow, every block kept: paged|sdpa's tokens and logits ----
refs = {}
flows = [n for n in SHIPPED if not n.endswith("_g5") and n not in MLA]
for name in flows:
    for G, share in ((2, True), (5, False)):
        attn = PagedVortex(compiled(name, G), name=f"{name}_{G}")
        share = share and not attn.saved
        if (G, share) not in refs:
            refs[G, share] = run("paged|sdpa", G, share)
        ref, ref_logits = refs[G, share]
        got, logits = run(attn, G, share)
        assert got == ref, (name, G, got, ref)
        assert len(logits) == len(ref_logits), (name, G)
        worst = max(float((a - b).abs().max())
                    for a, b in zip(logits, ref_logits))
        assert worst <= 1e-5, (name, G, worst)
        s = attn.stats
        assert s["decode_rows"] > 0 and s["kept_blocks"] == s["dense_blocks"]
        print(f"{name} G {G} sharing {'on' if share else 'off'}: tokens == "
              f"paged|sdpa, logits within {worst:.1e}")
print(f"{len(flows)} shipped flows: tokens and logits == paged|sdpa")

# -- blocks freed and reused: fresh summaries --------------------------------
writes, counts = {}, {}
plain = PagedVortex.__call__


def recording(self, module, query, key, value, mask, *a, **kw):
    g, _ = kw["cache"].layer_index_to_group_indices[module.layer_idx]
    log = writes.setdefault((self.name, module.layer_idx), {})
    for slot in kw["write_index"][g].tolist():
        counts[self.name] = counts.get(self.name, 0) + 1
        log[slot] = counts[self.name]          # the time of its last write
    return plain(self, module, query, key, value, mask, *a, **kw)


PagedVortex.__call__ = recording
for name, BS, exact in (("gqa_quest_sparse_attention", 4, True),
                        ("block_sparse_attention", 8, False)):
    attn = PagedVortex(compiled(name, 2, block=BS), name=f"reuse_{name}",
                       decode_fast_path=False)
    got, _ = run(attn, 2, False, num_blocks=12)
    assert got == run("paged|sdpa", 2, False, num_blocks=12)[0], name
    reused = checked = 0
    for layer, c in attn.caches.items():
        log = writes[attn.name, layer]
        for first in range(0, 12 * PS, BS):
            times = [log.get(first + t, 0) for t in range(BS)]
            if not all(times) or times[-1] < max(times):
                continue        # not complete for its latest owner
            page, j = divmod(first, PS)
            for h in range(HKV):
                b = (page * HKV + h) * (PS // BS) + j // BS
                kb = c["k"][b]
                if "max" in c:
                    assert torch.equal(c["max"][b, 0], kb.max(0).values)
                    assert torch.equal(c["min"][b, 0], kb.min(0).values)
                else:
                    assert torch.allclose(c["centroids"][b, 0], kb.mean(0),
                                          atol=1e-6), (name, b)
                checked += 1
    pages_used = {s // PS for (n, _), log in writes.items()
                  if n == attn.name for s in log}
    total_pages = counts[attn.name] // (2 * PS)    # slots written / layer
    assert len(pages_used) <= 12 < total_pages, (pages_used, total_pages)
    assert checked > 20, checked
    print(f"{name}: 12 engine blocks for ~{total_pages} pages of tokens; "
          f"{checked} complete blocks' summaries == recomputed from K; "
          "tokens == paged|sdpa's with 12 blocks")
PagedVortex.__call__ = plain
print("integrations_transformers_flows: ok")
