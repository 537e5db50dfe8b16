# RUN: %python %s %smollm2
# REQUIRES: numpy, torch, transformers, smollm2
#
# The loading path of bench/accuracy_smollm2.py (issue 36): SmolLM2-135M-
# Instruct's real weights (the GGUF that scripts/fetch-smollm2.sh fetches,
# loaded by transformers through the gguf package, f32 on the CPU) through
# transformers' continuous batching with paged|vortex: a 200-token prompt
# from a license text, 8 greedy tokens.
#   - the model is the one the benchmark describes (30 layers, 9 query heads
#     on 3 KV heads, D 64: G 3), and the tokenizer round-trips the text;
#   - gqa_quest with a budget that keeps every block gives paged|sdpa's
#     tokens, and a budget of 2 blocks (+ BOS and EOS) attends fewer blocks
#     and still generates 8 tokens.
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from transformers.generation import ContinuousBatchingConfig, GenerationConfig

import vortex
from vortex.flows.gqa_quest_sparse_attention import GQAQuestSparseAttention
from vortex.integrations.transformers import PagedVortex

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
model_dir = sys.argv[1]
tok = AutoTokenizer.from_pretrained(model_dir, gguf_file=GGUF)
model = AutoModelForCausalLM.from_pretrained(model_dir, gguf_file=GGUF,
                                             dtype=torch.float32).eval()
c = model.config
assert (c.num_hidden_layers, c.num_attention_heads, c.num_key_value_heads,
        c.head_dim) == (30, 9, 3, 64), c
text = open("/usr/share/common-licenses/GPL-3").read()[:2000]
ids = tok(text).input_ids[:200]
assert tok.decode(ids).strip() and len(ids) == 200


def generate(impl):
    cb = ContinuousBatchingConfig(block_size=16, num_blocks=32,
                                  max_batch_tokens=128)
    if isinstance(impl, PagedVortex):
        impl.attach(model, cb)
    else:
        model.set_attn_implementation(impl)
    out = model.generate_batch(
        [ids], generation_config=GenerationConfig(
            max_new_tokens=8, do_sample=False, eos_token_id=-1,
            pad_token_id=0),
        continuous_batching_config=cb, progress_bar=False)
    return list(next(iter(out.values())).generated_tokens)


def flow(topk):
    cfg = vortex.FlowConfig(block_size=16, page_size=16, head_dim=64,
                            group_size=3, topk_val=topk)
    return vortex.load(vortex.compile(GQAQuestSparseAttention(), cfg,
                                      target="cpu"))


ref = generate("paged|sdpa")
full = PagedVortex(flow(64), name="smollm2_full")
assert generate(full) == ref, (ref,)
sparse = PagedVortex(flow(2), name="smollm2_k2")
got = generate(sparse)
s = sparse.stats
assert len(got) == 8 and 0 < s["kept_blocks"] < s["dense_blocks"], (got, s)
print(f"SmolLM2-135M: paged|vortex (every block) == paged|sdpa: "
      f"{tok.decode(ref)!r}; budget 2: {tok.decode(got)!r}, {s}")
