#!/usr/bin/env python3
"""The engine benchmark (issue 36): decode time per step through
transformers' continuous batching, on a model with random weights shaped
like Qwen3-1.7B (28 layers, 16 query heads on 8 KV heads, D 128, bf16), for
three attentions in the same engine:

- `sparse`: paged|vortex, the flow's `decode` (indexer, then attention over
  the selection), CUDA graphs of decode steps on (its static fast path);
- `dense`: paged|vortex with every layer in layers_skip, our `attend` over
  every block (the same kernel: the honest dense baseline), graphs on;
- `sdpa`: stock paged|sdpa (no fast path, graphs off: transformers' default
  for a masked attention).

Per decode step, from hooks on the engine (nothing else changes):
- GPU time: CUDA events around `ModelRunner.compute_batch` on its stream;
- period: wall time from one generation step's start to the next one's;
- host overhead: period - GPU time (what the GPU waits for the host).
Medians over the decode steps after the first `--skip` (graph capture).

`--artifacts DIR` holds `<name>/*.manifest.json`: the flow compiled for the
GPU at head_dim 128, group 2, blocks and pages of 16 (bf16), e.g.

    python -m vortex compile --flow gqa_quest_sparse_attention --target sm_90 \\
        --head-dim 128 --group-size 2 --block-size 16 --page-size 16 \\
        --topk-val 64 -o DIR/gqa_quest_k64
    python3 bench/engine_bench.py --artifacts DIR --shapes 1x32768 8x32768
"""
import argparse
import gc
import glob
import os
import statistics
import time

import torch
from transformers import Qwen3Config, Qwen3ForCausalLM
from transformers.generation import ContinuousBatchingConfig, GenerationConfig
from transformers.generation.continuous_batching import continuous_api, \
    model_runner

import vortex
from vortex.integrations.transformers import PagedVortex

QWEN3_1_7B = dict(vocab_size=151936, hidden_size=2048, intermediate_size=6144,
                  num_hidden_layers=28, num_attention_heads=16,
                  num_key_value_heads=8, head_dim=128, tie_word_embeddings=True)


class StepClock:
    """Per generation step: start time, and CUDA events around the model
    runner's compute on its stream, flagged decode or not."""

    def __init__(self):
        self.steps = []
        self._step = continuous_api.ContinuousBatchProcessor._generation_step
        self._compute = model_runner.ModelRunner.compute_batch
        clock = self

        def step(proc, model):
            clock.steps.append({"t": time.perf_counter()})
            return clock._step(proc, model)

        def compute(runner, model, batch_data):
            stream = runner.inputs_and_outputs.compute_stream or \
                torch.cuda.current_stream()
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record(stream)
            out = clock._compute(runner, model, batch_data)
            end.record(stream)
            if not clock.steps:      # a warm-up outside the loop
                return out
            clock.steps[-1].update(
                start=start, end=end,
                decode=batch_data.get("block_table") is not None or
                batch_data["max_seqlen_q"] == 1)
            return out
        continuous_api.ContinuousBatchProcessor._generation_step = step
        model_runner.ModelRunner.compute_batch = compute

    def close(self):
        continuous_api.ContinuousBatchProcessor._generation_step = self._step
        model_runner.ModelRunner.compute_batch = self._compute

    def summary(self, skip):
        torch.cuda.synchronize()
        rows = []
        for a, b in zip(self.steps, self.steps[1:]):
            if a.get("decode") and b.get("decode"):
                rows.append((a["start"].elapsed_time(a["end"]),
                             (b["t"] - a["t"]) * 1e3))
        rows = rows[skip:]
        if not rows:
            return None
        gpu = statistics.median(g for g, _ in rows)
        period = statistics.median(p for _, p in rows)
        return gpu, period, len(rows)


def make_model(layers):
    torch.manual_seed(0)
    cfg = Qwen3Config(**dict(QWEN3_1_7B, num_hidden_layers=layers),
                      max_position_embeddings=131072)
    with torch.device("cuda"):
        model = Qwen3ForCausalLM(cfg).to(torch.bfloat16).eval()
    return model


def run(model, impl, batch, context, new, skip):
    g = torch.Generator().manual_seed(1)
    prompts = [[int(x) for x in torch.randint(0, 151936, (context,),
                                              generator=g)]
               for _ in range(batch)]
    graphs = isinstance(impl, PagedVortex)
    cb = ContinuousBatchingConfig(
        block_size=16, num_blocks=batch * (context + new) // 16 + 64,
        max_batch_tokens=8192, max_requests_per_batch=batch,
        use_cuda_graph=(False, True) if graphs else False)
    if graphs:
        impl.attach(model, cb)
    else:
        model.set_attn_implementation(impl)
    clock = StepClock()
    try:
        out = model.generate_batch(
            prompts, generation_config=GenerationConfig(
                max_new_tokens=new, do_sample=False, eos_token_id=-1,
                pad_token_id=0),
            continuous_batching_config=cb, progress_bar=False)
    finally:
        clock.close()
    if any(len(v.generated_tokens) != new for v in out.values()):
        raise SystemExit(f"{impl}: a request failed (see the engine's log)")
    if graphs:
        impl.release()     # its views would keep the engine's cache alive
    return clock.summary(skip)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifacts", required=True)
    ap.add_argument("--shapes", nargs="+", default=["8x32768"],
                    help="BATCHxCONTEXT")
    ap.add_argument("--layers", type=int, default=28)
    ap.add_argument("--new", type=int, default=40)
    ap.add_argument("--skip", type=int, default=8)
    ap.add_argument("--attentions", nargs="+",
                    default=["sparse", "dense", "sdpa"],
                    choices=["sparse", "dense", "sdpa"])
    args = ap.parse_args()
    paths = sorted(glob.glob(os.path.join(args.artifacts, "*/*.manifest.json")))
    if not paths:
        raise SystemExit(f"--artifacts: no */*.manifest.json in {args.artifacts}")
    flow = vortex.load(paths[0])
    name = os.path.basename(os.path.dirname(paths[0]))
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}; "
          f"Qwen3-1.7B shape, {args.layers} layers, random weights, bf16; "
          f"flow {name}; medians over decode steps {args.skip + 1}-"
          f"{args.new - 1}")
    print("| B | context | attention | GPU ms/step | period ms/step | host "
          "overhead ms (% of GPU) | steps |")
    print("|---|---|---|---|---|---|---|")
    model = make_model(args.layers)
    for shape in args.shapes:
        batch, context = (int(x) for x in shape.split("x"))
        for which in args.attentions:
            impl = {"sparse": lambda: PagedVortex(flow, name=f"b_{shape}_s"),
                    "dense": lambda: PagedVortex(
                        flow, layers_skip=range(args.layers),
                        name=f"b_{shape}_d"),
                    "sdpa": lambda: "paged|sdpa"}[which]()
            res = run(model, impl, batch, context, args.new, args.skip)
            if res is None:
                print(f"| {batch} | {context} | {which} | - | - | - | 0 |")
                continue
            gpu, period, n = res
            host = period - gpu
            print(f"| {batch} | {context} | {which} | {gpu:.2f} | "
                  f"{period:.2f} | {host:.2f} ({100 * host / gpu:.0f}%) | "
                  f"{n} |", flush=True)
            del impl
            gc.collect()
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
