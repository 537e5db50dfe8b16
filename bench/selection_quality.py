#!/usr/bin/env python3
"""Selection quality (issue 36): does a flow keep the blocks attention
needs? On the CPU, in float64 for the measures:

- Planted blocks, no trained weights: for each shipped flow (its example
  config at D 64, G 2, a budget of 8 blocks), rows of 2,048 random tokens
  (K, V ~ N(0, 1)) where `--planted` blocks per row have the row's mean
  query direction added to their keys, raising their tokens' logits by
  about `--boost` (3: each planted token weighs about 20 random ones); the
  share of planted blocks the flow's `decode` keeps, and the share of the
  dense attention mass the kept blocks hold, against the same on the
  unplanted rows.
- A real model: SmolLM2-135M-Instruct (real weights,
  scripts/fetch-smollm2.sh) through transformers' continuous batching, each
  flow at each `--budgets` token budget, a `--context`-token prompt of a
  license text, then `--steps` greedy decode steps: at every decode step
  and layer, the share of the dense attention mass (softmax over every
  cached token at the model's scale, averaged over the query heads of a KV
  head) that falls in the blocks the flow kept; mean and 10th percentile
  over KV heads, layers and steps.

    python3 bench/selection_quality.py [--model DIR] [--flows ...]

Without --model only the planted part runs.
"""
import argparse
import math
import os
import statistics

import torch

import vortex
from vortex.flows import SHIPPED

FLOWS = [n for n, s in SHIPPED.items()
         if s.config.block_size > 1 and n != "gqa_quest_sparse_attention_g5"]


def block_mass(q, k, indptr, indices, last_len, scale):
    """[rows] of {block id: attention mass}: the dense attention each block
    holds (float64; per query head the softmax over every token of the
    row's dense CSR, averaged over the row's query heads)."""
    out = []
    bs = k.shape[1]
    for r in range(q.shape[0]):
        ids = indices[int(indptr[r]):int(indptr[r + 1])].long()
        if ids.numel() == 0:
            out.append({})
            continue
        keys = k[ids].double().reshape(-1, k.shape[2])
        keys = keys[:keys.shape[0] - (bs - int(last_len[r]))]
        p = torch.softmax(q[r].double() @ keys.T * scale, dim=-1)  # [G, T]
        per = torch.zeros(ids.numel() * bs, dtype=torch.float64)
        per[:p.shape[1]] = p.mean(0)
        per = per.view(-1, bs).sum(1)
        out.append({int(b): float(m) for b, m in zip(ids, per)})
    return out


def kept_mass(masses, indptr, indices):
    """Per row, the share of its dense mass in its kept blocks."""
    return [sum(m.get(int(b), 0.0) for b in
                indices[int(indptr[r]):int(indptr[r + 1])])
            for r, m in enumerate(masses)]


def compiled(name, D, G, topk, **extra):
    s = SHIPPED[name]
    cfg = s.config.replace(head_dim=D, group_size=G, topk_val=topk, **extra)
    return vortex.load(vortex.compile(s.flow, cfg, target="cpu"))


