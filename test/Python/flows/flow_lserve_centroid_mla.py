# RUN: %python %s %examples/lserve_centroid_mla.mlir
# REQUIRES: numpy
#
# End-to-end numerics of examples/lserve_centroid_mla.mlir (an MLA flow: k is the
# latent [kv_c | k_pe] of 512 + 64 channels, q the absorbed query of 20
# heads) on the CPU path: the cache step on every block of the rows, then
# indexer steps with fresh queries, each checked against the independent
# numpy reference (python/vortex/semantics/reference.py, which writes the
# score as its latent and RoPE terms apart). Fields must agree to rtol =
# atol = 1e-5; per row the selected block sets must agree up to ties
# (reference scores within 1e-4 relative of the selection threshold).

import sys

from vortex import testing

sys.exit(1 if testing.check_shipped_flow(sys.argv[1]) else 0)
