# RUN: %python %s
# REQUIRES: torch, numpy
#
# The shipped flows as torch ops on the CPU impl, shard 3 of 5 (lit runs
# the shards in parallel; vortex.testing.torch_checks.FLOW_SHARDS lists them and
# every shard checks that together they cover all of examples/):
#   masked_quest_sparse_attention, running_avg_block_sparse,
#   venergy_gated_centroid.
# Per flow (vortex.testing.torch_checks.check_flow):
#   - torch.library.opcheck passes for the indexer and the cache op (schema,
#     autograd registration, fake tensor, AOT dispatch with dynamic shapes);
#   - torch.compile(fullgraph=True) of functions calling flow.indexer,
#     flow.cache_step(block_ids) and flow.cache_step(loc=, num_kv_heads=)
#     has 0 graph breaks (torch._dynamo.explain) and matches eager bit for
#     bit (torch.equal: outputs and every cache tensor), over two problems of
#     different shapes and repeated calls;
#   - the ops against the float64 numpy reference (vortex.semantics.reference): cache
#     step (negative block ids skipped), then indexer steps; fields to
#     rtol = atol = 1e-5, the selection up to ties. Rows: empty, one block,
#     within budget, just and well over it.

from vortex.testing import torch_checks

torch_checks.main_shard(3)
