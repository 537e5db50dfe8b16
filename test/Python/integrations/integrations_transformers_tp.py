# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t %S/../Inputs/tp_worker.py
# REQUIRES: numpy, torch, transformers
#
# paged|vortex under transformers' tensor parallelism on the CPU: 2 ranks
# on gloo (torch.distributed.run, DistributedConfig(tp_plan="auto")), a tiny
# Qwen3 with random weights (4 query heads on 2 KV heads, D 16), so each
# rank runs the flow on its own KV head:
#   - each rank's attention sees 2 query heads and 1 KV head;
#   - with a budget that keeps every block, both ranks give TP = 1
#     paged|sdpa's greedy tokens;
#   - with a budget of 2 blocks, the ranks agree with each other and with
#     TP = 1 paged|vortex at the same budget, and attend fewer blocks than
#     there are.
import json
import os
import subprocess
import sys

import torch
from transformers import AutoModelForCausalLM, Qwen3Config, Qwen3ForCausalLM
from transformers.generation import ContinuousBatchingConfig, GenerationConfig

import vortex
from vortex.flows.gqa_quest_sparse_attention import GQAQuestSparseAttention
from vortex.integrations.transformers import PagedVortex

tmp, worker = sys.argv[1], sys.argv[2]
model_dir = os.path.join(tmp, "tiny_qwen3")
torch.manual_seed(0)
Qwen3ForCausalLM(Qwen3Config(
    vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, head_dim=16,
    max_position_embeddings=4096)).save_pretrained(model_dir)


def tp1(topk=None):
    model = AutoModelForCausalLM.from_pretrained(model_dir,
                                                 dtype=torch.float32)
    cb = ContinuousBatchingConfig(block_size=16, num_blocks=64,
                                  max_batch_tokens=48)
    if topk is None:
        model.set_attn_implementation("paged|sdpa")
    else:
        cfg = vortex.FlowConfig(block_size=4, page_size=16, head_dim=16,
                                group_size=2, topk_val=topk, topk_ratio=0.0,
                                reserved_bos=1, reserved_eos=1)
        PagedVortex(vortex.load(vortex.compile(
            GQAQuestSparseAttention(), cfg, target="cpu")),
            name=f"vortex_tp1_{topk}").attach(model, cb)
    torch.manual_seed(0)
    prompts = [[int(x) for x in torch.randint(0, 256, (n,))]
               for n in (37, 5, 70, 16)]
    gen = GenerationConfig(max_new_tokens=16, do_sample=False,
                           eos_token_id=-1, pad_token_id=0)
    out = model.generate_batch(prompts, generation_config=gen,
                               continuous_batching_config=cb)
    return [v.generated_tokens for _, v in sorted(out.items())]


def tp2(topk):
    out = os.path.join(tmp, f"tp2_{topk}")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node",
         "2", "--master-port", str(29500 + topk), worker, model_dir,
         str(topk), out], env=env, capture_output=True, text=True,
        timeout=600)
    if proc.returncode:
        sys.exit(f"TP=2 run failed (rc {proc.returncode}):\n"
                 f"{proc.stderr[-3000:]}")
    return [json.load(open(f"{out}.{r}")) for r in (0, 1)]


ref = tp1()
for r in tp2(64):
    assert (r["q_heads"], r["kv_heads"]) == (2, 1), r
    assert r["tokens"] == ref, (r["rank"], r["tokens"], ref)
    s = r["stats"]
    assert s["kept_blocks"] == s["dense_blocks"] > 0, s
print("TP=2, every block kept: both ranks == TP=1 paged|sdpa")

sparse_ref = tp1(2)
ranks = tp2(2)
for r in ranks:
    assert r["tokens"] == sparse_ref, (r["rank"], r["tokens"], sparse_ref)
    s = r["stats"]
    assert 0 < s["kept_blocks"] < s["dense_blocks"], s
print(f"TP=2, budget 2: both ranks == TP=1 paged|vortex; rank stats "
      f"{[r['stats'] for r in ranks]}")
