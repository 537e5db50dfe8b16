#!/usr/bin/env python3
"""Accuracy of shipped flows on a real model (issue 36): SmolLM2-135M-Instruct
(real weights, scripts/fetch-smollm2.sh) through transformers' continuous
batching on the CPU in f32, dense `paged|sdpa` against `paged|vortex` with
each flow at each budget.

- Perplexity of the last `--scored` tokens of the first N tokens of a long
  real text (GPL-3 then LGPL-2.1 from /usr/share/common-licenses), for each
  N in `--contexts`: the first N - scored tokens are the prompt (dense
  prefill), then the engine decodes the rest token by token, teacher-forced:
  a hook on the model's output records log p(true token) and leaves only the
  true token for greedy sampling, so every step is one engine decode step
  that attends through the flow. The engine's generated tokens must equal
  the text (checked).
- Greedy agreement: `--greedy` free tokens after the first 4K-context
  prompt; the share of positions equal to dense's and the first one that
  differs.
- Passkey retrieval: a 5-digit key hidden at three depths of about 4K
  tokens of filler; the key must appear in 8 greedy tokens.

    bash scripts/fetch-smollm2.sh          # prints the model directory
    python3 bench/accuracy_smollm2.py --model DIR [--flows ...] [--budgets 512 2048]

Budgets are in tokens: topk_val = budget / block_size (blocks of 16, 64 for
lserve's), plus a BOS and an EOS block. The engine's blocks are the flow's
pages.
"""
import argparse
import math
import os
import time

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from transformers.generation import ContinuousBatchingConfig, GenerationConfig

import vortex
from vortex.flows import SHIPPED
from vortex.integrations.transformers import PagedVortex

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
TEXTS = ("/usr/share/common-licenses/GPL-3",
         "/usr/share/common-licenses/LGPL-2.1")
# The shipped flows at their example configs' block sizes, but for the
# token-level ones (block_size 1: the CPU engine would hold 8K one-token
# blocks per layer) and the g5 config (the same flow).
FLOWS = [n for n, s in SHIPPED.items()
         if s.config.block_size > 1 and n != "gqa_quest_sparse_attention_g5"]
FILLER = ("The grass is green. The sky is blue. The sun is yellow. "
          "Here we go. There and back again. ")


def load(model_dir):
    tok = AutoTokenizer.from_pretrained(model_dir, gguf_file=GGUF)
    model = AutoModelForCausalLM.from_pretrained(
        model_dir, gguf_file=GGUF, dtype=torch.float32).eval()
    return tok, model


def flow(name, model, budget):
    """The shipped flow `name` compiled for the model, keeping `budget`
    tokens (topk_val = budget / block_size)."""
    s, c = SHIPPED[name], model.config
    cfg = s.config.replace(head_dim=c.head_dim,
                           topk_val=budget // s.config.block_size,
                           group_size=c.num_attention_heads //
                           c.num_key_value_heads)
    return vortex.load(vortex.compile(s.flow, cfg, target="cpu"))


class TeacherForcing:
    """A forward hook that scores and forces the true tokens: once the
    prompt has gone through (prefill may be chunked), each call that yields
    one logit row records log p(target[k]) and leaves target[k] the only
    finite logit."""

    def __init__(self, prompt_len, targets):
        self.prompt_len, self.targets = prompt_len, targets
        self.seen, self.logp = 0, []

    def __call__(self, module, args, kwargs, out):
        self.seen += kwargs["input_ids"].shape[-1]
        logits = out.logits
        if self.seen < self.prompt_len or logits.shape[1] != 1:
            return out
        k = len(self.logp)
        if k >= len(self.targets):
            return out
        t = self.targets[k]
        self.logp.append(float(torch.log_softmax(logits[0, 0].double(), -1)[t]))
        logits.fill_(-math.inf)
        logits[0, 0, t] = 0.0
        return out


def engine(tokens, page, chunk=512):
    return ContinuousBatchingConfig(block_size=page,
                                    num_blocks=tokens // page + 8,
                                    max_batch_tokens=chunk,
                                    allow_block_sharing=False)


