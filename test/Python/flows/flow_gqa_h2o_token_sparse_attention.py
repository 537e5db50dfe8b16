# RUN: %python %s %examples/gqa_h2o_token_sparse_attention.mlir
# REQUIRES: numpy
#
# End-to-end numerics of examples/gqa_h2o_token_sparse_attention.mlir on the CPU path: the cache step on
# every block of the rows, then indexer steps with fresh queries, each checked
# against the independent numpy reference (python/vortex/semantics/reference.py). Fields
# must agree to rtol = atol = 1e-5; per row the selected block sets must agree
# up to ties (reference scores within 1e-4 relative of the selection threshold).

import sys

from vortex import testing

sys.exit(1 if testing.check_shipped_flow(sys.argv[1], sign_cases=((0,0),(-1,-1))) else 0)
