# RUN: %python %s
# REQUIRES: numpy, torch, transformers
#
# paged|vortex under a compiled decode step (transformers'
# ContinuousBatchingConfig(decode_compile_config=...): torch.compile fuses
# the model's own kernels), on the CPU, f32, a tiny Llama with random
# weights, the static decode form forced (what CUDA graphs capture):
#   - the registered attention is opaque to torch.compile (disabled, as
#     transformers' own paged attention), so a traced graph never
#     specializes on the per-step plan the call keeps on the host;
#   - the tokens equal the uncompiled run's, for gqa_quest at a budget of
#     2 blocks (which keeps fewer blocks than exist).
import torch
from transformers import AttentionInterface, LlamaConfig, LlamaForCausalLM
from transformers.generation import (CompileConfig, ContinuousBatchingConfig,
                                     GenerationConfig)

import vortex
from vortex.flows.gqa_quest_sparse_attention import GQAQuestSparseAttention
from vortex.integrations.transformers import PagedVortex

torch.manual_seed(0)
model = LlamaForCausalLM(LlamaConfig(
    vocab_size=256, hidden_size=64, intermediate_size=128,
    num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
    head_dim=16, max_position_embeddings=4096)).eval()
cfg = vortex.FlowConfig(block_size=4, page_size=16, head_dim=16, group_size=2,
                        topk_val=2, topk_ratio=0.0, reserved_bos=1,
                        reserved_eos=1)
flow = vortex.load(vortex.compile(GQAQuestSparseAttention(), cfg,
                                  target="cpu"))
prompts = [[int(x) for x in torch.randint(0, 256, (n,))]
           for n in (37, 5, 70, 16)]
gen = GenerationConfig(max_new_tokens=12, do_sample=False, eos_token_id=-1,
                       pad_token_id=0)


def run(name, compiled):
    attn = PagedVortex(flow, name=name, static_decode=True)
    cb = ContinuousBatchingConfig(
        block_size=16, num_blocks=64, max_batch_tokens=48,
        decode_compile_config=CompileConfig(fullgraph=False, dynamic=False)
        if compiled else None)
    key = attn.attach(model, cb)
    fn = AttentionInterface()[key]
    assert getattr(fn, "_torchdynamo_disable", False), \
        "the registered attention is traced by torch.compile"
    out = model.generate_batch(prompts, generation_config=gen,
                               continuous_batching_config=cb)
    toks = {k: v.generated_tokens for k, v in sorted(out.items())}
    assert all(len(t) == 12 for t in toks.values()), toks
    return toks, attn.stats


eager_toks, eager_stats = run("vortex_plain", False)
comp_toks, comp_stats = run("vortex_compiled", True)
assert comp_toks == eager_toks, (comp_toks, eager_toks)
# (stats differ: the engine's compile warm-up runs decode steps too)
assert 0 < comp_stats["kept_blocks"] < comp_stats["dense_blocks"], comp_stats
print(f"compiled decode step: tokens == the uncompiled run's "
      f"({comp_stats}; uncompiled {eager_stats})")
