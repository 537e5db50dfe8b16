#!/usr/bin/env python3
"""The engine benchmark (issue 36): decode time per step through
transformers' continuous batching, on models with random weights shaped
like Qwen3-1.7B (28 layers, 16 query heads on 8 KV heads) or Llama-3-8B (32
layers, 32 on 8), D 128, bf16, for three attentions in the same engine:

- `sparse`: paged|vortex, the flow's `decode` (indexer, then attention over
  the selection), CUDA graphs of decode steps on (its static fast path);
- `dense`: paged|vortex with every layer in layers_skip, our `attend` over
  every block (the same kernel: the honest dense baseline), graphs on;
- `sdpa`: stock paged|sdpa (no fast path, graphs off: transformers' default
  for a masked attention).

Per decode step, from hooks on the engine (nothing else changes):
- GPU time: CUDA events around `ModelRunner.compute_batch` on its stream;
- period: wall time from one generation step's start to the next one's;
- host overhead: period - GPU time (what the GPU waits for the host);
- blocks/row (kept): blocks a decode row could attend, and those attended.
Only steps that decode the whole batch count: the engine staggers requests
(the first decode while later ones prefill, and the first finish first), so
a median over every decode step would mix batch sizes. Medians over those
steps after the first `--skip` (graph capture). Async batching is off by
default, so a step's GPU time does not overlap the next step's copies.
`--profile N` lists the kernels of N decode steps (torch.profiler; run it
with VORTEX_CHAIN_LAUNCHES=0 too: a chained kernel's time includes its wait
for the one before).

`--artifacts DIR` holds `<name>/*.manifest.json`: the flow compiled for the
GPU at head_dim 128, the model's group size, blocks and pages of 16 (bf16):

    python -m vortex compile --flow gqa_quest_sparse_attention --target sm_90 \\
        --head-dim 128 --group-size 2 --block-size 16 --page-size 16 \\
        --topk-val 64 -o DIR/gqa_quest_k64
    python3 bench/engine_bench.py --artifacts DIR --shapes 1x32768 8x32768

(group size 4 for `--model llama-3-8b`). A shape whose cache does not fit
is listed as such.
"""
import argparse
import gc
import glob
import os
import statistics
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen3Config, \
    Qwen3ForCausalLM
from transformers.generation import CompileConfig, \
    ContinuousBatchingConfig, GenerationConfig
from transformers.generation.continuous_batching import continuous_api, \
    model_runner

import vortex
from vortex.integrations.transformers import PagedVortex

# Public config shapes (random weights): the layer count, heads, head dim and
# widths decide the bytes a decode step moves.
MODELS = {
    "qwen3-1.7b": (Qwen3Config, Qwen3ForCausalLM, dict(
        vocab_size=151936, hidden_size=2048, intermediate_size=6144,
        num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8,
        head_dim=128, tie_word_embeddings=True)),
    "llama-3-8b": (LlamaConfig, LlamaForCausalLM, dict(
        vocab_size=128256, hidden_size=4096, intermediate_size=14336,
        num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
        head_dim=128, rope_theta=500000.0)),
}


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
                batch_data["max_seqlen_q"] == 1,
                requests=getattr(runner.inputs_and_outputs,
                                 "num_request_in_batch", None))
            return out
        self._step_hook = step
        continuous_api.ContinuousBatchProcessor._generation_step = step
        model_runner.ModelRunner.compute_batch = compute

    def close(self):
        continuous_api.ContinuousBatchProcessor._generation_step = self._step
        model_runner.ModelRunner.compute_batch = self._compute

    def summary(self, skip, batch):
        """Medians over decode steps of the whole batch (the engine staggers
        requests: the first ones decode while later ones prefill)."""
        torch.cuda.synchronize()
        rows = []
        for a, b in zip(self.steps, self.steps[1:]):
            if a.get("decode") and b.get("decode") and \
                    a.get("requests") in (batch, None):
                rows.append((a["start"].elapsed_time(a["end"]),
                             (b["t"] - a["t"]) * 1e3))
        rows = rows[skip:]
        if not rows:
            return None
        gpu = statistics.median(g for g, _ in rows)
        period = statistics.median(p for _, p in rows)
        return gpu, period, len(rows)


