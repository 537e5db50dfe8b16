#!/usr/bin/env python3
"""paged|vortex under transformers' tensor parallelism on GPUs over NCCL
(issue 36): a Llama with random weights (8 query heads on 4 KV heads, D 128,
f32) saved once, then run through continuous batching
- at TP = 1 on one GPU: paged|sdpa, and paged|vortex with each flow;
- at TP = `--ranks` (torch.distributed.run, DistributedConfig(tp_plan=
  "auto"), which picks NCCL on CUDA): paged|vortex with each flow, every
  rank on its own KV heads.
Prints, per flow: each rank's heads, whether the ranks' tokens equal each
other and TP = 1's with the same flow (and paged|sdpa's), the blocks kept,
and the wall time per generated token (the whole generate_batch, prefill
included, CUDA graphs off: a sanity number, not the engine benchmark).

`--artifacts DIR` holds `<name>/*.manifest.json`, flows compiled for the
GPU at head_dim 128, group 2, blocks and pages of 16, f32 q and k/v:

    python -m vortex compile --flow gqa_quest_sparse_attention --target sm_90 \\
        --head-dim 128 --group-size 2 --block-size 16 --page-size 16 \\
        --topk-val 1024 --kv-dtype f32 --q-dtype f32 -o DIR/gqa_quest_k1024
    python3 bench/engine_tp.py --artifacts DIR [--ranks 2]
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

import torch
from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM
from transformers.generation import ContinuousBatchingConfig, GenerationConfig

import vortex
from vortex.integrations.transformers import PagedVortex


def flows(artifacts):
    paths = sorted(glob.glob(os.path.join(artifacts, "*/*.manifest.json")))
    if not paths:
        raise SystemExit(f"--artifacts: no */*.manifest.json in {artifacts}")
    return [(os.path.basename(os.path.dirname(p)), p) for p in paths]


def prompts(args):
    g = torch.Generator().manual_seed(1)
    return [[int(x) for x in torch.randint(0, 4096, (args.context - 37 * i,),
                                           generator=g)]
            for i in range(args.batch)]


def generate(model, impl, args):
    p = prompts(args)
    cb = ContinuousBatchingConfig(
        block_size=16, max_batch_tokens=2048,
        num_blocks=args.batch * (args.context + args.new) // 16 + 64)
    if isinstance(impl, PagedVortex):
        impl.attach(model, cb)
    else:
        model.set_attn_implementation(impl)
    gen = GenerationConfig(max_new_tokens=args.new, do_sample=False,
                           eos_token_id=-1, pad_token_id=0)
    torch.cuda.synchronize()
    t = time.perf_counter()
    out = model.generate_batch(p, generation_config=gen,
                               continuous_batching_config=cb,
                               progress_bar=False)
    torch.cuda.synchronize()
    wall = time.perf_counter() - t
    toks = [list(v.generated_tokens) for _, v in sorted(out.items())]
    if any(len(t) != args.new for t in toks):
        raise SystemExit(f"{impl}: a request failed (see the engine's log)")
    return toks, wall / args.new * 1e3


def heads_probe():
    """Records the query and KV heads the rank's attention sees; returns
    them and a function that undoes the probe."""
    seen, call = {}, PagedVortex.__call__

    def recording(self, module, query, key, value, mask, *a, **kw):
        seen.setdefault("q_heads", query.shape[1])
        seen.setdefault("kv_heads", kw["cache"].num_key_value_heads)
        return call(self, module, query, key, value, mask, *a, **kw)
    PagedVortex.__call__ = recording
    return seen, lambda: setattr(PagedVortex, "__call__", call)


def worker(args):
    """One rank: every flow at TP = WORLD_SIZE; rank r writes OUT.r."""
    from transformers.distributed import DistributedConfig
    rank = int(os.environ["RANK"])
    model = AutoModelForCausalLM.from_pretrained(
        args.model, distributed_config=DistributedConfig(tp_plan="auto"),
        dtype=torch.float32).eval()
    res = {"rank": rank, "backend": torch.distributed.get_backend(),
           "device": str(next(model.parameters()).device), "flows": {}}
    for name, path in flows(args.artifacts):
        attn = PagedVortex(vortex.load(path), name=f"tp_{name}")
        seen, undo = heads_probe()
        try:
            generate(model, attn, args)                 # warm-up
            toks, ms = generate(model, attn, args)
        finally:
            undo()
        res["flows"][name] = {"tokens": toks, "ms": ms, "stats": attn.stats,
                              **seen}
    with open(f"{args.out}.{rank}", "w") as f:
        json.dump(res, f)


def tp1(args):
    """TP = 1 on one GPU: paged|sdpa, then each flow."""
    model = AutoModelForCausalLM.from_pretrained(
        args.model, dtype=torch.float32).to("cuda").eval()
    generate(model, "paged|sdpa", args)
    ref, ms = generate(model, "paged|sdpa", args)
    out = {"paged|sdpa": (ref, ms, None)}
    for name, path in flows(args.artifacts):
        attn = PagedVortex(vortex.load(path), name=f"tp1_{name}")
        generate(model, attn, args)
        toks, ms = generate(model, attn, args)
        out[name] = (toks, ms, attn.stats)
    del model
    torch.cuda.empty_cache()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifacts", required=True)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--context", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--new", type=int, default=32)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    if torch.cuda.device_count() < args.ranks:
        raise SystemExit(f"--ranks {args.ranks}: {torch.cuda.device_count()} "
                         "GPUs visible")
    tmp = tempfile.mkdtemp()
    args.model, args.out = os.path.join(tmp, "llama"), os.path.join(tmp, "tp")
    torch.manual_seed(0)
    LlamaForCausalLM(LlamaConfig(
        vocab_size=4096, hidden_size=1024, intermediate_size=2048,
        num_hidden_layers=args.layers, num_attention_heads=8,
        num_key_value_heads=4, head_dim=128,
        max_position_embeddings=args.context + 512)).save_pretrained(args.model)
    print(f"{torch.cuda.get_device_name(0)} x{torch.cuda.device_count()}, "
          f"torch {torch.__version__}; {args.batch} requests of ~{args.context} "
          f"tokens, {args.new} greedy tokens, {args.layers} layers, f32")
    one = tp1(args)
    env = dict(os.environ, NCCL_GRAPH_MIXING_SUPPORT="0", OMP_NUM_THREADS="4")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node",
           str(args.ranks), os.path.abspath(__file__), "--worker",
           "--artifacts", args.artifacts, "--model", args.model,
           "--out", args.out, "--layers", str(args.layers),
           "--context", str(args.context), "--batch", str(args.batch),
           "--new", str(args.new)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"TP={args.ranks} failed (rc {proc.returncode}):\n"
                 f"{proc.stderr[-4000:]}")
    ranks = [json.load(open(f"{args.out}.{r}")) for r in range(args.ranks)]
    ref, sdpa_ms, _ = one["paged|sdpa"]
    total = sum(len(t) for t in ref)
    print(f"TP=1 paged|sdpa: {sdpa_ms:.1f} ms per token")
    ok = True
    for name, _ in flows(args.artifacts):
        toks, ms, stats = one[name]
        rs = [r["flows"][name] for r in ranks]
        same_ranks = all(r["tokens"] == rs[0]["tokens"] for r in rs)
        same_tp1 = sum(a == b for x, y in zip(rs[0]["tokens"], toks)
                       for a, b in zip(x, y))
        same_sdpa = sum(a == b for x, y in zip(rs[0]["tokens"], ref)
                        for a, b in zip(x, y))
        ok &= same_ranks and same_tp1 == total
        print(f"{name}: TP=1 {ms:.1f} ms per token, kept "
              f"{stats['kept_blocks']}/{stats['dense_blocks']}; "
              f"TP={args.ranks} ({ranks[0]['backend']}, "
              f"{[r['device'] for r in ranks]}, heads q/kv per rank "
              f"{rs[0]['q_heads']}/{rs[0]['kv_heads']}) "
              f"{max(r['ms'] for r in rs):.1f} ms per token; ranks agree: "
              f"{same_ranks}; == TP=1: {same_tp1}/{total}; == paged|sdpa: "
              f"{same_sdpa}/{total}; rank 0 kept "
              f"{rs[0]['stats']['kept_blocks']}/"
              f"{rs[0]['stats']['dense_blocks']}")
    print("OK" if ok else "MISMATCH")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