def generate(model, impl, prompt, new, hook=None):
    page = impl.page_size if isinstance(impl, PagedVortex) else 16
    cb = engine(len(prompt) + new, page)
    if isinstance(impl, PagedVortex):
        impl.attach(model, cb)
    else:
        model.set_attn_implementation(impl)
    h = model.register_forward_hook(hook, with_kwargs=True) if hook else None
    gen = GenerationConfig(max_new_tokens=new, do_sample=False,
                           eos_token_id=-1, pad_token_id=0)
    try:
        out = model.generate_batch([prompt], generation_config=gen,
                                   continuous_batching_config=cb,
                                   progress_bar=False)
    finally:
        if h:
            h.remove()
    toks = next(iter(out.values())).generated_tokens
    if len(toks) != new:   # the engine logs a failed request and goes on
        raise RuntimeError(f"{impl}: {len(toks)} of {new} tokens generated")
    return toks


def perplexity(model, impl, text, ctx, scored):
    prompt, targets = text[:ctx - scored], text[ctx - scored:ctx]
    hook = TeacherForcing(len(prompt), targets)
    toks = generate(model, impl, prompt, scored, hook)
    if list(toks) != list(targets) or len(hook.logp) != scored:
        raise RuntimeError(f"teacher forcing failed: {len(hook.logp)} "
                           f"scored, generated != text")
    return math.exp(-sum(hook.logp) / scored)


def passkey_prompts(tok, ctx):
    """(prompt ids, key) with the key at 25%, 50% and 75% depth."""
    head = ("There is an important info hidden inside a lot of irrelevant "
            "text. Find it and memorize it. I will quiz you about the "
            "important information there.\n")
    tail = "\nWhat is the pass key? The pass key is"
    n = (ctx - 80) // len(tok(FILLER).input_ids)
    out = []
    for depth, key in ((0.25, 71432), (0.5, 28519), (0.75, 90367)):
        at = int(n * depth)
        needle = f"The pass key is {key}. Remember it. {key} is the pass key. "
        body = FILLER * at + needle + FILLER * (n - at)
        out.append((tok(head + body + tail).input_ids, str(key)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True,
                    help="directory holding " + GGUF)
    ap.add_argument("--flows", nargs="+", default=FLOWS,
                    choices=list(SHIPPED))
    ap.add_argument("--budgets", nargs="+", type=int, default=[512, 2048],
                    help="tokens kept (top-k blocks x block size)")
    ap.add_argument("--contexts", nargs="+", type=int, default=[4096, 8192])
    ap.add_argument("--scored", type=int, default=512)
    ap.add_argument("--greedy", type=int, default=64)
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    tok, model = load(args.model)
    text = []
    for path in TEXTS:
        text += tok(open(path).read()).input_ids
    if max(args.contexts) > len(text):
        raise SystemExit(f"--contexts: the text has {len(text)} tokens")
    keys = passkey_prompts(tok, 4096)
    greedy_prompt = text[:4096]
    print(f"SmolLM2-135M-Instruct ({GGUF}), f32, CPU, torch "
          f"{torch.__version__}, {torch.get_num_threads()} threads; text "
          f"{len(text)} tokens; scored {args.scored}")
    impls = [("dense", None, "paged|sdpa")]
    for name in args.flows:
        for b in args.budgets:
            impls.append((name, b, None))
    dense_greedy = None
    for name, budget, impl in impls:
        t = time.time()
        if impl is None:
            impl = PagedVortex(flow(name, model, budget),
                               name=f"{name}_{budget}")
        row = [f"{name}", "-" if budget is None else str(budget)]
        for ctx in args.contexts:
            row.append(f"{perplexity(model, impl, text, ctx, args.scored):.3f}")
        g = generate(model, impl, greedy_prompt, args.greedy)
        if dense_greedy is None:
            dense_greedy = g
        same = sum(a == b for a, b in zip(g, dense_greedy))
        first = next((i for i, (a, b) in enumerate(zip(g, dense_greedy))
                      if a != b), len(g))
        row.append(f"{same}/{len(g)} (first diff {first})")
        found = [k in tok.decode(generate(model, impl, p, 8)) for p, k in keys]
        row.append("".join("y" if f else "n" for f in found))
        kept = ""
        if isinstance(impl, PagedVortex):
            s = impl.stats
            kept = f"{s['kept_blocks'] / max(s['dense_blocks'], 1):.3f}"
        row.append(kept)
        row.append(f"{time.time() - t:.0f}")
        print("| " + " | ".join(row) + " |", flush=True)
    print("columns: flow | budget | ppl@" + " | ppl@".join(
        str(c) for c in args.contexts) + " | greedy == dense | passkey "
        "25/50/75% | blocks kept / blocks | seconds")


if __name__ == "__main__":
    main()