def make_model(name, layers):
    config, causal_lm, shape = MODELS[name]
    torch.manual_seed(0)
    cfg = config(**dict(shape, num_hidden_layers=layers or
                        shape["num_hidden_layers"]),
                 max_position_embeddings=131072)
    with torch.device("cuda"):
        model = causal_lm(cfg).to(torch.bfloat16).eval()
    return model


def cache_blocks(batch, context, new):
    return (5 * batch * (context + new) // 16) // 4 + 64


def kv_bytes(model, tokens):
    """The engine's K/V bytes for `tokens` cached tokens (bf16)."""
    c = model.config
    return 2 * 2 * c.num_hidden_layers * c.num_key_value_heads * \
        c.head_dim * tokens


class Profile:
    """torch.profiler over decode steps [first, first + count) of one run:
    the device time per step of each kernel, the top ones printed."""

    def __init__(self, clock, first, count):
        self.clock, self.first, self.count = clock, first, count
        self.prof = None
        step = clock._step_hook

        def hook(proc, model):
            n = sum(1 for s in clock.steps if s.get("decode"))
            if self.prof is None and n == first:
                self.prof = torch.profiler.profile(
                    activities=[torch.profiler.ProfilerActivity.CUDA])
                self.prof.start()
            elif self.prof is not None and n == first + count and \
                    not getattr(self, "done", False):
                torch.cuda.synchronize()
                self.prof.stop()
                self.done = True
            return step(proc, model)
        continuous_api.ContinuousBatchProcessor._generation_step = hook

    def report(self, top=25):
        if self.prof is None or not getattr(self, "done", False):
            return "profile: the run ended before the profiled steps"
        rows = [e for e in self.prof.key_averages()
                if e.device_type == torch.autograd.DeviceType.CUDA]
        rows.sort(key=lambda e: -e.device_time_total)
        total = sum(e.device_time_total for e in rows) / self.count
        calls = sum(e.count for e in rows) / self.count
        out = [f"profile: {total / 1e3:.2f} ms of kernels and {calls:.0f} "
               f"launches per decode step ({self.count} steps)",
               "| kernel | ms/step | launches/step |", "|---|---|---|"]
        for e in rows[:top]:
            out.append(f"| {e.key[:90]} | {e.device_time_total / self.count / 1e3:.3f} | "
                       f"{e.count / self.count:.0f} |")
        return "\n".join(out)


def run(model, impl, batch, context, new, skip, profile=0,
        async_batching=False, compile_decode=False):
    g = torch.Generator().manual_seed(1)
    prompts = [[int(x) for x in torch.randint(
        0, model.config.vocab_size, (context,), generator=g)]
        for _ in range(batch)]
    graphs = isinstance(impl, PagedVortex)
    # The engine evicts a request (to prefill it again later, alone) when
    # its cache runs short; it needs about 16% over the tokens' own blocks
    # to keep the whole batch (measured on the CPU with 8 x 2K): 25% here.
    cb = ContinuousBatchingConfig(
        block_size=16, num_blocks=cache_blocks(batch, context, new),
        max_batch_tokens=8192, max_requests_per_batch=batch,
        use_cuda_graph=(False, True) if graphs else False,
        use_async_batching=async_batching and graphs,
        # torch.compile of the decode step (the model's own kernels fused;
        # the attention stays opaque, as transformers' own paged one).
        decode_compile_config=CompileConfig(
            mode="default", fullgraph=False, dynamic=False)
        if compile_decode and graphs else None)
    if graphs:
        impl.attach(model, cb)
    else:
        model.set_attn_implementation(impl)
    clock = StepClock()
    prof = Profile(clock, skip + 2, profile) if profile else None
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
    blocks = "-"
    if graphs:
        impl.release()     # its views would keep the engine's cache alive
        st = impl.stats    # summed over decode rows of every layer
        if st["decode_rows"]:
            blocks = f"{st['dense_blocks'] / st['decode_rows']:.0f} " \
                f"({st['kept_blocks'] / st['decode_rows']:.0f})"
    if prof is not None:
        print(prof.report(), flush=True)
    res = clock.summary(skip, batch)
    return None if res is None else res + (blocks,)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifacts", required=True)
    ap.add_argument("--model", choices=sorted(MODELS), default="qwen3-1.7b")
    ap.add_argument("--shapes", nargs="+", default=["8x32768"],
                    help="BATCHxCONTEXT")
    ap.add_argument("--layers", type=int, default=0,
                    help="layers (0: the model's own count)")
    ap.add_argument("--new", type=int, default=64,
                    help="new tokens a request (enough for the whole batch "
                    "to decode together after the staggered prefills)")
    ap.add_argument("--sdpa-new", type=int, default=40,
                    help="new tokens for paged|sdpa (its steps are slow)")
    ap.add_argument("--skip", type=int, default=4,
                    help="whole-batch decode steps left out first")
    ap.add_argument("--profile", type=int, default=0, metavar="STEPS",
                    help="profile this many decode steps of each run")
    ap.add_argument("--async-batching", action="store_true",
                    help="the engine's async batching (its default with "
                    "graphs): the host prepares a step while the GPU runs "
                    "the last, so the GPU column overlaps the next step's "
                    "copies; off (the default here), steps do not overlap")
    ap.add_argument("--compile", action="store_true",
                    help="torch.compile the decode step (transformers' "
                    "decode_compile_config; sparse and dense only): the "
                    "model's own kernels fuse, the attention stays as is")
    ap.add_argument("--attentions", nargs="+",
                    default=["sparse", "dense", "sdpa"],
                    choices=["sparse", "dense", "sdpa"])
    args = ap.parse_args()
    paths = sorted(glob.glob(os.path.join(args.artifacts, "*/*.manifest.json")))
    if not paths:
        raise SystemExit(f"--artifacts: no */*.manifest.json in {args.artifacts}")
    flow = vortex.load(paths[0])
    name = os.path.basename(os.path.dirname(paths[0]))
    model = make_model(args.model, args.layers)
    layers = model.config.num_hidden_layers
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}; "
          f"{args.model} shape, {layers} layers, random weights, bf16; "
          f"flow {name}; medians over decode steps after the {args.skip}th; "
          f"async batching {'on' if args.async_batching else 'off'}; "
          f"decode step compiled: {'yes' if args.compile else 'no'}")
    print("| B | context | attention | GPU ms/step | period ms/step | host "
          "overhead ms (% of GPU) | blocks/row (kept) | steps |")
    print("|---|---|---|---|---|---|---|---|")
    for shape in args.shapes:
        batch, context = (int(x) for x in shape.split("x"))
        need = kv_bytes(model, 16 * cache_blocks(batch, context, args.new))
        free = torch.cuda.mem_get_info()[0]
        if need > 0.9 * free:
            print(f"| {batch} | {context} | all | does not fit: K/V "
                  f"{need / 2**30:.0f} GiB, {free / 2**30:.0f} GiB free | "
                  f"- | - | - | 0 |", flush=True)
            continue
        for which in args.attentions:
            impl = {"sparse": lambda: PagedVortex(flow, name=f"b_{shape}_s"),
                    "dense": lambda: PagedVortex(
                        flow, layers_skip=range(layers),
                        name=f"b_{shape}_d"),
                    "sdpa": lambda: "paged|sdpa"}[which]()
            new = args.sdpa_new if which == "sdpa" else args.new
            skip = args.skip
            why = "no decode steps"
            try:
                res = run(model, impl, batch, context, new, skip,
                          0 if which == "sdpa" else args.profile,
                          args.async_batching, args.compile)
            except (RuntimeError, SystemExit) as err:   # e.g. out of memory
                why = f"failed: {str(err).splitlines()[0][:120]}"
                res = None
            del impl
            gc.collect()
            torch.cuda.empty_cache()
            if res is None:
                print(f"| {batch} | {context} | {which} | {why} | - | - | - "
                      "| 0 |", flush=True)
                continue
            gpu, period, n, blocks = res
            host = period - gpu
            print(f"| {batch} | {context} | {which} | {gpu:.2f} | "
                  f"{period:.2f} | {host:.2f} ({100 * host / gpu:.0f}%) | "
                  f"{blocks} | {n} |", flush=True)


if __name__ == "__main__":
    main()
