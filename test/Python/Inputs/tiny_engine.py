"""A tiny random-weight Llama under transformers' continuous batching, for
the engine tests: f32, 2 layers, head_dim 16, 2 KV heads, engine blocks of
16 tokens; prompts of 37, 5, 70 and 16 tokens batched 48 tokens at a time
(so prefill is chunked and decode and prefill share steps)."""
import torch
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.generation import ContinuousBatchingConfig, GenerationConfig

from vortex.integrations.transformers import PagedVortex

PS, D, HKV = 16, 16, 2
PROMPTS = (37, 5, 70, 16)


def make_model(G: int):
    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(
        vocab_size=256, hidden_size=16 * HKV * G, intermediate_size=128,
        num_hidden_layers=2, num_attention_heads=HKV * G,
        num_key_value_heads=HKV, head_dim=D,
        max_position_embeddings=4096)).eval()


def generate(impl, G: int, new_tokens: int = 24):
    """Greedy tokens by request; impl: an attention name or a PagedVortex
    (attached here)."""
    model = make_model(G)
    cb = ContinuousBatchingConfig(block_size=PS, num_blocks=64,
                                  max_batch_tokens=48)
    if isinstance(impl, PagedVortex):
        impl.attach(model, cb)
    else:
        model.set_attn_implementation(impl)
    g = torch.Generator().manual_seed(1)
    prompts = [[int(x) for x in torch.randint(0, 256, (n,), generator=g)]
               for n in PROMPTS]
    out = model.generate_batch(
        prompts, generation_config=GenerationConfig(
            max_new_tokens=new_tokens, do_sample=False, eos_token_id=-1,
            pad_token_id=0),
        continuous_batching_config=cb, progress_bar=False)
    return {k: list(v.generated_tokens) for k, v in sorted(out.items())}
