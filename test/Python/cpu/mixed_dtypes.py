# RUN: %python %s
# REQUIRES: torch, numpy
#
# k and v in another float type than the intermediates, at a padded head
# dim and group size (D 80, G 5): masking q keeps q's type, so every such
# flow verifies and lowers (vortex-mask-padding inserts a mask on q; the
# flow verifier exempts masks from the intermediate-dtype rule). Each is
# compiled for the CPU, loaded as torch ops and run against the float64
# numpy reference (vortex.testing.torch_checks.check_numerics: fields to
# rtol = atol = 1e-5, the selection up to ties). A lowering that failed on
# verified IR would fail here.

import vortex
from vortex import api, flows, testing
from vortex.testing import torch_checks as tt

tally = testing.Tally()
for name in ("block_sparse_attention", "gqa_quest_sparse_attention"):
    s = flows.SHIPPED[name]
    for kv, inter in (("f32", "bf16"), ("f16", "f32")):
        tag = f"{name} k/v {kv}, intermediates {inter}, D 80, G 5"
        try:
            path = api.compile_vflow(s.flow, s.config, "cpu",
                                     name=s.symbol,
                                     head_dim=80, group_size=5, kv_dtype=kv,
                                     intermediate_dtype=inter)
            flow = vortex.load(path)
        except Exception as err:  # noqa: BLE001
            tally(False, f"{tag}: trace, compile, load",
                  f"{type(err).__name__}: {err}")
            continue
        tally(True, f"{tag}: traced, compiled, loaded")
        tt.check_numerics(flow, tally)
tally.exit(summary=True)
