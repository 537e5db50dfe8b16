#!/usr/bin/env python3
"""paged|vortex on a GPU through transformers' continuous batching (issue
36): a small Llama with random weights (bf16, or f32 with `--dtype`),
flows compiled for the GPU
(`--artifacts DIR` holds `<name>/*.manifest.json`: vortex-compile outputs at
head_dim 128, group 2, blocks and pages of 16), against paged|sdpa on the
same prompts.

For each attention: greedy-token agreement with paged|sdpa (bf16: a random
model's near-ties may flip), the blocks each budget kept, and the time of
one decode step: (wall of a run with `--new` tokens - wall of a run with
`--new` / 4) / the difference in tokens, each wall the best of two runs
after a warm-up, so prefill cancels (the engine's host time stays in);
blocks kept are summed over the five runs. Each flow runs on the per-slot path, on the decode
fast path (the block table, exact CSR), and on the fast path's static form
under CUDA graphs of decode steps (use_cuda_graph=(False, True)); a layers
in layers_skip variant attends densely through our kernel. paged|sdpa
cannot take the fast path (transformers gives it to flash-attn only) and
runs without graphs.

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


def model(layers, ctx, dtype):
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=1024, hidden_size=512, intermediate_size=1024,
                      num_hidden_layers=layers, num_attention_heads=4,
                      num_key_value_heads=2, head_dim=128,
                      max_position_embeddings=ctx + 512)
    return LlamaForCausalLM(cfg).to("cuda", dtype).eval()


ASYNC = False     # --async-batching: the engine's default with graphs


def generate(m, impl, prompts, new, blocks, graphs=False):
    cb = ContinuousBatchingConfig(
        block_size=16, num_blocks=blocks, max_batch_tokens=2048,
        allow_block_sharing=False,     # a flow that saves state needs it
        use_cuda_graph=(False, True) if graphs else False,
        use_async_batching=ASYNC and graphs)
    if isinstance(impl, PagedVortex):
        impl.attach(m, cb)
    else:
        m.set_attn_implementation(impl)
    gen = GenerationConfig(max_new_tokens=new, do_sample=False,
                           eos_token_id=-1, pad_token_id=0)
    torch.cuda.synchronize()
    t = time.perf_counter()
    out = m.generate_batch(prompts, generation_config=gen,
                           continuous_batching_config=cb, progress_bar=False)
    torch.cuda.synchronize()
    toks = [list(v.generated_tokens) for _, v in sorted(out.items())]
    if any(len(x) != new for x in toks):
        raise SystemExit(f"{impl}: a request failed (see the engine's log)")
    return toks, time.perf_counter() - t


def step_ms(m, impl, prompts, new, blocks, graphs=False):
    """(tokens of the long run, ms per decode step)."""
    short = max(new // 4, 1)
    generate(m, impl, prompts, short, blocks, graphs)        # warm-up
    t_short = min(generate(m, impl, prompts, short, blocks, graphs)[1]
                  for _ in range(2))
    runs = [generate(m, impl, prompts, new, blocks, graphs) for _ in range(2)]
    t_long = min(t for _, t in runs)
    return runs[0][0], (t_long - t_short) / (new - short) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--artifacts", required=True)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--context", type=int, default=4096)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--new", type=int, default=256)
    ap.add_argument("--dtype", choices=("bfloat16", "float32"),
                    default="bfloat16",
                    help="the model's (the flows' q and k/v must match)")
    ap.add_argument("--paths", nargs="+", default=["lists", "fast", "graphs"],
                    choices=["lists", "fast", "graphs"])
    ap.add_argument("--async-batching", action="store_true",
                    help="async batching for the runs under graphs (the "
                    "host prepares a step while the GPU runs the last)")
    args = ap.parse_args()
    global ASYNC
    ASYNC = args.async_batching
    print(torch.cuda.get_device_name(0), torch.__version__, args.dtype,
          "async batching" if ASYNC else "")
    g = torch.Generator().manual_seed(1)
    prompts = [[int(x) for x in torch.randint(0, 1024, (args.context - 37 * i,),
                                              generator=g)]
               for i in range(args.batch)]
    blocks = args.batch * (args.context + args.new) // 16 + 64
    m = model(args.layers, args.context, getattr(torch, args.dtype))
    ref, ms = step_ms(m, "paged|sdpa", prompts, args.new, blocks)
    total = sum(len(t) for t in ref)
    print(f"paged|sdpa: {ms:.2f} ms per decode step ({args.batch} requests "
          f"of ~{args.context} tokens, {args.layers} layers)")
    paths = [p for p in (
        ("lists", "per-slot lists", dict(decode_fast_path=False), False),
        ("fast", "fast path", dict(static_decode=False), False),
        ("graphs", "fast path, static, CUDA graphs",
         dict(static_decode=True), True)) if p[0] in args.paths]
    for path in sorted(glob.glob(os.path.join(args.artifacts,
                                              "*/*.manifest.json"))):
        name = os.path.basename(os.path.dirname(path))
        flow = vortex.load(path)
        by_path = {}
        for key, label, kw, graphs in paths:
            for skip in ((), tuple(range(args.layers)))[:1 if kw.get(
                    "decode_fast_path") is False else 2]:
                attn = PagedVortex(flow, layers_skip=skip, **kw,
                                   name=f"{name}_{len(skip)}_{len(label)}")
                toks, ms = step_ms(m, attn, prompts, args.new, blocks,
                                   graphs)
                by_path[key, skip] = toks
                same = sum(a == b for x, y in zip(toks, ref)
                           for a, b in zip(x, y))
                s = attn.stats
                what = "dense attend" if skip else "decode"
                print(f"{name} {what} [{label}]: {same}/{total} tokens == "
                      f"paged|sdpa; kept {s['kept_blocks']} of "
                      f"{s['dense_blocks']} blocks; {ms:.2f} ms per decode "
                      "step")
        # The static form under graphs against the exact fast path: the
        # same rows through the same kernels (a flow that saves state
        # included: its spare row saves into a page of its own).
        for skip in ((), tuple(range(args.layers))):
            a, b = by_path.get(("graphs", skip)), by_path.get(("fast", skip))
            if a is not None and b is not None:
                same = sum(x == y for p, q in zip(a, b) for x, y in zip(p, q))
                print(f"{name} {'dense attend' if skip else 'decode'}: "
                      f"graphs == fast path for {same}/{total} tokens")


if __name__ == "__main__":
    main()
