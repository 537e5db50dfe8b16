"""One rank of test/Python/integrations/integrations_transformers_tp.py: the saved tiny
Qwen3 under transformers' tensor parallelism (DistributedConfig(tp_plan=
"auto"), gloo), with paged|vortex over this rank's KV heads.

    python -m torch.distributed.run --nproc-per-node 2 tp_worker.py MODEL TOPK OUT

Rank 0 writes the greedy tokens and each rank's shapes as JSON to OUT."""
import json
import os
import sys

import torch
from transformers import AutoModelForCausalLM
from transformers.distributed import DistributedConfig
from transformers.generation import ContinuousBatchingConfig, GenerationConfig

import vortex
from vortex.flows.gqa_quest_sparse_attention import GQAQuestSparseAttention
from vortex.integrations.transformers import PagedVortex

model_dir, topk, out_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rank = int(os.environ.get("RANK", "0"))
cfg = vortex.FlowConfig(block_size=4, page_size=16, head_dim=16, group_size=2,
                        topk_val=topk, topk_ratio=0.0, reserved_bos=1,
                        reserved_eos=1)
flow = vortex.load(vortex.compile(GQAQuestSparseAttention(), cfg, target="cpu"))
model = AutoModelForCausalLM.from_pretrained(
    model_dir, distributed_config=DistributedConfig(tp_plan="auto"),
    dtype=torch.float32)
cb = ContinuousBatchingConfig(block_size=16, num_blocks=64, max_batch_tokens=48)
attn = PagedVortex(flow, name=f"vortex_tp_{topk}")
attn.attach(model, cb)
seen = {}
call = PagedVortex.__call__


def recording(self, module, query, key, value, mask, *a, **kw):
    seen.setdefault("q_heads", query.shape[1])
    seen.setdefault("kv_heads", kw["cache"].num_key_value_heads)
    return call(self, module, query, key, value, mask, *a, **kw)


PagedVortex.__call__ = recording
torch.manual_seed(0)
prompts = [[int(x) for x in torch.randint(0, 256, (n,))] for n in (37, 5, 70, 16)]
gen = GenerationConfig(max_new_tokens=16, do_sample=False, eos_token_id=-1,
                       pad_token_id=0)
out = model.generate_batch(prompts, generation_config=gen,
                           continuous_batching_config=cb)
tokens = [v.generated_tokens for _, v in sorted(out.items())]
result = {"rank": rank, "tokens": tokens, "stats": attn.stats, **seen}
with open(f"{out_path}.{rank}", "w") as f:
    json.dump(result, f)