def planted(name, args):
    """(planted share kept, mass kept with plants, mass kept without)."""
    D, G, rows, L = 64, 2, 8, 2048
    flow = compiled(name, D, G, 8)
    bs = int(flow.config["block_size"])
    n = L // bs
    g = torch.Generator().manual_seed(0)
    nb = rows * n
    cache = flow.allocate_cache(nb)
    cache["k"].copy_(torch.randn(cache["k"].shape, generator=g))
    cache["v"].copy_(torch.randn(cache["v"].shape, generator=g))
    q = torch.randn(rows, G, D, generator=g)
    indptr = torch.arange(0, nb + 1, n, dtype=torch.int32)
    indices = torch.arange(nb, dtype=torch.int32)
    last = torch.full((rows,), bs, dtype=torch.int32)
    scale = 1 / math.sqrt(D)
    plants = []
    for r in range(rows // 2):          # the first half of the rows
        blocks = r * n + 1 + torch.randperm(n - 3, generator=g)[:args.planted]
        u = q[r].mean(0)
        cache["k"][blocks] += args.boost / (scale * u.norm()) * \
            u / u.norm()
        plants.append(set(int(b) for b in blocks))
    flow.cache_step(cache, indices)
    _, _, sp, si = flow.decode(q, cache, indptr, indices, last,
                               sm_scale=scale)
    found = sum(len(p & set(int(b) for b in
                            si[int(sp[r]):int(sp[r + 1])]))
                for r, p in enumerate(plants))
    mass = kept_mass(block_mass(q, cache["k"], indptr, indices, last, scale),
                     sp, si)
    h = rows // 2
    return (found / sum(len(p) for p in plants),
            statistics.mean(mass[:h]), statistics.mean(mass[h:]))


class MassProbe:
    """Wraps a flow's `decode`: after each call, the share of each row's
    dense attention mass in the blocks it kept."""

    def __init__(self, flow):
        self.inner, self.shares = flow.decode, []
        flow.decode = self

    def __call__(self, q, cache, indptr, indices, last_len, *a, **kw):
        o, lse, sp, si = self.inner(q, cache, indptr, indices, last_len,
                                    *a, **kw)
        scale = kw.get("sm_scale") or 1 / math.sqrt(q.shape[-1])
        masses = block_mass(q, cache["k"], indptr, indices, last_len,
                            float(scale))
        self.shares += kept_mass(masses, sp, si)
        return o, lse, sp, si


def real_model(args):
    import accuracy_smollm2 as acc      # bench/: its loader and engine
    from vortex.integrations.transformers import PagedVortex
    tok, model = acc.load(args.model)
    text = tok(open(acc.TEXTS[0]).read())["input_ids"]
    prompt = text[:args.context]
    print(f"\nSmolLM2-135M-Instruct, f32, CPU: a {args.context}-token "
          f"prompt ({os.path.basename(acc.TEXTS[0])}), {args.steps} greedy "
          "decode steps; the share of dense attention mass in the kept "
          "blocks, over KV heads x layers x steps")
    print("| flow | budget (tokens) | mass kept: mean | 10th percentile | "
          "rows |")
    print("|---|---|---|---|---|")
    for name in args.flows:
        for budget in args.budgets:
            flow = acc.flow(name, model, budget)
            probe = MassProbe(flow)
            acc.generate(model, PagedVortex(flow, name=f"q_{name}_{budget}"),
                         prompt, args.steps)
            s = sorted(probe.shares)
            print(f"| {name} | {budget} | {statistics.mean(s):.3f} | "
                  f"{s[len(s) // 10]:.3f} | {len(s)} |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="SmolLM2 directory (fetch-smollm2.sh)")
    ap.add_argument("--flows", nargs="+", default=FLOWS, choices=FLOWS)
    ap.add_argument("--planted", type=int, default=4)
    ap.add_argument("--boost", type=float, default=3.0)
    ap.add_argument("--budgets", nargs="+", type=int, default=[256, 512])
    ap.add_argument("--context", type=int, default=2048)
    ap.add_argument("--steps", type=int, default=16)
    args = ap.parse_args()
    torch.manual_seed(0)
    print(f"Planted blocks: rows of 2,048 random tokens, D 64, G 2, 8 blocks "
          f"kept (+ BOS and EOS); {args.planted} blocks a row whose logits "
          f"are raised by about {args.boost:g}, in half the rows")
    print("| flow | planted blocks kept | mass kept, planted rows | mass "
          "kept, random rows |")
    print("|---|---|---|---|")
    for name in args.flows:
        found, with_p, without = planted(name, args)
        print(f"| {name} | {found:.2f} | {with_p:.3f} | {without:.3f} |",
              flush=True)
    if args.model:
        real_model(args)


if __name__ == "__main__":
    main()
