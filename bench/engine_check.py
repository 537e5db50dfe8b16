#!/usr/bin/env python3
"""paged|vortex on a GPU through transformers' continuous batching (issue 36,
first slice): a small Llama with random weights in bf16, flows compiled for
the GPU (`--artifacts DIR` holds `<flow>_k<topk>/` vortex-compile outputs of
gqa_quest_sparse_attention at head_dim 128, group 2, blocks and pages of 16),
against paged|sdpa on the same prompts: greedy-token agreement (bf16: a
random model's near-ties may flip) and the blocks each budget kept, then
wall time per generated token for each attention.

    python3 bench/engine_check.py --artifacts DIR
"""
import argparse
import glob
import os
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.generation import ContinuousBatchingConfig, GenerationConfig

import vortex
from vortex.integrations.transformers import PagedVortex


def model(layers, ctx):
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=1024, hidden_size=512, intermediate_size=1024,
                      num_hidden_layers=layers, num_attention_heads=4,
                      num_key_value_heads=2, head_dim=128,
                      max_position_embeddings=ctx + 512)
    return LlamaForCausalLM(cfg).to("cuda", torch.bfloat16).eval()


def generate(m, impl, prompts, new, blocks):
    cb = ContinuousBatchingConfig(block_size=16, num_blocks=blocks,
                                  max_batch_tokens=2048)
    if isinstance(impl, PagedVortex):
        impl.attach(m, cb)
    else:
        m.set_attn_implementation(impl)
    gen = GenerationConfig(max_new_tokens=new, do_sample=False,
                           eos_token_id=-1, pad_token_id=0)
    torch.cuda.synchronize()
    t = time.perf_counter()
    out = m.generate_batch(prompts, generation_config=gen,
                           continuous_batching_config=cb)
    torch.cuda.synchronize()
    wall = time.perf_counter() - t
    return [v.generated_tokens for _, v in sorted(out.items())], wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--artifacts", required=True)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--context", type=int, default=4096)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--new", type=int, default=32)
    args = ap.parse_args()
    print(torch.cuda.get_device_name(0), torch.__version__)
    g = torch.Generator().manual_seed(1)
    prompts = [[int(x) for x in torch.randint(0, 1024, (args.context - 37 * i,),
                                              generator=g)]
               for i in range(args.batch)]
    blocks = args.batch * (args.context + args.new) // 16 + 64
    m = model(args.layers, args.context)
    ref, wall = generate(m, "paged|sdpa", prompts, args.new, blocks)
    total = sum(len(t) for t in ref)
    print(f"paged|sdpa: {wall / args.new * 1e3:.1f} ms per step "
          f"({args.batch} requests of ~{args.context} tokens)")
    for path in sorted(glob.glob(os.path.join(args.artifacts, "*/*.manifest.json"))):
        name = os.path.basename(os.path.dirname(path))
        for skip in ((), tuple(range(args.layers))):
            attn = PagedVortex(vortex.load(path), layers_skip=skip,
                               name=f"{name}_{len(skip)}")
            toks, wall = generate(m, attn, prompts, args.new, blocks)
            same = sum(a == b for x, y in zip(toks, ref) for a, b in zip(x, y))
            s = attn.stats
            label = "dense attend (all layers skipped)" if skip else "decode"
            print(f"{name} {label}: {same}/{total} tokens == paged|sdpa; "
                  f"kept {s['kept_blocks']} of {s['dense_blocks']} blocks; "
                  f"{wall / args.new * 1e3:.1f} ms per step")


if __name__ == "__main__":
    main()
