"""A flow next to dense attention on a real model, through transformers'
continuous batching (`python -m vortex demo-engine`, the README's main job
after `demo`): SmolLM2-135M-Instruct (scripts/fetch-smollm2.sh) reads the
first `--prompt` tokens of the GPL and writes `--tokens` greedy tokens, once
with `paged|sdpa` and once with a shipped flow as `paged|vortex`. Prints both
continuations, how many tokens agree, the share of blocks the flow attended
and each run's wall time. CPU, f32.
"""

from __future__ import annotations

import argparse
import os
import time

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
TEXT = "/usr/share/common-licenses/GPL-3"


def model_dir() -> str:
    """Where scripts/fetch-smollm2.sh puts the model."""
    root = os.environ.get("VORTEX_MODEL_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "vortex", "models")
    return os.path.join(root, "smollm2-135m")


def main(argv=None) -> int:
    from ..environment import SetupError
    ap = argparse.ArgumentParser(prog="python -m vortex demo-engine",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=model_dir(),
                    help="directory holding " + GGUF)
    ap.add_argument("--flow", default="gqa_quest_sparse_attention",
                    help="a shipped flow (vortex.flows.SHIPPED)")
    ap.add_argument("--budget", type=int, default=16,
                    help="blocks of 16 tokens the flow keeps (topk_val)")
    ap.add_argument("--layers-skip", type=int, nargs="*", default=[0, 1],
                    help="layers that stay dense (vortex_torch's layers_skip)")
    ap.add_argument("--prompt", type=int, default=768)
    ap.add_argument("--tokens", type=int, default=24)
    args = ap.parse_args(argv)
    if not os.path.isfile(os.path.join(args.model, GGUF)):
        raise SetupError(f"{GGUF} is not in {args.model}: run "
                         "scripts/fetch-smollm2.sh")
    try:
        import gguf  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as err:
        raise SetupError(f"{err.name} is missing: run scripts/setup.sh")
    return _run(args)


def _run(args) -> int:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.generation import (ContinuousBatchingConfig,
                                         GenerationConfig)
    from transformers.utils import logging

    import vortex
    from vortex.flows import SHIPPED
    from vortex.integrations.transformers import PagedVortex

    logging.disable_progress_bar()
    t0 = time.time()
    tok = AutoTokenizer.from_pretrained(args.model, gguf_file=GGUF)
    model = AutoModelForCausalLM.from_pretrained(
        args.model, gguf_file=GGUF, dtype=torch.float32).eval()
    c = model.config
    print(f"SmolLM2-135M-Instruct ({c.num_hidden_layers} layers, "
          f"{c.num_attention_heads} query heads on {c.num_key_value_heads} KV "
          f"heads, D {c.head_dim}), loaded in {time.time() - t0:.1f} s")
    ids = tok(open(TEXT).read()).input_ids[:args.prompt]
    print(f"prompt: the first {len(ids)} tokens of {TEXT}")

    s = SHIPPED[args.flow]
    cfg = s.config.replace(head_dim=c.head_dim, page_size=16,
                           block_size=min(s.config.block_size, 16),
                           group_size=c.num_attention_heads //
                           c.num_key_value_heads, topk_val=args.budget)
    flow = vortex.load(vortex.compile(s.flow, cfg, target="cpu"))
    attn = PagedVortex(flow, layers_skip=args.layers_skip, name="demo")

    def generate(impl):
        cb = ContinuousBatchingConfig(
            block_size=16, num_blocks=(len(ids) + args.tokens) // 16 + 8,
            max_batch_tokens=256, allow_block_sharing=not attn.saved)
        if isinstance(impl, PagedVortex):
            impl.attach(model, cb)
        else:
            model.set_attn_implementation(impl)
        t = time.time()
        out = model.generate_batch(
            [ids], generation_config=GenerationConfig(
                max_new_tokens=args.tokens, do_sample=False,
                eos_token_id=-1, pad_token_id=0),
            continuous_batching_config=cb, progress_bar=False)
        toks = list(next(iter(out.values())).generated_tokens)
        if len(toks) != args.tokens:
            raise RuntimeError(f"{impl}: the engine generated {len(toks)} of "
                               f"{args.tokens} tokens (see its log)")
        return toks, time.time() - t

    dense, t_dense = generate("paged|sdpa")
    sparse, t_sparse = generate(attn)
    st = attn.stats
    same = sum(a == b for a, b in zip(dense, sparse))
    first = next((i for i, (a, b) in enumerate(zip(dense, sparse)) if a != b),
                 len(dense))
    print(f"dense  (paged|sdpa, {t_dense:.1f} s): {tok.decode(dense)!r}")
    print(f"sparse (paged|vortex {args.flow}, top {args.budget} blocks + BOS "
          f"+ EOS, layers {args.layers_skip} dense, {t_sparse:.1f} s): "
          f"{tok.decode(sparse)!r}")
    print(f"agreement: {same}/{len(dense)} tokens, first difference at "
          f"{first if first < len(dense) else 'none'}")
    print(f"attended: {st['kept_blocks']} of {st['dense_blocks']} blocks "
          f"({100 * st['kept_blocks'] / max(st['dense_blocks'], 1):.0f}%) "
          f"over {st['decode_rows']} decode rows")
    return 0
